"""contingencies: the N-1 screening of the current state (each branch out alone), the same
flows as solving a copy of the env's solver with that branch out, the env untouched."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec
from grid_vec.grid.backend import Backend
from grid_vec.grid.lightsim import LightSimBackend


@pytest.fixture(scope="module")
def case14_env():
    env = grid_vec.make("case14")
    env.reset(seed=0, options={"scenario_id": 2})
    for _ in range(3):
        env.step(0)
    yield env
    env.close()


def _buses(env):
    batch = env.unwrapped.batch_row[0]
    topo, layout = batch.game.grid.topo[0], batch.topology
    return topo[layout.pos_load], topo[layout.pos_gen], topo[layout.pos_or], topo[layout.pos_ex]


def test_every_outage_equals_solving_a_copy_with_that_branch_out(case14_env):
    found = case14_env.unwrapped.contingencies()
    batch = case14_env.unwrapped.batch_row[0]
    n = batch.model.n_branch
    assert found.rho.shape == (n, n) and found.max_rho.shape == (n,)
    # the reference: Backend's own per-branch copy-and-solve on a copy of the env's row
    row = LightSimBackend.of_batch(batch.game.grid.solver.take([0]))
    amps = Backend.outage_currents(row, np.arange(n), *_buses(case14_env))
    expected = amps / batch.thermal_limit
    ends = found.game_over_reason != ""
    assert ends.any() and not ends.all()  # case14 has outages that cut a generator off
    np.testing.assert_allclose(found.rho[~ends], expected[~ends], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(found.max_rho[~ends], expected[~ends].max(axis=1), rtol=1e-7)
    assert np.isinf(found.max_rho[ends]).all() and np.isnan(found.rho[ends]).all()
    assert all("isolated" in r or "diverged" in r for r in found.game_over_reason[ends])


def test_branches_by_name_or_index_and_bad_ones_refused(case14_env):
    names = case14_env.unwrapped.model.branch_names
    by_name = case14_env.unwrapped.contingencies([str(names[4]), str(names[0])])
    by_index = case14_env.unwrapped.contingencies([4, 0])
    np.testing.assert_array_equal(by_name.rho, by_index.rho)
    assert by_index.branches.tolist() == [4, 0]
    with pytest.raises(ValueError, match="not a branch name"):
        case14_env.unwrapped.contingencies(["no such line"])
    with pytest.raises(ValueError, match="not a branch name"):
        case14_env.unwrapped.contingencies([len(names)])


def test_screening_leaves_the_env_bitwise_untouched():
    def trajectory(screening: bool) -> list[np.ndarray]:
        env = grid_vec.make("case14")
        obs, _ = env.reset(seed=5, options={"scenario_id": 0})
        out = [obs]
        for t in range(5):
            if screening:
                env.unwrapped.contingencies()
            obs, *_ = env.step(0 if t % 2 else 7)
            out.append(obs)
        env.close()
        return out

    for a, b in zip(trajectory(False), trajectory(True), strict=True):
        np.testing.assert_array_equal(a, b)


def test_pandapower_backend_screens_through_the_default_path():
    results = {}
    for backend in ("lightsim2grid", "pandapower"):
        env = grid_vec.make("case14", backend=backend)
        env.reset(seed=1)
        env.step(0)
        results[backend] = env.unwrapped.contingencies([0, 3, 5])
        env.close()
    light, pp = results["lightsim2grid"], results["pandapower"]
    np.testing.assert_array_equal(light.game_over_reason, pp.game_over_reason)
    np.testing.assert_allclose(light.max_rho, pp.max_rho, rtol=1e-4)


def test_vector_envs_screen_each_sub_env_as_it_would_alone():
    vec = grid_vec.make_vec("case14", 2, vectorization="batched")
    workers = grid_vec.make_vec("case14", 2, envs_per_worker=1)
    try:
        for envs in (vec, workers):
            envs.reset(seed=11)
            envs.step(np.array([0, 3]))
        together, apart = vec.contingencies([1, 2, 6]), workers.contingencies([1, 2, 6])
    finally:
        workers.close()
        vec.close()
    assert together.rho.shape == (2, 3, apart.rho.shape[-1])
    np.testing.assert_array_equal(together.rho, apart.rho)
    np.testing.assert_array_equal(together.max_rho, apart.max_rho)


def _n1_env(branch: int, **kwargs):
    from grid_vec.core.rewards.grid2op import N1Reward

    return grid_vec.make("case14", reward=N1Reward(l_id=branch), **kwargs)


def test_n1_reward_is_the_max_rho_of_that_outage_in_the_state_reached():
    """grid2op's N1Reward: the screening of the state the step reached, that branch out;
    -1 for an outage that cuts a generator or a load off."""
    probe = grid_vec.make("case14")
    probe.reset(seed=0, options={"scenario_id": 2})
    ends = probe.unwrapped.contingencies().game_over_reason != ""
    whole, cutting = int(np.flatnonzero(~ends)[0]), int(np.flatnonzero(ends)[0])
    for branch in (whole, cutting):
        env = _n1_env(branch)
        env.reset(seed=0, options={"scenario_id": 2})
        for _ in range(3):
            _, reward, *_ = env.step(0)
            found = env.unwrapped.contingencies([branch])
            expected = -1.0 if branch == cutting else float(found.max_rho[0])
            assert reward == pytest.approx(expected, rel=1e-12), branch
        assert (reward == -1.0) == (branch == cutting)


def test_n1_reward_in_a_batch_equals_each_env_alone():
    from gymnasium.vector import AutoresetMode

    from grid_vec.core.rewards.grid2op import N1Reward

    envs = grid_vec.make_vec(
        "case14", 3, vectorization="batched", reward=N1Reward(l_id=2),
        autoreset_mode=AutoresetMode.DISABLED,
    )  # fmt: skip
    singles = [_n1_env(2) for _ in range(3)]
    envs.reset(seed=0)
    for i, env in enumerate(singles):
        env.reset(seed=i)
    for t in range(4):
        _, rewards, *_ = envs.step(np.zeros(3, dtype=np.int64))
        alone = [env.step(0)[1] for env in singles]
        np.testing.assert_array_equal(rewards, alone, err_msg=f"step {t}")


def test_n1_reward_refuses_a_branch_the_grid_lacks():
    with pytest.raises(ValueError, match="l_id must be a branch index"):
        _n1_env(10_000)


def test_a_per_env_reward_reads_its_own_outage_currents():
    """A custom (per-env) reward gets ``outages.currents`` of its env alone, 1-D."""
    seen = []

    def worst_amps(inputs, terminated):
        amps = inputs.outages.currents(2)
        seen.append(amps.shape)
        return float(np.nanmax(amps))

    env = grid_vec.make("case14", reward=worst_amps)
    env.reset(seed=0, options={"scenario_id": 2})
    _, reward, *_ = env.step(0)
    expected = env.unwrapped.contingencies([2]).rho[0] * env.unwrapped.thermal_limit
    assert seen == [(env.unwrapped.model.n_branch,)]
    assert reward == pytest.approx(float(expected.max()), rel=1e-12)
