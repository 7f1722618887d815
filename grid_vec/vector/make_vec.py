"""``make_vec``: the one entry point for vectors of GridEnvs (``vector_entry_point`` of the
gymnasium ids): a GridVecEnv (worker processes) or a BatchedGridVecEnv (one batch, in this
process)."""

from __future__ import annotations

import os
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv

from grid_vec.vector.vec_env import GridVecEnv

VECTORIZATIONS = ("multiprocess", "batched")


def make_vec(
    id_or_path: str | os.PathLike,
    num_envs: int = 1,
    *,
    envs_per_worker: int | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    vectorization: str = "multiprocess",
    vector_kwargs: dict[str, Any] | None = None,
    observation: str = "flat",
    **env_kwargs: Any,
) -> VectorEnv:
    """``num_envs`` GridEnvs of ``id_or_path`` in one vector env.

    The grid is loaded and compiled once, here. Each sub-env gets its own seed from
    ``reset(seed=...)`` (seed + index), hence its own scenario order; whichever the
    vectorization, sub-env ``i`` plays the same trajectory.

    Args:
        id_or_path: an embedded grid (``"case14"``, ``"case118"``, their gymnasium ids) or a
            grid2op-format folder.
        num_envs: the number of sub-envs.
        envs_per_worker: (multiprocess) sub-envs per worker process; by default spread over
            the cores.
        autoreset_mode: gymnasium's autoreset mode.
        vectorization: ``"multiprocess"`` (default): a :class:`GridVecEnv`, one worker process
            per slice of sub-envs, each worker stepping its slice as one batch, and this
            process stepping the last slice itself (``step_in_parent``, see GridVecEnv):
            for several cores. ``"batched"``: a
            :class:`~grid_vec.vector.batched.BatchedGridVecEnv`, every sub-env in one batch
            in this process: no process, no pipe, the cheapest per env-step on one core.
        vector_kwargs: more arguments of the vector env's class.
        observation: ``"flat"`` (the flat vector) or ``"graph"``: the vector env wrapped in a
            :class:`~grid_vec.env.graph.GraphVectorObservation` (the sub-envs send flat
            observations; the graphs are computed here, for the batch at once).
        **env_kwargs: the arguments of :func:`grid_vec.make`.

    Returns:
        The vector env.

    Raises:
        ValueError: a bad ``num_envs``, ``vectorization`` or ``observation``, or an argument
            of ``make``.
    """
    from grid_vec.env.graph import GraphVectorObservation, graph_layout
    from grid_vec.env.make import check_observation, env_factory

    check_observation(observation)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization must be one of {VECTORIZATIONS}, got {vectorization!r}")
    factory = env_factory(id_or_path, **env_kwargs)
    if vectorization == "batched":
        if envs_per_worker is not None:
            raise ValueError("envs_per_worker applies to vectorization='multiprocess' only")
        if not hasattr(factory, "sharing_one_batch"):
            raise ValueError(
                f"{id_or_path} is a multi-mix folder: its mixes are different grids, which one "
                "batch cannot hold; use vectorization='multiprocess'"
            )
        from grid_vec.vector.batched import BatchedGridVecEnv

        env: VectorEnv = BatchedGridVecEnv.from_factory(
            factory, num_envs, autoreset_mode=autoreset_mode, **(vector_kwargs or {})
        )
    else:
        env = GridVecEnv(
            [factory] * num_envs,
            envs_per_worker=envs_per_worker,
            autoreset_mode=autoreset_mode,
            **(vector_kwargs or {}),
        )
    if observation == "graph":
        if not hasattr(factory, "sharing_one_batch"):
            env.close()
            raise ValueError("observation='graph' takes a single grid, not a multi-mix folder")
        return GraphVectorObservation(env, graph_layout(factory()))
    return env
