"""Starting a worker process: a fresh interpreter that imports only the worker module.

Why not a ``multiprocessing`` start method: ``spawn`` and ``forkserver`` prepare the child by
importing the parent's ``__main__`` again, which fails for code read from stdin and re-runs
the whole of a script without a ``__main__`` guard; ``fork`` copies a parent that may run
threads (torch, BLAS, a recorder), and a lock held by one of them at that moment stays locked
forever in the child. Workers never need ``__main__``: their env factories travel
cloudpickled. So a worker is ``fork`` + ``exec`` of ``sys.executable`` (``subprocess``: no
Python code runs between the two, which makes it safe in a threaded parent), started with the
parent's ``sys.path`` and running :func:`grid_vec.vector.worker.main`. Its two pipe ends and
the shared block reach it as inherited descriptors under the same numbers (``pass_fds``);
every other descriptor of the parent stays closed in it.

The handle, :class:`WorkerProcess`, offers the part of ``multiprocessing.Process`` that
supervision uses. Its ``sentinel`` becomes readable when the process ends: a pidfd on Linux
(5.3 or later), elsewhere the read end of a pipe whose write end only the worker holds.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
from collections.abc import Sequence

from gymnasium.vector.utils import clear_mpi_env_vars

# Runs in the fresh interpreter: the parent's import path first, so that the worker module and
# the modules the factories refer to import as they do in the parent (as ``spawn`` did).
_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from grid_vec.vector.worker import main; main(int(sys.argv[2]), int(sys.argv[3]))"
)


class WorkerProcess:
    """A started worker process: pid, liveness, exit code, signals and a sentinel."""

    def __init__(self, popen: subprocess.Popen, sentinel: int) -> None:
        self._popen = popen
        self.sentinel = sentinel  # readable (POLLIN) once the process has ended
        self.pid = popen.pid

    @property
    def exitcode(self) -> int | None:
        """The exit status, ``-N`` for signal N, or None while the process runs."""
        return self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        """Wait for the process to end, at most ``timeout`` seconds (None: no limit)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)

    def terminate(self) -> None:
        self._popen.terminate()  # no-op once the process has been reaped

    def kill(self) -> None:
        self._popen.kill()

    def close(self) -> None:
        """Release the sentinel (the process itself is left as it is)."""
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


def start_worker(cmd_fd: int, reply_fd: int, other_fds: Sequence[int] = ()) -> WorkerProcess:
    """Start a worker reading commands from ``cmd_fd`` and replying on ``reply_fd``.

    Args:
        cmd_fd: read end of the command pipe, handed to the worker.
        reply_fd: write end of the reply pipe, handed to the worker.
        other_fds: further descriptors the worker inherits under the same numbers (the
            shared block).

    Returns:
        The handle of the started process. The caller still holds its own copies of the
        descriptors handed over, and closes the pipe ends it does not use.

    Raises:
        OSError: the interpreter could not be started.
    """
    if not sys.executable:
        raise OSError("cannot start worker processes: sys.executable is empty")
    argv = [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(cmd_fd), str(reply_fd)]
    fds = [cmd_fd, reply_fd, *other_fds]
    death_r = death_w = -1
    if not _pidfds_work():
        death_r, death_w = os.pipe()  # the worker holds death_w until it ends
        fds.append(death_w)
    try:
        with clear_mpi_env_vars():  # an MPI launcher's variables would confuse the workers
            popen = subprocess.Popen(argv, pass_fds=fds)
    except BaseException:
        if death_r >= 0:
            os.close(death_r)
        raise
    finally:
        if death_w >= 0:
            os.close(death_w)
    if death_r >= 0:
        return WorkerProcess(popen, death_r)
    try:
        return WorkerProcess(popen, os.pidfd_open(popen.pid))  # a zombie has one too
    except BaseException:  # out of descriptors: a worker nobody could watch
        popen.kill()
        popen.wait()
        raise


@functools.cache
def _pidfds_work() -> bool:
    """Whether this system has pidfds (Linux 5.3 or later; Python 3.9 or later)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True
