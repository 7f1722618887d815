"""Supervision of GridVecEnv's worker processes: start, bounded writes, recovery and close.

Mixed into :class:`~grid_vec.vector.vec_env.GridVecEnv`, which keeps the public API and the
waits of the hot path. Every way a worker can fail ends in an error within a known time:

- a command write that the worker does not read for ``step_timeout`` seconds (a stuck
  worker, a full pipe) kills the worker, and the wait for its reply reports the timeout;
- a wait for replies (a step, a reset, a call and the grid commands made of calls) that
  gets no timeout of its own ends ``step_timeout`` after it began, spins on the doorbell
  included; the workers late are then killed (SIGKILL: a stopped one ignores SIGTERM) and
  recovered as crashed ones;
- a dead or timed-out worker is restarted (``restart_on_crash``) or named in the error; a
  restart that fails leaves the worker stopped, the env idle, and the next ``reset()``
  starts it again;
- ``close()`` without a timeout waits :data:`CLOSE_GRACE_S` (or ``step_timeout`` when
  larger) for the workers to exit, then terminates those that did not;
- on Linux a worker dies with its parent even inside a long step (``PR_SET_PDEATHSIG``).

The parent's own slice (``step_in_parent``, :mod:`parent_slice`) has no process: it is
built at start-up, never fails as a process does, and is closed with the env.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from gymnasium import Space, logger
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.vector_env import AutoresetMode

from grid_vec.vector import protocol as p
from grid_vec.vector.doorbell import Doorbell, ParentBell
from grid_vec.vector.errors import WorkerCrashedError, WorkerTimeoutError, reraise
from grid_vec.vector.infos import InfoSchema
from grid_vec.vector.launch import WorkerLauncher, WorkerProcess, start_worker
from grid_vec.vector.parent_slice import ParentSlice
from grid_vec.vector.shared_buffers import SharedBlock
from grid_vec.vector.worker import WorkerSpec

CLOSE_GRACE_S = 5.0
"""Seconds ``close()`` without a timeout gives the workers to close their envs and exit
(``step_timeout`` instead when larger) before terminating them."""


class Worker:
    """Parent-side handle of one worker process, or of the parent's own slice
    (``in_parent``: served in this process by :attr:`local`, no process, pipe or doorbell)."""

    def __init__(
        self, index: int, env_ids: tuple[int, ...], blob: bytes, *, in_parent: bool = False
    ) -> None:
        self.index = index
        self.in_parent = in_parent
        self.local: ParentSlice | None = None
        self.env_ids = env_ids
        self.blob = blob  # cloudpickled factories, kept for restarts
        self.process: WorkerProcess | None = None
        self.cmd_fd = -1  # the parent's ends of the two pipes
        self.reply_fd = -1
        self.sentinel = -1  # readable once the process has ended
        self.alive = False
        self.timed_out = False  # killed for exceeding step_timeout
        self.stale = 0  # replies still owed for a *_wait that timed out
        self.pool: deque[list[int]] = deque()  # env ids of each in-flight pool command
        self.info_schema: InfoSchema | None = None  # of the raw info records it sends
        self.bell: ParentBell | None = None  # its doorbell, made at its first start

    def close_pipes(self) -> None:
        """Close the parent's pipe ends and the sentinel."""
        for fd in (self.cmd_fd, self.reply_fd):
            if fd >= 0:
                os.close(fd)
        self.cmd_fd = self.reply_fd = self.sentinel = -1
        if self.process is not None:
            self.process.close()


def stop_worker(w: Worker, *, kill: bool) -> None:
    """Join (or terminate, then kill) a worker process and close its pipes; one that exceeded
    ``step_timeout`` is killed at once."""
    if w.local is not None:
        w.local.close()
        w.local = None
    proc = w.process
    if proc is not None:
        if w.timed_out:
            # SIGKILL without the grace of SIGTERM: a stopped (SIGSTOP) worker would leave
            # SIGTERM pending and the join below would spend its whole second, past the
            # step_timeout that the error reports
            proc.kill()
        proc.join(timeout=0 if kill else 2.0)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=1.0)
        if proc.is_alive():
            proc.kill()  # SIGKILL also ends a stopped (SIGSTOP) process
            proc.join()
    w.close_pipes()
    w.alive = False
    w.stale, w.pool = 0, deque()  # a stopped worker owes no reply


