"""Choosing the observation's attributes (grid2op's gym_compat style), and grid2op's further
attributes equal to grid2op's observation's."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import grid_vec

EXTRAS = [
    "target_dispatch",
    "current_step",
    "max_step",
    "delta_time",
    "timestep_protection_engaged",
    "theta_or",
    "theta_ex",
    "load_theta",
    "gen_theta",
]


def test_chosen_attributes_are_the_default_observations_columns_in_the_order_given():
    full = grid_vec.make("case14")
    chosen = grid_vec.make("case14", observation_attributes=["topo_vect", "rho", "hour_of_day"])
    obs, _ = full.reset(seed=3)
    small, _ = chosen.reset(seed=3)
    sizes = {n: sl.stop - sl.start for n, sl in full.obs_layout.slices.items()}
    assert chosen.observation_space.shape == (sizes["topo_vect"] + sizes["rho"] + 1,)
    assert chosen.observation_space.contains(small)
    for _ in range(5):
        view, mine = full.view(obs), chosen.view(small)
        np.testing.assert_array_equal(mine.rho, view.rho)
        np.testing.assert_array_equal(mine.topo_vect, view.topo_vect)
        np.testing.assert_array_equal(mine.hour_of_day, view.hour_of_day)
        assert list(chosen.obs_layout.names) == ["topo_vect", "rho", "hour_of_day"]
        obs, *_ = full.step(3)
        small, *_ = chosen.step(3)


@pytest.mark.parametrize(
    ("attributes", "match"),
    [
        ([], "non-empty"),
        (["rho", "nope"], "unknown attribute 'nope'"),
        (["rho", "rho"], "repeated"),
    ],
)
def test_bad_attribute_lists_are_refused(attributes, match):
    with pytest.raises(ValueError, match=match):
        grid_vec.make("case14", observation_attributes=attributes)


def test_chosen_attributes_in_a_batch_equal_single_envs():
    from gymnasium.vector import SyncVectorEnv

    attributes = ["rho", "theta_or", "gen_theta", "current_step", "target_dispatch"]
    envs = grid_vec.make_vec(
        "case14", 3, vectorization="batched", observation_attributes=attributes
    )
    single = SyncVectorEnv([lambda: grid_vec.make("case14", observation_attributes=attributes)] * 3)
    obs, _ = envs.reset(seed=[1, 2, 3])
    ref, _ = single.reset(seed=[1, 2, 3])
    np.testing.assert_array_equal(obs, ref)
    rng = np.random.default_rng(0)
    for _ in range(20):
        actions = rng.integers(0, envs.single_action_space.n, 3)
        np.testing.assert_array_equal(envs.step(actions)[0], single.step(actions)[0])
    envs.close()
    single.close()


@pytest.mark.grid2op
def test_further_attributes_equal_grid2ops_observation():
    """On the sandbox, random branch toggles and substation configurations: the angles,
    target dispatch, steps, step duration and protection counters are grid2op's."""
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    from lightsim2grid import LightSimBackend

    sandbox = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
    ours = grid_vec.make(sandbox, observation_attributes=EXTRAS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = grid2op.make(str(sandbox), backend=LightSimBackend())
    theirs.set_thermal_limit(ours.thermal_limit * 0.97)  # overflows: protections engage
    ours = grid_vec.make(
        sandbox, observation_attributes=EXTRAS, thermal_limits=ours.thermal_limit * 0.97
    )
    catalog, rng = ours.catalog, np.random.default_rng(1)
    compared = 0
    for scenario in (0, 1, 2):
        theirs.set_id(scenario)
        g_obs = theirs.reset()
        obs, _ = ours.reset(options={"scenario_id": scenario})
        for t in range(60):
            view = ours.view(obs)
            where = f"scenario {scenario} step {t}"
            for name in ("theta_or", "theta_ex", "load_theta", "gen_theta"):
                np.testing.assert_allclose(
                    getattr(view, name), getattr(g_obs, name), atol=1e-4, err_msg=f"{where} {name}"
                )
            for name in ("target_dispatch", "timestep_protection_engaged"):
                np.testing.assert_allclose(getattr(view, name), getattr(g_obs, name), err_msg=name)
            for name in ("current_step", "max_step", "delta_time"):
                assert float(getattr(view, name)[0]) == float(getattr(g_obs, name)), (where, name)
            compared += 1
            action = int(rng.integers(len(catalog))) if rng.random() < 0.1 else 0
            g_obs, _, g_done, _ = theirs.step(theirs.action_space(catalog.grid2op_action(action)))
            obs, _, term, trunc, _ = ours.step(action)
            assert (term or trunc) == g_done, where
            if g_done:
                break
    assert compared >= 20
