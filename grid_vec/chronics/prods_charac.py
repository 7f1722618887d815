"""``prods_charac.csv``: a dataset folder's table of generator characteristics, read once here
for every reader (the folder loader's dispatch limits, the rewards' prices and ``Pmax``).

The file is untrusted (see :mod:`grid_vec.chronics.untrusted`): its size is bounded and each
fault is one :class:`FolderFormatError` naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.chronics.untrusted import (
    MAX_SMALL_FILE_BYTES,
    FolderFormatError,
    check_number,
    inside,
    read_text,
    short,
)


def read_prods_charac(path: Path) -> dict[str, np.ndarray]:
    """Columns by header name: float arrays where every cell is a number, else str arrays."""
    text = read_text(path, MAX_SMALL_FILE_BYTES)
    first = text.split("\n", 1)[0]
    delimiter = ";" if ";" in first and "," not in first else ","
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as e:
        raise FolderFormatError(f"{path}: not a CSV table ({short(str(e))})") from None
    rows = [r for r in rows if r]
    if not rows:
        raise FolderFormatError(f"{path}: empty file")
    header, body = rows[0], rows[1:]
    for i, row in enumerate(body):
        if len(row) != len(header):
            raise FolderFormatError(
                f"{path}: line {i + 2} has {len(row)} columns, the header has {len(header)}"
            )
    columns: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        cells = [row[j].strip() for row in body]
        try:
            columns[name.strip()] = np.array([float(c) for c in cells])
        except ValueError:
            columns[name.strip()] = np.array(cells, dtype=str)
    return columns


def folder_generators(source: Any, model: Any) -> dict[str, np.ndarray]:
    """Each generator's ``marginal_cost`` and ``Pmax`` (the columns present of the two) from
    the ``prods_charac.csv`` of the dataset folder ``source`` plays (a source with a
    ``path``), by generator name; empty when there is no such file.

    Args:
        source: the scenario source (a dataset folder's has a ``path``).
        model: the compiled grid (its ``gen_names``).

    Returns:
        ``{column: (n_gen,) float64}`` in the grid's generator order.

    Raises:
        FolderFormatError: a malformed file, a value that is not a finite number, or a
            generator of the grid it does not list.
    """
    root = getattr(source, "path", None)
    if not isinstance(root, Path):
        return {}
    root = root.resolve()
    path = root / "prods_charac.csv"
    if not path.is_file() and not path.is_symlink():
        return {}
    inside(root, path)
    columns = read_prods_charac(path)
    wanted = [c for c in ("marginal_cost", "Pmax") if c in columns]
    if "name" not in columns or not wanted:
        return {}
    line = {str(name): i for i, name in enumerate(columns["name"])}
    names = [str(n) for n in model.gen_names]
    missing = [n for n in names if n not in line]
    if missing:
        raise FolderFormatError(f"{path}: generator {short(missing[0])} is not listed")
    out = {}
    for column in wanted:
        cells = columns[column]
        for i, cell in enumerate(cells.tolist()):
            where = f"line {i + 2}, column {column!r}"
            try:
                value = float(cell)
            except ValueError:
                raise FolderFormatError(f"{path}: {where}: {short(cell)} is not a number") from None
            check_number(value, path, where)
        out[column] = np.array([float(cells[line[n]]) for n in names], dtype=np.float64)
    return out
