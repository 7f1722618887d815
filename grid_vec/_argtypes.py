"""argparse value types shared by the command-line entry points: a bad value is rejected
with a message naming it."""

from __future__ import annotations

import argparse
from pathlib import Path


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
