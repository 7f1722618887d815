"""``make_vec``: the one entry point for vectors of GridEnvs (``vector_entry_point`` of the
gymnasium ids): a GridVecEnv (worker processes), a BatchedGridVecEnv (one batch, in this
process) or a RayVecEnv (Ray actors, each stepping its slice as one batch), picked by name
in :data:`VECTORIZATIONS`."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gymnasium.vector import AutoresetMode, VectorEnv

from grid_vec.vector.vec_env import GridVecEnv


@dataclass(frozen=True)
class VecRequest:
    """What :func:`make_vec` asks a vectorization to build: ``num_envs`` envs of ``factory``
    (compiled from ``id_or_path``, which names it in errors)."""

    id_or_path: str | os.PathLike
    factory: Any  # a GridEnvFactory, or a MultiMixFactory of a multi-mix folder
    num_envs: int
    envs_per_worker: int | None
    autoreset_mode: str | AutoresetMode
    vector_kwargs: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[VecRequest], VectorEnv]
"""A vectorization: the vector env of a request."""


def _multiprocess(request: VecRequest) -> VectorEnv:
    return GridVecEnv(
        [request.factory] * request.num_envs,
        envs_per_worker=request.envs_per_worker,
        autoreset_mode=request.autoreset_mode,
        **request.vector_kwargs,
    )


def _batched(request: VecRequest) -> VectorEnv:
    if request.envs_per_worker is not None:
        raise ValueError("envs_per_worker applies to vectorization='multiprocess' or 'ray' only")
    if not hasattr(request.factory, "sharing_one_batch"):
        raise ValueError(
            f"{request.id_or_path} is a multi-mix folder: its mixes are different grids, which "
            "one batch cannot hold; use vectorization='multiprocess'"
        )
    from grid_vec.vector.batched import BatchedGridVecEnv

    return BatchedGridVecEnv.from_factory(
        request.factory,
        request.num_envs,
        autoreset_mode=request.autoreset_mode,
        **request.vector_kwargs,
    )


VECTORIZATIONS: dict[str, Builder] = {
    "multiprocess": _multiprocess,
    "batched": _batched,
}
"""The vectorizations this package builds itself; others (``"ray"``) are plugins."""

PLUGIN_GROUP = "grid_vec.vectorizations"
"""The entry-point group of the vectorizations built elsewhere: ``"ray"`` is declared in
``pyproject.toml`` (``[project.entry-points]``, the integrations' RayVecEnv), so that
``vector`` names nothing of the integrations above it, and another package may add its own."""


def _plugins() -> dict[str, Any]:
    """The entry points of :data:`PLUGIN_GROUP`, by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)}


def _builder(vectorization: str) -> Builder:
    """The builder of ``vectorization`` (a plugin's entry point loaded when it is one).

    Raises:
        ValueError: an unknown name.
        ImportError: the plugin needs an extra that is not installed.
    """
    builder = VECTORIZATIONS.get(vectorization)
    if builder is not None:
        return builder
    plugins = _plugins()
    if vectorization not in plugins:
        known = (*VECTORIZATIONS, *sorted(plugins))
        raise ValueError(f"vectorization must be one of {known}, got {vectorization!r}")
    try:
        return plugins[vectorization].load()
    except ImportError as exc:
        raise ImportError(
            f"vectorization={vectorization!r} needs the {vectorization} extra: "
            f"pip install 'grid_vec[{vectorization}]' ({exc})"
        ) from exc


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
        envs_per_worker: (multiprocess) sub-envs per worker process, by default spread over
            the cores; (ray) sub-envs per actor, by default spread over the cluster's CPUs.
        autoreset_mode: gymnasium's autoreset mode.
        vectorization: ``"multiprocess"`` (default): a :class:`GridVecEnv`, one worker process
            per slice of sub-envs, each worker stepping its slice as one batch, and this
            process stepping the last slice itself (``step_in_parent``, see GridVecEnv):
            for several cores. ``"batched"``: a
            :class:`~grid_vec.vector.batched.BatchedGridVecEnv`, every sub-env in one batch
            in this process: no process, no pipe, the cheapest per env-step on one core.
            ``"ray"``: a :class:`~grid_vec.integrations.ray_vec_env.RayVecEnv` (the ``ray``
            extra), one Ray actor per slice of sub-envs, each stepping its slice as one
            batch, on a local Ray instance or the cluster of ``vector_kwargs["ray_address"]``:
            for several machines. See :data:`VECTORIZATIONS` and :data:`PLUGIN_GROUP`.
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
        ImportError: ``vectorization="ray"`` without Ray installed.
    """
    from grid_vec.env.graph import GraphVectorObservation, graph_layout
    from grid_vec.env.make import check_observation, env_factory

    check_observation(observation)
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    builder = _builder(vectorization)
    factory = env_factory(id_or_path, **env_kwargs)
    request = VecRequest(
        id_or_path, factory, num_envs, envs_per_worker, autoreset_mode, dict(vector_kwargs or {})
    )
    env = builder(request)
    if observation == "graph":
        if not hasattr(factory, "sharing_one_batch"):
            env.close()
            raise ValueError("observation='graph' takes a single grid, not a multi-mix folder")
        return GraphVectorObservation(env, graph_layout(factory()))
    return env
