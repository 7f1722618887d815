"""Bounded reading of files that may come from anyone: dataset folders and recorded runs.

The one place for what both kinds of untrusted files need: read a regular file of at most a
given size (never a FIFO or device, whose reads could block or never end), measure JSON
nesting before a recursive parser sees it, and quote file content in messages briefly. Each
caller passes its own error type (a subclass of :class:`UntrustedFileError`), so a dataset
folder fails with ``FolderFormatError`` and a recorded run with ``EpisodeDataError``.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

MAX_JSON_DEPTH = 32
"""Deepest JSON nesting read from an untrusted file (pandapower's grid.json nests about 5
levels, a run's meta.json fewer); ``json.loads`` recurses once per level."""

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENERS = np.frombuffer(b"[{", np.uint8)
_CLOSERS = np.frombuffer(b"]}", np.uint8)


class UntrustedFileError(ValueError):
    """An untrusted file is missing, too large or malformed; the message names the file."""


def regular_file_size(path: Path, *, error: type[UntrustedFileError], what: str = "file") -> int:
    """The size of ``path`` when it is a regular file.

    Raises:
        UntrustedFileError: (as ``error``, naming ``path`` and ``what``) a missing or
            unreadable path, or something other than a regular file (a directory, a FIFO or a
            device, whose reads could block or never end).
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: {what} is missing") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({shorten(exc.strerror or str(exc))})") from None
    if not stat.S_ISREG(status.st_mode):
        raise error(f"{path}: {what} is not a regular file")
    return status.st_size


def read_bytes(
    path: Path, max_bytes: int, *, error: type[UntrustedFileError], what: str = "file"
) -> bytes:
    """The content of the regular file ``path``, refused beyond ``max_bytes``.

    Args:
        path: the file.
        max_bytes: the largest size accepted; never more than ``max_bytes + 1`` bytes are read.
        error: the error type raised, naming ``path``.
        what: the file's role, for messages (``"episode metadata"``).

    Returns:
        The file's bytes.

    Raises:
        UntrustedFileError: (as ``error``) what :func:`regular_file_size` refuses, or a file
            larger than ``max_bytes``.
    """
    too_large = f"{path}: {what} is larger than the {max_bytes}-byte limit"
    if regular_file_size(path, error=error, what=what) > max_bytes:
        raise error(too_large)
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({shorten(exc.strerror or str(exc))})") from None
    if len(data) > max_bytes:  # it grew since stat
        raise error(too_large)
    return data


def file_stamp(path: Path) -> tuple[int, int, int]:
    """What changes when a file is edited or replaced: ``(mtime_ns, size, inode)``, for
    cache keys. Raises OSError as ``os.stat`` does."""
    status = path.stat()
    return status.st_mtime_ns, status.st_size, status.st_ino


def json_depth(text: str | bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped), found without
    parsing it: ``json.loads`` recurses once per level, so this is checked first."""
    raw = text.encode("utf-8", "replace") if isinstance(text, str) else text
    skeleton = np.frombuffer(_JSON_STRING.sub(b'""', raw), np.uint8)
    steps = np.isin(skeleton, _OPENERS).astype(np.int64) - np.isin(skeleton, _CLOSERS)
    return int(np.cumsum(steps).max(initial=0))


def quote(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (then ``...``): for quoting file content or
    recorded values in messages. A long string is cut before ``repr`` sees it, and numpy
    scalars read as plain Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    return text if len(text) <= limit else text[:limit] + "..."


def shorten(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters: a hostile file must not flood a
    message."""
    text = " ".join(str(text)[: 4 * limit].split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
