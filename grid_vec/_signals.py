"""Ctrl-C held off where a second one must not cut short what answers the first: the one
helper the CLI (closing workers) and the pool of ``grid-vec actions`` (stopping its
processes) share."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore Ctrl-C for the block (main thread only: elsewhere signals stay as they are,
    and Python lets only the main thread set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
