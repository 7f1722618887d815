"""Baseline agents, and the grid-specific pieces read through duck-typed calls."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from runner_toy_envs import GridLikeEnv, ToyEnv

from grid_vec.runner import (
    DoNothingAgent,
    EpisodeData,
    GreedyAgent,
    RandomAgent,
    ReconnectAgent,
    Runner,
    default_action,
)

DISABLED = AutoresetMode.DISABLED


def grid_env(n: int) -> SyncVectorEnv:
    return SyncVectorEnv([GridLikeEnv] * n, autoreset_mode=DISABLED)


def run(env, agent, nb_episode=6, **kwargs):
    try:
        return Runner(env, agent, seed=5).run(nb_episode, **kwargs)
    finally:
        env.close()


def reconnect_agent() -> ReconnectAgent:
    env = GridLikeEnv()
    sample, _ = env.reset(seed=0)
    return ReconnectAgent.from_view(env.view, sample, [k + 1 for k in range(env.n_line)])


def test_reconnect_agent_reads_status_and_cooldown_from_the_view():
    agent = reconnect_agent()
    obs = np.array([0.5, 0, 0, 0, 1, 0, 0, 1, 0, 3, 0, 0], dtype=np.float32)
    assert agent.act(obs, 0.0, False) == 3  # branch 1 is in cooldown, branch 2 is free
    obs[9] = 0
    assert agent.act(obs, 0.0, False) == 2
    obs[4:8] = 1
    assert agent.act(obs, 0.0, False) == 0
    with pytest.raises(ValueError, match="must match"):
        ReconnectAgent([1, 2], line_status=[4, 5, 6])


def test_reconnect_and_greedy_beat_do_nothing_independently_of_env_count():
    nothing = run(grid_env(2), DoNothingAgent())
    reconnect = run(grid_env(2), reconnect_agent())
    greedy = run(grid_env(2), GreedyAgent())
    mean = lambda results: np.mean([r.cum_reward for r in results])  # noqa: E731
    assert mean(reconnect) > mean(nothing)
    assert mean(greedy) > mean(nothing)
    assert run(grid_env(3), reconnect_agent()) == reconnect
    assert run(grid_env(1), GreedyAgent()) == greedy


def test_greedy_works_through_async_vector_env():
    env = AsyncVectorEnv([GridLikeEnv] * 2, autoreset_mode=DISABLED)
    assert run(env, GreedyAgent(), nb_episode=3) == run(grid_env(1), GreedyAgent(), nb_episode=3)


def test_greedy_needs_simulate_and_valid_candidates():
    toy = SyncVectorEnv([ToyEnv], autoreset_mode=DISABLED)
    with pytest.raises(TypeError, match="simulate"):
        Runner(toy, GreedyAgent())
    toy.close()
    env = grid_env(1)
    with pytest.raises(ValueError, match="not in Discrete"):
        Runner(env, GreedyAgent(candidates=[0, 9]))
    with pytest.raises(ValueError, match="empty"):
        GreedyAgent(candidates=[])
    env.close()


def test_grid_env_scenario_timings_and_parameters_are_picked_up(tmp_path):
    results = run(
        grid_env(2), DoNothingAgent(), nb_episode=3, episode_id=[7, 8, 9], path_save=tmp_path
    )
    assert [r.scenario_name for r in results] == ["grid-7", "grid-8", "grid-9"]
    assert all(r.max_steps == 15 for r in results)
    assert all(r.timings.powerflow is not None and r.timings.powerflow > 0 for r in results)
    assert [r.timings.env_detail["steps"] for r in results] == [r.steps for r in results]
    data = EpisodeData.load(tmp_path / "episode_00001")
    assert data.meta["parameters"] == {"disconnect_probability": 0.3, "cooldown": 2}
    assert data.info("tripped").shape == (results[1].steps, 4)
    assert data.views(GridLikeEnv().view).rho.shape == (results[1].steps + 1, 4)


def test_non_grid_env_degrades_gracefully():
    results = run(SyncVectorEnv([ToyEnv] * 2, autoreset_mode=DISABLED), DoNothingAgent(), 2)
    assert all(r.timings.powerflow is None and r.max_steps is None for r in results)
    assert all(r.scenario_name == "toy-0" for r in results)


def test_random_agent_is_reproducible_per_seed():
    agent = RandomAgent(spaces.Discrete(10))
    agent.seed(4)
    first = [agent.act(None, 0.0, False) for _ in range(20)]
    agent.seed(4)
    assert [agent.act(None, 0.0, False) for _ in range(20)] == first
    assert len(set(first)) > 3
    with pytest.raises(TypeError, match="gymnasium Space"):
        RandomAgent(10)


def test_default_actions_are_in_their_spaces():
    for space in (
        spaces.Discrete(4, start=2),
        spaces.Box(1.0, 2.0, (3,)),
        spaces.MultiDiscrete([3, 4]),
        spaces.MultiBinary(3),
        spaces.Dict({"a": spaces.Discrete(2)}),
    ):
        assert space.contains(default_action(space)), space
    assert default_action(spaces.Discrete(4, start=2)) == 2


def test_do_nothing_agent_must_be_bound():
    with pytest.raises(RuntimeError, match="bound"):
        DoNothingAgent()(np.zeros((2, 3)))
