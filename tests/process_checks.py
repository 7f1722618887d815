"""What a test may leave behind: live child processes and /dev/shm entries (Linux)."""

from __future__ import annotations

import os

# helper processes the standard library starts once and keeps for the process's lifetime
_STDLIB_HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver")


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
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        stdlib_helper = any(helper in cmdline for helper in _STDLIB_HELPERS)
        if int(fields[1]) == pid and fields[0] != "Z" and not stdlib_helper:
            found.append(int(entry))
    return found


def shm_entries() -> set[str]:
    """Entries of /dev/shm that could be leaks. Multiprocessing's semaphores (``sem.*``) are
    left out: the standard library unlinks them itself, and other processes on the machine
    create them for an instant, which would make the check flaky."""
    return {name for name in os.listdir("/dev/shm") if not name.startswith("sem.")}
