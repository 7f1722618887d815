"""What a test may leave behind: live child processes and /dev/shm entries (Linux)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator

# helper processes the standard library starts once and keeps for the process's lifetime
_STDLIB_HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver")


def state(pid: int) -> str:
    """The one-letter state of process ``pid`` (R, S, T for stopped, Z, ...); FileNotFoundError
    once it is gone."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        return state(pid) != "Z"
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


def live_children(pid: int) -> list[int]:
    """Pids of the running (not zombie) direct children of process ``pid``: GridVecEnv's
    workers are plain subprocesses, not ``multiprocessing.active_children()``.
    multiprocessing's resource tracker and fork server are left out (they outlive any env
    by design)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != pid or fields[0] == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if not any(helper in cmdline for helper in _STDLIB_HELPERS):
            found.append(int(entry))
    return found


def shm_entries() -> set[str]:
    """Entries of /dev/shm that could be leaks. Multiprocessing's semaphores (``sem.*``) are
    left out: the standard library unlinks them itself, and other processes on the machine
    create them for an instant, which would make the check flaky."""
    return {name for name in os.listdir("/dev/shm") if not name.startswith("sem.")}


@contextlib.contextmanager
def no_leftovers() -> Iterator[None]:
    """Assert the block leaves no live child process and no new /dev/shm entry behind."""
    before = shm_entries()
    children_before = set(live_children(os.getpid()))
    yield
    leftover_children = set(live_children(os.getpid())) - children_before
    assert not leftover_children, leftover_children
    assert shm_entries() <= before
