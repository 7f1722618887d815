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
grid_vec/Case14Topology-v0       case14  discrete     reward ``line_margin``, action masks,
                                                      idle while max rho < 0.9, reconnection
grid_vec/Case14Redispatch-v0     case14  redispatch   reward ``line_margin``, idle while max
                                                      rho < 0.9, reconnection
grid_vec/Case118Topology-v0      case118 discrete     as Case14Topology
================================ ======= ============ =====================================

Splits (every task): ``test`` scenarios 0-31, ``validation`` 32-63, ``train`` 64-1023.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grid_vec.env.heuristics import Heuristics

SPLITS = {"test": range(0, 32), "validation": range(32, 64), "train": range(64, 1024)}


@dataclass(frozen=True)
class Task:
    """One named task: the embedded grid it plays and the GridEnv settings it sets."""

    grid: str
    settings: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, range] = field(default_factory=lambda: dict(SPLITS))


def _topology(grid: str) -> Task:
    return Task(
        grid,
        {
            "action_type": "discrete",
            "reward": "line_margin",
            "action_mask": True,
            "heuristics": Heuristics(idle_below_rho=0.9, reconnect_lines=True),
        },
    )


TASKS: dict[str, Task] = {
    "grid_vec/Case14Topology-v0": _topology("case14"),
    "grid_vec/Case14Redispatch-v0": Task(
        "case14",
        {
            "action_type": "redispatch",
            "reward": "line_margin",
            "heuristics": Heuristics(idle_below_rho=0.9, reconnect_lines=True),
        },
    ),
    "grid_vec/Case118Topology-v0": _topology("case118"),
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
