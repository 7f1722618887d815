"""Named tasks: a grid, its scenarios split into training, validation and test, and the
settings an agent is trained and scored with (action space, reward, heuristics, masks).

``grid_vec.make(task_id, split="train")`` (and ``make_vec``, ``gymnasium.make``,
``gymnasium.make_vec``) builds a task's env; keyword arguments override its settings. The
splits are disjoint sets of scenario ids: an env of one split plays only its own scenarios
(:class:`~grid_vec.chronics.subset.SubsetSource`), named as in the full source
(``synthetic_0007``, or a dataset's chronics folder name), numbered ``0 .. n - 1`` within
the split.

==================================== ============= ============ ==============================
task                                 grid          actions      settings
==================================== ============= ============ ==============================
grid_vec/Case14Topology-v0           case14        discrete,    reward ``line_margin``, action
                                                   reduced set  masks, idle while max rho <
                                                                0.9, reconnection, recovery of
                                                                the reference topology
grid_vec/Case14Redispatch-v0         case14        redispatch   reward ``line_margin``, idle
                                                                while max rho < 0.9,
                                                                reconnection
grid_vec/Case14Redispatch-v1         case14        redispatch   as v0, and the target dispatch
                                                                set back to zero while idle
grid_vec/Case118Topology-v0          case118       discrete,    as Case14Topology
                                                   reduced set
grid_vec/Case14Combined-v0           case14        combined:    as Case14Topology, and the
                                                   reduced set  target dispatch set back to
                                                   (Case14Top.) zero while idle
                                                   + redispatch
grid_vec/Case118Combined-v0          case118       combined:    as Case14Combined
                                                   reduced set
                                                   (Case118T.)
                                                   + redispatch
grid_vec/Sandbox14Topology-v0        dataset       discrete     as Case14Topology (the whole
                                     (14 subs.)                 catalog)
grid_vec/Sandbox14Redispatch-v0      dataset       redispatch   as Case14Redispatch
grid_vec/Neurips36Topology-v0        dataset,      discrete     as Case14Topology (the whole
                                     36 subs.                   catalog); the dataset's
                                                                maintenance and opponent
grid_vec/Wcci118Continuous-v0        dataset,      continuous   reward ``line_margin``, idle
                                     118 subs.     (redispatch, while max rho < 0.9,
                                                   storage,     reconnection; the dataset's
                                                   curtailment) maintenance and opponent
==================================== ============= ============ ==============================

Splits of the embedded tasks: ``test`` scenarios 0-31, ``validation`` 32-63, ``train``
64-1023. The dataset tasks play grid2op's datasets (``l2rpn_case14_sandbox``,
``l2rpn_neurips_2020_track1_small``, ``l2rpn_wcci_2022``) with the folder's own rules,
limits, maintenance and opponent, as ``make(folder)`` plays them; their splits are by the
dataset's chronics (sorted by name): ``test`` 0-31, ``validation`` 32-63, ``train`` the rest.
The folder is found at ``data_dir=`` when given, else ``$GRID_VEC_DATA_DIR/<dataset>``, else
where grid2op downloads it (``~/data_grid2op/<dataset>``); grid_vec downloads nothing.

Case14Topology and Case118Topology play a reduced action set (``action_subset``): do-nothing
and the catalog actions greedy-by-simulate picks most on the training scenarios, shipped
(read-only) in ``grid_vec/env/data/action_sets/``. ``grid-vec actions TASK --out DIR`` writes
a new one (see :mod:`grid_vec.runner.action_sets`), played with ``action_set=PATH``
(``--action-set`` on the CLI). ``action_subset=None`` plays the whole catalog.

Case14Combined and Case118Combined play the ``"combined"`` action space,
``Dict(topology=Discrete, continuous=Box)``: the topology part indexes the set of the
Topology task of their grid (``Task.action_set_of``), the continuous part redispatches the
dispatchable generators, both in one action. Their splits, reward and heuristics are the
Topology tasks'; a redispatch stays in the target dispatch after the decision, so, as in
Case14Redispatch-v1, the target is set back to zero while the grid idles
(``recover_dispatch``), as the topology is set back to its reference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grid_vec._untrusted import UntrustedFileError, quote, read_json
from grid_vec.core.action_kinds import action_kind
from grid_vec.core.actions import ActionCatalog
from grid_vec.core.rules.heuristics import Heuristics
from grid_vec.core.topology import layout_of
from grid_vec.env.datasets import find_dataset
from grid_vec.grid.model import GridModel

ACTION_SET_DIR = Path(__file__).parent / "data" / "action_sets"
_MAX_ACTION_SET_BYTES = 1 << 20
_MAX_ACTION_SET_DEPTH = 4  # an object of lists of numbers and strings

SPLITS = {"test": range(0, 32), "validation": range(32, 64), "train": range(64, 1024)}
# a dataset task's train split runs from 64 to the dataset's last scenario (Task.split_ids)
DATASET_SPLITS = {"test": range(0, 32), "validation": range(32, 64), "train": range(64, 65)}


@dataclass(frozen=True)
class Task:
    """One named task: the grid it plays and the GridEnv settings it sets.

    ``grid`` names an embedded grid, or, with ``dataset=True``, a grid2op dataset whose
    folder is found by :func:`dataset_folder`; a dataset task's ``train`` split runs to the
    dataset's last scenario (``splits`` then holds its first id only)."""

    grid: str
    settings: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, range] = field(default_factory=lambda: dict(SPLITS))
    reduced_actions: bool = False  # plays the action set stored for it (action_subset)
    dataset: bool = False
    # the task whose shipped action set it plays (None: its own); a Combined task's topology
    # part is its grid's Topology set
    action_set_of: str | None = None

    def split_ids(self, split: str, n_scenarios: int | None = None) -> range:
        """The scenario ids of ``split``; for a dataset task, within its ``n_scenarios``.

        Raises:
            ValueError: an unknown split; a dataset with too few scenarios for it.
        """
        if split not in self.splits:
            raise ValueError(f"split must be one of {', '.join(self.splits)}, got {split!r}")
        ids = self.splits[split]
        if not self.dataset:
            return ids
        if n_scenarios is None:
            raise ValueError("a dataset task's splits depend on its number of scenarios")
        if split == "train":
            ids = range(ids.start, n_scenarios)
        if ids.stop > n_scenarios or not ids:
            need = max(r.stop for name, r in self.splits.items() if name != "train") + 1
            raise ValueError(
                f"dataset {self.grid} has {n_scenarios} scenarios; its tasks need at least "
                f"{need} (grid2op's package holds only a sample of each dataset: download the "
                f"full one with grid2op.make({self.grid!r}))"
            )
        return ids


