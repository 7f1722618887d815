"""The game rules: overflow timing, hard threshold, reconnection delay, cooldowns, game over."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from env_helpers import loose_limits

from grid_vec.core.parameters import Parameters
from grid_vec.core.topology import isolated_elements

BRANCH = 0  # line 0-1: meshed, its loss isolates nothing


def _flow(make_env, branch: int) -> float:
    env = make_env()
    obs, _ = env.reset(seed=0, options={"scenario_id": 0})
    return float(env.view(obs).a_or[branch])


def test_overflow_trips_after_exactly_n_steps(make_env, case14):
    flow = _flow(make_env, BRANCH)
    for allowed in (0, 2, 3):
        env = make_env(
            thermal_limits=loose_limits(case14, b0=0.8 * flow),
            parameters=Parameters(nb_timestep_overflow_allowed=allowed),
        )
        obs, _ = env.reset(seed=0, options={"scenario_id": 0})
        assert env.view(obs).timestep_overflow[BRANCH] == 0  # grid2op: no counting at reset
        for k in range(1, allowed + 1):
            obs, _, term, _, info = env.step(0)
            assert not term and not info["tripped_branches"].any()
            assert env.view(obs).timestep_overflow[BRANCH] == k
        obs, _, term, _, info = env.step(0)
        assert not term
        assert np.flatnonzero(info["tripped_branches"]).tolist() == [BRANCH]
        view = env.view(obs)
        assert view.line_status[BRANCH] == 0 and view.rho[BRANCH] == 0
        assert view.time_before_cooldown_line[BRANCH] == Parameters().nb_timestep_reconnection


def _hard_overflow_after_reset(make_env, case14, **params):
    """An env whose BRANCH is at ~1.5x its limit from reset (soft overflow only), then a
    hard threshold of 1.2 from the first step: BRANCH trips on the first step."""
    flow = _flow(make_env, BRANCH)
    env = make_env(thermal_limits=loose_limits(case14, b0=flow / 1.5))
    env.reset(seed=0, options={"scenario_id": 0})
    env.set_parameters(Parameters(hard_overflow_threshold=1.2, **params))
    return env


def test_hard_overflow_trips_at_once(make_env, case14):
    env = _hard_overflow_after_reset(make_env, case14)
    _, _, _, _, info = env.step(0)
    assert np.flatnonzero(info["tripped_branches"]).tolist() == [BRANCH]


def test_hard_overflow_at_reset_trips_without_reconnection_delay(make_env, case14):
    """As grid2op's reset: hard overflows trip, soft ones are not counted, timers start at 0."""
    flow = _flow(make_env, BRANCH)
    env = make_env(thermal_limits=loose_limits(case14, b0=flow / 2.5))
    obs, _ = env.reset(seed=0, options={"scenario_id": 0})
    view = env.view(obs)
    assert view.line_status[BRANCH] == 0 and view.time_before_cooldown_line[BRANCH] == 0
    assert (view.timestep_overflow == 0).all()
    obs, _, _, _, info = env.step(1 + BRANCH)  # reconnecting it at once is legal
    assert not info["is_illegal"]


def test_no_overflow_disconnection_keeps_overloaded_branches_in(make_env, case14):
    flow = _flow(make_env, BRANCH)
    env = make_env(
        thermal_limits=loose_limits(case14, b0=0.3 * flow),
        parameters=Parameters(no_overflow_disconnection=True),
    )
    env.reset(seed=0, options={"scenario_id": 0})
    for _ in range(5):
        obs, _, _, _, info = env.step(0)
        assert not info["tripped_branches"].any()
    assert env.view(obs).timestep_overflow[BRANCH] == 5


def test_reconnection_is_illegal_during_the_delay_then_played(make_env, case14):
    delay = 4
    env = _hard_overflow_after_reset(make_env, case14, nb_timestep_reconnection=delay)
    obs, *_ = env.step(0)  # trips
    assert env.view(obs).time_before_cooldown_line[BRANCH] == delay
    toggle = 1 + BRANCH
    for k in range(delay):
        obs, _, _, _, info = env.step(toggle)
        assert info["is_illegal"] and "cannot change status" in info["illegal_reason"]
        view = env.view(obs)
        assert view.line_status[BRANCH] == 0
        assert view.time_before_cooldown_line[BRANCH] == delay - 1 - k
    # back to the default hard threshold, so that the reconnected branch (rho ~1.5) stays in
    env.set_parameters(Parameters(nb_timestep_reconnection=delay))
    obs, _, _, _, info = env.step(toggle)
    assert not info["is_illegal"] and not info["tripped_branches"].any()
    assert env.view(obs).line_status[BRANCH] == 1


