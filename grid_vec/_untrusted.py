"""Bounded reading of files that may come from anyone: dataset folders and recorded runs.

The one place for what both kinds of untrusted files need: read a regular file of at most a
given size (never a FIFO or device, whose reads could block or never end), measure JSON
nesting before a recursive parser sees it (:func:`read_json` does both), and quote file
content in messages briefly. Each caller passes its own error type (a subclass of
:class:`UntrustedFileError`), so a dataset folder fails with ``FolderFormatError`` and a
recorded run with ``EpisodeDataError``.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAX_JSON_DEPTH = 32
"""Deepest JSON nesting read from an untrusted file (pandapower's grid.json nests about 5
levels, a run's meta.json fewer); ``json.loads`` recurses once per level."""

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN_ARRAY, _CLOSE_ARRAY, _OPEN_OBJECT, _CLOSE_OBJECT = b"[]{}"
_DEPTH_BLOCK = 2**20  # bytes scanned at once by json_depth: its memory is a few times this


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


def file_stamp(path: Path | str) -> tuple[int, int, int]:
    """What changes when a file is edited or replaced: ``(mtime_ns, size, inode)``, for
    cache keys. Raises OSError as ``os.stat`` does."""
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size, status.st_ino


@dataclass(frozen=True)
class JsonBounds:
    """What a JSON text may hold beyond its size: checked while it is parsed.

    Python's ``int`` refuses a digit string over 4,300 digits with a bare ``ValueError`` (and
    converts one below that in quadratic time), so integers are bounded by their digits
    before they are converted; floats by their magnitude (None: any finite float, and the
    constants ``NaN`` / ``Infinity`` that :func:`json.dumps` writes are accepted).
    """

    max_depth: int = MAX_JSON_DEPTH
    max_int_digits: int = 40  # a 128-bit seed has 39 digits: the largest integer we write
    max_abs_number: float | None = None
    constants: frozenset[str] = frozenset({"NaN", "Infinity", "-Infinity"})


class _BadNumber(Exception):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def parse_json(
    text: str, place: str, *, error: type[UntrustedFileError], bounds: JsonBounds = JsonBounds()
) -> Any:
    """``json.loads(text)`` within ``bounds``: the one parser of every untrusted JSON text.

    Args:
        text: the JSON text.
        place: where it comes from, the start of every message (``"runs/x/meta.json:"``, or
            a file and the place of a JSON document nested in one of its strings).
        error: the error type raised.
        bounds: the nesting and the numbers accepted.

    Returns:
        The parsed document.

    Raises:
        UntrustedFileError: (as ``error``, starting with ``place``) nesting deeper than
            ``bounds.max_depth`` (measured before parsing: :func:`json_depth`), a number out
            of ``bounds`` (naming its line), or text that is not JSON.
    """
    depth = json_depth(text)
    if depth > bounds.max_depth:
        raise error(f"{place} nests {depth} levels deep (limit {bounds.max_depth})")

    def parse_int(token: str) -> int:
        if len(token.lstrip("-")) > bounds.max_int_digits:
            raise _BadNumber(token)
        return int(token)

    def parse_float(token: str) -> float:
        # a float's decimal text converts in linear time; only its magnitude is bounded
        value = float(token)
        limit = bounds.max_abs_number
        if not np.isfinite(value) or (limit is not None and not abs(value) <= limit):
            raise _BadNumber(token)
        return value

    def parse_constant(token: str) -> float:
        if token not in bounds.constants:
            raise _BadNumber(token)
        return float(token)

    try:
        return json.loads(
            text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant
        )
    except _BadNumber as exc:
        line = text.count("\n", 0, max(text.find(exc.token), 0)) + 1
        limit = "" if bounds.max_abs_number is None else f", |x| <= {bounds.max_abs_number:g}"
        raise error(
            f"{place} line {line}: number {quote(exc.token)} is out of bounds (finite{limit}, "
            f"integers of at most {bounds.max_int_digits} digits)"
        ) from None
    except json.JSONDecodeError as exc:
        raise error(
            f"{place} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:  # the bounds above make these unreachable
        raise error(f"{place} cannot be parsed ({shorten(str(exc))})") from None


def read_json(
    path: Path,
    max_bytes: int,
    max_depth: int = MAX_JSON_DEPTH,
    *,
    error: type[UntrustedFileError],
    what: str,
    bounds: JsonBounds | None = None,
) -> Any:
    """The JSON document in the regular file ``path``, read bounded: at most ``max_bytes``,
    UTF-8, then :func:`parse_json` (nesting and numbers bounded).

    Args:
        path: the file.
        max_bytes: the largest size accepted.
        max_depth: the deepest nesting accepted (when ``bounds`` is None).
        error: the error type raised, naming ``path``.
        what: the file's role, for messages (``"action set"``).
        bounds: the nesting and numbers accepted (None: the defaults of :class:`JsonBounds`
            with ``max_depth``).

    Returns:
        The parsed document.

    Raises:
        UntrustedFileError: (``error``) the file is missing, not a regular file, too large,
            too deep, not UTF-8, not JSON, or holds a number out of bounds.
    """
    raw = read_bytes(path, max_bytes, error=error, what=what)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 (byte {exc.start})") from None
    bounds = JsonBounds(max_depth=max_depth) if bounds is None else bounds
    return parse_json(text, f"{path}: {what}", error=error, bounds=bounds)


def json_depth(text: str | bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings skipped),
    found without parsing, in time linear in its length: ``json.loads`` recurses once per
    level, so this is checked first.

    A quote is escaped when an odd run of backslashes precedes it; the other quotes toggle
    "inside a string", and the depth is the running sum of the brackets outside strings.
    Each is a vectorised numpy pass over blocks of ``_DEPTH_BLOCK`` bytes, the state carried
    from block to block (no regex, which backtracks on escapes; memory bounded whatever the
    size of a grid.json).

    Args:
        text: the JSON text, or its UTF-8 bytes (no byte of a multi-byte character is ASCII,
            so both hold the same brackets, quotes and backslashes).

    Returns:
        The exact depth of valid JSON (0 for a scalar). On invalid text, never less than the
        depth a parser reaches before its first error: the text up to there begins a valid
        JSON text, where this count is exact, and the count at a byte depends only on the
        bytes before it.
    """
    raw = text.encode("utf-8", "replace") if isinstance(text, str) else text
    depth = deepest = 0
    in_string = odd_run = False  # the state after the blocks read so far
    for begin in range(0, len(raw), _DEPTH_BLOCK):
        block = np.frombuffer(raw, np.uint8, min(_DEPTH_BLOCK, len(raw) - begin), begin)
        quotes, odd_run = _unescaped_quotes(block, odd_run)
        inside = np.bitwise_xor.accumulate(quotes.view(np.uint8)) ^ in_string
        in_string = bool(inside[-1])
        opens = (block == _OPEN_ARRAY) | (block == _OPEN_OBJECT)
        closes = (block == _CLOSE_ARRAY) | (block == _CLOSE_OBJECT)
        outside = np.flatnonzero((opens | closes) & (inside == 0))
        if outside.size:
            running = depth + np.cumsum(np.where(opens[outside], 1, -1))
            deepest, depth = max(deepest, int(running.max())), int(running[-1])
    return deepest


def _unescaped_quotes(block: np.ndarray, odd_run: bool) -> tuple[np.ndarray, bool]:
    """The quotes of ``block`` that no odd run of backslashes precedes (as a mask), and
    whether ``block`` ends with an odd run; ``odd_run``: whether the bytes before it do."""
    quotes = block == _QUOTE
    backslashes = np.flatnonzero(block == _BACKSLASH)
    if not backslashes.size:
        quotes[0] &= not odd_run
        return quotes, False
    breaks = np.flatnonzero(np.diff(backslashes) != 1)
    firsts = backslashes[np.concatenate(([0], breaks + 1))]
    lasts = backslashes[np.concatenate((breaks, [backslashes.size - 1]))]
    lengths = lasts - firsts + 1
    if firsts[0] == 0:
        lengths[0] += odd_run  # the run began in the previous block
    else:
        quotes[0] &= not odd_run
    escaped = lasts[lengths % 2 == 1] + 1  # the byte after an odd run
    quotes[escaped[escaped < block.size]] = False
    return quotes, bool(lasts[-1] == block.size - 1 and lengths[-1] % 2 == 1)


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
