"""Baseline agents, and the grid-specific pieces read through duck-typed calls."""

from __future__ import annotations

import gymnasium as gym
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


class _MaskedRandom:
    """A maskable batched policy: picks uniformly among the actions its infos allow, and
    keeps every mask and pick it saw, and the refusals the env reported for its picks."""

    takes_infos = True

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []
        self.refused = 0

    def __call__(self, obs, infos):
        if "is_illegal" in infos:  # the step's verdict on the last picks (not reset rows)
            self.refused += int(np.sum(infos["is_illegal"] & infos["_is_illegal"]))
        masks = np.asarray(infos["action_mask"], dtype=bool)
        picks = np.array([self.rng.choice(np.flatnonzero(m)) for m in masks])
        self.seen.append((masks, picks))
        return picks


def test_a_policy_that_takes_infos_gets_the_masks_of_its_observations_and_plays_legally():
    import grid_vec
    from grid_vec.runner import Runner

    envs = grid_vec.make_vec(
        "grid_vec/Case14Topology-v0",
        2,
        vectorization="batched",
        split="test",
        max_iter=40,
        heuristics=None,  # a decision at every step
    )
    policy = _MaskedRandom()
    with Runner(envs, policy, seed=0) as runner:
        results = runner.run(5)  # more episodes than envs: rows reset while others play
    envs.close()
    assert len(results) == 5 and len(policy.seen) > 40
    for masks, picks in policy.seen:
        assert masks.shape == (2, envs.single_action_space.n)
        assert masks[np.arange(2), picks].all()
    # a stale mask (the one before a reset) would let a refused action through
    assert policy.refused == 0


def test_merge_rows_takes_the_reset_rows_and_keeps_the_others():
    from grid_vec.runner.agents import merge_rows

    before = {
        "mask": np.array([[1, 0], [0, 1], [1, 1]]),
        "_mask": np.ones(3, bool),
        "is_illegal": np.array([True, False, False]),
        "_is_illegal": np.ones(3, bool),
    }
    reset = {"mask": np.array([[0, 0], [1, 1], [0, 1]]), "_mask": np.array([0, 1, 0], bool)}
    merged = merge_rows(before, reset, [1])
    np.testing.assert_array_equal(merged["mask"], [[1, 0], [1, 1], [1, 1]])
    np.testing.assert_array_equal(merged["_mask"], [True, True, True])
    # a step-only entry: no longer there for the reset row
    np.testing.assert_array_equal(merged["_is_illegal"], [True, False, True])
    fresh = merge_rows({}, {"x": np.arange(3), "_x": np.ones(3, bool)}, [0, 2])
    np.testing.assert_array_equal(fresh["_x"], [True, False, True])
    assert before["mask"][1].tolist() == [0, 1]  # the inputs are left as they were


class _TickEnv(gym.Env):
    """Observation and info both carry the steps since the reset; episodes of 3 to 5 steps."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.tick, self.length = 0, int(self.np_random.integers(3, 6))
        return np.array([0.0], np.float32), {"tick": 0}

    def step(self, action):
        self.tick += 1
        obs = np.array([self.tick], np.float32)
        return obs, 1.0, self.tick >= self.length, False, {"tick": self.tick}


class _TickChecker:
    takes_infos = True

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obs, infos):
        assert infos["_tick"].all()
        np.testing.assert_array_equal(infos["tick"], obs[:, 0])  # the infos of these obs
        self.calls += 1
        return np.zeros(len(obs), dtype=np.int64)


@pytest.mark.parametrize("autoreset", [AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP])
def test_the_infos_a_policy_gets_are_those_of_its_observations_across_resets(autoreset):
    from grid_vec.runner import Runner

    envs = SyncVectorEnv([_TickEnv] * 3, autoreset_mode=autoreset)
    policy = _TickChecker()
    with Runner(envs, policy, seed=0) as runner:
        results = runner.run(10)
    assert len(results) == 10 and policy.calls >= 10


@pytest.mark.parametrize("rank", ["reward", "max_rho"])
def test_greedy_agent_in_one_lookahead_call_picks_what_one_simulate_per_candidate_picks(rank):
    """On grid_vec's vector envs the agent simulates every candidate in one
    simulate_candidates call; its picks are those of the one-by-one simulate loop."""
    import grid_vec
    from grid_vec.runner import GreedyAgent

    picks = {}
    for batched in (True, False):
        # line_margin: a reward that ranks the candidates (case14's flat one ties them all)
        envs = grid_vec.make_vec("case14", 3, vectorization="batched", reward="line_margin")
        agent = GreedyAgent(candidates=list(range(0, envs.single_action_space.n, 3)), rank=rank)
        agent.bind(envs)
        assert (agent._batched is not None) is True
        if not batched:
            agent._batched = None  # the loop of simulate calls, as on other vector envs
        envs.reset(seed=3)
        chosen = []
        for _ in range(8):
            actions = agent(None)
            chosen.append(np.asarray(actions).copy())
            envs.step(actions)
        picks[batched] = np.stack(chosen)
        envs.close()
    np.testing.assert_array_equal(picks[True], picks[False])
    assert picks[True].any()  # not do-nothing throughout: the ranking decided something


@pytest.mark.parametrize("rank", ["reward", "max_rho"])
def test_greedy_agent_with_a_horizon_picks_the_best_chain_of_its_action_then_do_nothing(rank):
    """GreedyAgent(horizon=3) plays, per sub-env, the candidate whose chain (the candidate,
    then do-nothing twice) ranks best: the worst max rho along it, or its summed reward, game
    overs and illegal first actions last."""
    import grid_vec

    envs = grid_vec.make_vec("case14", 2, vectorization="batched", reward="line_margin")
    tried = list(range(0, envs.single_action_space.n, 4))
    agent = GreedyAgent(candidates=tried, rank=rank, horizon=3)
    agent.bind(envs)
    envs.reset(seed=3)
    sequences = np.zeros((2, len(tried), 3), dtype=np.int64)
    sequences[:, :, 0] = tried
    for _ in range(4):
        found = envs.simulate_candidates(sequences, horizon=3)
        score = -found.max_rho.max(axis=2) if rank == "max_rho" else found.rewards.sum(axis=2)
        refused = found.terminated.any(axis=2) | found.illegal[:, :, 0]
        expected = np.array(tried)[np.argmax(np.where(refused, -np.inf, score), axis=1)]
        actions = agent(None)
        np.testing.assert_array_equal(actions, expected)
        envs.step(actions)
    envs.close()
    with pytest.raises(ValueError, match="horizon must be an int >= 1"):
        GreedyAgent(horizon=0)
    env = grid_env(1)
    with pytest.raises(TypeError, match="simulate_candidates"):
        GreedyAgent(horizon=2).bind(env)
    env.close()
