"""A multi-agent view of the grid: one agent per substation and / or dispatchable generator.

* :func:`parallel_env`: a PettingZoo ``ParallelEnv`` over one GridEnv (the ``marl`` extra,
  pettingzoo);
* :func:`vector_env`: N of them stepped together, arrays shaped ``(num_envs, num_agents,
  ...)`` (no pettingzoo needed);
* :class:`MultiAgentPolicy`: the agents' policy as a batched policy of single-agent GridEnvs,
  which the Runner plays and ``evaluate_task`` scores beside single-agent policies.

Who the agents are, what they see, how their actions become one grid2op action and what
they earn: :mod:`grid_vec.marl.agents`. docs/marl.md is the guide.
"""

from __future__ import annotations

import os
from typing import Any

from gymnasium.vector import AutoresetMode

from grid_vec.env.make import env_factory
from grid_vec.marl.agents import REWARDS, SCOPES, MultiAgentLayout, check_reward, env_settings
from grid_vec.marl.policy import MultiAgentPolicy
from grid_vec.marl.vector import MultiAgentStep, MultiAgentVecEnv
from grid_vec.vector.make_vec import make_vec

__all__ = [
    "REWARDS",
    "SCOPES",
    "MultiAgentLayout",
    "MultiAgentPolicy",
    "MultiAgentStep",
    "MultiAgentVecEnv",
    "parallel_env",
    "vector_env",
]

# the settings the view needs of GridEnv: the general topology action, the catalog's mask
_FIXED = ("action_type", "action_mask", "action_subset", "observation_attributes", "observation")


def _view_settings(scope: str, agents: Any, make_kwargs: dict[str, Any]) -> dict[str, Any]:
    """GridEnv's settings for the view: the task's or the user's, with the action type the
    agents need and the catalog's mask."""
    taken = [key for key in _FIXED if key in make_kwargs]
    if taken:
        raise ValueError(
            f"the multi-agent view sets {', '.join(taken)} itself; leave "
            f"{'it' if len(taken) == 1 else 'them'} out"
        )
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    generators = (
        scope != "substations"
        if agents is None
        else any(str(name).startswith("generator_") for name in agents)
    )
    return {**make_kwargs, **env_settings(generators)}


def parallel_env(
    env_id_or_folder: str | os.PathLike,
    scope: str = "substations",
    *,
    agents: list[str] | None = None,
    reward: str = "shared",
    **make_kwargs: Any,
) -> Any:
    """A PettingZoo ``ParallelEnv`` of the agents of one GridEnv.

    Args:
        env_id_or_folder: what :func:`grid_vec.make` takes (a task id, an embedded grid, a
            grid2op-format folder).
        scope: ``"substations"``, ``"generators"`` or ``"substations_and_generators"``
            (:data:`SCOPES`).
        agents: the agents by name (``"substation_<s>"``, ``"generator_<g>"``) instead of a
            whole scope.
        reward: ``"shared"`` (the env's reward to every agent) or ``"local"``.
        **make_kwargs: :func:`grid_vec.make`'s arguments (``split``, ``heuristics``,
            ``parameters``, ...), but the action type, mask, subset and observation, which the
            view sets.

    Returns:
        A :class:`~grid_vec.marl.parallel.GridParallelEnv`.

    Raises:
        ImportError: pettingzoo is not installed (the ``marl`` extra).
        ValueError: an unknown scope, agent or reward; an argument the view sets.
    """
    from grid_vec.marl.parallel import GridParallelEnv

    check_reward(reward)
    settings = _view_settings(scope, agents, make_kwargs)
    env = env_factory(env_id_or_folder, **settings)()
    return GridParallelEnv(env, MultiAgentLayout.of(env, scope, agents), reward)


def vector_env(
    env_id_or_folder: str | os.PathLike,
    num_envs: int,
    scope: str = "substations",
    *,
    agents: list[str] | None = None,
    reward: str = "shared",
    vectorization: str = "batched",
    envs_per_worker: int | None = None,
    **make_kwargs: Any,
) -> MultiAgentVecEnv:
    """``num_envs`` multi-agent views stepped together, arrays ``(num_envs, num_agents,
    ...)``.

    Args:
        env_id_or_folder, scope, agents, reward, make_kwargs: as :func:`parallel_env`'s.
        num_envs: the number of envs.
        vectorization: ``"batched"`` (default: every env in one batched core in this
            process) or ``"multiprocess"`` (GridVecEnv's workers).
        envs_per_worker: (multiprocess) envs per worker process.

    Returns:
        The :class:`MultiAgentVecEnv`.

    Raises:
        ValueError: as :func:`parallel_env`, and a bad ``num_envs`` or ``vectorization``.
    """
    check_reward(reward)
    settings = _view_settings(scope, agents, make_kwargs)
    probe = env_factory(env_id_or_folder, **settings)()
    layout = MultiAgentLayout.of(probe, scope, agents)
    probe.close()
    vec = make_vec(
        env_id_or_folder,
        num_envs,
        vectorization=vectorization,
        envs_per_worker=envs_per_worker,
        autoreset_mode=AutoresetMode.SAME_STEP,
        **settings,
    )
    return MultiAgentVecEnv(vec, layout, reward)
