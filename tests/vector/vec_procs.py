"""Process checks for the vector tests (Linux /proc)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable


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


def live_children(pid: int) -> list[int]:
    """Pids of the running (not zombie) direct children of process ``pid``: GridVecEnv's
    workers are plain subprocesses, not ``multiprocessing.active_children()``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found