def _topology(grid: str, reduced_actions: bool, dataset: bool = False) -> Task:
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
        splits=dict(DATASET_SPLITS if dataset else SPLITS),
        reduced_actions=reduced_actions,
        dataset=dataset,
    )


def _combined(grid: str, topology_task: str) -> Task:
    """The Topology task of ``grid`` with redispatch in the same action (``"combined"``): its
    reduced set, splits, reward and masks; its heuristics, and the dispatch recovered too."""
    task = _topology(grid, reduced_actions=True)
    heuristics = replace(task.settings["heuristics"], recover_dispatch=True)
    settings = {**task.settings, "action_type": "combined", "heuristics": heuristics}
    return replace(task, settings=settings, action_set_of=topology_task)


def _redispatch(
    grid: str,
    action_type: str = "redispatch",
    dataset: bool = False,
    recover_dispatch: bool = False,
) -> Task:
    return Task(
        grid,
        {
            "action_type": action_type,
            "reward": "line_margin",
            "heuristics": Heuristics(
                idle_below_rho=0.9, reconnect_lines=True, recover_dispatch=recover_dispatch
            ),
        },
        splits=dict(DATASET_SPLITS if dataset else SPLITS),
        dataset=dataset,
    )


TASKS: dict[str, Task] = {
    "grid_vec/Case14Topology-v0": _topology("case14", reduced_actions=True),
    "grid_vec/Case14Redispatch-v0": _redispatch("case14"),
    # v1: a redispatch is taken back once the grid idles (v0 keeps it until the agent's next
    # decision, which comes only when the grid is loaded again)
    "grid_vec/Case14Redispatch-v1": _redispatch("case14", recover_dispatch=True),
    # its set: 240 greedy decisions over the whole catalog (11,604 candidates each, one
    # simulate_candidates call), 21.6 minutes on one core (2026-12-02)
    "grid_vec/Case118Topology-v0": _topology("case118", reduced_actions=True),
    "grid_vec/Case14Combined-v0": _combined("case14", "grid_vec/Case14Topology-v0"),
    "grid_vec/Case118Combined-v0": _combined("case118", "grid_vec/Case118Topology-v0"),
    "grid_vec/Sandbox14Topology-v0": _topology(
        "l2rpn_case14_sandbox", reduced_actions=False, dataset=True
    ),
    "grid_vec/Sandbox14Redispatch-v0": _redispatch("l2rpn_case14_sandbox", dataset=True),
    "grid_vec/Neurips36Topology-v0": _topology(
        "l2rpn_neurips_2020_track1_small", reduced_actions=False, dataset=True
    ),
    "grid_vec/Wcci118Continuous-v0": _redispatch(
        "l2rpn_wcci_2022", action_type="continuous", dataset=True
    ),
}


