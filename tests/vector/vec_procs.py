"""Process checks for the vector tests (Linux /proc)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from process_checks import live_children  # noqa: F401 (the vector tests import it from here)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: Iterable[int], bound: float = 10.0) -> list[int]:
    """Wait until none of ``pids`` is alive, at most ``bound`` seconds (a bound on a hang,
    not a measure); returns those still alive."""
    pids = list(pids)
    deadline = time.monotonic() + bound
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if alive(pid)]


def state(pid: int) -> str:
    """The one-letter state of process ``pid`` (R, S, T for stopped, Z, ...)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
