"""Starting a worker process: forked from a single-threaded parent, else a fresh interpreter.

Why not a ``multiprocessing`` start method: ``spawn`` and ``forkserver`` prepare the child by
importing the parent's ``__main__`` again, which fails for code read from stdin and re-runs
the whole of a script without a ``__main__`` guard; ``fork`` copies a parent that may run
threads (torch, BLAS, a recorder), and a lock held by one of them at that moment stays locked
forever in the child. Workers never need ``__main__``: their env factories travel
cloudpickled. So a worker starts in one of two ways:

* **forked** (Linux, when this process runs no other Python thread at that moment and has
  loaded none of the libraries with native thread pools or devices listed in
  :data:`FORK_UNSAFE_MODULES`, see :func:`fork_is_safe`): no other thread can hold a lock,
  so the copy is sound, and it costs milliseconds instead of an interpreter's start and
  imports (0.2-0.4 s). The child keeps only its descriptors, resets the parent's Python
  signal handlers, freezes the garbage collector on the parent's objects (no finalizer of
  the parent's, a GridVecEnv's say, ever runs in it), runs
  :func:`grid_vec.vector.worker.main` and leaves with ``os._exit``: no ``atexit`` handler
  or buffered output of the parent runs or is written twice;
* otherwise (threads, another system, or ``fork=False``) a **fresh interpreter**: ``fork`` +
  ``exec`` of ``sys.executable`` (``subprocess``: no Python code runs between the two, which
  makes it safe in a threaded parent), started with the parent's ``sys.path``.

Either way, the worker's two pipe ends and the shared block reach it as inherited
descriptors under the same numbers; every other descriptor of the parent is closed in it,
except, in a forked worker, those its ``logging`` handlers write to (what the envs log lands
where the parent's does).

The handle, :class:`WorkerProcess`, offers the part of ``multiprocessing.Process`` that
supervision uses. Its ``sentinel`` becomes readable when the process ends: a pidfd on Linux
(5.3 or later), elsewhere the read end of a pipe whose write end only the worker holds.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Sequence
from typing import Protocol

from gymnasium.vector.utils import clear_mpi_env_vars

# Runs in the fresh interpreter: the parent's import path first, so that the worker module and
# the modules the factories refer to import as they do in the parent (as ``spawn`` did).
_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from grid_vec.vector.worker import main; main(int(sys.argv[2]), int(sys.argv[3]))"
)


class WorkerProcess:
    """A started worker process: pid, liveness, exit code, signals and a sentinel."""

    def __init__(
        self, popen: subprocess.Popen | _ForkedChild | ForeignProcess, sentinel: int
    ) -> None:
        self._popen = popen
        self.sentinel = sentinel  # readable (POLLIN) once the process has ended
        self.pid = popen.pid
        self.forked = isinstance(popen, _ForkedChild)  # else a fresh interpreter

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


class _Signals:
    """``terminate`` and ``kill`` of a process handle, through its ``_signal``."""

    def _signal(self, signum: int) -> None:
        raise NotImplementedError

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)


class _ForkedChild(_Signals):
    """What :class:`WorkerProcess` uses of ``subprocess.Popen``, for a forked child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
                self.returncode = 0
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self.returncode

    def _signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


UNKNOWN_EXIT = 255
"""The exit status reported for a worker that is not this process's child (its status is its
parent's to read): it has ended, how is unknown."""


