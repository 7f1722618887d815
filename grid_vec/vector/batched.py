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
from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium import Env
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode, VectorEnv

from grid_vec.core.records import INFO_COLUMNS, REASONS, ActionBatch
from grid_vec.env.action_input import batch_actions
from grid_vec.vector.errors import naming_env
from grid_vec.vector.grid_commands import GridCommands


class BatchedGridVecEnv(GridCommands, VectorEnv):
    """``num_envs`` GridEnvs of one compiled grid, played by one batched core.

    Args:
        envs: the GridEnvs, rows ``0 .. n-1`` of one batched core, as
            ``GridEnv.sharing_one_batch`` makes them (:meth:`from_factory` does it).
        autoreset_mode: gymnasium's ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``.
        copy: return copies of the observations (as SyncVectorEnv's ``copy``).

    Raises:
        ValueError: ``envs`` are not the rows of one batch, in order.
    """

    def __init__(
        self,
        envs: Sequence[Any],
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
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
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.render_mode = None
        self.spec = envs[0].spec
        self.copy = copy
        self._obs = np.zeros((self.num_envs, *observation_space.shape), dtype=np.float32)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._all = np.arange(self.num_envs, dtype=np.intp)
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
        result = self._reset_rows(rows, [seeds[r] for r in rows.tolist()], options or None)
        self._obs[rows] = result.obs
        self._autoreset[rows] = False
        return self._out(self._obs), self._reset_infos(rows, result)

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
        action = self._parse(actions)
        n = self.num_envs
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        batch = self._batch
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset.any():
            resetting = np.flatnonzero(self._autoreset)
            stepping = np.flatnonzero(~self._autoreset)
            result = self._reset_rows(resetting, [None] * len(resetting), None)
            self._obs[resetting] = result.obs
            infos.update(self._reset_infos(resetting, result))
        else:
            stepping = self._all
            if batch.done.any():
                ended = int(np.argmax(batch.done))
                raise RuntimeError(
                    f"sub-env {ended}: the episode is over (or never started): reset it first"
                )
        if len(stepping):
            sel = slice(None) if len(stepping) == n else stepping
            result = batch.step(stepping, action if len(stepping) == n else action.rows(sel))
            rewards[sel], terminated[sel], truncated[sel] = (
                result.reward, result.terminated, result.truncated
            )  # fmt: skip
            self._obs[sel] = result.obs
            ended = result.terminated | result.truncated
            if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
                done_pos = np.flatnonzero(ended)
                kept_pos = np.flatnonzero(~ended)
                done_rows = stepping[done_pos]
                final_obs = np.full(n, None, dtype=object)
                for j, row in zip(done_pos.tolist(), done_rows.tolist(), strict=True):
                    final_obs[row] = result.obs[j].copy()
                infos["final_obs"] = final_obs
                infos["_final_obs"] = _mask(n, done_rows)
                infos["final_info"] = _step_infos(result, done_pos, done_rows, n)
                infos["_final_info"] = _mask(n, done_rows)
                _merge(infos, _step_infos(result, kept_pos, stepping[kept_pos], n))
                again = self._reset_rows(done_rows, [None] * len(done_rows), None)
                self._obs[done_rows] = again.obs
                _merge(infos, self._reset_infos(done_rows, again))
            else:
                _merge(infos, _step_infos(result, self._all[: len(stepping)], stepping, n))
        self._autoreset = terminated | truncated
        return self._out(self._obs), rewards, terminated, truncated, infos

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

    def _out(self, obs: np.ndarray) -> np.ndarray:
        return deepcopy(obs) if self.copy else obs

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vector env is closed")

    def _reset_rows(self, rows: np.ndarray, seeds: list[int | None], options: dict | None):
        rngs = []
        for row, seed in zip(rows.tolist(), seeds, strict=True):
            env = self.envs[row]
            Env.reset(env, seed=seed)  # the env's RNG, seeded as its own reset seeds it
            rngs.append(env.np_random)
        return self._batch.reset(rows, rngs, seeds, [options] * len(rows))

    def _reset_infos(self, rows: np.ndarray, result: Any) -> dict[str, Any]:
        n = self.num_envs
        ids = np.zeros(n, dtype=int)
        names = np.full(n, None, dtype=object)
        for row in rows.tolist():
            info = self._batch.handlers[row].info
            ids[row], names[row] = info.id, info.name
        return {
            "scenario_id": ids,
            "_scenario_id": _mask(n, rows),
            "scenario_name": names,
            "_scenario_name": _mask(n, rows),
            **_masks(result.action_mask, self._all[: len(rows)], rows, n),
        }

    def _parse(self, actions: Any) -> ActionBatch:
        """Validate a batch of actions (one per env)."""
        n = self.num_envs
        leaves = actions.values() if isinstance(actions, dict) else [actions]
        if any(len(np.shape(leaf)) == 0 or np.shape(leaf)[0] != n for leaf in leaves):
            raise ValueError(f"actions must be one per env ({n}), got {actions!r}")
        try:
            return batch_actions(self._batch.continuous, self.single_action_space, actions)
        except ValueError as exc:
            raise naming_env(exc, range(n)) from None


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


def _step_infos(result: Any, positions: np.ndarray, rows: np.ndarray, n: int) -> dict[str, Any]:
    """The infos of the given rows of a step, laid out as gymnasium's ``_add_info`` lays out
    the infos of N GridEnvs (an array per key, a ``_key`` mask of the envs that have it)."""
    if not len(rows):
        return {}
    mask = _mask(n, rows)
    infos: dict[str, Any] = {}
    for column in INFO_COLUMNS:
        values = getattr(result, column.field)
        array = np.zeros((n, *values.shape[1:]), dtype=column.dtype)
        array[rows] = values[positions]
        infos[column.key], infos[f"_{column.key}"] = array, mask.copy()
    if result.other_rewards:
        others: dict[str, Any] = {}
        for name, values in result.other_rewards.items():
            array = np.zeros(n)
            array[rows] = values[positions]
            others[name], others[f"_{name}"] = array, mask.copy()
        infos["other_rewards"], infos["_other_rewards"] = others, mask.copy()
    for key in REASONS:
        reasons = getattr(result, key)
        pairs = zip(positions.tolist(), rows.tolist(), strict=True)
        present = [(r, reasons[j]) for j, r in pairs if j in reasons]
        if present:
            array = np.full(n, None, dtype=object)
            where = np.zeros(n, dtype=bool)
            for r, text in present:
                array[r], where[r] = text, True
            infos[key], infos[f"_{key}"] = array, where
    infos.update(_masks(result.action_mask, positions, rows, n))
    if result.skipped is not None:
        skipped = np.zeros(n, dtype=int)
        skipped[rows] = result.skipped[positions]
        infos["skipped_steps"], infos["_skipped_steps"] = skipped, mask.copy()
    return infos


def _masks(
    action_mask: np.ndarray | None, positions: np.ndarray, rows: np.ndarray, n: int
) -> dict[str, Any]:
    """The ``action_mask`` infos of the given rows (none when the envs give none)."""
    if action_mask is None:
        return {}
    array = np.zeros((n, action_mask.shape[1]), dtype=bool)
    array[rows] = action_mask[positions]
    return {"action_mask": array, "_action_mask": _mask(n, rows)}


def _merge(infos: dict[str, Any], more: dict[str, Any]) -> None:
    """Add the infos of other envs (``more``) to ``infos``, as gymnasium's ``_add_info``
    adds them: a key both have (a reset's and a step's ``action_mask``) keeps each env's
    value."""
    for key, value in more.items():
        if key.startswith("_") and key[1:] in more:
            continue  # a mask: with its key
        has = more[f"_{key}"]
        if key in infos and not isinstance(value, dict):
            infos[key][has] = value[has]
            has = infos[f"_{key}"] | has
        else:
            infos[key] = value
        infos[f"_{key}"] = has


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