def dataset_folder(dataset: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The folder of a dataset task's grid2op dataset: ``data_dir`` itself when given, else
    ``$GRID_VEC_DATA_DIR/<dataset>``, else grid2op's download place ``~/data_grid2op/<dataset>``
    (:func:`grid_vec.env.datasets.find_dataset`; grid2op's bundled samples are too small for
    a task's splits and are not tried).

    Raises:
        DatasetNotFoundError: (a ValueError) no such folder; the message says where it was
            looked for and how to get the dataset.
    """
    return find_dataset(dataset, data_dir)


def task_split(task_id: str, split: str, n_scenarios: int | None = None) -> tuple[Task, range]:
    """The task and the scenario ids of one of its splits (a dataset task's within the
    dataset's ``n_scenarios``).

    Raises:
        ValueError: an unknown task or split; a dataset too small for the task.
    """
    task = TASKS.get(task_id)
    if task is None:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    return task, task.split_ids(split, n_scenarios)


def action_set_owner(task_id: str) -> str:
    """The task whose action set ``task_id`` plays: ``Task.action_set_of``, else itself."""
    task = TASKS.get(task_id)
    return task_id if task is None or task.action_set_of is None else task.action_set_of


def action_set_path(task_id: str) -> Path:
    """The data file of a task's reduced action set (the one of :func:`action_set_owner`)."""
    owner = action_set_owner(task_id)
    return ACTION_SET_DIR / (owner.split("/")[-1].removesuffix("-v0").lower() + ".json")


def task_settings(task_id: str, overrides: dict[str, Any], model: GridModel) -> dict[str, Any]:
    """A task's GridEnv settings, ``overrides`` winning; a reduced-action task gets its
    stored ``action_subset`` unless ``overrides`` has one (None: the whole catalog).
    ``overrides["action_set"]``, the path of a set written by ``grid-vec actions``, plays
    that set instead (it is read here, once: the settings hold its content).

    Args:
        task_id: the task.
        overrides: the caller's settings.
        model: the task's compiled grid (an action set's indices must lie in its catalog,
            whose size is computed only when a set is read).

    Returns:
        The settings, ``action_set`` replaced by the ``action_subset`` it holds.

    Raises:
        ValueError: an unknown task; the action-set file is missing or malformed, or written
            for another task or another catalog; ``action_set`` with ``action_subset``, or
            on a task without discrete actions.
    """
    task = TASKS.get(task_id)
    if task is None:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    settings = {**task.settings, **overrides}
    written = settings.pop("action_set", None)
    if written is not None:
        if "action_subset" in overrides:
            raise ValueError("pass action_set (a file) or action_subset (a list), not both")
        if not action_kind(settings.get("action_type", "discrete")).catalog:
            raise ValueError(f"action_set: {task_id} has no catalog actions to choose from")
        settings["action_subset"] = read_action_set(Path(written), task_id, _n_catalog(model))
    elif task.reduced_actions and "action_subset" not in overrides:
        path = action_set_path(task_id)
        settings["action_subset"] = read_action_set(path, task_id, _n_catalog(model))
    return settings


def _n_catalog(model: GridModel) -> int:
    """The number of actions of ``model``'s catalog (what an action set indexes)."""
    return len(ActionCatalog.from_model(model, layout_of(model)))


def load_action_set(task_id: str, n_catalog: int | None = None) -> list[int]:
    """The reduced action set shipped for a task (catalog indices, do-nothing first).

    Args:
        task_id: the task.
        n_catalog: the size of its grid's action catalog (None: the indices are not checked
            against it).

    Raises:
        ValueError: as :func:`read_action_set`.
    """
    return read_action_set(action_set_path(task_id), task_id, n_catalog)


def read_action_set(path: Path, task_id: str, n_catalog: int | None = None) -> list[int]:
    """The action set in the file ``path`` (as ``grid-vec actions`` writes it), for
    ``task_id``. The file is untrusted input: read bounded, checked entry by entry.

    Args:
        path: the file.
        task_id: the task it must be written for (or the task whose set it plays,
            :func:`action_set_owner`).
        n_catalog: the size of the task grid's action catalog (None: not checked).

    Returns:
        The catalog indices, do-nothing (0) first.

    Raises:
        UntrustedFileError: (a ValueError, naming the file) the file is missing, not a
            regular file, too large or not JSON; its ``"task"`` is another task; its
            ``"actions"`` is not a non-empty list of distinct catalog indices (ints, below
            ``n_catalog``) starting with do-nothing (0).
    """
    data = read_json(
        path,
        _MAX_ACTION_SET_BYTES,
        _MAX_ACTION_SET_DEPTH,
        error=UntrustedFileError,
        what="action set",
    )
    if not isinstance(data, dict):
        raise UntrustedFileError(f"{path}: an action set is a JSON object")
    written_for = data.get("task", task_id)
    if written_for not in (task_id, action_set_owner(task_id)):
        raise UntrustedFileError(f"{path}: written for {quote(written_for)}, not {task_id}")
    actions = data.get("actions")
    if not isinstance(actions, list) or not actions or not all(type(a) is int for a in actions):
        raise UntrustedFileError(f"{path}: 'actions' must be a non-empty list of catalog indices")
    for position, action in enumerate(actions):
        if action < 0 or (n_catalog is not None and action >= n_catalog):
            bound = "" if n_catalog is None else f" (the catalog has {n_catalog} actions)"
            raise UntrustedFileError(
                f"{path}: 'actions'[{position}] = {quote(action)} is not a catalog index{bound}"
            )
    if actions[0] != 0:
        raise UntrustedFileError(f"{path}: 'actions' must start with do-nothing (0)")
    if len(set(actions)) < len(actions):
        repeated = next(a for i, a in enumerate(actions) if a in actions[:i])
        raise UntrustedFileError(f"{path}: 'actions' lists {repeated} more than once")
    return actions