class ForeignProcess(_Signals):
    """What :class:`WorkerProcess` uses of ``subprocess.Popen``, for a worker another process
    started (a Ray actor on this node), watched through a pidfd (Linux 5.3 or later).

    Args:
        pid: the worker's process id.

    Raises:
        OSError: no pidfd for ``pid`` (the process has ended, or this system has none).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid)
        weakref.finalize(self, os.close, self._pidfd)

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = UNKNOWN_EXIT
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None and not select.select([self._pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
        self.returncode = UNKNOWN_EXIT
        return self.returncode

    def _signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)


class WorkerLauncher(Protocol):
    """Starts GridVecEnv's worker processes some other way than as its children (a Ray actor
    per worker on this node: :mod:`grid_vec.integrations.ray_launch`). A worker started so
    runs :func:`grid_vec.vector.worker.main` on the two pipe ends and uses the other
    descriptors (the shared block, the doorbell), which it received under numbers of its own
    (:func:`~grid_vec.vector.shared_buffers.adopt_descriptors`)."""

    def start(self, cmd_fd: int, reply_fd: int, other_fds: Sequence[int]) -> WorkerProcess:
        """Start a worker as :func:`start_worker` does; the process is not this one's child
        (it does not die with this process: its launcher ends it).

        Raises:
            OSError: the worker could not be started.
        """
        ...

    def close(self) -> None:
        """Release what the launcher holds (GridVecEnv's ``close`` calls it once its workers
        have ended)."""
        ...


# modules that run native thread pools or devices a forked copy cannot use safely: torch's
# and numba's OpenMP pools (a child using OpenMP hangs), CUDA, MPI, Ray's and gRPC's threads
FORK_UNSAFE_MODULES = ("torch", "tensorflow", "jax", "cupy", "numba", "mpi4py", "ray", "grpc")


def fork_is_safe() -> bool:
    """Whether a worker may be forked now: on Linux, with no Python thread but this one and
    none of :data:`FORK_UNSAFE_MODULES` loaded.

    Threads are what makes ``fork`` unsafe: one holding a lock at that moment leaves it
    locked forever in the child. Python threads are counted exactly. Native threads cannot be
    told apart from outside, so the libraries known to run pools that a child cannot reuse
    rule forking out by being loaded; the one pool every process here has, numpy's BLAS
    (OpenBLAS starts its threads at import), shuts down around ``fork`` by itself.
    """
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    return not any(name in sys.modules for name in FORK_UNSAFE_MODULES)


def start_worker(
    cmd_fd: int, reply_fd: int, other_fds: Sequence[int] = (), *, fork: bool = True
) -> WorkerProcess:
    """Start a worker reading commands from ``cmd_fd`` and replying on ``reply_fd``.

    Args:
        cmd_fd: read end of the command pipe, handed to the worker.
        reply_fd: write end of the reply pipe, handed to the worker.
        other_fds: further descriptors the worker inherits under the same numbers (the
            shared block).
        fork: fork the worker when :func:`fork_is_safe` (else, or when False, start a fresh
            interpreter).

    Returns:
        The handle of the started process. The caller still holds its own copies of the
        descriptors handed over, and closes the pipe ends it does not use.

    Raises:
        OSError: the process could not be started.
    """
    fds = [cmd_fd, reply_fd, *other_fds]
    death_r = death_w = -1
    if not _pidfds_work():
        death_r, death_w = os.pipe()  # the worker holds death_w until it ends
        fds.append(death_w)
    try:
        if fork and fork_is_safe():
            child: subprocess.Popen | _ForkedChild = _fork(cmd_fd, reply_fd, fds)
        else:
            child = _exec(cmd_fd, reply_fd, fds)
    except BaseException:
        if death_r >= 0:
            os.close(death_r)
        raise
    finally:
        if death_w >= 0:
            os.close(death_w)
    if death_r >= 0:
        return WorkerProcess(child, death_r)
    try:
        return WorkerProcess(child, os.pidfd_open(child.pid))  # a zombie has one too
    except BaseException:  # out of descriptors: a worker nobody could watch
        child.kill()
        child.wait()
        raise


def _exec(cmd_fd: int, reply_fd: int, fds: list[int]) -> subprocess.Popen:
    """A fresh interpreter running the worker."""
    if not sys.executable:
        raise OSError("cannot start worker processes: sys.executable is empty")
    argv = [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(cmd_fd), str(reply_fd)]
    with clear_mpi_env_vars():  # an MPI launcher's variables would confuse the workers
        return subprocess.Popen(argv, pass_fds=fds)


def _fork(cmd_fd: int, reply_fd: int, fds: list[int]) -> _ForkedChild:
    """A forked child running the worker (the caller checked :func:`fork_is_safe`)."""
    from grid_vec.vector.worker import main  # imported here, where the parent still runs

    for stream in (sys.stdout, sys.stderr):  # else the child could write the parent's again
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid:
        return _ForkedChild(pid)
    code = 1
    try:
        gc.freeze()  # the parent's objects: never collected here, so no finalizer of theirs runs
        _keep_only({*fds, *_logging_fds()})
        for signum in signal.valid_signals():
            if callable(signal.getsignal(signum)):  # the parent's Python handlers
                signal.signal(signum, signal.SIG_DFL)
        main(cmd_fd, reply_fd)
        code = 0
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _logging_fds() -> set[int]:
    """The descriptors the parent's ``logging`` handlers write to (a log file, say): kept
    open in a forked worker, so that what its envs log still lands there."""
    logging = sys.modules.get("logging")
    if logging is None:
        return set()
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    fds = set()
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            with contextlib.suppress(Exception):  # a handler without a stream, or closed
                fds.add(handler.stream.fileno())
    return fds


def _keep_only(fds: set[int]) -> None:
    """Close every descriptor of this (forked) process but stdin, stdout, stderr and ``fds``."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


@functools.cache
def _pidfds_work() -> bool:
    """Whether this system has pidfds (Linux 5.3 or later; Python 3.9 or later)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True
