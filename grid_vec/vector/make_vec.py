"""``make_vec``: a GridVecEnv of GridEnvs, and the ``vector_entry_point`` of the gymnasium ids."""

from __future__ import annotations

import os
from typing import Any

from gymnasium.vector import AutoresetMode

from grid_vec.vector.vec_env import GridVecEnv


def make_vec(
    id_or_path: str | os.PathLike,
    num_envs: int = 1,
    *,
    envs_per_worker: int | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> GridVecEnv:
    """``num_envs`` GridEnvs of ``id_or_path`` in a GridVecEnv.

    The grid is loaded and compiled once, here; workers rebuild their envs from the compiled
    model (no pandapower import with the lightsim2grid backend). ``env_kwargs`` go to
    :func:`grid_vec.make`; ``vector_kwargs`` to :class:`GridVecEnv`. Each sub-env gets its own
    seed from ``reset(seed=...)`` (seed + index), hence its own scenario order.
    """
    from grid_vec.env.make import env_factory

    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    factory = env_factory(id_or_path, **env_kwargs)
    return GridVecEnv(
        [factory] * num_envs,
        envs_per_worker=envs_per_worker,
        autoreset_mode=autoreset_mode,
        **(vector_kwargs or {}),
    )