def stop_all(workers: list[Worker]) -> None:
    for w in workers:
        stop_worker(w, kill=True)


def sub_env_errors(replies: dict[Worker, tuple[int, Any]]) -> list[Any]:
    """The error entries of the sub-envs in ``replies`` (worker: (code, payload))."""
    return [e for code, payload in replies.values() if code == p.ERROR for e in payload]


def timeout_error(name: str, timeout: float) -> multiprocessing.TimeoutError:
    """The error of a ``*_wait``/``recv`` whose own ``timeout`` ran out (workers kept)."""
    return multiprocessing.TimeoutError(
        f"The call to `{name}` has timed out after {timeout} second(s)."
    )


def _parent_pid_for_workers() -> int | None:
    """This process's pid when its workers may die with it: when this is the main thread,
    since ``PR_SET_PDEATHSIG`` fires when the *thread* that started the child ends, and only
    the main thread lasts as long as the process."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return os.getpid()


class Supervisor:
    """Starting, writing to, recovering and closing the workers of a GridVecEnv."""

    _workers: list[Worker]
    _block: SharedBlock
    _obs_shared: bool
    _state: AsyncState
    _pending: list[Worker]
    _poll_all: Any
    _busy: set[int]
    _seeds: list[int | None]
    _reset_entries: dict[int, list]
    single_observation_space: Space
    single_action_space: Space
    observation_mode: Any
    autoreset_mode: AutoresetMode
    spin_us: float
    step_timeout: float | None
    restart_on_crash: bool
    restarts: int
    _wait: Callable[..., tuple[dict[Worker, tuple[int, Any]], list[Worker], list[Worker]]]
    _check_spaces: Callable[[list[Worker]], bool]
    context: str | None
    worker_launcher: WorkerLauncher | None

    def _spawn(self, workers: list[Worker]) -> None:
        """Start ``workers``, then hand each its spec and env factories.

        Every process starts before the first hand-over, since a write of factories larger
        than a pipe buffer waits for the worker to finish importing: the imports then run in
        parallel. Start-up is not bounded by ``step_timeout`` (imports, building a grid); a
        worker dead at start-up is reported by the wait for its READY that follows.
        """
        for w in workers:
            if not w.in_parent:
                self._start(w)
        for w in workers:
            spec = WorkerSpec(
                env_ids=w.env_ids,
                block=self._block,
                obs_space=self.single_observation_space,
                act_space=self.single_action_space,
                obs_shared=self._obs_shared,
                autoreset_mode=self.autoreset_mode,
                observation_mode=self.observation_mode,
                doorbell=None if w.in_parent else w.bell.bell,
                spin_s=self.spin_us * 1e-6,
                info_schema=self._info_schema,
                # a launcher's workers are not this process's children: their launcher ends them
                parent_pid=None if self.worker_launcher else _parent_pid_for_workers(),
            )
            if w.in_parent:  # built here and now: its READY waits in its queue
                w.local = ParentSlice(spec, w.blob)
                w.alive, w.timed_out, w.stale, w.pool, w.info_schema = True, False, 0, deque(), None
                continue
            p.send(w.cmd_fd, p.encode(p.BUILD, (spec, w.blob)), w.sentinel, None)

    def _start(self, w: Worker) -> None:
        """Start the process of ``w`` with a fresh pair of pipes (and its doorbell, cleared)."""
        if w.bell is None:
            w.bell = ParentBell(Doorbell())
        w.bell.started()  # the previous process, if any, is stopped: nobody else writes
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            shared = [self._block.fd, w.bell.bell.fd]
            if self.worker_launcher is not None:
                process = self.worker_launcher.start(cmd_r, rep_w, shared)
            else:
                process = start_worker(cmd_r, rep_w, shared, fork=self.context in (None, "fork"))
        except BaseException:
            os.close(cmd_w)
            os.close(rep_r)
            raise
        finally:
            os.close(cmd_r)  # the worker's ends: it has its own copies
            os.close(rep_w)
        w.process, w.cmd_fd, w.reply_fd, w.sentinel = process, cmd_w, rep_r, process.sentinel
        # the parent's ends only (the worker's ends are other open files): a write to a full
        # pipe and a reply that arrives in pieces then wait in poll, under a deadline
        os.set_blocking(w.cmd_fd, False)
        os.set_blocking(w.reply_fd, False)
        w.alive, w.timed_out, w.stale, w.pool, w.info_schema = True, False, 0, deque(), None
        self._poll_all = None

    def _write(self, w: Worker, message: bytes) -> None:
        """Send a command (by doorbell or pipe); a worker that reads none of it for
        ``step_timeout`` is killed.

        Never raises for the worker's sake: the wait for its reply reports a dead or killed
        worker, as it reports one that dies while working.
        """
        if w.local is not None:  # the parent's slice: handled now, the reply queued
            w.local.command(message)
            return
        data = w.bell.command(message)
        if data is None:  # rung, and the worker spins: nothing to write
            return
        try:
            p.send(w.cmd_fd, data, w.sentinel, self.step_timeout)
        except p.Stalled:
            w.timed_out = True
            w.process.kill()

    def _step_deadline(self) -> float | None:
        """``step_timeout`` from now (a ``time.monotonic`` time), or None without a limit."""
        return None if self.step_timeout is None else time.monotonic() + self.step_timeout

    def _assert_alive(self, w: Worker) -> None:
        if w.alive:
            return
        hint = (
            "reset() restarts it"
            if self.restart_on_crash
            else "create the GridVecEnv with restart_on_crash=True to restart workers"
        )
        raise WorkerCrashedError(
            f"worker {w.index} is dead; sub-envs {list(w.env_ids)} were lost ({hint})",
            w.env_ids,
        )

    def _drain_stale(self) -> None:
        """Consume replies owed to *_wait calls that timed out, keeping pipes in step."""
        stale = [w for w in self._workers if w.stale and w.alive]
        while stale:
            deadline = self._step_deadline()
            replies, crashed, late = self._wait(stale, deadline, need_all=False)
            for w in replies:
                w.stale -= 1
            if late and not replies and not crashed:
                for w in late:
                    w.timed_out = True
                crashed = late
            if crashed:
                self._recover(crashed, during="call")
            stale = [w for w in self._workers if w.stale and w.alive]

    def _recover(self, workers: list[Worker], *, during: str) -> dict[Worker, tuple[int, Any]]:
        """Stop dead or stuck workers; restart them or raise naming the sub-envs lost.

        ``during``: "step" and "reset" restart (with ``restart_on_crash``) and return the
        restarted workers' reset replies; "call" restarts, then raises; "startup" raises.
        """
        for w in workers:
            self._stop(w, kill=True)
        lost = tuple(i for w in workers for i in w.env_ids)
        timed = [w for w in workers if w.timed_out]
        dead = [w for w in workers if not w.timed_out]
        causes = []
        if timed:
            causes.append(
                f"workers {[w.index for w in timed]} (pids {[w.process.pid for w in timed]}) "
                f"exceeded step_timeout={self.step_timeout}s and were killed"
            )
        if dead:
            causes.append(
                f"workers {[w.index for w in dead]} (pids {[w.process.pid for w in dead]}) "
                f"died (exit codes {[w.process.exitcode for w in dead]})"
            )
        cause = "; ".join(causes)
        if not self.restart_on_crash or during in ("call", "startup"):
            if self.restart_on_crash and during == "call":
                self._restart(workers, during="call")
            self._state = AsyncState.DEFAULT
            error = WorkerTimeoutError if timed else WorkerCrashedError
            hint = " while starting (see their stderr)" if during == "startup" else ""
            raise error(f"{cause}{hint}; sub-envs {list(lost)} lost", lost)
        logger.warn(f"GridVecEnv: {cause}; restarting sub-envs {list(lost)}")
        return self._restart(workers, during=during)

    def _respawn(self, workers: list[Worker]) -> None:
        """Start ``workers`` again and check their spaces; on failure, leave them stopped."""
        self.restarts += len(workers)
        try:
            self._spawn(workers)
            self._check_spaces(workers)
        except BaseException:
            self._abandon(workers)
            raise

    def _abandon(self, workers: list[Worker]) -> None:
        """Stop ``workers`` after a failed restart and leave the env idle: the next call says
        that they are dead, and the next ``reset()`` starts them again."""
        for w in workers:
            self._stop(w, kill=True)
        self._state = AsyncState.DEFAULT
        self._pending = []

    def _restart(self, workers: list[Worker], *, during: str) -> dict[Worker, tuple[int, Any]]:
        """Restart ``workers`` and reset their sub-envs: the reset of the call when ``during``
        is "reset", else a fresh one (a step then reports them truncated). Returns the
        resets' replies.

        Raises:
            WorkerCrashedError: a restarted worker died again (WorkerTimeoutError: it
                exceeded ``step_timeout``); it stays stopped until the next ``reset()``.
        """
        self._respawn(workers)
        try:
            for w in workers:
                if during == "reset":
                    entries = self._reset_entries[w.index]
                else:
                    entries = [(None, None, True) for _ in w.env_ids]
                    for i in w.env_ids:
                        self._seeds[i] = None
                self._write(w, p.encode(p.RESET, entries))
            deadline = self._step_deadline()
            replies, crashed, late = self._wait(workers, deadline)
            failed = crashed + late
            if failed:
                error = WorkerTimeoutError if late or any(w.timed_out for w in failed) else None
                lost = tuple(i for w in failed for i in w.env_ids)
                what = "exceeded step_timeout in their first reset" if error else "died again"
                raise (error or WorkerCrashedError)(
                    f"restarted workers {[w.index for w in failed]} {what}; sub-envs "
                    f"{list(lost)} lost (reset() restarts them)",
                    lost,
                )
            errors = sub_env_errors(replies)
            if errors:
                reraise(errors)
        except BaseException:
            self._abandon(workers)
            raise
        return replies

    def _revive(self, entries: dict[int, list]) -> None:
        """Restart the workers stopped by a failed restart, before a reset (with
        ``restart_on_crash``); their sub-envs outside ``reset_mask`` are reset too, unseeded,
        since their episodes were lost."""
        dead = [w for w in self._workers if not w.alive]
        if not dead or not self.restart_on_crash:
            return
        logger.warn(f"GridVecEnv: restarting workers {[w.index for w in dead]} for reset()")
        self._respawn(dead)
        for w in dead:
            for k, i in enumerate(w.env_ids):
                if entries[w.index][k] is None:
                    entries[w.index][k] = (None, None, False)
                    self._seeds[i] = None

    # ---------------------------------------------------------------------- closing
    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        """Stop the workers and release every resource.

        Args:
            timeout: seconds the workers get to close their envs and exit; default
                :data:`CLOSE_GRACE_S`, or ``step_timeout`` when larger. Workers still
                running then are terminated.
            terminate: terminate the workers at once, without asking them to close.
        """
        if self._state != AsyncState.DEFAULT:  # AsyncVectorEnv's warning, terminate or not
            logger.warn(
                f"Calling `close` while waiting for a pending call to `{self._state.value}` "
                "to complete."
            )
        stuck = list(self._workers)
        try:
            if not terminate:
                stuck = self._close_gracefully(timeout)
        finally:
            for w in self._workers:
                self._stop(w, kill=w in stuck)
            self._state = AsyncState.DEFAULT
            if self.worker_launcher is not None:
                self.worker_launcher.close()

    def _close_gracefully(self, timeout: float | None) -> list[Worker]:
        """Ask every live worker to close its envs and exit; returns those that did not
        acknowledge within the limit."""
        limit = timeout if timeout is not None else max(CLOSE_GRACE_S, self.step_timeout or 0)
        deadline = time.monotonic() + limit
        stuck: list[Worker] = []
        pending: list[Worker] = []
        for w in self._workers:
            if not w.alive or w.local is not None:  # the parent's slice: closed by _stop
                continue
            owed = (
                w.stale + len(w.pool) + (w in self._pending and self._state != AsyncState.DEFAULT)
            )
            data = w.bell.command(p.encode(p.CLOSE))
            try:
                sent = data is None or p.send(w.cmd_fd, data, w.sentinel, 0)
            except p.Stalled:  # its command pipe is full: it does not read
                stuck.append(w)
                continue
            if sent:
                w.stale = owed  # replies to skip before the CLOSE acknowledgement
                pending.append(w)
        while pending:
            replies, crashed, late = self._wait(pending, deadline, need_all=False)
            if late and not replies and not crashed:
                return stuck + late
            for w in replies:
                if w.stale:
                    w.stale -= 1
                else:
                    pending.remove(w)
            for w in crashed:
                pending.remove(w)
        return stuck

    def _stop(self, w: Worker, *, kill: bool) -> None:
        stop_worker(w, kill=kill)
        self._poll_all = None
