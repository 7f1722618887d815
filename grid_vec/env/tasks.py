"""Named tasks: a grid, its scenarios split into training, validation and test, and the
settings an agent is trained and scored with (action space, reward, heuristics, masks).

``grid_vec.make(task_id, split="train")`` (and ``make_vec``, ``gymnasium.make``,
``gymnasium.make_vec``) builds a task's env; keyword arguments override its settings. The
splits are disjoint sets of scenario ids of the grid's synthetic source: an env of one split
plays only its own scenarios (:class:`~grid_vec.chronics.subset.SubsetSource`), named as in
the full source (``synthetic_0007``), numbered ``0 .. n - 1`` within the split.

================================ ======= ============ =====================================
task                             grid    actions      settings
================================ ======= ============ =====================================
grid_vec/Case14Topology-v0       case14  discrete,    reward ``line_margin``, action masks,
                                         reduced set  idle while max rho < 0.9, reconnection,
                                                      recovery of the reference topology
grid_vec/Case14Redispatch-v0     case14  redispatch   reward ``line_margin``, idle while max
                                                      rho < 0.9, reconnection
grid_vec/Case118Topology-v0      case118 discrete     as Case14Topology
================================ ======= ============ =====================================

Splits (every task): ``test`` scenarios 0-31, ``validation`` 32-63, ``train`` 64-1023.

Case14Topology plays a reduced action set (``action_subset``): do-nothing and the catalog
actions greedy-by-simulate picks most on the training scenarios, stored in
``grid_vec/env/data/action_sets/`` and written by ``grid-vec actions TASK`` (see
:mod:`grid_vec.runner.action_sets`). ``action_subset=None`` plays the whole catalog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grid_vec.env.heuristics import Heuristics

ACTION_SET_DIR = Path(__file__).parent / "data" / "action_sets"
_MAX_ACTION_SET_BYTES = 1 << 20

SPLITS = {"test": range(0, 32), "validation": range(32, 64), "train": range(64, 1024)}


@dataclass(frozen=True)
class Task:
    """One named task: the embedded grid it plays and the GridEnv settings it sets."""

    grid: str
    settings: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, range] = field(default_factory=lambda: dict(SPLITS))
    reduced_actions: bool = False  # plays the action set stored for it (action_subset)


def _topology(grid: str, reduced_actions: bool) -> Task:
    return Task(
        grid,
        {
            "action_type": "discrete",
            "reward": "line_margin",
            "action_mask": True,
            "heuristics": Heuristics(
                idle_below_rho=0.9, reconnect_lines=True, recover_topology=True
            ),
        },
        reduced_actions=reduced_actions,
    )


TASKS: dict[str, Task] = {
    "grid_vec/Case14Topology-v0": _topology("case14", reduced_actions=True),
    "grid_vec/Case14Redispatch-v0": Task(
        "case14",
        {
            "action_type": "redispatch",
            "reward": "line_margin",
            "heuristics": Heuristics(idle_below_rho=0.9, reconnect_lines=True),
        },
    ),
    # no reduced set yet: greedy-by-simulate over case118's 11,604 actions is out of reach
    "grid_vec/Case118Topology-v0": _topology("case118", reduced_actions=False),
}


def task_split(task_id: str, split: str) -> tuple[Task, range]:
    """The task and the scenario ids of one of its splits.

    Raises:
        ValueError: an unknown task or split.
    """
    task = TASKS.get(task_id)
    if task is None:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    if split not in task.splits:
        raise ValueError(f"split must be one of {', '.join(task.splits)}, got {split!r}")
    return task, task.splits[split]


def action_set_path(task_id: str) -> Path:
    """The data file of a task's reduced action set."""
    return ACTION_SET_DIR / (task_id.split("/")[-1].removesuffix("-v0").lower() + ".json")


def task_settings(task_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """A task's GridEnv settings, ``overrides`` winning; a reduced-action task gets its
    stored ``action_subset`` unless ``overrides`` has one (None: the whole catalog).

    Raises:
        ValueError: an unknown task; the action-set file is missing or malformed.
    """
    task = TASKS.get(task_id)
    if task is None:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    settings = {**task.settings, **overrides}
    if task.reduced_actions and "action_subset" not in overrides:
        settings["action_subset"] = load_action_set(task_id)
    return settings


def load_action_set(task_id: str) -> list[int]:
    """The stored reduced action set of a task (catalog indices, do-nothing first).

    Raises:
        ValueError: the file is missing, too large, or holds no list of ints under
            ``"actions"`` (naming the file).
    """
    path = action_set_path(task_id)
    try:
        if path.stat().st_size > _MAX_ACTION_SET_BYTES:
            raise ValueError(f"{path}: larger than {_MAX_ACTION_SET_BYTES} bytes")
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path}: cannot read the action set of {task_id} ({exc}); write it with "
            f"'grid-vec actions {task_id}'"
        ) from None
    actions = data.get("actions") if isinstance(data, dict) else None
    if (
        not isinstance(actions, list)
        or not actions
        or not all(type(a) is int and a >= 0 for a in actions)
    ):
        raise ValueError(f"{path}: 'actions' must be a non-empty list of catalog indices")
    return actions
