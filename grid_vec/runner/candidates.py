"""The candidate machinery of the search agents (greedy-by-simulate and the expert): what
they read of a vector env's sub-envs, the candidates they build, and how they rank the
simulated steps.

A search agent tries candidate actions on copies of each sub-env's state with the vector
env's ``simulate_candidates`` (all candidates of all sub-envs in one call, batched
``(num_envs, K, ...)``: :func:`tiled`, :func:`stacked`) and ranks each simulated step by
:func:`candidate_scores`. The candidates of a task's topology are the actions of its
``Discrete`` part, the rest of the action unchanged (:func:`topology_candidates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv

TOPOLOGY = "topology"  # the catalog part of a "combined" action (GridEnv's Dict space)
CONTINUOUS = "continuous"  # its continuous part

__all__ = [
    "candidate_scores",
    "has_batched_simulate",
    "obs_segment",
    "simulated_score",
    "stacked",
    "then_sequence",
    "tiled",
    "topology_candidates",
    "topology_space",
]


def simulated_score(
    obs: Any, reward: float, terminated: bool, info: Any, *, rho: slice | None
) -> float:
    """How greedy-by-simulate ranks a simulated step (higher is better).

    Args:
        obs, reward, terminated, info: what ``simulate(action)`` returned.
        rho: the ``rho`` segment of the flat observation to rank by its maximum (lower max
            rho ranks higher), or None to rank by the reward.

    Returns:
        ``-inf`` for a step that ends the game or whose action is flagged ``is_illegal``;
        else minus the maximum rho, or the reward.
    """
    illegal = bool(info.get("is_illegal", False)) if isinstance(info, dict) else False
    if terminated or illegal:
        return -np.inf
    if rho is not None:
        return -float(np.max(np.asarray(obs)[rho]))
    return float(reward)


def candidate_scores(found: Any, *, by_rho: bool) -> np.ndarray:
    """:func:`simulated_score` of every candidate of a ``simulate_candidates`` result.

    Args:
        found: a :class:`~grid_vec.core.records.CandidateResults`.
        by_rho: rank by the lowest maximum rho (as the observation holds it: float32), else
            by the reward.

    Returns:
        The scores, shaped as ``found.played`` (for a horizon: the worst maximum rho along
        the steps, or the sum of the rewards; any game over and an illegal first action
        rank last).
    """
    if found.rewards.ndim > found.played.ndim:  # a horizon axis
        worst = found.max_rho.max(axis=-1)
        rewards, refused = found.rewards.sum(axis=-1), found.terminated.any(axis=-1)
        refused = refused | found.illegal[..., 0]
    else:
        worst, rewards, refused = found.max_rho, found.rewards, found.terminated | found.illegal
    scores = -worst.astype(np.float32) if by_rho else rewards.astype(np.float64)
    return np.where(refused, -np.inf, scores)


def has_batched_simulate(env: VectorEnv) -> bool:
    """Whether ``env`` simulates every sub-env's candidates in one ``simulate_candidates``
    call (grid_vec's ``GridVecEnv`` and ``BatchedGridVecEnv`` over GridEnvs)."""
    return hasattr(env, "simulate_candidates") and all(
        env.call("has_wrapper_attr", "simulate_candidates")
    )


def obs_segment(env: VectorEnv, name: str, who: str) -> slice:
    """Where the field ``name`` (``"rho"``, ``"topo_vect"``) lies in the sub-envs' flat
    observations, read once from their ``obs_layout``.

    Args:
        env: the vector env.
        name: the field.
        who: the agent asking, for the error.

    Returns:
        The field's slice.

    Raises:
        TypeError: the sub-envs have no ``obs_layout`` with that segment.
    """
    layouts = env.get_attr("obs_layout") if all(env.call("has_wrapper_attr", "obs_layout")) else []
    slices = getattr(layouts[0], "slices", {}) if layouts else {}
    if name not in slices:
        raise TypeError(
            f"{who} needs sub-envs whose obs_layout has a {name!r} segment (grid_vec's GridEnv "
            "with flat observations)"
        )
    return slices[name]


def topology_space(space: spaces.Space) -> spaces.Discrete | None:
    """The ``Discrete`` catalog part of an action space: the space itself, or a ``Dict``'s
    ``"topology"`` entry (a ``"combined"`` action); None when it has none."""
    if isinstance(space, spaces.Discrete):
        return space
    if isinstance(space, spaces.Dict) and isinstance(space.spaces.get(TOPOLOGY), spaces.Discrete):
        return space.spaces[TOPOLOGY]
    return None


def topology_candidates(space: spaces.Space, do_nothing: Any) -> list[Any] | None:
    """Every action of the ``Discrete`` part of ``space``, the rest of ``do_nothing``
    unchanged: do-nothing first (a ``"combined"`` action's topology index 0 is do-nothing),
    then each catalog action of the task's set.

    Args:
        space: a single action space.
        do_nothing: its do-nothing action (a ``Dict`` action: its continuous part is kept).

    Returns:
        The candidates, or None for a space without a ``Discrete`` part.
    """
    part = topology_space(space)
    if part is None:
        return None
    indices = [np.int64(part.start + k) for k in range(part.n)]
    if part is space:
        return indices
    return [{**do_nothing, TOPOLOGY: k} for k in indices]


def then_sequence(space: spaces.Space, first: Any, after: Any, horizon: int) -> Any:
    """The sequence ``first`` then ``after`` ``horizon - 1`` times, batched as one action of
    ``space`` with a leading horizon axis."""
    if isinstance(space, spaces.Dict):
        return {
            key: then_sequence(space[key], first[key], after[key], horizon) for key in space.spaces
        }
    return np.stack([np.asarray(first)] + [np.asarray(after)] * (horizon - 1))


def tiled(space: spaces.Space, candidates: Sequence[Any], n: int) -> Any:
    """The same candidates for each of ``n`` sub-envs, batched ``(n, K, ...)`` as
    ``simulate_candidates`` takes them (:func:`stacked`, every sub-env picking them all)."""
    every = np.arange(len(candidates))
    return stacked(space, candidates, np.broadcast_to(every, (n, len(candidates))))


def stacked(space: spaces.Space, candidates: Sequence[Any], picks: np.ndarray) -> Any:
    """Each sub-env's own candidates, batched ``(n, K, ...)``: sub-env ``i``'s ``k``-th
    candidate is ``candidates[picks[i, k]]``.

    Args:
        space: the single action space.
        candidates: the actions to pick from.
        picks: ``(n, K)`` indices into ``candidates``.

    Returns:
        The batched candidates, as ``simulate_candidates`` takes them.
    """
    if isinstance(space, spaces.Dict):
        return {
            key: stacked(space[key], [c[key] for c in candidates], picks) for key in space.spaces
        }
    return np.stack([np.asarray(c) for c in candidates])[picks]
