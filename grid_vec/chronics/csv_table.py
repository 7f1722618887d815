"""Reading windows of rows from grid2op-format ``;``-separated CSV files (plain or compressed).

A dataset folder is untrusted input: every malformed cell is reported with the file, the
line and the column, never as a bare parser trace. Rows are streamed, so reading a window
decompresses the file only up to the window's end and never holds the whole file; every
read is bounded (:data:`MAX_LINE_CHARS`, :data:`MAX_CSV_CHARS`, :data:`MAX_ROWS`), so a
small compressed file that expands to gigabytes stops with an error after at most
``MAX_CSV_CHARS`` characters, holding at most one line of ``MAX_LINE_CHARS`` at a time.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from grid_vec.chronics.untrusted import FolderFormatError, inside, short

__all__ = ["FolderFormatError", "count_rows", "find_csv", "read_table"]

SUFFIXES = ("", ".bz2", ".gz", ".xz")
# one line: grid2op's 118-bus chronics have ~100 columns of ~10 characters (~1 KB a line)
MAX_LINE_CHARS = 2**20
# one file, decompressed: 8064 rows x 100 columns is ~8 MB
MAX_CSV_CHARS = 128 * 2**20
# data rows of one file: a year at 5-minute steps is 105,120
MAX_ROWS = 2_000_000
# what decompression and decoding raise on corrupt or non-UTF-8 data
_READ_ERRORS = (OSError, EOFError, UnicodeDecodeError, lzma.LZMAError, zlib.error)


def find_csv(folder: Path, stem: str, root: Path) -> Path | None:
    """``folder/stem.csv`` or one of its compressed variants, or None if there is none.

    A file that resolves outside the dataset folder ``root`` (a symlink) is refused.
    """
    for suffix in SUFFIXES:
        path = folder / f"{stem}.csv{suffix}"
        if path.is_file():
            inside(root, path)
            return path
    return None


@contextmanager
def _open_text(path: Path) -> Iterator[io.TextIOBase]:
    opener = {".bz2": bz2.open, ".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            yield f
    except _READ_ERRORS as e:
        raise FolderFormatError(f"{path}: cannot be read ({short(str(e))})") from None


def _lines(path: Path, f: io.TextIOBase) -> Iterator[str]:
    """The file's lines, header included, within the bounds of this module."""
    total = 0
    for number in itertools.count(1):
        line = f.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise FolderFormatError(
                f"{path}: line {number} is longer than {MAX_LINE_CHARS} characters"
            )
        total += len(line)
        if total > MAX_CSV_CHARS:
            raise FolderFormatError(
                f"{path}: line {number}: more than {MAX_CSV_CHARS} characters in the file"
            )
        if number > MAX_ROWS + 1:
            raise FolderFormatError(f"{path}: more than {MAX_ROWS} data rows")
        yield line


def _parse_header(path: Path, line: str) -> list[str]:
    names = [c.strip().strip('"') for c in line.rstrip("\r\n").split(";")]
    if not line.strip() or not all(names):
        raise FolderFormatError(f"{path}: line 1 must be a ';'-separated header of names")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise FolderFormatError(f"{path}: column {short(name)} appears twice in the header")
        seen.add(name)
    return names


def count_rows(path: Path) -> int:
    """Number of data rows (lines after the header, a trailing empty line not counted)."""
    with _open_text(path) as f:
        n = sum(1 for line in _lines(path, f) if line.strip())
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
        lines_of_file = _lines(path, f)
        names = _parse_header(path, next(lines_of_file, ""))
        lines = list(itertools.islice(lines_of_file, start, stop))
        extra = stop == total and any(line.strip() for line in lines_of_file)
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
    return where if col is None else f"{where}, column {col + 1} ({short(names[col])})"


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
                    f"{path}: {_where(start, r, names, c)}: {short(cell)} is not a number"
                ) from None
    raise FolderFormatError(f"{path}: rows {start}..{start + len(lines) - 1} cannot be parsed")
