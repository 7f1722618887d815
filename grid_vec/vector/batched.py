"""BatchedGridVecEnv: N GridEnvs of one grid stepped together in this process.

A natively vectorized ``gymnasium.vector.VectorEnv`` over the batched core
(:class:`~grid_vec.core.batch.GridBatch`): one call steps every env with array operations and
one power flow per env, with no process, pipe or per-env Python ``step``. Its trajectories,
rewards and infos are those of N separate GridEnvs with the same seeds and actions (under
SyncVectorEnv, in every autoreset mode), and it has the grid commands of GridVecEnv.

When to use it: training or evaluating on one core (or with a process per core, each hosting
a batch). :class:`~grid_vec.vector.vec_env.GridVecEnv` spreads envs over worker processes
(several cores, any gymnasium env); its workers host one batch for their envs when these are
GridEnvs of one model.

Example:
    >>> import grid_vec
    >>> envs = grid_vec.make_vec("case14", 4, vectorization="batched")
    >>> obs, infos = envs.reset(seed=0)
    >>> obs.shape
    (4, 410)
    >>> obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
    >>> envs.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.error import NoAsyncCallError
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode, VectorEnv

from grid_vec.core.contingency import ContingencyResults
from grid_vec.core.records import ActionBatch, CandidateResults
from grid_vec.core.snapshot import GridSnapshot
from grid_vec.core.state import any_true
from grid_vec.env.action_input import batch_actions, horizon_actions
from grid_vec.vector import arguments
from grid_vec.vector.errors import naming_env
from grid_vec.vector.grid_commands import GridCommands
from grid_vec.vector.infos import select_envs
from grid_vec.vector.pool import PoolBatch
from grid_vec.vector.slice_engine import SliceEngine


class BatchedGridVecEnv(GridCommands, VectorEnv):
    """``num_envs`` GridEnvs of one compiled grid, played by one batched core.

    Args:
        envs: the GridEnvs, rows ``0 .. n-1`` of one batched core, as
            ``GridEnv.sharing_one_batch`` makes them (:meth:`from_factory` does it).
        autoreset_mode: gymnasium's ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``.
        copy: return copies of the observations (as SyncVectorEnv's ``copy``).
        batch_size: number of envs :meth:`recv` returns in pool mode (default ``num_envs``).

    Pool mode (``SAME_STEP`` or ``DISABLED`` autoreset), GridVecEnv's :meth:`send` /
    :meth:`recv` in one process: with the env's heuristics a turn is the agent's step and
    the steps the env then plays on its own, a different number of them for each env;
    ``recv`` plays the turns of every env sent together until ``batch_size`` of them have
    ended, and returns those (:mod:`grid_vec.core.pool`), where a lockstep ``step`` waits
    for the longest turn. Each env's trajectory is the one ``step`` gives it.

    Raises:
        ValueError: ``envs`` are not the rows of one batch, in order; a bad ``batch_size``.
    """

    def __init__(
        self,
        envs: Sequence[Any],
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        batch_size: int | None = None,
    ) -> None:
        envs = list(envs)
        batch = envs[0].batch_row[0] if envs else None
        if batch is None or batch.n != len(envs):
            raise ValueError("envs must be every row of one batch (GridEnv.sharing_one_batch)")
        if any(env.batch_row != (batch, k) for k, env in enumerate(envs)):
            raise ValueError("envs must be the rows of one batch, in order")
        self.envs = envs
        self._batch = batch
        self.num_envs = batch.n
        self.single_action_space = envs[0].action_space
        self.single_observation_space = observation_space = envs[0].observation_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(observation_space, self.num_envs)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**envs[0].metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.spec = envs[0].spec
        self.copy = copy
        self._engine = SliceEngine(envs, self.autoreset_mode)
        self._all = np.arange(self.num_envs, dtype=np.intp)
        self.batch_size = arguments.batch_size(self.num_envs, batch_size)
        self._closed = False

    @classmethod
    def from_factory(cls, factory: Any, num_envs: int, **kwargs: Any) -> BatchedGridVecEnv:
        """``num_envs`` envs of what a GridEnv factory (``grid_vec.env.make.env_factory``, or
        any callable returning a GridEnv) builds, in one batch.

        Args:
            factory: the factory of the sub-envs.
            num_envs: how many.
            **kwargs: the other arguments of the constructor.
        """
        return cls(factory().sharing_one_batch(num_envs), **kwargs)

    # --- gymnasium API ----------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env (or those of ``options["reset_mask"]``).

        Args:
            seed: None (keep each env's RNG, or draw one), an int (``seed + i`` for env i), or
                one seed (or None) per env.
            options: the reset options of every reset env (see ``GridEnv.reset``), plus
                gymnasium's ``reset_mask`` (a bool array of ``num_envs``).

        Returns:
            The batched observations and infos (``scenario_id``, ``scenario_name``).

        Raises:
            TypeError, ValueError: bad seeds, options or mask.
            RuntimeError: a scenario whose first state is already a game over.
        """
        self._check_open()
        seeds = _seeds(seed, self.num_envs)
        options = dict(options) if options else {}
        mask = options.pop("reset_mask", None)
        if mask is not None:
            _check_mask(mask, self.num_envs)
            rows = np.flatnonzero(mask)
        else:
            rows = self._all
        row_seeds = [seeds[r] for r in rows.tolist()]
        infos = self._engine.reset(rows, row_seeds, [options or None] * len(rows))
        return self._out(self._engine.obs), infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env; those whose episode ended are reset as ``autoreset_mode`` says.

        Args:
            actions: one action per sub-env, batched as ``action_space``.

        Returns:
            ``(observations, rewards, terminated, truncated, infos)``, batched as gymnasium's
            SyncVectorEnv batches them.

        Raises:
            ValueError: ``actions`` outside ``action_space`` (nothing is stepped; the message
                and ``env_index`` name the first sub-env whose action is refused).
            RuntimeError: with ``DISABLED``, an env stepped after its episode ended.
        """
        self._check_open()
        parsed = self._parse(actions)
        engine = self._engine
        resets = self.autoreset_mode == AutoresetMode.NEXT_STEP and any_true(engine.autoreset)
        if not resets and any_true(self._batch.game.done):
            ended = int(np.argmax(self._batch.game.done))
            raise RuntimeError(
                f"sub-env {ended}: the episode is over (or never started): reset it first"
            )
        infos = engine.step(self._all, parsed).batched_infos()
        return (
            self._out(engine.obs),
            engine.rewards.copy(),
            engine.terminated.copy(),
            engine.truncated.copy(),
            infos,
        )

    # --- pool mode ----------------------------------------------------------------------

    def send(self, actions: Any, env_ids: Sequence[int]) -> None:
        """Pool mode: play the agent's step of the sub-envs ``env_ids``; :meth:`recv` plays
        the rest of their turns.

        Args:
            actions: one action per id, batched as for ``len(env_ids)`` sub-envs.
            env_ids: distinct sub-env indices, none of them sent and not yet received.

        Raises:
            ValueError: bad ``env_ids`` (or some sent and not received), an action outside
                the space (nothing is played), or ``NEXT_STEP`` autoreset.
            RuntimeError: an env whose episode is over (``DISABLED``).
        """
        self._check_open()
        ids = np.asarray(arguments.env_ids(self.num_envs, env_ids), dtype=np.intp)
        parsed = self._parse(actions, ids)
        if self._batch.game.done[ids].any():
            ended = int(ids[np.argmax(self._batch.game.done[ids])])
            raise RuntimeError(f"sub-env {ended}: the episode is over: reset it first")
        order = np.argsort(ids, kind="stable")
        self._engine.begin(ids[order], parsed.rows(order))

    def recv(self) -> PoolBatch:
        """Pool mode: the first ``batch_size`` sub-envs whose turn ended.

        Returns:
            A :class:`~grid_vec.vector.pool.PoolBatch`: row ``j`` of each field is sub-env
            ``env_ids[j]`` (sorted); ``SAME_STEP`` has reset those whose episode ended.

        Raises:
            NoAsyncCallError: fewer than ``batch_size`` sub-envs were sent and not received.
        """
        self._check_open()
        engine = self._engine
        pending = len(self.pending_env_ids)
        if pending < self.batch_size:
            raise NoAsyncCallError(
                f"recv() needs {self.batch_size} envs sent, only {pending} are", "recv"
            )
        ids, infos = engine.finish(self.batch_size)
        return PoolBatch(
            self._out(engine.obs[ids]),
            engine.rewards[ids],
            engine.terminated[ids],
            engine.truncated[ids],
            select_envs(infos, ids),
            ids.astype(np.int64),
        )

    @property
    def pending_env_ids(self) -> tuple[int, ...]:
        """Pool mode: ids sent and not yet returned by :meth:`recv`."""
        return tuple(self._batch.envs_in_turn().tolist())

    def close_extras(self, **kwargs: Any) -> None:
        self._closed = True

    # --- grid commands (GridCommands) and gymnasium's call / get_attr / set_attr ----------

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a GridEnv method (or read an attribute) of every sub-env.

        Returns:
            One result per sub-env.

        Raises:
            AttributeError: a name a GridEnv does not have.
        """
        return self.call_each(name, args=[args] * self.num_envs, kwargs=[kwargs] * self.num_envs)

    def call_each(
        self,
        name: str,
        args: Sequence[tuple] | None = None,
        kwargs: Sequence[dict] | None = None,
    ) -> tuple[Any, ...]:
        """Call a method of each sub-env with its own arguments.

        Args:
            name: the method (or attribute) name.
            args: per sub-env, its positional arguments.
            kwargs: per sub-env, its keyword arguments.

        Returns:
            One result per sub-env.
        """
        self._check_open()
        args = list(args) if args is not None else [()] * self.num_envs
        kwargs = list(kwargs) if kwargs is not None else [{}] * self.num_envs
        if len(args) != self.num_envs or len(kwargs) != self.num_envs:
            raise ValueError(f"call_each needs {self.num_envs} args and kwargs")
        results = []
        for env, a, kw in zip(self.envs, args, kwargs, strict=True):
            attr = env.get_wrapper_attr(name)
            results.append(attr(*a, **kw) if callable(attr) else attr)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every sub-env (as ``call`` with no arguments)."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set an attribute of every sub-env (one value for all, or a list of one per env).

        What the envs of a batch share (rules, rewards, limits) is not an attribute of one
        env: use the grid commands (``set_parameters``, ...).
        """
        self._check_open()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr needs {self.num_envs} values, got {len(values)}")
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    # --- internals ----------------------------------------------------------------------

    def simulate_candidates(self, candidates: Any, horizon: int = 1) -> CandidateResults:
        """As :meth:`GridCommands.simulate_candidates
        <grid_vec.vector.grid_commands.GridCommands.simulate_candidates>`: the candidates of
        every sub-env are the rows of one batched turn per step."""
        self._check_open()
        n, k = self.num_envs, self._candidate_count(candidates)

        def rows_of(leaf: Any) -> np.ndarray:  # (n, K, ...) -> (n * K, ...), sub-env by sub-env
            arr = np.asarray(leaf)
            return arr.reshape(n * k, *arr.shape[2:])

        flat = (
            {key: rows_of(v) for key, v in candidates.items()}
            if isinstance(candidates, dict)
            else rows_of(candidates)
        )
        try:
            actions = horizon_actions(self._batch, flat, horizon)
        except ValueError as exc:
            raise naming_env(exc, np.repeat(np.arange(n), k).tolist()) from None
        if self._batch.game.done.any():
            ended = int(np.argmax(self._batch.game.done))
            raise RuntimeError(
                f"sub-env {ended}: the episode is over: step it (autoreset) or reset first"
            )
        try:
            return self._batch.simulate_candidates(np.arange(n), actions, k)
        except ValueError as exc:  # a horizon a sub-env's scenario does not forecast
            raise naming_env(exc, list(range(n))) from None

    def snapshot(self, index: int) -> GridSnapshot:
        """As :meth:`GridCommands.snapshot
        <grid_vec.vector.grid_commands.GridCommands.snapshot>`: the one row, from the
        batch."""
        self._check_open()
        row = self._index(index)
        return self._batch.snapshot(row, self.envs[row].np_random)

    def contingencies(self, branches: Any = None) -> ContingencyResults:
        """As :meth:`GridCommands.contingencies
        <grid_vec.vector.grid_commands.GridCommands.contingencies>`, in one call on the
        batch."""
        self._check_open()
        batch = self._batch
        return batch.contingencies(np.arange(self.num_envs), branches)

    def _out(self, obs: np.ndarray) -> np.ndarray:
        # the observations are one float32 array: its copy is what deepcopy would make,
        # without deepcopy's Python dispatch
        return obs.copy() if self.copy else obs

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vector env is closed")

    def _parse(self, actions: Any, ids: np.ndarray | None = None) -> ActionBatch:
        """Validate a batch of actions (one per env, or one per env of ``ids``)."""
        ids = self._all if ids is None else ids
        n = len(ids)
        leaves = actions.values() if isinstance(actions, dict) else [actions]
        if any(len(np.shape(leaf)) == 0 or np.shape(leaf)[0] != n for leaf in leaves):
            raise ValueError(f"actions must be one per env ({n}), got {actions!r}")
        try:
            return batch_actions(self._batch, actions)
        except ValueError as exc:
            raise naming_env(exc, ids.tolist()) from None


def _seeds(seed: Any, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={n} but got "
            f"length={len(seeds)}."
        )
    return seeds


def _check_mask(mask: Any, n: int) -> None:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (n,):
        raise ValueError(f"`options['reset_mask']` must have shape `({n},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not mask.any():
        raise ValueError(
            "`options['reset_mask']` must contain a boolean array with at least one True value"
        )
