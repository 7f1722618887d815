"""argparse value types shared by the command-line entry points, and the error they end in:
a bad value is rejected with a message naming it, before any work is done."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from grid_vec._untrusted import shorten


class UsageError(Exception):
    """A mistake of the user: ``grid_vec.cli.main`` prints it as one line on stderr and
    returns 2."""

    def __init__(self, prog: str, message: str) -> None:
        # One short line, whatever the message quotes (an exception, a file's content).
        super().__init__(f"{prog}: {shorten(message, 800)}")


def _number(text: str, kind: type, what: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text[:40]!r}") from None


def positive_int(text: str) -> int:
    value = _number(text, int, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def positive_int_up_to(limit: int) -> Callable[[str], int]:
    """The type of a positive integer at most ``limit`` (a count that sizes lists or
    directories up front: beyond a bound, a typo would hang or fill the disk)."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit}, got {text[:40]}")
        return value

    return parse


def non_negative_int(text: str) -> int:
    value = _number(text, int, "a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a positive number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_empty_text(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def non_empty_path(text: str) -> Path:
    # Path("") is the working directory: an empty value must not silently mean it.
    return Path(non_empty_text(text))


def cli_name(text: str) -> str:
    """A name as the CLI spells it (``do-nothing``); the Python spelling (``do_nothing``)
    is accepted for it."""
    return text.replace("_", "-")


def _probe(directory: Path) -> None:
    """Create and remove a file in ``directory``: ``os.access`` answers yes to root and on
    read-only mounts, so only a real write tells."""
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as exc:
        reason = shorten(exc.strerror or str(exc), 80)
        raise argparse.ArgumentTypeError(f"cannot write in {directory} ({reason})") from None


def writable_file(text: str) -> Path:
    """An output file: not a directory, in a directory that exists or can be created (see
    :func:`writable_dir`; the writer creates it)."""
    path = non_empty_path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory (give a file name)")
    writable_dir(str(path.parent))
    return path


def writable_dir(text: str) -> Path:
    """An output directory: an existing one we may write in, or one that can be created
    (its nearest existing ancestor is a directory we may write in). Nothing is created."""
    path = non_empty_path(text)
    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{existing} is not a directory")
    _probe(existing)
    return path
