"""GridVecEnv: a drop-in for gymnasium's AsyncVectorEnv with a compact protocol.

Each worker process carries a contiguous slice of sub-envs. Actions, observations, rewards and
termination flags live in one shared block (:mod:`shared_buffers`); commands are 5-byte
headers over pipes (:mod:`protocol`), with pickled payloads only for infos, calls and errors.
A lockstep step or reset is *rung* through a doorbell in shared memory (:mod:`doorbell`):
both sides spin on it for up to ``spin_us``, yielding the core at each turn, then sleep on
their pipe, and a ring writes a wake-up to the pipe only for a side that sleeps. So a quick
reply costs no system call, and with more processes than cores a step costs no more than a
pipe round trip. Asleep, the parent waits in ``poll`` on the reply pipes and on the process
sentinels, so a worker that dies is noticed at once. Timeouts, restarts and closing are in
:mod:`supervision`, pool mode in :mod:`pool`. With ``step_in_parent`` (the default for
``make_vec``'s GridEnvs in several slices) the last slice has no process: this process
steps it with the worker's engine while the workers step theirs (:mod:`parent_slice`).

Start method (see :mod:`launch`): a worker is forked when the parent runs a single thread
at that moment (Linux), which costs milliseconds, and is otherwise a fresh interpreter
(``fork`` + ``exec``) that imports only numpy, gymnasium and cloudpickle plus what the env
factory needs (0.2-0.4 s). Unlike ``spawn`` and ``forkserver``, neither imports the parent's
``__main__``, so GridVecEnv works from ``python -c``, code on stdin, notebooks and scripts
without a ``__main__`` guard; unlike a plain ``fork``, neither copies a parent whose threads
(torch, BLAS) could hold a lock. ``context="spawn"`` or ``"forkserver"`` asks for fresh
interpreters always; ``None`` (the default) and ``"fork"`` choose as above.

Over 600 lines: the AsyncVectorEnv API with its gymnasium-style docstrings and the waits of
the hot path read together, as in gymnasium's own AsyncVectorEnv; argument checks are in
:mod:`arguments`, action routing in :mod:`actions`, re-raising in :mod:`errors`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import os
import select
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

import cloudpickle
import numpy as np
from gymnasium import Env, Space
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import (
    batch_differing_spaces,
    batch_space,
    concatenate,
    create_empty_array,
)
from gymnasium.vector.vector_env import AutoresetMode, VectorEnv

from grid_vec.vector import arguments
from grid_vec.vector import protocol as p
from grid_vec.vector.actions import ActionRouter, grid_env_check, is_custom_space
from grid_vec.vector.declared import is_grid_env
from grid_vec.vector.doorbell import (
    IN_PIPE,
    STRONG_ORDER,
    ParentBell,
    read_skipping_wakes,
    spin,
)
from grid_vec.vector.errors import reraise
from grid_vec.vector.grid_commands import GridCommands
from grid_vec.vector.infos import (
    ColumnBatch,
    InfoSchema,
    merge_slices,
)
from grid_vec.vector.launch import WorkerLauncher
from grid_vec.vector.parent_slice import parent_last
from grid_vec.vector.pool import PoolMode
from grid_vec.vector.shared_buffers import SharedBlock, flat_leaves, join
from grid_vec.vector.supervision import (
    Supervisor,
    Worker,
    stop_all,
    sub_env_errors,
    timeout_error,
)
from grid_vec.vector.worker import one_batch_factory

StepResult = tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]
"""What :meth:`GridVecEnv.step` returns: ``(observations, rewards, terminations,
truncations, infos)``, batched. A plain tuple, as AsyncVectorEnv returns (code comparing
results by exact type, such as gymnasium's ``data_equivalence``, sees no difference)."""

_DEFAULT_SPIN_US = 1000.0
_BARE = (p.OK, p.OK_BLOCK)  # replies of a step that carry nothing (infos in the block)
_RESERVED = ("reset", "step", "close", "_setattr", "_check_spaces")


def _readable(fd: int) -> bool:
    """Whether ``fd`` has data (or EOF) to read right now (poll: no 1024-descriptor limit)."""
    poller = select.poll()
    poller.register(fd, p.POLL_IN)
    return bool(poller.poll(0))


def _any_reply(bells: list[ParentBell], poller: select.poll | None) -> bool:
    """Whether a ring came, or (with ``poller``) a reply pipe or sentinel has an event."""
    return any(b.rang() for b in bells) or (poller is not None and bool(poller.poll(0)))


class GridVecEnv(GridCommands, PoolMode, Supervisor, VectorEnv):
    """Vector env running sub-envs in worker processes, behaving like ``AsyncVectorEnv``.

    Args: ``env_fns``, ``shared_memory``, ``copy``, ``context``, ``daemon``,
    ``observation_mode`` and ``autoreset_mode`` as in AsyncVectorEnv (``shared_memory=True``
    with an observation space of the user's own is a ValueError there as here; other
    spaces without a fixed layout travel pickled). ``context``: ``"spawn"`` or
    ``"forkserver"`` starts every worker as a fresh interpreter; ``None`` and ``"fork"`` fork
    it when this process runs a single thread, which is safe and quick, else start a fresh
    interpreter (see the module's notes on the start method). ``daemon`` is accepted for
    compatibility: workers always stop with the env, at the latest at interpreter exit (and
    on Linux they die with the parent process). Beyond AsyncVectorEnv's:
        envs_per_worker: sub-envs carried by one worker, stepped in one round trip.
            Default: ``ceil(num_envs / usable cores)``.
        step_timeout: seconds any command may wait for a worker when its ``*_wait`` gets
            no timeout: a ``step``/``reset`` (or a pool-mode step awaited by :meth:`recv`),
            a :meth:`call` and what goes through it (``get_attr``, ``set_attr``, the grid
            commands: ``simulate``, ``simulate_candidates``, ``snapshot``, ...); and seconds
            a worker may leave a command unread or a reply half-written. A worker that
            exceeds it is killed and handled as crashed (:class:`WorkerTimeoutError`).
        restart_on_crash: restart a dead (or timed-out) worker during ``step``/``reset``;
            its sub-envs come back reset, with ``truncated=True`` on a step and
            ``infos["worker_restarted"]`` True (their episodes were lost: the Runner plays
            them again). Otherwise a :class:`WorkerCrashedError` names the sub-envs lost. A
            restart that fails raises too; the env stays usable and the next ``reset()``
            restarts the worker.
        batch_size: number of envs :meth:`recv` returns in pool mode (default ``num_envs``).
        spin_us: microseconds the parent and the workers spin on the doorbell for a
            message (yielding the core at each turn) before sleeping on the pipe. It saves
            the system calls and the wake-up of a sleeping process, and on virtual machines
            it keeps a core that would otherwise idle from coming back slow (on the 2-core
            VM of the benchmarks, a batch of 16 case14 steps took about 1.4x longer right
            after 1 ms of sleep than after none). A wait never spins past its deadline
            (its ``timeout``, else ``step_timeout``).
            Default: 1000 when there are no more workers than usable cores, else 0.
            Always 0 on processors other than x86-64, where every message takes the pipe
            (see :mod:`grid_vec.vector.doorbell`).
        step_in_parent: step the last slice of ``envs_per_worker`` sub-envs in this process,
            with the worker's engine, while the worker processes step the others
            (:mod:`grid_vec.vector.parent_slice`): one process fewer, and the parent's core
            steps envs instead of waiting on the doorbells. ``step_async`` then returns once
            this process has stepped its slice; the slice is not bounded by
            ``step_timeout`` nor restarted, and :meth:`worker_pids` gives this process's
            pid for it. Default (None): on for GridEnvs of one factory (as
            :func:`grid_vec.make_vec` makes them) in several slices, unless
            ``step_timeout`` or ``restart_on_crash`` asks for what only a process gives
            (on the 2-core VM of the benchmarks it stepped 1.04-1.25x faster than two
            workers, docs/scaling.md); off for other envs.
        worker_launcher: starts the worker processes instead of this process
            (:class:`~grid_vec.vector.launch.WorkerLauncher`: Ray actors on this node, say,
            :mod:`grid_vec.integrations.ray_launch`); they speak the same protocol over the
            same pipes, shared block and doorbells. None: this process's children.

    Pool mode: after :meth:`reset`, :meth:`send` actions to any envs and :meth:`recv` the
    first ``batch_size`` envs that are done, with their ids. Per-env calls:
    :meth:`call_each`.

    GridEnvs of one factory: when a worker's ``env_fns`` are one and the same
    ``GridEnvFactory`` object (as :func:`grid_vec.make_vec` hands them out), its envs are the
    rows of one batched core and a lockstep :meth:`step` steps them with one batch step;
    they are still complete GridEnvs for every other command, and play exactly what envs
    built one by one play. They share their rules: ``set_parameters`` takes one set for all.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Env]],
        shared_memory: bool = True,
        copy: bool = True,
        context: str | None = None,
        daemon: bool = True,
        *,
        observation_mode: str | tuple[Space, Space] = "same",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        envs_per_worker: int | None = None,
        step_timeout: float | None = None,
        restart_on_crash: bool = False,
        batch_size: int | None = None,
        spin_us: float | None = None,
        step_in_parent: bool | None = None,
        worker_launcher: WorkerLauncher | None = None,
    ) -> None:
        self._workers: list[Worker] = []  # first, so that __del__ always finds it
        self.worker_launcher = worker_launcher
        env_fns = list(env_fns)
        if not env_fns or not all(callable(fn) for fn in env_fns):
            raise ValueError(f"env_fns must be a non-empty sequence of callables, got {env_fns!r}")
        self.num_envs = len(env_fns)
        self.env_fns = env_fns
        self.shared_memory = shared_memory
        self.copy = copy
        if context is not None and context not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"context must be None or one of {multiprocessing.get_all_start_methods()}, "
                f"got {context!r}"
            )
        self.context = context
        self.daemon = daemon
        self.observation_mode = observation_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.envs_per_worker = arguments.envs_per_worker(self.num_envs, envs_per_worker)
        if step_timeout is not None and not (
            isinstance(step_timeout, (int, float)) and step_timeout > 0
        ):
            raise ValueError(f"step_timeout must be a positive number or None, got {step_timeout}")
        self.step_timeout = step_timeout
        self.restart_on_crash = bool(restart_on_crash)
        self.batch_size = arguments.batch_size(self.num_envs, batch_size)
        if spin_us is not None and not (isinstance(spin_us, (int, float)) and spin_us >= 0):
            raise ValueError(f"spin_us must be a number >= 0 or None, got {spin_us!r}")
        num_workers = math.ceil(self.num_envs / self.envs_per_worker)
        if spin_us is None:
            spin_us = _DEFAULT_SPIN_US if num_workers <= arguments.usable_cpus() else 0.0
        self.spin_us = float(spin_us) if STRONG_ORDER else 0.0

        self._read_spaces()
        if shared_memory and is_custom_space(self.single_observation_space):
            raise ValueError(
                f"GridVecEnv(..., shared_memory=True) needs an observation space made of "
                f"gymnasium's spaces, got {self.single_observation_space}; use "
                "shared_memory=False to send custom observations pickled"
            )
        self._obs_shared = shared_memory and flat_leaves(self.single_observation_space) is not None
        # GridEnvs' infos of fixed layout travel in the block too, as observations do
        self._info_schema = self._info_schema if self._obs_shared else None
        self._block = SharedBlock(
            self.num_envs,
            self.single_observation_space if self._obs_shared else None,
            self.single_action_space,  # a space without a fixed layout gets no array
            None if self._info_schema is None else self._info_schema.dtype,
        )
        self._actions = ActionRouter(self.single_action_space, self.num_envs, self._block.act)
        if self._obs_shared:
            self.observations = join(self.single_observation_space, self._block.obs)
        else:
            self.observations = create_empty_array(
                self.single_observation_space, n=self.num_envs, fn=np.zeros
            )
        self._last_obs: list[Any] = [None] * self.num_envs
        self._seeds: list[int | None] = [None] * self.num_envs
        self._state = AsyncState.DEFAULT
        self._pending: list[Worker] = []
        # poll set over every worker's reply pipe and sentinel, reused by the waits that
        # concern all workers (step, reset); rebuilt after a worker is started or stopped
        self._poll_all: tuple[select.poll, dict[int, Worker]] | None = None
        self._call_order: list[tuple[Worker, int]] = []
        self._reset_entries: dict[int, list] = {}
        # pool mode: env ids back from the workers, in chunks as they came; a chunk of a
        # worker's whole slice may hold its infos as records (else they are in _ready_info)
        self._ready: deque[tuple[list[int], ColumnBatch | None]] = deque()
        self._ready_info: dict[int, dict] = {}
        self._busy: set[int] = set()
        self._schemas: dict[InfoSchema, InfoSchema] = {}
        self._in_block: list[Worker] = []  # workers whose last bare reply was OK_BLOCK
        if self._info_schema is not None:  # one object per schema: the block's too
            self._schemas[self._info_schema] = self._info_schema
        self.restarts = 0

        size = self.envs_per_worker
        starts = range(0, self.num_envs, size)
        if step_in_parent is None:
            step_in_parent = (
                len(starts) > 1
                and one_batch_factory(env_fns)
                and step_timeout is None
                and not restart_on_crash
            )
        self.step_in_parent = bool(step_in_parent)
        for index, start in enumerate(starts):
            ids = tuple(range(start, min(start + size, self.num_envs)))
            blob = cloudpickle.dumps([env_fns[i] for i in ids])
            in_parent = self.step_in_parent and index == len(starts) - 1
            self._workers.append(Worker(index, ids, blob, in_parent=in_parent))
        # the parent's slice is the last one: commands written in worker order reach the
        # processes first, so that they step while the parent steps its own
        self._remote = [w for w in self._workers if not w.in_parent]
        self._worker_of = [w for w in self._workers for _ in w.env_ids]
        self._local_of = [k for w in self._workers for k in range(len(w.env_ids))]
        # At interpreter exit, stop the workers of a GridVecEnv never closed (holds the worker
        # list, not self).
        self._exit_guard = weakref.finalize(self, stop_all, self._workers)
        try:
            self._spawn(self._workers)
            if self._check_spaces(self._workers) and self._grid_check is not None:
                self._actions.env_check = self._grid_check  # every sub-env is a GridEnv
        except BaseException:
            self.close(terminate=True)
            raise

    # ----------------------------------------------------------------- construction
    def _read_spaces(self) -> None:
        dummy = self.env_fns[0]()
        grid_env = is_grid_env(dummy)
        self._grid_check = grid_env_check(dummy) if grid_env else None
        self._info_schema = InfoSchema.of(dummy.fixed_info()) if grid_env else None
        self.metadata = dict(dummy.metadata)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = dummy.render_mode
        self.single_action_space = dummy.action_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        mode = self.observation_mode
        if isinstance(mode, tuple) and len(mode) == 2:
            if not all(isinstance(s, Space) for s in mode):
                raise TypeError(
                    f"Expected both elements of observation_mode to be Spaces, got "
                    f"{type(mode[0])} and {type(mode[1])}"
                )
            self.observation_space, self.single_observation_space = mode
        elif mode == "same":
            self.single_observation_space = dummy.observation_space
            self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        elif mode == "different":
            env_spaces = []
            for fn in self.env_fns:
                env = fn()
                env_spaces.append(env.observation_space)
                env.close()
            self.single_observation_space = env_spaces[0]
            self.observation_space = batch_differing_spaces(env_spaces)
        else:
            raise ValueError(
                "Invalid `observation_mode`, expected: 'same' or 'different' or tuple of single "
                f"and batch observation space, actual got {mode}"
            )
        dummy.close()

    def _check_spaces(self, workers: list[Worker]) -> bool:
        """Check the spaces the sub-envs of ``workers`` report at start-up; True when every
        one is a GridEnv.

        Raises:
            RuntimeError: a sub-env's observation or action space does not fit."""
        replies = self._gather(workers, None, name="startup", bound=False)
        flags = [f for w in workers for f in replies[w]]
        if not all(same_obs for same_obs, _, _ in flags):
            if self.observation_mode == "same":
                raise RuntimeError(
                    "GridVecEnv(..., observation_mode='same') however some of the sub-environments "
                    "observation spaces are not equivalent. If this is intentional, use "
                    "`observation_mode='different'` instead."
                )
            raise RuntimeError(
                "GridVecEnv(..., observation_mode='different' or custom space) however the "
                "sub-environment's observation spaces do not share a common shape and dtype."
            )
        if not all(same_act for _, same_act, _ in flags):
            raise RuntimeError(
                f"Some environments have an action space different from "
                f"`{self.single_action_space}`. In order to batch actions, the action spaces "
                "from all environments must be equal."
            )
        return all(grid_env for _, _, grid_env in flags)

    # ------------------------------------------------------------------ public API
    @property
    def seeds(self) -> tuple[int | None, ...]:
        """The seed each sub-env received at its latest reset (None: reset without a seed)."""
        return tuple(self._seeds)

    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """The ``np_random_seed`` of every sub-env."""
        return self.get_attr("np_random_seed")

    @property
    def np_random(self) -> tuple[np.random.Generator, ...]:
        """The numpy generators of every sub-env."""
        return self.get_attr("np_random")

    @property
    def num_workers(self) -> int:
        """The number of slices of sub-envs (``ceil(num_envs / envs_per_worker)``): one per
        worker process, the last one stepped by this process with ``step_in_parent``."""
        return len(self._workers)

    def worker_pids(self) -> tuple[int | None, ...]:
        """The process id of each worker, in worker order (None for a dead one; this
        process's for the slice it steps itself with ``step_in_parent``)."""
        return tuple(
            (os.getpid() if w.in_parent else w.process.pid) if w.alive else None
            for w in self._workers
        )

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``) and batch the results.

        Args:
            seed: None, an int (sub-env ``i`` gets ``seed + i``) or one seed (or None) per
                sub-env.
            options: passed to every sub-env's ``reset``; its ``"reset_mask"`` (a bool array
                of shape ``(num_envs,)``) selects the sub-envs to reset.

        Returns:
            The batched observations and infos.

        Raises:
            TypeError, ValueError: a malformed ``seed`` or ``reset_mask``.
            ClosedEnvironmentError: the env was closed. AlreadyPendingCallError: a call is
                pending. WorkerCrashedError, WorkerTimeoutError: a worker died or exceeded
                ``step_timeout`` (see ``restart_on_crash``).
            Exception: a sub-env's own error, re-raised with its index (``env_index``).

        Example:
            >>> envs = GridVecEnv([lambda: gym.make("CartPole-v1")] * 2)  # doctest: +SKIP
            >>> obs, infos = envs.reset(seed=42)  # doctest: +SKIP
        """
        self.reset_async(seed=seed, options=options)
        return self.reset_wait()

    def reset_async(
        self, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> None:
        """Send the resets and return at once; collect them with :meth:`reset_wait`.

        Args and Raises: as :meth:`reset`, except the errors of the sub-envs and workers,
        which :meth:`reset_wait` raises.
        """
        self._assert_is_running()
        seeds = arguments.seed_list(self.num_envs, seed)
        self._assert_idle("reset_async")
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = arguments.reset_mask(self.num_envs, options.pop("reset_mask"))
        self._drain_stale()
        entries = {
            w.index: [(seeds[i], options, False) if mask[i] else None for i in w.env_ids]
            for w in self._workers
        }
        self._revive(entries)
        for i in np.flatnonzero(mask):
            self._seeds[i] = seeds[i]
        self._reset_entries = entries
        self._send_all(p.RESET, lambda w: entries[w.index])
        self._state = AsyncState.WAITING_RESET

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """Wait for the resets sent by :meth:`reset_async`.

        Args:
            timeout: seconds to wait; None: ``step_timeout`` (if set, a worker then still
                busy is killed and handled as crashed), else no limit.

        Returns:
            The batched observations and infos.

        Raises:
            NoAsyncCallError: no :meth:`reset_async` is pending.
            multiprocessing.TimeoutError: ``timeout`` ran out (the workers are kept).
            WorkerCrashedError, WorkerTimeoutError, Exception: as :meth:`reset`.
        """
        self._expect(AsyncState.WAITING_RESET, "reset_wait", "reset_async")
        replies = self._gather(self._pending, timeout, name="reset_wait")
        infos = self._merge(replies)
        self._state = AsyncState.DEFAULT
        return self._observations(), infos

    def step(self, actions: Any) -> StepResult:
        """Step every sub-env with its action from the batch ``actions``.

        Each sub-env receives the element ``gymnasium.vector.utils.iterate`` yields for it,
        as under AsyncVectorEnv. A sub-env whose episode ended is reset as ``autoreset_mode``
        says.

        A batch refused is refused whole, before anything is sent: no sub-env plays a step of
        it, whatever its dtype or layout. When every sub-env is a GridEnv, the whole batch is
        checked here as GridEnvs check actions (``grid_vec.env.action_input.batch_actions``,
        as ``BatchedGridVecEnv`` checks it); other sub-envs' own checks run in their ``step``.

        Args:
            actions: one action per sub-env, batched as in ``action_space``.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, batched.

        Raises:
            ValueError: an action is outside ``single_action_space`` or the batch does not
                hold ``num_envs`` actions (spaces of the user's own are checked only for the
                count, as AsyncVectorEnv does); for GridEnvs, its message and ``env_index``
                name the first sub-env whose action is refused.
            ClosedEnvironmentError, AlreadyPendingCallError, WorkerCrashedError,
                WorkerTimeoutError, Exception: as :meth:`reset`.

        Example:
            >>> obs, rewards, terminations, truncations, infos = envs.step(
            ...     envs.action_space.sample())  # doctest: +SKIP
        """
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Check and publish ``actions``, tell every worker to step, and return at once.

        Args and Raises: as :meth:`step`, except the errors of the sub-envs and workers,
        which :meth:`step_wait` raises.
        """
        self._assert_is_running()
        self._assert_idle("step_async")
        pickled = self._actions.write(actions, None)
        self._drain_stale()
        if pickled is None:  # STEP_CHECKED: the workers' GridEnvs need not check them again
            self._send_all(p.STEP if self._actions.env_check is None else p.STEP_CHECKED)
        else:
            self._send_all(
                p.STEP, lambda w: (range(len(w.env_ids)), [pickled[i] for i in w.env_ids])
            )
        self._state = AsyncState.WAITING_STEP

    def step_wait(self, timeout: float | None = None) -> StepResult:
        """Wait for the step sent by :meth:`step_async`.

        Args:
            timeout: as in :meth:`reset_wait`.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, batched.

        Raises:
            NoAsyncCallError: no :meth:`step_async` is pending.
            multiprocessing.TimeoutError: ``timeout`` ran out (the workers are kept).
            WorkerCrashedError, WorkerTimeoutError, Exception: as :meth:`reset`.
        """
        self._expect(AsyncState.WAITING_STEP, "step_wait", "step_async")
        limit = timeout if timeout is not None else self.step_timeout
        # one deadline for the whole wait, taken before the hot path spins: the general wait
        # after a spin that saw no ring keeps what is left of it, not a fresh limit
        deadline = None if limit is None else time.monotonic() + limit
        spin_until = self._spin_until(limit)
        if timeout is None and self._took_bare_oks(spin_until):
            infos = self._bare_step_infos()  # no worker had an info to send but in the block
        else:
            replies = self._gather(
                self._pending,
                timeout,
                name="step_wait",
                spin_until=spin_until,
                deadline=deadline,
            )
            infos = self._merge(replies)
        self._state = AsyncState.DEFAULT
        block = self._block
        return (
            self._observations(),
            block.rewards.copy(),
            block.terminated.copy(),
            block.truncated.copy(),
            infos,
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env with the same arguments, or read the attribute.

        Args:
            name: a method or attribute of the sub-envs (found through their wrappers).
            *args, **kwargs: the arguments of the method.

        Returns:
            One result per sub-env.

        Raises:
            ValueError: ``name`` is one the vector env drives itself (``step``, ``reset``,
                ``close``, ...).
            ClosedEnvironmentError, AlreadyPendingCallError, WorkerCrashedError,
                WorkerTimeoutError, Exception: as :meth:`reset` (a call is bounded by
                ``step_timeout`` as a step is: a worker that exceeds it is killed, and
                restarted with ``restart_on_crash``, before the error is raised).
        """
        self.call_async(name, *args, **kwargs)
        return self.call_wait()

    def call_async(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        """Send :meth:`call` to every sub-env and return at once; collect with :meth:`call_wait`.

        Args and Raises: as :meth:`call`, except the errors of the sub-envs and workers,
        which :meth:`call_wait` raises.
        """
        self._send_call(name, list(range(self.num_envs)), False, args, kwargs)

    def call_each(
        self,
        name: str,
        env_ids: Sequence[int] | None = None,
        args: Sequence[Sequence[Any]] | None = None,
        kwargs: Sequence[dict[str, Any]] | None = None,
    ) -> tuple[Any, ...]:
        """Call ``name`` on the sub-envs ``env_ids`` (default all), each with its own arguments.

        Args:
            name: a method or attribute of the sub-envs.
            env_ids: distinct sub-env indices (default: all, in order).
            args, kwargs: ``args[j]`` and ``kwargs[j]`` go to sub-env ``env_ids[j]``
                (default: none).

        Returns:
            The results, in the order of ``env_ids``.

        Raises:
            ValueError: bad ``env_ids``, or ``args``/``kwargs`` not one entry per id.
            ClosedEnvironmentError, AlreadyPendingCallError, WorkerCrashedError,
                WorkerTimeoutError, Exception: as :meth:`call`.

        Example:
            >>> envs.call_each("set_id", [0, 3], args=[(7,), (9,)])  # doctest: +SKIP
        """
        ids = arguments.env_ids(self.num_envs, env_ids)
        args = [()] * len(ids) if args is None else [tuple(a) for a in args]
        kwargs = [{}] * len(ids) if kwargs is None else [dict(k) for k in kwargs]
        if len(args) != len(ids) or len(kwargs) != len(ids):
            raise ValueError(
                f"args and kwargs must hold one entry per env id ({len(ids)}), "
                f"got {len(args)} and {len(kwargs)}"
            )
        self._send_call(name, ids, True, args, kwargs)
        return self.call_wait()

    def call_wait(self, timeout: float | None = None) -> tuple[Any, ...]:
        """Wait for the call sent by :meth:`call_async` (or :meth:`call_each`).

        Args:
            timeout: as in :meth:`reset_wait`: None waits ``step_timeout`` (then kills a
                worker still busy), or without a limit when there is none.

        Returns:
            One result per targeted sub-env.

        Raises:
            NoAsyncCallError: no call is pending.
            multiprocessing.TimeoutError: ``timeout`` ran out (the workers are kept).
            WorkerCrashedError, WorkerTimeoutError, Exception: as :meth:`call`.
        """
        self._expect(AsyncState.WAITING_CALL, "call_wait", "call_async")
        replies = self._gather(self._pending, timeout, name="call_wait")
        self._state = AsyncState.DEFAULT
        cursor = {w: 0 for w in replies}
        results = []
        for w, _ in self._call_order:
            results.append(replies[w][cursor[w]])
            cursor[w] += 1
        return tuple(results)

    def render(self) -> tuple[Any, ...] | None:
        """Render every sub-env.

        Returns:
            One frame (or None) per sub-env, as their ``render`` returns.

        Raises:
            As :meth:`call`.
        """
        return self.call("render")

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Read attribute ``name`` of every sub-env.

        Args:
            name: the attribute (found through the sub-envs' wrappers).

        Returns:
            One value per sub-env.

        Raises:
            As :meth:`call`.
        """
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env.

        Args:
            name: the attribute (set through the sub-envs' wrappers).
            values: a list or tuple of one value per sub-env, or any other value for all.

        Raises:
            ValueError: a list or tuple whose length is not ``num_envs``.
            ClosedEnvironmentError, AlreadyPendingCallError, WorkerCrashedError,
                WorkerTimeoutError, Exception: as :meth:`call`.
        """
        self._assert_is_running()
        if not isinstance(values, (list, tuple)):
            values = [values for _ in range(self.num_envs)]
        if len(values) != self.num_envs:
            raise ValueError(
                "Values must be a list or tuple with length equal to the number of environments. "
                f"Got `{len(values)}` values for {self.num_envs} environments."
            )
        self._assert_idle("set_attr")
        self._drain_stale()
        self._send_all(
            p.SET_ATTR,
            lambda w: (name, range(len(w.env_ids)), [values[i] for i in w.env_ids]),
            by_value=True,
        )
        self._gather(self._pending, None, name="set_attr")

    def __del__(self) -> None:
        """Terminate the workers of a GridVecEnv collected without close()."""
        if not getattr(self, "closed", True) and getattr(self, "_workers", None):
            with contextlib.suppress(Exception):
                self.close(terminate=True)

    # ---------------------------------------------------------------------- helpers
    def _assert_is_running(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError(
                f"Trying to operate on `{type(self).__name__}`, after a call to `close()`."
            )

    def _assert_idle(self, what: str) -> None:
        if self._state != AsyncState.DEFAULT:
            raise AlreadyPendingCallError(
                f"Calling `{what}` while waiting for a pending call to `{self._state.value}` "
                "to complete.",
                str(self._state.value),
            )
        if self._busy:
            raise AlreadyPendingCallError(
                f"Calling `{what}` while pool-mode envs {sorted(self._busy)} are not recv()ed.",
                "recv",
            )

    def _expect(self, state: AsyncState, wait_name: str, async_name: str) -> None:
        self._assert_is_running()
        if self._state != state:
            raise NoAsyncCallError(
                f"Calling `{wait_name}` without any prior call to `{async_name}`.", state.value
            )

    def _send_call(self, name: str, ids: list[int], per_env: bool, args: Any, kwargs: Any) -> None:
        self._assert_is_running()
        self._assert_idle("call_async")
        if name in _RESERVED:
            raise ValueError(
                f"Trying to call function `{name}` with `call`, use `{name}` directly instead."
            )
        self._drain_stale()
        order = [(self._worker_of[i], j) for j, i in enumerate(ids)]
        by_worker: dict[Worker, list[int]] = {}
        for w, j in order:
            by_worker.setdefault(w, []).append(j)
        for w in by_worker:
            self._assert_alive(w)
        for w, js in sorted(by_worker.items(), key=parent_last):
            local = [self._local_of[ids[j]] for j in js]
            a = [args[j] for j in js] if per_env else args
            kw = [kwargs[j] for j in js] if per_env else kwargs
            self._write(w, p.encode(p.CALL, (name, local, per_env, a, kw), by_value=True))
        self._pending = list(by_worker)
        self._call_order = order
        self._state = AsyncState.WAITING_CALL

    def _send_all(
        self, code: int, payload_of: Callable[[Worker], Any] | None = None, **kw: Any
    ) -> None:
        """Send ``code`` with ``payload_of(worker)`` (or no payload) to every worker."""
        for w in self._workers:
            self._assert_alive(w)
        bare = p.encode(code) if payload_of is None else None
        for w in self._workers:
            self._write(w, bare or p.encode(code, payload_of(w), **kw))
        self._pending = self._workers

    def _wait(
        self,
        workers: list[Worker],
        deadline: float | None,
        *,
        need_all: bool = True,
        spin_until: float | None = None,
    ) -> tuple[dict[Worker, tuple[int, Any]], list[Worker], list[Worker]]:
        """One reply per worker (or the first ones, without ``need_all``): rings are taken
        as they come, spinning up to ``spin_us`` or ``deadline`` if sooner (or until
        ``spin_until``, a ``perf_counter`` time); then the wait sleeps in ``poll`` on the
        reply pipes and process sentinels until ``deadline``. Returns (replies, crashed
        workers, late workers)."""
        replies: dict[Worker, tuple[int, Any]] = {}
        crashed: list[Worker] = []
        every = workers is self._workers or workers is self._remote
        if len(self._remote) < len(self._workers):  # the parent's slice: replied already
            for w in workers:
                if w.local is not None and w.local.has_reply():
                    self._collect(w, replies, crashed)
            workers = self._remote if every else [w for w in workers if w.local is None]
            if not workers or (not need_all and replies):
                return replies, crashed, []
        if spin_until is None:
            spin_until = self._spin_until(None if deadline is None else deadline - time.monotonic())
        if need_all and self.spin_us > 0:
            left = self._take_rings(workers, replies, crashed, spin_until)
            if not left:
                return replies, crashed, []
        else:
            left = workers
        shared = every  # every worker: the reusable poll set
        if shared and self._poll_all is not None:
            poller, owner = self._poll_all
        else:
            poller, owner = select.poll(), {}
            for w in workers:
                poller.register(w.reply_fd, p.POLL_IN)
                poller.register(w.sentinel, p.POLL_IN)
                owner[w.reply_fd] = owner[w.sentinel] = w
            if shared:
                self._poll_all = poller, owner
        remaining = set(left)

        def take(w: Worker) -> None:
            if self._collect(w, replies, crashed):
                remaining.discard(w)
                if not shared:
                    poller.unregister(w.reply_fd)
                    poller.unregister(w.sentinel)

        while remaining:
            for w in [w for w in remaining if w.bell.rang()]:
                take(w)
            if not remaining or (not need_all and (replies or crashed)):
                break
            bells = [w.bell for w in remaining if w.bell.ringing]
            piped = len(bells) < len(remaining)  # replies by pipe: poll for them too
            ready = functools.partial(_any_reply, bells, poller if piped else None)
            if self.spin_us > 0 and spin(ready, spin_until - time.perf_counter()):
                events = poller.poll(0) if piped else None  # a ring, or a pipe event
            else:
                events = self._sleep(poller, bells, deadline)
                if events == []:
                    break
            if not events:  # a ring came: taken at the top of the loop
                continue
            for fd, _ in events:
                w = owner[fd]
                if w not in remaining:
                    if shared:  # answered already, now dead: stop watching it
                        poller.unregister(fd)
                        self._poll_all = None
                    continue
                if fd == w.sentinel and not w.bell.rang() and not _readable(w.reply_fd):
                    crashed.append(w)
                    remaining.discard(w)
                    if not shared:
                        poller.unregister(w.reply_fd)
                        poller.unregister(w.sentinel)
                else:
                    take(w)
            if not need_all and (replies or crashed):
                break
        late = [w for w in workers if w in remaining]
        return replies, crashed, late

    def _spin_until(self, limit: float | None) -> float:
        """When a wait of at most ``limit`` seconds (None: no limit) stops spinning, as a
        ``perf_counter`` time: after ``spin_us``, or ``limit`` if shorter, so that a long
        spin never delays the wait's deadline (a clock read, no system call)."""
        spin_s = self.spin_us * 1e-6
        return time.perf_counter() + (spin_s if limit is None else min(spin_s, max(limit, 0.0)))

    def _take_rings(
        self,
        workers: list[Worker],
        replies: dict[Worker, tuple[int, Any]],
        crashed: list[Worker],
        spin_until: float,
    ) -> list[Worker]:
        """The hot path of a wait for every worker: while each reply owed answers a ring,
        spin on the doorbells alone (no poll set, no system call but the yields) until
        ``spin_until``, taking the replies as they come. Returns the workers still owing."""
        left = workers
        if not all(w.bell.ringing for w in left):
            return left

        def all_taken() -> bool:
            nonlocal left
            left = [w for w in left if not (w.bell.rang() and self._collect(w, replies, crashed))]
            return not left

        spin(all_taken, spin_until - time.perf_counter())
        return left

    def _took_bare_oks(self, spin_until: float) -> bool:
        """The hot path of :meth:`step_wait`: every worker answers its ring with a bare
        ``OK`` (its envs had no info to send) or ``OK_BLOCK`` (their infos are records in
        the block: those workers are left in ``_in_block``), the observations in the block.

        Spins for the rings until ``spin_until``; True once every one is taken; False,
        taking none, when a reply is not bare or not there yet (:meth:`_gather` then reads
        every reply)."""
        pending = self._pending
        # when this process stepped a slice too, its reply is queued already: the workers'
        # rings, then the parent's reply, all bare or none taken
        with_parent = pending is self._workers and len(self._remote) < len(pending)
        bells = [w.bell for w in (self._remote if with_parent else pending)]
        if self.spin_us == 0 or not all(b.ringing for b in bells):
            return False
        if bells:
            # the cheapest check per turn: it decides how soon a ring is seen
            ready = bells[0].rang if len(bells) == 1 else lambda: all(map(ParentBell.rang, bells))
            if not spin(ready, spin_until - time.perf_counter()):
                return False
        codes = [b.rung_code() for b in bells]
        local = self._workers[-1].local if with_parent else None
        if local is not None:
            codes.append(local.next_code())
        if not self._bare(pending, codes):
            return False
        for b in bells:
            b.rung_reply()
        if local is not None:
            local.reply()
        return True

    def _bare(self, workers: list[Worker], codes: list[int | None]) -> bool:
        """Whether the replies ``codes`` of ``workers`` are all bare (``OK`` or, for some,
        ``OK_BLOCK``); then ``_in_block`` lists the workers whose infos are in the block."""
        if p.OK_BLOCK in codes:
            if not all(code in _BARE for code in codes):
                return False
            self._in_block = [w for w, c in zip(workers, codes, strict=True) if c == p.OK_BLOCK]
            return True
        if codes.count(p.OK) == len(codes):
            self._in_block = []
            return True
        return False

    def _bare_step_infos(self) -> dict[str, Any]:
        """The infos of a step that :meth:`_took_bare_oks`: those in the block."""
        in_block = self._in_block
        if not in_block:
            return {}
        if len(in_block) == len(self._workers):
            return self._info_schema.unpack(self._block.info)  # every env's, in one read
        return merge_slices([(w.env_ids[0], self._block_infos(w)) for w in in_block], self.num_envs)

    def _block_infos(self, w: Worker) -> ColumnBatch:
        """The infos that ``w`` wrote in the block (its slice's records), copied out."""
        records = self._block.info[w.env_ids[0] : w.env_ids[-1] + 1]
        return ColumnBatch(self._info_schema, records.tobytes())

    def _sleep(
        self, poller: select.poll, bells: list[ParentBell], deadline: float | None
    ) -> list[tuple[int, int]] | None:
        """Poll until an event or ``deadline`` ([] then), the rings of ``bells`` told to
        write a ``WAKE``; None without sleeping if a ring came meanwhile."""
        wait_ms = (
            -1 if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
        )
        try:
            if not all([b.sleep() for b in bells]):  # a list: every bell announces it
                return None
            return poller.poll(wait_ms)
        finally:
            for b in bells:
                b.woke()

    def _collect(
        self, w: Worker, replies: dict[Worker, tuple[int, Any]], crashed: list[Worker]
    ) -> bool:
        """Move the reply of ``w`` (its ring came or its reply pipe is readable) into
        ``replies``, or ``w`` into ``crashed``; False if the pipe held a stale ``WAKE`` only."""
        try:
            reply = self._read_reply(w)
        except p.PeerGone:
            crashed.append(w)
            return True
        except p.Stalled:  # stopped in the middle of a reply
            w.timed_out = True
            w.process.kill()
            crashed.append(w)
            return True
        if reply is None:
            return False
        replies[w] = reply
        return True

    def _read_reply(self, w: Worker) -> tuple[int, Any] | None:
        """The oldest reply of ``w``, from its ring or its pipe (None: a stale ``WAKE``);
        raw info records come back as a ``ColumnBatch`` in OK_DATA."""
        if w.local is not None:  # the parent's slice: its reply is queued
            code, payload = w.local.reply()
        elif (code := w.bell.rung_reply()) is None:  # by pipe (or a stale WAKE ahead of the ring)
            code, payload = p.read_message(w.reply_fd, self.step_timeout)
            if code == p.WAKE:
                return None
            w.bell.piped_reply()
        elif code == IN_PIPE:
            code, payload = read_skipping_wakes(w.reply_fd, self.step_timeout)
        else:
            payload = None
        if code == p.OK_BLOCK:
            return p.OK_DATA, (self._block_infos(w), None)
        if code == p.OK_SCHEMA:
            schema, payload = payload
            w.info_schema = self._schemas.setdefault(schema, schema)  # one object per schema
        elif code != p.OK_COLUMNS:
            return code, payload
        return p.OK_DATA, (ColumnBatch(w.info_schema, payload), None)

    def _gather(
        self,
        workers: list[Worker],
        timeout: float | None,
        *,
        name: str = "",
        bound: bool = True,
        spin_until: float | None = None,
        deadline: float | None = None,
    ) -> dict[Worker, Any]:
        """One reply per worker; turn timeouts, crashes and sub-env errors into exceptions.

        ``bound``: apply ``step_timeout`` when no ``timeout`` is given (every command but the
        start-up's, whose imports and grid building it does not bound).
        ``spin_until``: as in :meth:`_wait`. ``deadline``: when the wait ends (a
        ``time.monotonic`` time), for a caller that already spent part of the limit (default:
        the limit from now).
        """
        if deadline is None:
            limit = timeout if timeout is not None else (self.step_timeout if bound else None)
            deadline = None if limit is None else time.monotonic() + limit
        replies, crashed, late = self._wait(workers, deadline, spin_until=spin_until)
        if late and timeout is not None:
            for w in late:
                w.stale += 1
            self._state = AsyncState.DEFAULT
            raise timeout_error(name, timeout)
        errors = sub_env_errors(replies)
        if crashed or late:
            during = {"step_wait": "step", "reset_wait": "reset", "startup": "startup"}.get(
                name, "call"
            )
            for w in late:
                w.timed_out = True
            recovered = self._recover(crashed + late, during=during)
            replies.update(recovered)
        if errors:
            self._state = AsyncState.DEFAULT
            reraise(errors)
        return {w: payload for w, (code, payload) in replies.items()}

    def _merge(self, replies: dict[Worker, Any]) -> dict[str, Any]:
        """The batch's infos from the workers' replies; keeps pickled observations."""
        slices = []
        for w in self._workers:
            payload = replies.get(w)
            if payload is None:
                continue
            env_infos, obs = payload
            slices.append((w.env_ids[0], env_infos))
            for k, value in (obs or {}).items():
                self._last_obs[w.env_ids[k]] = value
        if not self._obs_shared:
            self.observations = concatenate(
                self.single_observation_space, self._last_obs, self.observations
            )
        return merge_slices(slices, self.num_envs)

    def _observations(self) -> Any:
        if not self.copy:
            return self.observations
        if isinstance(self.observations, np.ndarray):
            return self.observations.copy()
        return deepcopy(self.observations)
