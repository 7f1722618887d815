"""Stable-Baselines3 adapter: any gymnasium ``VectorEnv`` seen as an SB3 ``VecEnv``.

SB3 does not take a gymnasium vector env: it wants ``reset()`` returning observations only,
a sub-env that ends an episode reset within the same step (its last observation under
``info["terminal_observation"]``), ``info["TimeLimit.truncated"]`` on every step, one info
dict per sub-env, and seeds/options that apply at the next ``reset()``. This module maps one
API onto the other without running a sub-env twice or copying observations more than SB3
needs (the vector env's own ``copy=True`` copy is the only one).

Autoreset: a vector env in SAME_STEP mode already resets in the same step; in DISABLED mode
the adapter resets the finished sub-envs itself (``reset_mask``). NEXT_STEP cannot be mapped
(the reset would come one step late) and is refused. :func:`make_sb3_vec_env` builds a
:class:`~grid_vec.vector.GridVecEnv` in SAME_STEP mode and wraps it.

Per-env targeting (``indices``) uses GridVecEnv's ``call_each`` or SyncVectorEnv's sub-envs;
other vector envs (gymnasium's AsyncVectorEnv) accept only calls that target every sub-env.
Importing this module imports stable-baselines3 (and torch); ``import grid_vec`` does not.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from grid_vec.integrations.wrapper_check import WRAPPER_CHECK, has_wrapper, with_wrapper_check

__all__ = [
    "GymnasiumToSB3VecEnv",
    "SB3VecEnv",
    "make_sb3_vec_env",
    "unbatch_infos",
    "with_wrapper_check",
]

_FINAL_KEYS = ("final_obs", "final_info")


class GymnasiumToSB3VecEnv(VecEnv):
    """SB3 ``VecEnv`` over a gymnasium ``VectorEnv`` in SAME_STEP or DISABLED autoreset mode.

    The adapter owns ``vec_env``: :meth:`close` closes it.

    Args:
        vec_env: the vector env (GridVecEnv, SyncVectorEnv, AsyncVectorEnv...).

    Raises:
        TypeError: ``vec_env`` is not a gymnasium ``VectorEnv``.
        ValueError: its autoreset mode is NEXT_STEP (SB3 needs the reset in the same step).
    """

    def __init__(self, vec_env: VectorEnv) -> None:
        if not isinstance(vec_env, VectorEnv):
            raise TypeError(
                f"vec_env must be a gymnasium.vector.VectorEnv, got {type(vec_env).__name__}"
            )
        mode = AutoresetMode(vec_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        if mode == AutoresetMode.NEXT_STEP:
            raise ValueError(
                "vec_env uses autoreset_mode NEXT_STEP, but SB3 needs a finished sub-env reset "
                "in the same step: build it with autoreset_mode=AutoresetMode.SAME_STEP "
                "(or DISABLED)"
            )
        self.vec_env = vec_env
        self.autoreset_mode = mode
        # A vector env with copy=True hands out fresh arrays: nothing to copy again.
        self._copy_obs = not getattr(vec_env, "copy", False)
        self._actions: Any = None
        self.closed = False
        super().__init__(
            vec_env.num_envs, vec_env.single_observation_space, vec_env.single_action_space
        )

    # ------------------------------------------------------------------ reset / step
    def reset(self) -> VecEnvObs:
        """Reset every sub-env with the seeds of :meth:`seed` and options of :meth:`set_options`.

        Seeds and options apply once. Sub-envs with different options are reset in groups
        (``reset_mask``), one group per distinct options dict; ``reset_infos`` holds each
        sub-env's reset info.

        Returns:
            The observations, owned by the caller (SB3 may keep them across steps).

        Raises:
            Exception: a sub-env's error, raised by the vector env.
        """
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        groups = _group_options(self._options)
        reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for options, mask in groups:
            if len(groups) == 1:
                obs, infos = self.vec_env.reset(seed=seeds, options=dict(options) or None)
            else:
                obs, infos = self.vec_env.reset(seed=seeds, options={**options, "reset_mask": mask})
            for i, info in enumerate(unbatch_infos(infos, self.num_envs)):
                if mask[i]:
                    reset_infos[i] = info
        self.reset_infos = reset_infos
        self._reset_seeds()
        self._reset_options()
        return self._own(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Start stepping every sub-env with its row of ``actions`` (see :meth:`step_wait`).

        Args:
            actions: one action per sub-env.

        Raises:
            Exception: the vector env's refusal of the actions (e.g. out of its space).
        """
        if hasattr(self.vec_env, "step_async"):
            self.vec_env.step_async(actions)
        else:
            self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Finish the step started by :meth:`step_async`, in SB3's terms.

        A sub-env that ended is already reset: its last observation is under
        ``info["terminal_observation"]``; every info has ``"TimeLimit.truncated"``.

        Returns:
            ``(observations, rewards, dones, infos)``: one info dict per sub-env.

        Raises:
            Exception: a sub-env's error, raised by the vector env.
        """
        if hasattr(self.vec_env, "step_wait"):
            obs, rewards, terminated, truncated, infos = self.vec_env.step_wait()
        else:
            actions, self._actions = self._actions, None
            obs, rewards, terminated, truncated, infos = self.vec_env.step(actions)
        dones = np.logical_or(terminated, truncated)
        env_infos = unbatch_infos(infos, self.num_envs)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            for i in np.flatnonzero(dones):
                reset_info = env_infos[i]
                final_obs = reset_info.pop("final_obs")
                env_infos[i] = reset_info.pop("final_info", {})
                env_infos[i]["terminal_observation"] = final_obs
                self.reset_infos[i] = reset_info
        elif dones.any():
            for i in np.flatnonzero(dones):
                env_infos[i]["terminal_observation"] = _row(obs, i, copy=self._copy_obs)
            obs, infos = self.vec_env.reset(options={"reset_mask": dones.copy()})
            for i, info in enumerate(unbatch_infos(infos, self.num_envs)):
                if dones[i]:
                    self.reset_infos[i] = info
        for i, info in enumerate(env_infos):
            info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return self._own(obs), rewards, dones, env_infos

    def close(self) -> None:
        """Close the vector env (idempotent)."""
        if not self.closed:
            self.vec_env.close()
            self.closed = True

    # ------------------------------------------------------------- per-env access
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the targeted sub-envs, looked up through their wrappers.

        Args:
            attr_name: the attribute (called if it is a method, as gymnasium's ``call``).
            indices: the sub-envs (None: all).

        Returns:
            One value per targeted sub-env, in the order of ``indices``.

        Raises:
            ValueError: an index is out of range, or a subset cannot be targeted on this
                vector env (AsyncVectorEnv).
            AttributeError: a sub-env has no such attribute.
        """
        return self._call(attr_name, indices, (), {})

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` to ``value`` on the targeted sub-envs.

        Set where a wrapper defines it, else on the outermost wrapper (gymnasium's
        ``set_wrapper_attr``).

        Args:
            attr_name: the attribute.
            value: its new value, the same for every targeted sub-env.
            indices: the sub-envs (None: all).

        Raises:
            ValueError: an index is out of range, or a subset cannot be targeted on this
                vector env (AsyncVectorEnv).
        """
        self._call("set_wrapper_attr", indices, (attr_name, value), {})

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call ``method_name`` of the targeted sub-envs.

        Args:
            method_name: looked up through each sub-env's wrappers.
            *method_args: positional arguments of the call.
            indices: the sub-envs (None: all).
            **method_kwargs: keyword arguments of the call.

        Returns:
            One result per targeted sub-env, in the order of ``indices``.

        Raises:
            ValueError: an index is out of range, or a subset cannot be targeted on this
                vector env (AsyncVectorEnv).
            Exception: a sub-env's error, raised by the vector env.
        """
        return self._call(method_name, indices, method_args, method_kwargs)

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Whether each targeted sub-env has a ``wrapper_class`` (or subclass) in its chain.

        The chain (``env``, ``env.env``, ...) is walked with ``isinstance``: directly for
        sub-envs in this process (SyncVectorEnv), in the worker for the others, where each
        sub-env built by a :func:`with_wrapper_check` factory answers for itself
        (:func:`make_sb3_vec_env` builds its sub-envs so).

        Args:
            wrapper_class: the wrapper to look for.
            indices: the sub-envs to ask (None: all).

        Returns:
            One flag per targeted sub-env, in the order of ``indices``. Remote sub-envs not
            built by a :func:`with_wrapper_check` factory cannot be inspected: they give
            False, with a warning.

        Raises:
            TypeError: ``wrapper_class`` is not a gymnasium ``Wrapper`` subclass.
            ValueError: an index is out of range.
        """
        if not (isinstance(wrapper_class, type) and issubclass(wrapper_class, gym.Wrapper)):
            raise TypeError(
                f"wrapper_class must be a gymnasium.Wrapper subclass, got {wrapper_class!r}"
            )
        ids = self._indices(indices)
        envs = getattr(self.vec_env, "envs", None)
        if envs is not None:
            return [has_wrapper(envs[i], wrapper_class) for i in ids]
        # Asking every sub-env is side-effect free, and works where subsets cannot be targeted.
        if not all(self.vec_env.call("has_wrapper_attr", WRAPPER_CHECK)):
            warnings.warn(
                f"env_is_wrapped({wrapper_class.__name__}) cannot see the wrappers of sub-envs "
                f"in other processes unless their factories go through "
                f"grid_vec.integrations.sb3.with_wrapper_check (make_sb3_vec_env does): "
                f"answering False",
                stacklevel=2,
            )
            return [False] * len(ids)
        flags = self.vec_env.call(WRAPPER_CHECK, wrapper_class)
        return [bool(flags[i]) for i in ids]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """The sub-envs' frames, rendered by the vector env.

        Returns:
            One RGB array per sub-env; Nones, with a warning, unless the render mode is
            ``"rgb_array"``.
        """
        if self.render_mode != "rgb_array":
            warnings.warn(
                f"The render mode is {self.render_mode}, but get_images needs 'rgb_array'",
                stacklevel=2,
            )
            return [None] * self.num_envs
        return list(self.vec_env.render())

    # ------------------------------------------------------------------- helpers
    def _own(self, obs: Any) -> Any:
        """``obs`` as SB3 may keep it across steps: copied only if the vector env reuses it."""
        if not self._copy_obs:
            return obs
        return obs.copy() if isinstance(obs, np.ndarray) else deepcopy(obs)

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        ids = [int(i) for i in self._get_indices(indices)]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"indices {bad} out of range: this VecEnv has {self.num_envs} envs")
        return ids

    def _call(
        self, name: str, indices: VecEnvIndices, args: tuple, kwargs: dict[str, Any]
    ) -> list[Any]:
        """``name`` (called if callable) on the targeted sub-envs, in the order of ``indices``."""
        ids = self._indices(indices)
        if ids == list(range(self.num_envs)):
            return list(self.vec_env.call(name, *args, **kwargs))
        if hasattr(self.vec_env, "call_each"):
            n = len(ids)
            return list(self.vec_env.call_each(name, ids, [args] * n, [kwargs] * n))
        envs = getattr(self.vec_env, "envs", None)
        if envs is None:
            raise ValueError(
                f"{type(self.vec_env).__name__} cannot target a subset of its sub-envs "
                f"(indices={ids}); use GridVecEnv or SyncVectorEnv, or target all sub-envs"
            )
        out = []
        for i in ids:
            attr = envs[i].get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return out


SB3VecEnv = GymnasiumToSB3VecEnv


def make_sb3_vec_env(
    env_fns: Sequence[Callable[[], gym.Env]], **kwargs: Any
) -> GymnasiumToSB3VecEnv:
    """Build a GridVecEnv over ``env_fns`` in SAME_STEP autoreset mode, as an SB3 ``VecEnv``.

    The factories go through :func:`with_wrapper_check`, so that ``env_is_wrapped`` sees the
    wrappers of every sub-env.

    Args:
        env_fns: the factories of the sub-envs (picklable).
        **kwargs: arguments of :class:`~grid_vec.vector.GridVecEnv` (``envs_per_worker``,
            ``autoreset_mode`` SAME_STEP or DISABLED...).

    Returns:
        The adapter, owning the GridVecEnv.

    Raises:
        ValueError: ``autoreset_mode`` is NEXT_STEP; GridVecEnv's own argument errors.
    """
    from grid_vec.vector import GridVecEnv

    mode = AutoresetMode(kwargs.pop("autoreset_mode", AutoresetMode.SAME_STEP))
    if mode == AutoresetMode.NEXT_STEP:
        raise ValueError("autoreset_mode must be SAME_STEP or DISABLED for SB3, got NEXT_STEP")
    fns = [with_wrapper_check(fn) for fn in env_fns]
    return GymnasiumToSB3VecEnv(GridVecEnv(fns, autoreset_mode=mode, **kwargs))


def unbatch_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Split gymnasium's batched info dict (values + ``_key`` masks) into one dict per env.

    Nested dicts were batched recursively and come back as per-env dicts; entries are the
    batch's elements (numpy scalars for numeric infos).

    Args:
        infos: a vector env's batched infos.
        num_envs: the number of sub-envs.

    Returns:
        One dict per sub-env, holding only the keys present for it.
    """
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue  # a mask
        mask = infos.get(f"_{key}")
        present = range(num_envs) if mask is None else np.flatnonzero(mask)
        if isinstance(values, dict):
            nested = unbatch_infos(values, num_envs)
            for i in present:
                out[i][key] = nested[i]
        else:
            for i in present:
                out[i][key] = values[i]
    return out


def _row(obs: Any, i: int, *, copy: bool) -> Any:
    """Observation ``i`` of a batch (Box/Dict/Tuple batches), copied if asked."""
    if isinstance(obs, dict):
        return {k: _row(v, i, copy=copy) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_row(v, i, copy=copy) for v in obs)
    row = obs[i]
    return row.copy() if copy and isinstance(row, np.ndarray) else row


def _group_options(options: list[dict[str, Any]]) -> list[tuple[dict[str, Any], np.ndarray]]:
    """Distinct options dicts, each with the mask of the sub-envs that get it."""
    groups: list[tuple[dict[str, Any], np.ndarray]] = []
    for i, opts in enumerate(options):
        for known, mask in groups:
            if known == opts:
                mask[i] = True
                break
        else:
            mask = np.zeros(len(options), dtype=np.bool_)
            mask[i] = True
            groups.append((opts or {}, mask))
    return groups
