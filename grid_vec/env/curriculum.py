"""A curriculum over scenario difficulty: the training scenarios a baseline loses early.

About a third of Case14Topology's training scenarios are survived to their end by
do-nothing and hold few tight hours; the decisions that tell a good agent from do-nothing
come from the others. Training only on the scenarios do-nothing loses before ``below`` time
steps puts every training episode through a tight peak early (``examples/ppo_task.py
--hard-below``). The test and validation splits are untouched: an agent trained so is scored
on every scenario of them.

The difficulty is read from the per-scenario survival that ``grid-vec eval TASK --split
train --agent do-nothing --by-scenario --json FILE`` writes (one row per agent; the
do-nothing row is used). A task's own file ships in ``grid_vec/env/data/difficulty/``
(:func:`difficulty_path`); ``path=`` reads another. Files are untrusted input: read bounded,
checked entry by entry, every failure one error naming the file.
"""

from __future__ import annotations

from pathlib import Path

from grid_vec._untrusted import UntrustedFileError, quote, read_json
from grid_vec.env.tasks import task_split

DIFFICULTY_DIR = Path(__file__).parent / "data" / "difficulty"
_MAX_BYTES = 4 << 20
_MAX_DEPTH = 4  # a list of objects of lists of numbers
_DO_NOTHING = ("do-nothing", "do_nothing")


def difficulty_path(task_id: str) -> Path:
    """The difficulty file shipped for a task (it may not exist: only some tasks have one)."""
    return DIFFICULTY_DIR / (task_id.split("/")[-1].lower() + ".json")


def hard_training_scenarios(
    task_id: str, below: int, path: Path | None = None, n_train: int | None = None
) -> list[int]:
    """The training scenarios (ids within the split) that do-nothing ends with a game over
    before ``below`` time steps.

    Args:
        task_id: the task the file must be written for.
        below: the survival, in time steps, under which a scenario counts as hard (> 0).
        path: the ``grid-vec eval --by-scenario --json`` file to read (None: the task's
            shipped one).
        n_train: the number of scenarios of the task's train split (None: the task's own,
            which only a task of an embedded grid knows without its dataset).

    Returns:
        The ids, ascending (possibly empty: no scenario is that hard).

    Raises:
        ValueError: ``below`` is not a positive int.
        UntrustedFileError: (a ValueError naming the file) the file is missing, too large,
            not JSON, or holds no do-nothing row of ``task_id``'s train split with as many
            survivals as scenario ids, each id a distinct index of the split.
    """
    if isinstance(below, bool) or not isinstance(below, int) or below < 1:
        raise ValueError(f"below must be a positive int of time steps, got {below!r}")
    if n_train is None:
        n_train = len(task_split(task_id, "train")[1])
    path = difficulty_path(task_id) if path is None else Path(path)
    rows = read_json(path, _MAX_BYTES, _MAX_DEPTH, error=UntrustedFileError, what="difficulty file")
    if not isinstance(rows, list):
        raise UntrustedFileError(f"{path}: grid-vec eval's --json file is a list of rows")
    found = [
        (index, row)
        for index, row in enumerate(rows)
        if isinstance(row, dict)
        and row.get("agent") in _DO_NOTHING
        and row.get("task") == task_id
        and row.get("split") == "train"
    ]
    if not found:
        raise UntrustedFileError(
            f"{path}: no do-nothing row of {task_id}'s train split (write one with grid-vec "
            f"eval {task_id} --split train --agent do-nothing --by-scenario --json FILE)"
        )
    index, row = found[0]
    ids, survival = row.get("scenarios"), row.get("survival")
    ended = row.get("terminated")
    for key, values in (("scenarios", ids), ("survival", survival), ("terminated", ended)):
        kind = bool if key == "terminated" else int
        if not isinstance(values, list) or not all(type(v) is kind for v in values):
            raise UntrustedFileError(
                f"{path}: row {index}: {quote(key)} must be a list of {kind.__name__}s "
                "(write the file with --by-scenario)"
            )
    if not len(ids) == len(survival) == len(ended):
        raise UntrustedFileError(
            f"{path}: row {index}: {len(ids)} scenarios, {len(survival)} survivals and "
            f"{len(ended)} ends"
        )
    for position, scenario in enumerate(ids):
        if not 0 <= scenario < n_train:
            raise UntrustedFileError(
                f"{path}: row {index}: 'scenarios'[{position}] = {quote(scenario)} is not a "
                f"scenario of {task_id}'s train split (ids 0 to {n_train - 1})"
            )
    if len(set(ids)) < len(ids):
        repeated = next(s for i, s in enumerate(ids) if s in ids[:i])
        raise UntrustedFileError(f"{path}: row {index}: scenario {repeated} appears twice")
    return sorted(i for i, s, over in zip(ids, survival, ended, strict=True) if over and s < below)
