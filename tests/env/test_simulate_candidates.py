"""simulate_candidates: K candidate actions per env in one call, each equal to simulating
that action alone (the same turn on a copy of the state), the envs untouched."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import grid_vec
from grid_vec.core.actions import KIND_SUB
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import CandidateResults


def _assert_row_is_simulate(env, results: CandidateResults, j: int, action) -> None:
    obs, reward, terminated, info = env.unwrapped.simulate(action)
    np.testing.assert_array_equal(results.observations[j], obs)
    assert results.rewards[j] == reward
    assert results.terminated[j] == terminated
    assert results.illegal[j] == info["is_illegal"]
    assert results.ambiguous[j] == info["is_ambiguous"]
    assert results.game_over_reason[j] == info.get("game_over_reason", "")
    if not terminated:
        rho = env.unwrapped.view(obs).rho
        assert results.max_rho[j] == pytest.approx(float(rho.max()), rel=1e-6)
        assert results.overloaded[j] == int((rho > 1).sum())
    else:
        assert results.max_rho[j] == np.inf


@pytest.fixture(scope="module")
def sandbox():
    """case14 a few steps in, one substation in cooldown: some candidates are
    illegal, some end the game."""
    env = grid_vec.make("case14", parameters=Parameters(nb_timestep_cooldown_sub=3))
    env.reset(seed=1, options={"scenario_id": 0})
    catalog = env.unwrapped.catalog
    sub_action = int(np.flatnonzero(catalog.kind == KIND_SUB)[0])
    env.step(sub_action)
    env.step(0)
    yield env
    env.close()


def test_every_catalog_candidate_equals_its_simulate(sandbox):
    k = sandbox.action_space.n
    results = sandbox.unwrapped.simulate_candidates(np.arange(k))
    assert results.observations.shape == (k, *sandbox.observation_space.shape)
    assert results.illegal.any() and results.terminated.any()  # the fixture's point
    for j in range(k):
        _assert_row_is_simulate(sandbox, results, j, j)


def test_candidates_leave_the_env_bitwise_untouched():
    def trajectory(simulating: bool) -> list[np.ndarray]:
        env = grid_vec.make("case14")
        env.reset(seed=4, options={"scenario_id": 1})
        out = []
        for t in range(6):
            if simulating:
                env.unwrapped.simulate_candidates(np.arange(0, env.action_space.n, 7))
            obs, _, terminated, truncated, _ = env.step(t % 3)
            out.append(obs)
            if terminated or truncated:
                obs, _ = env.reset()
                out.append(obs)
        env.close()
        return out

    for a, b in zip(trajectory(False), trajectory(True), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("action_type", ["redispatch", "combined"])
def test_continuous_and_combined_candidates_equal_their_simulate(action_type):
    env = grid_vec.make("case14", action_type=action_type)
    env.reset(seed=2)
    env.action_space.seed(5)  # seeded before any draw: the same actions on every run
    _, _, terminated, _, _ = env.step(env.action_space.sample())  # a dispatch under way
    assert not terminated
    samples = [env.action_space.sample() for _ in range(6)]
    if action_type == "combined":
        candidates = {
            "topology": np.array([s["topology"] for s in samples]),
            "continuous": np.stack([s["continuous"] for s in samples]),
        }
    else:
        candidates = np.stack(samples)
    results = env.unwrapped.simulate_candidates(candidates)
    for j, action in enumerate(samples):
        _assert_row_is_simulate(env, results, j, action)
    env.close()


def test_candidates_count_against_the_simulate_budget_all_or_nothing(make_env):
    env = make_env(parameters=Parameters(max_simulate_per_step=3))
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="max_simulate_per_step=3"):
        env.simulate_candidates(np.arange(4))
    assert env.simulate_candidates(np.arange(3)).rewards.shape == (3,)  # nothing was counted
    with pytest.raises(RuntimeError, match="max_simulate_per_step=3"):
        env.simulate(0)
    env.step(0)
    env.simulate_candidates(np.arange(3))  # a new step, a new budget


def test_bad_candidates_are_refused_with_a_clear_error(make_env):
    env = make_env()
    with pytest.raises(RuntimeError, match="reset"):
        env.simulate_candidates(np.arange(2))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="at least one candidate"):
        env.simulate_candidates(np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match=r"ints in \[0, "):
        env.simulate_candidates(np.array([0, env.action_space.n]))


def test_batched_vector_env_candidates_equal_each_sub_env_simulating_alone():
    """All N * K candidates as rows of one turn give what each sub-env gives simulating its
    own K (GridCommands' per-env path), and what GridVecEnv's workers give."""
    from grid_vec.vector.grid_commands import GridCommands

    actions = [np.array([0, 5, 9]), np.array([3, 0, 1])]
    vec = grid_vec.make_vec("case14", 3, vectorization="batched")
    vec.reset(seed=7)
    for a in actions:
        vec.step(a)
    candidates = np.random.default_rng(0).integers(vec.single_action_space.n, size=(3, 8))
    together = vec.simulate_candidates(candidates)
    assert together.observations.shape == (3, 8, *vec.single_observation_space.shape)
    one_by_one = GridCommands.simulate_candidates(vec, candidates)
    workers = grid_vec.make_vec("case14", 3, envs_per_worker=2)
    try:
        workers.reset(seed=7)
        for a in actions:
            workers.step(a)
        in_workers = workers.simulate_candidates(candidates)
    finally:
        workers.close()
    for other in (one_by_one, in_workers):
        for name in ("observations", "rewards", "terminated", "illegal", "max_rho"):
            np.testing.assert_array_equal(getattr(other, name), getattr(together, name))
        assert (other.game_over_reason == together.game_over_reason).all()
    assert together.env(1).rewards.shape == (8,)
    bad = candidates.copy()
    bad[1, 3] = -1
    with pytest.raises(ValueError, match=r"^sub-env 1: "):
        vec.simulate_candidates(bad)
    with pytest.raises(ValueError, match=r"shaped \(num_envs=3, K"):
        vec.simulate_candidates(candidates[:2])
    vec.close()


@pytest.mark.grid2op
@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("l2rpn_case14_sandbox", "do-nothing"),
        ("l2rpn_case14_sandbox", "substation"),
        pytest.param("l2rpn_neurips_2020_track1", "substation", marks=pytest.mark.slow),
    ],
)
def test_candidates_match_grid2op_obs_simulate(name, first):
    """Every catalog action simulated from the same state: rho within 1e-3, the same game
    overs and the same illegal flags as grid2op's obs.simulate, on the sandbox and a 36-bus
    folder (after a substation action, its cooldown makes some candidates illegal)."""
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    from pathlib import Path

    from grid_vec.bench.grid2op_reference import grid2op_env

    folder = Path(grid2op.__file__).parent / "data" / name
    ours = grid_vec.make(folder, opponent=None, maintenance=False)
    theirs = grid2op_env(folder, maintenance=False, opponent=False)
    try:
        u = ours.unwrapped
        # the folder's rules on both sides, with a substation cooldown of 3 steps
        u.set_parameters(dataclasses.replace(u.parameters, nb_timestep_cooldown_sub=3))
        rules = theirs.parameters
        rules.NB_TIMESTEP_COOLDOWN_SUB = 3
        theirs.change_parameters(rules)
        theirs.set_id(0)
        obs = theirs.reset()
        ours.reset(seed=0, options={"scenario_id": 0})
        played = [0, 0]
        if first == "substation":
            played[1] = int(np.flatnonzero(u.catalog.kind == KIND_SUB)[3])
        for a in played:
            obs, *_ = theirs.step(theirs.action_space(u.catalog.grid2op_action(a)))
            ours.step(a)
        found = u.simulate_candidates(np.arange(len(u.catalog)))
        if name == "l2rpn_case14_sandbox":
            assert found.illegal.any() == (first == "substation")
        for i in range(len(u.catalog)):
            simulated, _, done, info = obs.simulate(
                theirs.action_space(u.catalog.grid2op_action(i))
            )
            assert (found.terminated[i], found.illegal[i]) == (done, bool(info["is_illegal"])), i
            if not done:
                assert abs(found.max_rho[i] - float(simulated.rho.max())) < 1e-3, i
    finally:
        theirs.close()
        ours.close()