def test_line_cooldown_makes_next_action_illegal(make_env):
    env = make_env(parameters=Parameters(nb_timestep_cooldown_line=2))
    env.reset(seed=0)
    _, _, _, _, info = env.step(1 + BRANCH)
    assert not info["is_illegal"]
    obs, _, _, _, info = env.step(1 + BRANCH)
    assert info["is_illegal"]
    assert env.view(obs).line_status[BRANCH] == 0  # the illegal reconnection was not played
    _, _, _, _, info = env.step(0)
    obs, _, _, _, info = env.step(1 + BRANCH)
    assert not info["is_illegal"] and env.view(obs).line_status[BRANCH] == 1


def test_substation_cooldown_and_max_sub_changed(make_env):
    env = make_env(parameters=Parameters(nb_timestep_cooldown_sub=3))
    env.reset(seed=0)
    first_sub = 1 + env.catalog.n_line_actions + 1  # a split (index after "all on bus 1")
    obs, _, term, _, info = env.step(first_sub)
    assert not info["is_illegal"] and not term
    sub = env.catalog.target[first_sub]
    assert (env.view(obs).topo_vect == 2).any()
    assert env.view(obs).time_before_cooldown_sub[sub] == 3
    _, _, _, _, info = env.step(first_sub - 1)
    assert info["is_illegal"] and "cooldown" in info["illegal_reason"]

    env = make_env(parameters=Parameters(max_sub_changed=0, max_line_status_changed=0))
    env.reset(seed=0)
    for action in (first_sub, 1):
        _, _, _, _, info = env.step(action)
        assert info["is_illegal"]


def test_substation_action_applies_its_configuration(make_env):
    env = make_env()
    env.reset(seed=0)
    index = 1 + env.catalog.n_line_actions + 1
    obs, _, _, _, _ = env.step(index)
    sub = env.catalog.target[index]
    lo, hi = env.topology.sub_start[sub], env.topology.sub_start[sub + 1]
    np.testing.assert_array_equal(env.view(obs).topo_vect[lo:hi], env.catalog.sub_buses[index])


def _isolating_pair(model, layout):
    """Two branches whose joint loss cuts a load off (and neither alone isolates anything)."""
    topo = np.ones(layout.n_elem, dtype=np.int8)
    for i, j in itertools.combinations(range(model.n_branch), 2):
        cut = topo.copy()
        cut[layout.pos_or[[i, j]]] = -1
        cut[layout.pos_ex[[i, j]]] = -1
        loads, gens, _ = isolated_elements(model, layout, cut[None])
        if loads.any() and not gens.any():
            singles = []
            for k in (i, j):
                one = topo.copy()
                one[[layout.pos_or[k], layout.pos_ex[k]]] = -1
                loads_one, gens_one, _ = isolated_elements(model, layout, one[None])
                singles.append(loads_one.any() or gens_one.any())
            if not any(singles):
                return i, j
    raise AssertionError("no isolating pair on this grid")


def test_isolated_load_ends_the_episode(make_env, case14):
    env = make_env()
    env.reset(seed=0)
    i, j = _isolating_pair(case14, env.topology)
    _, _, term, _, _ = env.step(1 + i)
    assert not term
    _, reward, term, trunc, info = env.step(1 + j)
    assert term and not trunc and reward == 0.0
    assert "load" in info["game_over_reason"] and "isolated" in info["game_over_reason"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset()  # usable again
    assert not env.step(0)[2]


def test_isolated_generator_ends_the_episode(make_env, case14):
    env = make_env()
    env.reset(seed=0)
    layout = env.topology
    for b in range(case14.n_branch):
        topo = np.ones(layout.n_elem, dtype=np.int8)
        topo[[layout.pos_or[b], layout.pos_ex[b]]] = -1
        loads, gens, _ = isolated_elements(case14, layout, topo[None])
        if gens.any() and not loads.any():
            break
    else:
        raise AssertionError("no branch isolates a generator alone on this grid")
    _, _, term, _, info = env.step(1 + b)
    assert term and "generator" in info["game_over_reason"]


def test_truncation_at_scenario_end_max_steps_and_max_iter(make_env):
    env = make_env(length=8)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]
    env.reset(options={"max_steps": 3})
    assert [env.step(0)[3] for _ in range(3)] == [False, False, True]
    env = make_env(length=50, max_iter=2)
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(2)] == [False, True]
    env.set_max_iter(4)
    env.reset()
    assert [env.step(0)[3] for _ in range(4)] == [False] * 3 + [True]
