"""Reading windows of rows from grid2op-format ``;``-separated CSV files (plain or compressed).

A dataset folder is untrusted input: every malformed cell is reported with the file, the
line and the column, never as a bare parser trace. Rows are streamed, so reading a window
decompresses the file only up to the window's end and never holds the whole file.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

SUFFIXES = ("", ".bz2", ".gz", ".xz")


class FolderFormatError(ValueError):
    """A dataset folder is malformed: the message names the file and the row/column."""


def find_csv(folder: Path, stem: str) -> Path | None:
    """``folder/stem.csv`` or one of its compressed variants, or None if there is none."""
    for suffix in SUFFIXES:
        path = folder / f"{stem}.csv{suffix}"
        if path.is_file():
            return path
    return None


@contextmanager
def _open_text(path: Path) -> Iterator[io.TextIOBase]:
    opener = {".bz2": bz2.open, ".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        yield f


def _parse_header(path: Path, line: str) -> list[str]:
    names = [c.strip().strip('"') for c in line.rstrip("\r\n").split(";")]
    if not line.strip() or not all(names):
        raise FolderFormatError(f"{path}: line 1 must be a ';'-separated header of names")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise FolderFormatError(f"{path}: column {dup!r} appears twice in the header")
    return names


def count_rows(path: Path) -> int:
    """Number of data rows (lines after the header, a trailing empty line not counted)."""
    with _open_text(path) as f:
        try:
            n = sum(1 for line in f if line.strip())
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise FolderFormatError(f"{path}: cannot be read ({e})") from e
    return max(n - 1, 0)


def read_table(
    path: Path, start: int, stop: int, *, total: int | None = None
) -> tuple[list[str], np.ndarray]:
    """The header names and data rows ``[start, stop)`` as a finite float64 array.

    One pass over the file, up to the window's end. ``total``: the number of data rows the
    file must have; checked when the window reaches it (a shorter file is caught by any
    window that goes past its end).
    """
    with _open_text(path) as f:
        try:
            names = _parse_header(path, f.readline())
            lines = list(itertools.islice(f, start, stop))
            extra = stop == total and any(line.strip() for line in f)
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise FolderFormatError(f"{path}: cannot be read ({e})") from e
    expected = "" if total is None else f" (load_p has {total})"
    if len(lines) < stop - start:
        raise FolderFormatError(
            f"{path}: has {start + len(lines)} data rows, needs at least {stop}{expected}"
        )
    if extra:
        raise FolderFormatError(f"{path}: has more than {total} data rows{expected}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = np.loadtxt(lines, delimiter=";", comments=None, ndmin=2, dtype=np.float64)
    except ValueError:
        values = None
    if values is None or values.shape != (len(lines), len(names)):
        _diagnose(path, lines, start, names)
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        r, c = bad[0]
        raise FolderFormatError(
            f"{path}: {_where(start, r, names, c)}: value {values[r, c]} is not a finite number"
        )
    return names, values


def _where(start: int, row: int, names: list[str], col: int | None = None) -> str:
    """Location in file terms: line numbers count the header as line 1; columns from 1."""
    where = f"line {start + row + 2} (data row {start + row})"
    return where if col is None else f"{where}, column {col + 1} ({names[col]!r})"


def _diagnose(path: Path, lines: list[str], start: int, names: list[str]) -> None:
    """Raise the error that explains why ``lines`` do not parse as one float per header name."""
    for r, line in enumerate(lines):
        cells = line.rstrip("\r\n").split(";")
        if len(cells) != len(names):
            raise FolderFormatError(
                f"{path}: {_where(start, r, names)}: has {len(cells)} columns, "
                f"the header has {len(names)}"
            )
        for c, cell in enumerate(cells):
            try:
                float(cell)
            except ValueError:
                raise FolderFormatError(
                    f"{path}: {_where(start, r, names, c)}: {cell!r} is not a number"
                ) from None
    raise FolderFormatError(f"{path}: rows {start}..{start + len(lines) - 1} cannot be parsed")
