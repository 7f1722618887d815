"""GridVecEnv over real GridEnvs: make_vec, gymnasium.make_vec, and the grid commands."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import grid_vec
from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv, make_vec


@pytest.fixture(scope="module")
def case14_envs():
    envs = make_vec("case14", 4, envs_per_worker=2, autoreset_mode=AutoresetMode.NEXT_STEP)
    yield envs
    envs.close()


def test_make_vec_steps_like_sync_vector_env(case14_envs):
    sync = SyncVectorEnv([env_factory("case14")] * 4)
    try:
        obs_a, info_a = case14_envs.reset(seed=5)
        obs_b, info_b = sync.reset(seed=5)
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(info_a["scenario_id"], info_b["scenario_id"])
        rng = np.random.default_rng(0)
        for _ in range(20):
            actions = rng.integers(0, 3, size=4)
            out_a = case14_envs.step(actions)
            out_b = sync.step(actions)
            for a, b in zip(out_a[:4], out_b[:4], strict=True):
                np.testing.assert_array_equal(a, b)
    finally:
        sync.close()


def test_sub_envs_get_distinct_seeds_and_scenarios(case14_envs):
    _, info = case14_envs.reset(seed=11)
    assert case14_envs.seeds == (11, 12, 13, 14)
    assert len(set(info["scenario_id"].tolist())) > 1


def test_set_scenario_id_per_env_and_for_all(case14_envs):
    case14_envs.set_scenario_id([3, 4, 5, 6])
    _, info = case14_envs.reset(seed=0)
    assert info["scenario_id"].tolist() == [3, 4, 5, 6]
    case14_envs.set_scenario_id(9)
    _, info = case14_envs.reset(seed=0)
    assert info["scenario_id"].tolist() == [9, 9, 9, 9]
    with pytest.raises(ValueError, match="sequence of 4"):
        case14_envs.set_scenario_id([1, 2])


def test_set_scenario_filter_restricts_names(case14_envs):
    names = case14_envs.call("get_wrapper_attr", "scenario_order")
    assert len(names) == 4
    case14_envs.set_scenario_filter(lambda name: name.endswith("7"))
    for seed in range(3):
        _, info = case14_envs.reset(seed=seed)
        assert all(str(n).endswith("7") for n in info["scenario_name"])
    case14_envs.set_scenario_filter(lambda name: True)


def test_batched_simulate_matches_each_sub_env_and_leaves_state(case14_envs):
    obs, info = case14_envs.reset(seed=3)
    actions = np.array([0, 1, 2, 0])
    sim_obs, sim_rew, sim_term, sim_infos = case14_envs.simulate(actions)
    assert sim_obs.shape == obs.shape and sim_rew.shape == (4,) and sim_term.shape == (4,)
    assert len(sim_infos) == 4
    # each sub-env's own simulate, on an in-process env brought to the same state
    for i, scenario_id in enumerate(info["scenario_id"].tolist()):
        env = env_factory("case14")()
        own_obs, _ = env.reset(seed=3 + i, options={"scenario_id": scenario_id})
        np.testing.assert_array_equal(own_obs, obs[i])  # the same state to start from
        own = env.simulate(int(actions[i]))
        np.testing.assert_array_equal(sim_obs[i], own[0])
        assert sim_rew[i] == own[1] and sim_term[i] == own[2]
        env.close()
    # state untouched: the same simulate gives the same answer, and stepping still works
    again = case14_envs.simulate(actions)
    np.testing.assert_array_equal(sim_obs, again[0])
    stepped = case14_envs.step(np.zeros(4, dtype=np.int64))
    assert stepped[0].shape == obs.shape
    with pytest.raises(ValueError, match="simulate needs actions"):
        case14_envs.simulate(np.array([0, 1]))


def test_timings_and_parameters(case14_envs):
    case14_envs.reset(seed=0)
    case14_envs.step(np.zeros(4, dtype=np.int64))
    timings = case14_envs.timings()
    assert len(timings) == 4 and all(t["powerflow"] > 0 for t in timings)
    params = case14_envs.get_parameters()
    assert len(params) == 4
    case14_envs.set_parameters(params[0])


def test_fresh_interpreter_workers_never_import_pandapower():
    # a forked worker has what its parent imported (pandapower, when an earlier test of this
    # process compiled a grid): the claim is about workers started as fresh interpreters
    spawned = {"context": "spawn", "step_in_parent": False}  # both slices in workers
    envs = make_vec("case14", 2, envs_per_worker=1, vector_kwargs=spawned)
    try:
        for pid in envs.worker_pids():
            with open(f"/proc/{pid}/maps") as maps:
                mapped = maps.read()
            assert "lightsim2grid" in mapped  # the solver is there ...
            assert "pandas/_libs" not in mapped  # ... but not pandas, hence not pandapower
    finally:
        envs.close()


def test_gymnasium_make_vec_builds_a_grid_vec_env():
    envs = gym.make_vec("grid_vec/Case14-v0", num_envs=2)
    try:
        assert isinstance(envs, GridVecEnv)
        obs, _ = envs.reset(seed=1)
        assert obs.shape[0] == 2
    finally:
        envs.close()
    assert grid_vec.make_vec is make_vec


def test_make_vec_rejects_bad_num_envs():
    with pytest.raises(ValueError, match="num_envs"):
        make_vec("case14", 0)


def _start_minutes(envs, obs):
    view = envs.call("get_wrapper_attr", "view")[0]
    rows = [view(o) for o in obs]
    return [
        int(v.day[0]) * 1440 + int(v.hour_of_day[0]) * 60 + int(v.minute_of_hour[0]) for v in rows
    ]


def test_set_fast_forward_starts_episodes_at_seeded_random_steps(case14_envs):
    case14_envs.set_scenario_id(0)
    obs, _ = case14_envs.reset(seed=0)
    midnight = _start_minutes(case14_envs, obs)
    case14_envs.set_fast_forward(2000)
    case14_envs.set_scenario_id(0)
    first = _start_minutes(case14_envs, case14_envs.reset(seed=21)[0])
    case14_envs.set_scenario_id(0)
    again = _start_minutes(case14_envs, case14_envs.reset(seed=21)[0])
    assert first == again  # drawn from the seeded env RNG
    assert len(set(first)) > 1 and first != midnight
    # an explicit fast_forward option wins over the random one
    obs, _ = case14_envs.reset(seed=21, options={"scenario_id": 0, "fast_forward": 12})
    assert [m - midnight[0] for m in _start_minutes(case14_envs, obs)] == [60] * 4
    case14_envs.set_fast_forward(0)
    case14_envs.set_scenario_id(0)
    assert _start_minutes(case14_envs, case14_envs.reset(seed=21)[0]) == midnight


def test_sub_envs_carry_their_gymnasium_spec(case14_envs):
    # recordings name the env through it (Runner meta "env_id")
    assert [s.id for s in case14_envs.get_attr("spec")] == ["grid_vec/Case14-v0"] * 4
