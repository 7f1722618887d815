"""The general topology action (``action_type="set_bus"``): grid2op's ``set_bus`` and
``set_line_status`` played by grid2op's rules (ambiguity, legality, cooldowns, reconnection
on the last bus bar), beside grid2op itself and beside the catalog's own actions."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec.core.parameters import Parameters


def _nothing(env) -> dict[str, np.ndarray]:
    return {
        "set_bus": np.zeros(env.topology.n_elem, dtype=np.int64),
        "set_line_status": np.zeros(env.model.n_branch, dtype=np.int64),
    }


def random_set_bus(env, rng: np.random.Generator, line_status: np.ndarray) -> dict[str, np.ndarray]:
    """A random general topology action: do-nothing, one or two substations reconfigured,
    a few element ends set (branch ends to -1 too), a branch status set, a disconnected
    branch (``line_status``: the env's now) put back by its status or through an end, or an
    ambiguous mix, as an agent exploring grid2op's action space would send them."""
    action, layout = _nothing(env), env.topology
    set_bus, status = action["set_bus"], action["set_line_status"]
    kind = rng.random()
    n_sub = len(layout.sub_start) - 1
    off = np.flatnonzero(~np.asarray(line_status, dtype=bool))
    if kind < 0.3:
        return action
    if kind < 0.55:  # one substation (two: refused when max_sub_changed is 1)
        for sub in rng.choice(n_sub, 1 + int(rng.random() < 0.2), replace=False):
            lo, hi = layout.sub_start[sub], layout.sub_start[sub + 1]
            set_bus[lo:hi] = rng.integers(1, 3, hi - lo)
    elif kind < 0.65:  # a few ends, some of them branch ends taken off
        for pos in rng.choice(layout.n_elem, int(rng.integers(1, 4)), replace=False):
            is_branch_end = pos in layout.pos_or or pos in layout.pos_ex
            set_bus[pos] = rng.choice([-1, 1, 2] if is_branch_end else [1, 2])
    elif kind < 0.78 or not len(off):  # a branch status, either way
        status[int(rng.integers(env.model.n_branch))] = rng.choice([-1, 1])
    elif kind < 0.93:  # a disconnected branch put back: by its status, through an end, both
        branch = int(rng.choice(off))
        how = rng.integers(4)
        if how in (0, 1):
            status[branch] = 1
        if how in (1, 2):
            set_bus[layout.pos_or[branch]] = rng.integers(1, 3)
        if how == 3:
            set_bus[layout.pos_or[branch]], set_bus[layout.pos_ex[branch]] = rng.integers(1, 3, 2)
    else:  # ambiguous: off by its status and on by an end, or off at one end and on at the other
        branch = int(rng.integers(env.model.n_branch))
        if rng.random() < 0.5:
            status[branch] = -1
            set_bus[layout.pos_ex[branch]] = 2
        else:
            set_bus[layout.pos_or[branch]] = -1
            set_bus[layout.pos_ex[branch]] = 1
    return action


@pytest.fixture(scope="module")
def sandbox():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    return Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"


@pytest.mark.grid2op
@pytest.mark.parametrize(
    ("seed", "max_sub", "max_line"), [(0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 1, 2), (4, 2, 2)]
)
def test_random_set_bus_actions_play_as_grid2op(sandbox, seed, max_sub, max_line):
    """Random ``set_bus`` / ``set_line_status`` actions (substation reconfigurations, branch
    ends taken off and put back, reconnections on a chosen or the last bus bar, ambiguous
    mixes) with cooldowns of 2 steps: the same ambiguity and legality verdicts, line status,
    topology vector, cooldowns, flows and game overs as grid2op + LightSimBackend at every
    step."""
    import grid2op
    from lightsim2grid import LightSimBackend

    params = Parameters(
        nb_timestep_cooldown_line=2,
        nb_timestep_cooldown_sub=2,
        max_sub_changed=max_sub,
        max_line_status_changed=max_line,
    )
    ours = grid_vec.make(sandbox, parameters=params, action_type="set_bus", opponent=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = grid2op.make(str(sandbox), backend=LightSimBackend())
    p = theirs.parameters
    p.NB_TIMESTEP_COOLDOWN_LINE = p.NB_TIMESTEP_COOLDOWN_SUB = 2
    p.MAX_SUB_CHANGED, p.MAX_LINE_STATUS_CHANGED = max_sub, max_line
    theirs.change_parameters(p)
    theirs.set_thermal_limit(ours.thermal_limit)
    theirs.set_id(0)
    theirs.reset()
    obs, _ = ours.reset(options={"scenario_id": 0})
    rng = np.random.default_rng(seed)
    compared = ended = flagged = 0
    for t in range(120):
        action = random_set_bus(ours, rng, ours.view(obs).line_status)
        g_act = theirs.action_space(
            {"set_bus": action["set_bus"], "set_line_status": action["set_line_status"]}
        )
        g_obs, _, g_done, g_info = theirs.step(g_act)
        obs, _, term, _, info = ours.step(action)
        where = f"step {t}: {ours.describe_action(action)}"
        assert term == g_done, where
        assert info["is_ambiguous"] == g_info["is_ambiguous"], where
        assert info["is_illegal"] == g_info["is_illegal"], where
        flagged += info["is_ambiguous"] or info["is_illegal"]
        if term:
            ended += 1
            theirs.set_id(0)
            theirs.reset()
            obs, _ = ours.reset(options={"scenario_id": 0})
            continue
        view = ours.view(obs)
        np.testing.assert_array_equal(view.line_status.astype(bool), g_obs.line_status, where)
        np.testing.assert_array_equal(view.topo_vect, g_obs.topo_vect, where)
        np.testing.assert_array_equal(
            view.time_before_cooldown_line, g_obs.time_before_cooldown_line, where
        )
        np.testing.assert_array_equal(
            view.time_before_cooldown_sub, g_obs.time_before_cooldown_sub, where
        )
        np.testing.assert_allclose(view.rho, g_obs.rho, rtol=1e-5, atol=1e-6, err_msg=where)
        compared += 1
    assert compared >= 40 and ended >= 1 and flagged >= 3


@pytest.mark.grid2op
def test_impact_and_ambiguity_are_grid2ops_for_random_actions_and_statuses(sandbox):
    """For 3,000 random actions, each against a random branch status (denser in ambiguous
    mixes, statuses set on disconnected branches and ends taken off), the branches and
    substations impacted and the ambiguity verdict equal grid2op's
    ``get_topological_impact(line_status)`` and ``is_ambiguous()``."""
    import grid2op

    ours = grid_vec.make(sandbox, action_type="set_bus")
    rules = ours.batch_row[0]._rules.buses
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = grid2op.make(str(sandbox), test=True)
    rng = np.random.default_rng(7)
    n_elem, n_branch = ours.topology.n_elem, ours.model.n_branch
    checked = {"ambiguous": 0, "impacted": 0}
    for _ in range(3000):
        dense = rng.random(2) * [0.3, 0.3]  # how many ends and statuses the action sets
        set_bus = np.where(rng.random(n_elem) < dense[0], rng.integers(-1, 3, n_elem), 0)
        status = np.where(rng.random(n_branch) < dense[1], rng.choice([-1, 1], n_branch), 0)
        line_status = rng.random(n_branch) < 0.7
        g_act = theirs.action_space({"set_bus": set_bus, "set_line_status": status})
        g_ambiguous, _ = g_act.is_ambiguous()
        ambiguous = bool(rules.ambiguous(set_bus[None], status[None]))
        assert ambiguous == g_ambiguous, (set_bus, status)
        checked["ambiguous"] += ambiguous
        if ambiguous:
            continue
        g_lines, g_subs = g_act.get_topological_impact(line_status)
        impact = rules.impact(line_status[None], set_bus[None], status[None])
        np.testing.assert_array_equal(impact.branches[0], g_lines)
        np.testing.assert_array_equal(impact.substations[0], g_subs)
        checked["impacted"] += bool(g_subs.any() or g_lines.any())
    assert checked["ambiguous"] > 300 and checked["impacted"] > 1000
