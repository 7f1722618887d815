"""Where grid2op datasets are found by name, as a grid2op user expects them to be.

grid2op's ``make("l2rpn_case14_sandbox")`` downloads a dataset into ``~/data_grid2op/<name>``
and, with ``test=True``, plays the small sample its package ships under ``grid2op/data/``.
grid_vec downloads nothing: a dataset name is looked for, in this order, under
``$GRID_VEC_DATA_DIR/<name>``, ``~/data_grid2op/<name>`` and (for :func:`grid_vec.make` only,
never for a task, whose splits need the full dataset) grid2op's bundled samples. grid2op's
package is located without importing it (importing grid2op takes seconds).

A name not found is a :class:`DatasetNotFoundError` that says every place looked in and how
to get the dataset; its wording of "how to pass a folder" is the caller's (``data_dir=`` in
Python, ``--data-dir`` on the command line).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

DATA_DIR_VARIABLE = "GRID_VEC_DATA_DIR"
GRID2OP_DATA_DIR = Path("~/data_grid2op")  # where grid2op.make downloads its datasets
_DATASET_NAME = re.compile(r"[A-Za-z0-9][\w.-]*")  # a folder name, no separator, not . or ..


class DatasetNotFoundError(ValueError):
    """No folder holds the named grid2op dataset.

    Args:
        dataset: the name asked for.
        looked_in: every folder tried, in order.
        how_to_pass: how the caller gives a folder by hand (``"data_dir=FOLDER"``).
        lead: what the message starts with (the caller's context), or nothing.
    """

    def __init__(
        self, dataset: str, looked_in: tuple[Path, ...], how_to_pass: str, lead: str = ""
    ) -> None:
        self.dataset = dataset
        self.looked_in = looked_in
        self.lead = lead
        super().__init__(self.message(how_to_pass))

    def message(self, how_to_pass: str, lead: str | None = None) -> str:
        """The message with ``how_to_pass`` as the way to give a folder (a CLI passes its
        flag, ``"--data-dir FOLDER"``) and ``lead`` before it (default: the error's own)."""
        where = ", ".join(str(p) for p in self.looked_in) or "no folder"
        return (
            f"{self.lead if lead is None else lead}the grid2op dataset {self.dataset!r} is not "
            f'in {where}; download it with python -c "import grid2op; '
            f'grid2op.make({self.dataset!r})", or give its folder as {how_to_pass} (or set '
            f"${DATA_DIR_VARIABLE} to the folder that holds it)"
        )


def is_dataset_name(text: str) -> bool:
    """Whether ``text`` reads as a dataset's name (one folder name) rather than a path."""
    return bool(_DATASET_NAME.fullmatch(text))


def grid2op_samples_dir() -> Path | None:
    """The folder of the samples grid2op's package ships (``grid2op/data``), or None when
    grid2op is not installed."""
    try:
        spec = importlib.util.find_spec("grid2op")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    return folder if folder.is_dir() else None


def dataset_candidates(dataset: str, *, samples: bool) -> tuple[Path, ...]:
    """The folders tried for ``dataset``, in order: ``$GRID_VEC_DATA_DIR/<dataset>``,
    ``~/data_grid2op/<dataset>``, then (when ``samples``) grid2op's bundled sample."""
    roots = [os.environ.get(DATA_DIR_VARIABLE), GRID2OP_DATA_DIR]
    candidates = [Path(root).expanduser() / dataset for root in roots if root]
    bundled = grid2op_samples_dir() if samples else None
    if bundled is not None:
        candidates.append(bundled / dataset)
    return tuple(candidates)


def find_dataset(
    dataset: str,
    data_dir: str | os.PathLike | None = None,
    *,
    samples: bool = False,
    how_to_pass: str = "data_dir=FOLDER",
) -> Path:
    """The folder of the grid2op dataset ``dataset``.

    Args:
        dataset: the dataset's name (``"l2rpn_case14_sandbox"``).
        data_dir: the folder itself, when the caller gives it (then nothing else is tried).
        samples: also try the sample grid2op's package ships (last).
        how_to_pass: how the caller gives a folder, for the error.

    Returns:
        The first of :func:`dataset_candidates` that is a directory.

    Raises:
        DatasetNotFoundError: none of them is.
    """
    if data_dir is not None:
        candidates: tuple[Path, ...] = (Path(data_dir).expanduser(),)
    else:
        candidates = dataset_candidates(dataset, samples=samples)
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise DatasetNotFoundError(dataset, candidates, how_to_pass)


def is_grid2op_sample(folder: Path) -> bool:
    """Whether ``folder`` is one of the samples grid2op's package ships."""
    bundled = grid2op_samples_dir()
    return bundled is not None and folder.resolve().parent == bundled.resolve()
