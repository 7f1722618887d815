"""The general topology action (``action_type="set_bus"``): grid2op's ``set_bus`` and
``set_line_status`` played by grid2op's rules (ambiguity, legality, cooldowns, reconnection
on the last bus bar), beside grid2op itself and beside the catalog's own actions."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from batch_compare import cascade_limits, compare, factory
from env_helpers import assert_same_topology_state, restart_both
from gymnasium.vector import AutoresetMode

import grid_vec
from grid_vec.bench.workloads import random_set_bus
from grid_vec.core.actions import KIND_LINE, KIND_SUB
from grid_vec.core.parameters import Parameters
from grid_vec.env.action_input import batch_actions


def _nothing(env) -> dict[str, np.ndarray]:
    return {
        "set_bus": np.zeros(env.topology.n_elem, dtype=np.int64),
        "set_line_status": np.zeros(env.model.n_branch, dtype=np.int64),
    }


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
        action = _nothing(ours)
        if rng.random() > 0.3:
            action = random_set_bus(
                ours.topology, ours.model.n_branch, ours.view(obs).line_status, rng
            )
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
            obs = restart_both(ours, theirs)
            continue
        view = ours.view(obs)
        assert_same_topology_state(view, g_obs, where)
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


def _as_set_bus(env, index: int, line_status: np.ndarray) -> dict[str, np.ndarray]:
    """Catalog action ``index`` as a general topology action: a configuration sets its
    substation's bus bars, a toggle sets its branch's status the other way."""
    action, catalog, layout = _nothing(env), env.catalog, env.topology
    kind, target = int(catalog.kind[index]), int(catalog.target[index])
    if kind == KIND_SUB:
        action["set_bus"][layout.sub_start[target] : layout.sub_start[target + 1]] = (
            catalog.sub_buses[index]
        )
    elif kind == KIND_LINE:
        action["set_line_status"][target] = -1 if line_status[target] else 1
    return action


@pytest.mark.parametrize("seed", range(3))
def test_catalog_actions_given_as_set_bus_play_bitwise_as_the_catalog(make_env, case14, seed):
    """The catalog's configurations and toggles, given as ``set_bus`` / ``set_line_status``
    (tight limits: trips and reconnections; cooldowns of 2), play bitwise what the catalog
    plays: observations, rewards, flags and ends."""
    params = Parameters(nb_timestep_cooldown_line=2, nb_timestep_cooldown_sub=2)
    limits = 0.9 * cascade_limits(case14)
    by_index = make_env(parameters=params, thermal_limits=limits, length=60)
    by_buses = make_env(parameters=params, thermal_limits=limits, length=60, action_type="set_bus")
    by_index.reset(seed=seed)
    obs_b, _ = by_buses.reset(seed=seed)
    rng = np.random.default_rng(seed)
    refused = 0
    for t in range(60):
        index = int(rng.integers(len(by_index.catalog))) if rng.random() < 0.5 else 0
        action = _as_set_bus(by_buses, index, by_buses.view(obs_b).line_status)
        out, out_b = by_index.step(index), by_buses.step(action)
        where = f"step {t}: {by_index.describe_action(index)}"
        np.testing.assert_array_equal(out[0], out_b[0], where)
        assert out[1:4] == out_b[1:4], where
        assert out[4]["is_illegal"] == out_b[4]["is_illegal"], where
        refused += out[4]["is_illegal"]
        obs_b = out_b[0]
        if out[2] or out[3]:
            by_index.reset()
            obs_b, _ = by_buses.reset()
    assert refused >= 1


def _random_actions(rng, n: int, envs, t: int) -> dict[str, np.ndarray]:
    space = envs.single_action_space
    n_elem, n_branch = space["set_bus"].shape[0], space["set_line_status"].shape[0]
    set_bus = np.where(rng.random((n, n_elem)) < 0.05, rng.integers(1, 3, (n, n_elem)), 0)
    status = np.where(rng.random((n, n_branch)) < 0.03, rng.choice([-1, 1], (n, n_branch)), 0)
    actions = {"set_bus": set_bus, "set_line_status": status}
    if "continuous" in space.spaces:  # the whole box, so that redispatches fail too
        box = space["continuous"]
        actions["continuous"] = rng.uniform(box.low, box.high, (n, *box.shape)).astype(np.float32)
    return actions


@pytest.mark.parametrize("action_type", ["set_bus", "set_bus_continuous"])
@pytest.mark.parametrize("kind", ["batched", "workers"])
def test_set_bus_actions_in_vector_envs_play_as_single_envs(case14, kind, action_type):
    """Random ``set_bus`` actions (with random continuous parts) in BatchedGridVecEnv and
    GridVecEnv (two workers): every output equal to SyncVectorEnv over single GridEnvs,
    episodes ending on the way."""
    env_factory = factory(
        case14, length=40, action_type=action_type, thermal_limits=cascade_limits(case14)
    )
    _, ends = compare(env_factory, 5, kind, AutoresetMode.NEXT_STEP, 30, _random_actions)
    assert ends >= 1


def test_set_bus_actions_outside_the_space_are_refused(make_env):
    env = make_env(action_type="set_bus")
    env.reset(seed=0)
    good = _nothing(env)
    bad = [
        ({"set_bus": good["set_bus"]}, "dict with keys 'set_bus'"),
        (
            {**good, "set_bus": np.full(env.topology.n_elem, 3)},
            r"set_bus values must be in \[-1, 2\]",
        ),
        ({**good, "set_line_status": np.full(env.model.n_branch, -2)}, "set_line_status values"),
        ({**good, "set_bus": good["set_bus"][:-1]}, r"set_bus must be ints of shape \("),
        ({**good, "set_bus": good["set_bus"].astype(float)}, "set_bus must be ints"),
        (3, "dict with keys"),
    ]
    for action, message in bad:
        with pytest.raises(ValueError, match=message):
            env.step(action)
    env.step(good)  # the env still plays
    batch = _random_actions(np.random.default_rng(0), 2, _Spaces(env.action_space), 0)
    batch["set_bus"][1, 0] = 5
    with pytest.raises(ValueError, match="set_bus values") as refused:
        batch_actions(env.batch_row[0], batch)
    assert refused.value.rows == (1,)


class _Spaces:
    """What _random_actions reads of a vector env: its single action space."""

    def __init__(self, space) -> None:
        self.single_action_space = space


def test_set_bus_candidates_are_simulated_as_single_simulates(make_env):
    """``simulate_candidates`` takes ``set_bus`` candidates (``(K, n_elem)`` and ``(K,
    n_branch)``): each row is what ``simulate`` of that action gives, and the env is left as
    it was."""
    env = make_env(action_type="set_bus", parameters=Parameters(max_sub_changed=2))
    env.reset(seed=3)
    env.step(_nothing(env))
    candidates = _random_actions(np.random.default_rng(1), 6, _Spaces(env.action_space), 0)
    candidates["set_bus"][0] = 0  # do-nothing among them
    before = env.unwrapped.snapshot()
    found = env.unwrapped.simulate_candidates(candidates)
    for k in range(6):
        one = {key: value[k] for key, value in candidates.items()}
        sim_obs, sim_reward, sim_done, sim_info = env.unwrapped.simulate(one)
        np.testing.assert_array_equal(found.observations[k], sim_obs, f"candidate {k}")
        assert found.rewards[k] == sim_reward and found.terminated[k] == sim_done
        assert found.illegal[k] == sim_info["is_illegal"]
    after = env.unwrapped.snapshot()
    for name, value in before.state.items():
        np.testing.assert_array_equal(value, after.state[name], name)


def test_a_set_bus_action_in_words(make_env):
    env = make_env(action_type="set_bus")
    action = _nothing(env)
    assert env.describe_action(action) == "do nothing"
    layout = env.topology
    action["set_bus"][layout.pos_load[0]] = 2
    action["set_line_status"][3] = -1
    words = env.describe_action(action)
    load, branch = env.model.load_names[0], env.model.branch_names[3]
    assert words == f"set_bus: load {load} -> 2; set_line_status: branch {branch} -> -1"


def test_heuristics_reconnect_only_on_steps_whose_set_bus_action_asks_nothing(make_env):
    """With ``reconnect_on_agent_steps``, a step whose general topology action asks
    something plays it alone (no reconnection slipped in beside it); a step asking nothing
    gets the reconnection."""
    from grid_vec.core.rules.heuristics import Heuristics

    env = make_env(
        action_type="set_bus",
        heuristics=Heuristics(reconnect_lines=True, reconnect_on_agent_steps=True),
    )
    env.reset(seed=0)
    off = _nothing(env)
    off["set_line_status"][5] = -1
    obs, *_ = env.step(off)
    assert env.view(obs).line_status[5] == 0
    move = _nothing(env)
    move["set_bus"][env.topology.pos_load[-1]] = 1  # asks something (already there)
    obs, _, _, _, info = env.step(move)
    assert not info["is_illegal"] and env.view(obs).line_status[5] == 0
    obs, *_ = env.step(_nothing(env))
    assert env.view(obs).line_status[5] == 1


def test_a_reconnection_beside_set_bus_actions_in_one_batch_gets_its_cooldown(case14):
    """Sub-env 0 asks a set_bus action while sub-env 1 asks nothing and the heuristics
    reconnect a branch there: the batch's step plays both, and the reconnected branch gets
    its cooldown (what the catalog's rows acted on is kept beside the set_bus rows')."""
    from grid_vec.core.observation import ObservationView
    from grid_vec.core.rules.heuristics import Heuristics
    from grid_vec.vector.batched import BatchedGridVecEnv

    env_factory = factory(
        case14,
        length=40,
        action_type="set_bus",
        parameters=Parameters(nb_timestep_cooldown_line=2, nb_timestep_cooldown_sub=2),
        heuristics=Heuristics(reconnect_lines=True, reconnect_on_agent_steps=True),
    )
    envs = BatchedGridVecEnv.from_factory(env_factory, 2)
    try:
        obs, _ = envs.reset(seed=0)
        layout = envs.get_attr("obs_layout")[0]
        sizes = {
            key: layout.slices[name].stop - layout.slices[name].start
            for key, name in (("set_bus", "topo_vect"), ("set_line_status", "line_status"))
        }
        nothing = {key: np.zeros((2, size), int) for key, size in sizes.items()}
        off = {key: value.copy() for key, value in nothing.items()}
        off["set_line_status"][:, 5] = -1
        obs, *_ = envs.step(off)
        for _ in range(2):  # the branch's cooldown runs out
            obs, *_ = envs.step(nothing)
        assert [ObservationView(o, layout).line_status[5] for o in obs] == [0, 0]
        move = {key: value.copy() for key, value in nothing.items()}
        move["set_bus"][0, -1] = 1  # the last element, already on bus bar 1
        obs, _, _, _, infos = envs.step(move)
        views = [ObservationView(o, layout) for o in obs]
        assert not infos["is_illegal"].any()
        assert views[0].line_status[5] == 0 and views[1].line_status[5] == 1
        assert views[1].time_before_cooldown_line[5] == 2
    finally:
        envs.close()
