"""Reading untrusted dataset files within bounds: the error type, the limits, safe paths.

A dataset folder may come from anywhere. Every read here is bounded (file size, JSON nesting
depth, size of numbers), nothing read is imported or executed, no path may leave the
dataset folder (a symlink out of it is refused), and every failure is one
:class:`FolderFormatError` naming the file and, where it applies, the place in it. Values
quoted in messages are shortened (:func:`short`) so that a message never carries a huge line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grid_vec._untrusted import (
    MAX_JSON_DEPTH,
    JsonBounds,
    UntrustedFileError,
    quote,
    read_bytes,
    shorten,
)
from grid_vec._untrusted import parse_json as _parse_json

# grid.json: grid2op's 118-bus grids are ~5 MB; a 10x margin
MAX_GRID_JSON_BYTES = 64 * 2**20
# config.py, params.json, grid_layout.json, prods_charac.csv: a few KB in real datasets
MAX_SMALL_FILE_BYTES = 2**20
# start_datetime.info, time_interval.info: one short line
MAX_INFO_BYTES = 1024
# any number read from a JSON file or config.py (grid values are MW, kV, A, ohm...)
MAX_ABS_NUMBER = 1e15
_MAX_INT_DIGITS = 16  # bounds int() on a digit string before it is converted


class FolderFormatError(UntrustedFileError):
    """A dataset folder is malformed: the message names the file and the row/column or key."""


short = quote  # this layer's name for it: ``repr`` of file content, cut to 60 characters


def inside(root: Path, path: Path) -> Path:
    """``path`` resolved (symlinks followed), refused unless it lies within the folder ``root``.

    Args:
        root: the dataset folder, already resolved.
        path: a file or folder under ``root``.

    Returns:
        The resolved path.

    Raises:
        FolderFormatError: (naming ``path``) a symlink loop, a path that cannot be resolved,
            or one that leads out of ``root`` or back to ``root`` itself (a mix or scenario
            folder linked to its own dataset folder would be read inside itself forever).
    """
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as exc:  # Python < 3.13 raises RuntimeError on a loop
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "symlink loop"
        raise FolderFormatError(f"{path}: cannot be resolved ({shorten(reason)})") from None
    if resolved == root:
        raise FolderFormatError(f"{path}: points back to the dataset folder {root} (symlink?)")
    if not resolved.is_relative_to(root):
        raise FolderFormatError(f"{path}: points outside the dataset folder {root} (symlink?)")
    return resolved


def read_text(path: Path, max_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes (never reads more)."""
    data = read_bytes(path, max_bytes, error=FolderFormatError)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise FolderFormatError(f"{path}: line {line}: not UTF-8 text (byte {e.start})") from None


def load_json(path: Path, max_bytes: int = MAX_SMALL_FILE_BYTES) -> Any:
    """A JSON file's value, within the size, depth and number bounds of this module."""
    return parse_json(read_text(path, max_bytes), path)


FOLDER_JSON = JsonBounds(
    max_depth=MAX_JSON_DEPTH,
    max_int_digits=_MAX_INT_DIGITS,
    max_abs_number=MAX_ABS_NUMBER,
    constants=frozenset({"NaN"}),  # NaN marks a missing value; infinities are no grid values
)
"""The numbers a dataset's JSON may hold: those of a grid (MW, kV, A, ohm...)."""


def parse_json(text: str, path: Path, where: str = "") -> Any:
    """``text`` parsed within :data:`FOLDER_JSON`; errors name ``path`` and ``where`` (the
    place of ``text`` in the file, for a JSON document nested in a string)."""
    place = f"{path}: {where}" if where else f"{path}:"
    return _parse_json(text, place, error=FolderFormatError, bounds=FOLDER_JSON)


def check_number(value: Any, path: Path, where: str, *, positive: bool = False) -> float:
    """``value`` as a float: an int or float (not a bool), finite, within ``MAX_ABS_NUMBER``
    (and > 0 when ``positive``); the error names ``path`` and ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FolderFormatError(f"{path}: {where}: expected a number, got {short(value)}")
    if not abs(value) <= MAX_ABS_NUMBER:  # also False for NaN; ints compare exactly
        raise FolderFormatError(
            f"{path}: {where}: {short(value)} is not a finite number with |x| <= {MAX_ABS_NUMBER:g}"
        )
    if positive and not value > 0:
        raise FolderFormatError(f"{path}: {where}: must be > 0, got {short(value)}")
    return float(value)
