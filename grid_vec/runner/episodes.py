"""What each episode of a run depends on (seeds, reset options), checking a run's arguments,
and the metadata entries a resumed run must find unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from grid_vec.runner.results import jsonable


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything episode ``index`` depends on."""

    index: int
    env_seed: int
    agent_seed: int
    options: dict[str, Any] | None


def derive_seed(master: int, index: int, stream: int) -> int:
    """Derive the seed of one episode's env or agent from a run's master seed.

    Independent of how many episodes the run has.

    Args:
        master: the run's master seed.
        index: the episode index.
        stream: 0 for the env seed, 1 for the agent seed.

    Returns:
        The seed, a non-negative int below 2**32.
    """
    sequence = np.random.SeedSequence(master, spawn_key=(index, stream))
    return int(sequence.generate_state(1)[0])


def plan_episodes(
    nb_episode: int,
    env_seeds: Sequence[int] | None,
    agent_seeds: Sequence[int] | None,
    episode_id: Sequence[Any] | None,
    reset_options: dict[str, Any] | Sequence[dict[str, Any] | None] | None,
    master_seed: int,
) -> list[EpisodeSpec]:
    """The episodes a run of ``nb_episode`` asks for (see :meth:`Runner.run` for the
    arguments); TypeError or ValueError naming a bad argument."""
    if isinstance(nb_episode, bool) or not isinstance(nb_episode, (int, np.integer)):
        raise TypeError(f"nb_episode must be an int, got {nb_episode!r}")
    if nb_episode < 0:
        raise ValueError(f"nb_episode must be >= 0, got {nb_episode}")
    env_seeds = _seed_list("env_seeds", env_seeds, nb_episode, master_seed, 0)
    agent_seeds = _seed_list("agent_seeds", agent_seeds, nb_episode, master_seed, 1)
    _check_length("episode_id", episode_id, nb_episode)
    if reset_options is None or isinstance(reset_options, dict):
        options_list: Sequence[dict[str, Any] | None] = [reset_options] * nb_episode
    else:
        _check_length("reset_options", reset_options, nb_episode)
        options_list = reset_options
    specs = []
    for i in range(nb_episode):
        options = options_list[i]
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"reset_options[{i}] must be a dict or None, got {options!r}")
        if episode_id is not None:
            options = {**(options or {}), "scenario_id": episode_id[i]}
        specs.append(EpisodeSpec(i, env_seeds[i], agent_seeds[i], options))
    return specs


def env_spec(env: VectorEnv) -> Any:
    """The gymnasium spec of the vector env, else of its first sub-env."""
    spec = getattr(env, "spec", None)
    return env.get_attr("spec")[0] if spec is None else spec


def agent_name(agent: Any) -> str:
    """The name a run records for ``agent``: its ``agent_name`` when it gives one (an adapter
    naming the agent it plays), else its class's name."""
    name = getattr(agent, "agent_name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


def run_identity(env: VectorEnv, agent: Any) -> dict[str, Any]:
    """The metadata entries, shared by a run's episodes, that a resumed run must find
    unchanged: which env (id and spaces) and which agent."""
    return {
        "env_id": getattr(env_spec(env), "id", None),
        "agent": agent_name(agent),
        "observation_space": repr(env.single_observation_space),
        "action_space": repr(env.single_action_space),
    }


def episode_identity(spec: EpisodeSpec, max_iter: int | None) -> dict[str, Any]:
    """The metadata entries of one episode that a resumed run must find unchanged."""
    return {
        "env_seed": spec.env_seed,
        "agent_seed": spec.agent_seed,
        "reset_options": jsonable(spec.options),
        "max_iter": max_iter,
    }


def check_max_iter(max_iter: int | None) -> None:
    """ValueError unless ``max_iter`` is None or a positive int."""
    if max_iter is not None and (
        isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1
    ):
        raise ValueError(f"max_iter must be None or a positive int, got {max_iter!r}")


def _check_length(name: str, values: Sequence[Any] | None, nb_episode: int) -> None:
    if values is not None and len(values) != nb_episode:
        raise ValueError(f"{name} has {len(values)} entries, expected nb_episode={nb_episode}")


def _seed_list(
    name: str, seeds: Sequence[int] | None, nb_episode: int, master: int, stream: int
) -> list[int]:
    if seeds is None:
        return [derive_seed(master, i, stream) for i in range(nb_episode)]
    _check_length(name, seeds, nb_episode)
    out = []
    for i, seed in enumerate(seeds):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"{name}[{i}] must be a non-negative int, got {seed!r}")
        out.append(int(seed))
    return out
