"""Pool mode of GridVecEnv: step any sub-envs, collect the first ``batch_size`` done.

Mixed into :class:`~grid_vec.vector.vec_env.GridVecEnv`. After ``reset()``, :meth:`send`
actions to some envs and :meth:`recv` the first ``batch_size`` envs whose step is over, with
their ids. Each worker answers its pool commands in order; ``step_timeout`` bounds how long
``recv`` waits without any reply.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from gymnasium import Space
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import concatenate, create_empty_array

from grid_vec.vector import arguments
from grid_vec.vector import protocol as p
from grid_vec.vector.actions import ActionRouter
from grid_vec.vector.errors import reraise
from grid_vec.vector.infos import BatchedInfo, ColumnBatch, InfoBatch, unbatch_info
from grid_vec.vector.parent_slice import parent_last
from grid_vec.vector.shared_buffers import SharedBlock, join
from grid_vec.vector.supervision import Worker, timeout_error


class PoolBatch(NamedTuple):
    """What :meth:`PoolMode.recv` returns; row ``j`` of each field is sub-env ``env_ids[j]``."""

    observations: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, Any]
    env_ids: np.ndarray


class PoolMode:
    """``send``/``recv`` of single sub-envs (the asynchronous pool of envpool)."""

    num_envs: int
    batch_size: int
    step_timeout: float | None
    single_observation_space: Space
    _workers: list[Worker]
    _worker_of: list[Worker]
    _local_of: list[int]
    _state: AsyncState
    _block: SharedBlock
    _obs_shared: bool
    _last_obs: list[Any]
    _busy: set[int]
    _ready: deque
    _ready_info: dict[int, dict]
    _assert_is_running: Callable[[], None]
    _assert_alive: Callable[[Worker], None]
    _actions: ActionRouter
    _drain_stale: Callable[[], None]
    _write: Callable[[Worker, bytes], None]
    _wait: Callable[..., tuple[dict[Worker, tuple[int, Any]], list[Worker], list[Worker]]]
    _recover: Callable[..., dict[Worker, tuple[int, Any]]]

    def send(self, actions: Any, env_ids: Sequence[int]) -> None:
        """Pool mode: step the sub-envs ``env_ids`` and return at once; :meth:`recv` collects.

        Args:
            actions: one action per id, batched as for ``len(env_ids)`` sub-envs; each
                sub-env receives the element ``gymnasium.vector.utils.iterate`` yields.
            env_ids: distinct sub-env indices, none of them sent and not yet received.

        Raises:
            ValueError: bad ``env_ids`` (or some in flight), or an action outside the space.
            AlreadyPendingCallError: a lockstep call (``step_async``, ...) is pending.
            ClosedEnvironmentError: the env was closed.
            WorkerCrashedError: the worker of one of the sub-envs is dead.

        Example:
            >>> envs.send(actions[:2], [0, 1])  # doctest: +SKIP
            >>> obs, rewards, terminations, truncations, infos, ids = envs.recv()  # doctest: +SKIP
        """
        self._assert_is_running()
        if self._state != AsyncState.DEFAULT:
            raise AlreadyPendingCallError(
                f"Calling `send` while waiting for a pending call to `{self._state.value}` "
                "to complete.",
                str(self._state.value),
            )
        ids = arguments.env_ids(self.num_envs, env_ids)
        busy = sorted(self._busy.intersection(ids))
        if busy:
            raise ValueError(f"env ids {busy} were sent and not yet returned by recv()")
        pickled = self._actions.write(actions, ids)
        self._drain_stale()
        by_worker: dict[Worker, list[int]] = {}
        for j, i in enumerate(ids):
            by_worker.setdefault(self._worker_of[i], []).append(j)
        for w in by_worker:  # every worker first: a refused send sends nothing
            self._assert_alive(w)
        # the parent steps its own slice when its command is written: the workers' first
        for w, js in sorted(by_worker.items(), key=parent_last):
            local = [self._local_of[ids[j]] for j in js]
            payload = (local, None if pickled is None else [pickled[j] for j in js])
            self._write(w, p.encode(p.STEP, payload))
            w.pool.append([ids[j] for j in js])
        self._busy.update(ids)

    @property
    def pending_env_ids(self) -> tuple[int, ...]:
        """Pool mode: ids sent and not yet returned by :meth:`recv`.

        ``batch_size`` may be lowered between calls, e.g. to collect the last envs in flight.
        """
        return tuple(sorted(self._busy))

    def recv(self, timeout: float | None = None) -> PoolBatch:
        """Pool mode: wait for the first ``batch_size`` sub-envs done stepping.

        Args:
            timeout: seconds to wait; None: until some reply has not come for
                ``step_timeout`` (then the workers late are killed and handled as crashed),
                or no limit without ``step_timeout``.

        Returns:
            A :class:`PoolBatch`; row ``j`` of each field belongs to sub-env ``env_ids[j]``.

        Raises:
            NoAsyncCallError: fewer than ``batch_size`` sub-envs are in flight or ready.
            multiprocessing.TimeoutError: ``timeout`` ran out (the workers are kept).
            WorkerCrashedError, WorkerTimeoutError: a worker died or exceeded
                ``step_timeout`` (restarted with ``restart_on_crash``: its sub-envs return
                reset and truncated).
            Exception: a sub-env's own error, re-raised with its index (``env_index``).
        """
        self._assert_is_running()
        in_flight = sum(len(ids) for w in self._workers for ids in w.pool)
        if self._ready_count() + in_flight < self.batch_size:
            raise NoAsyncCallError(
                f"recv() needs {self.batch_size} envs sent, only "
                f"{self._ready_count() + in_flight} are in flight or ready",
                "recv",
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._ready_count() < self.batch_size:
            waiting = [w for w in self._workers if w.pool]
            if timeout is None and self.step_timeout is not None:
                # no reply for step_timeout from now: each waiting worker's current step
                # began before now, so it has exceeded step_timeout
                deadline = self._step_deadline()
            replies, crashed, late = self._wait(waiting, deadline, need_all=False)
            if late and not replies and not crashed:
                if timeout is not None:
                    raise timeout_error("recv", timeout)
                for w in late:
                    w.timed_out = True
                crashed = late
            for w, (code, payload) in replies.items():
                ids = w.pool.popleft()
                if code == p.ERROR:
                    self._busy.difference_update(ids)
                    reraise(payload)
                self._absorb_pool(w, ids, payload)
            if crashed:
                lost = {w: [i for batch in w.pool for i in batch] for w in crashed}
                for ids in lost.values():
                    self._busy.difference_update(ids)
                recovered = self._recover(crashed, during="step")
                for w, (_, payload) in recovered.items():
                    self._busy.update(lost[w])
                    self._absorb_pool(w, lost[w], payload)
        ids, infos = self._take_ready(self.batch_size)
        self._busy.difference_update(ids.tolist())
        block = self._block
        if self._obs_shared:
            obs = join(self.single_observation_space, [view[ids] for view in block.obs])
        else:
            empty = create_empty_array(self.single_observation_space, n=len(ids), fn=np.zeros)
            obs = concatenate(
                self.single_observation_space, [self._last_obs[i] for i in ids], empty
            )
        return PoolBatch(
            obs, block.rewards[ids], block.terminated[ids], block.truncated[ids], infos, ids
        )

    def _ready_count(self) -> int:
        return sum(len(ids) for ids, _ in self._ready)

    def _take_ready(self, count: int) -> tuple[np.ndarray, dict[str, Any]]:
        """The first ``count`` ready env ids and their batched infos."""
        first_ids, columns = self._ready[0]
        if columns is not None and len(first_ids) == count:  # one worker's slice: records
            self._ready.popleft()
            return np.array(first_ids, dtype=np.int64), columns.schema.unpack(columns.records())
        taken: list[int] = []
        while len(taken) < count:
            chunk_ids, columns = self._ready.popleft()
            if columns is not None:
                rows = columns.schema.rows(columns.records())
                self._ready_info.update(zip(chunk_ids, rows, strict=True))
            need = count - len(taken)
            if len(chunk_ids) > need:
                self._ready.appendleft((chunk_ids[need:], None))
            taken += chunk_ids[:need]
        infos: dict[str, Any] = {}
        batch = InfoBatch(count)
        for j, i in enumerate(taken):
            info = self._ready_info.pop(i, None)
            if info:
                infos = batch._add_info(infos, info, j)
        return np.array(taken, dtype=np.int64), infos

    def _absorb_pool(self, w: Worker, ids: list[int], payload: Any) -> None:
        columns = None
        if payload is not None:
            infos, obs = payload
            if isinstance(infos, ColumnBatch):  # a send of the worker's whole slice, in order
                columns = infos
                infos = {}
            elif isinstance(infos, BatchedInfo):  # a restarted worker's reset of its slice
                rows = (unbatch_info(infos, k) for k in range(len(w.env_ids)))
                infos = {k: info for k, info in enumerate(rows) if info}
            for k, info in infos.items():
                self._ready_info[w.env_ids[k]] = info
            for k, value in (obs or {}).items():
                self._last_obs[w.env_ids[k]] = value
        self._ready.append((list(ids), columns))
