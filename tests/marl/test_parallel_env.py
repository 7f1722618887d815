"""The multi-agent view (grid_vec.marl): PettingZoo's API test on several scopes, joint actions
played as the one grid2op action they make (on GridEnv, and beside grid2op itself), the rule
that resolves what grid2op would refuse, rewards, and the refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo", reason="needs the marl extra (pettingzoo)")

from pettingzoo.test import parallel_api_test

import grid_vec
from grid_vec.core.parameters import Parameters
from grid_vec.marl import parallel_env
from grid_vec.marl.agents import KIND_SUBSTATION

TASK = "grid_vec/Case14Topology-v0"


def _random_actions(env, obs, rng, asking: int | None = None) -> dict:
    """A legal random action per agent (at most ``asking`` substation agents ask a change)."""
    actions = {}
    subs = [a for a in env.agents if "action_mask" in obs[a]]
    movers = set(rng.permutation(subs)[: asking if asking is not None else len(subs)].tolist())
    for agent in env.agents:
        if agent in subs:
            legal = np.flatnonzero(obs[agent]["action_mask"])
            actions[agent] = int(rng.choice(legal)) if agent in movers else 0
        else:
            actions[agent] = env.action_space(agent).sample() * rng.random()
    return actions


def _grid2op_dict(env, actions: dict) -> dict:
    """The agents' joint action in grid2op's vocabulary, from the catalog's own words."""
    layout, catalog = env.layout, env.env.catalog
    subs, redispatch = [], []
    for agent, action in actions.items():
        i = layout.names.index(agent)
        if layout.kind[i] == KIND_SUBSTATION:
            if action:
                subs += catalog.grid2op_action(int(layout.choices[i, action]))["set_bus"][
                    "substations_id"
                ]
        else:
            redispatch.append((int(layout.generator[i]), float(np.asarray(action)[0])))
    out: dict = {}
    if subs:
        out["set_bus"] = {"substations_id": subs}
    if redispatch:
        out["redispatch"] = redispatch
    return out


def _set_bus_of(reference, parts: dict) -> dict:
    """GridEnv's ``set_bus_continuous`` action for a grid2op dict, through grid2op's layout
    arrays (``sub_info``: each substation's run of the topology vector)."""
    start = np.concatenate([[0], np.cumsum(reference.grid2op_layout["sub_info"])])
    set_bus = np.zeros(reference.topology.n_elem, dtype=np.int64)
    for sub, buses in parts.get("set_bus", {}).get("substations_id", []):
        set_bus[start[sub] : start[sub] + len(buses)] = buses
    continuous = np.zeros(reference.action_space["continuous"].shape, dtype=np.float32)
    for gen, mw in parts.get("redispatch", []):
        continuous[list(reference.redispatchable).index(gen)] = mw
    return {
        "set_bus": set_bus,
        "set_line_status": np.zeros(reference.model.n_branch, dtype=np.int64),
        "continuous": continuous,
    }


@pytest.mark.parametrize(
    ("scope", "agents"),
    [
        ("substations", None),
        ("generators", None),
        ("substations_and_generators", None),
        ("substations", ["substation_1", "substation_4", "generator_0"]),
    ],
)
def test_pettingzoo_parallel_api_test_passes(scope, agents):
    env = parallel_env(TASK, scope, agents=agents, split="train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its reset passes an option of its own
        parallel_api_test(env, num_cycles=60)
    if agents is not None:
        assert env.possible_agents == agents


def test_an_unknown_reset_option_is_warned_of_and_ignored():
    env = parallel_env(TASK, split="train")
    with pytest.warns(UserWarning, match=r"reset options \['options'\] ignored"):
        env.reset(seed=0, options={"options": 1})


@pytest.mark.parametrize("seed", [0, 1])
def test_a_joint_action_plays_as_the_one_grid2op_action_it_makes_on_grid_env(seed):
    """Substation and generator agents act together (max_sub_changed 2, so that two
    configurations are legal together): observation, reward, flags and info equal GridEnv
    playing the grid2op action the agents make, built from grid2op's vocabulary."""
    params = Parameters(max_sub_changed=2, nb_timestep_cooldown_sub=1)
    env = parallel_env(TASK, "substations_and_generators", split="train", parameters=params)
    reference = grid_vec.make(
        TASK,
        split="train",
        parameters=params,
        action_type="set_bus_continuous",
        action_subset=None,
    )
    rng = np.random.default_rng(seed)
    steps = together = episodes = 0
    while steps < 40:
        if not env.agents:  # a new episode on both sides, same seed
            obs, _ = env.reset(seed=seed + steps)
            ref_obs, _ = reference.reset(seed=seed + steps)
            np.testing.assert_array_equal(env.state(), ref_obs)
            episodes += 1
        actions = _random_actions(env, obs, rng, asking=int(rng.integers(0, 3)))
        parts = _grid2op_dict(env, actions)
        together += len(parts.get("set_bus", {}).get("substations_id", [])) == 2
        obs, rewards, terms, truncs, infos = env.step(actions)
        ref_obs, ref_reward, ref_term, ref_trunc, ref_info = reference.step(
            _set_bus_of(reference, parts)
        )
        np.testing.assert_array_equal(env.state(), ref_obs, err_msg=f"step {steps}: {parts}")
        assert set(rewards.values()) == {ref_reward}
        assert set(terms.values()) == {ref_term} and set(truncs.values()) == {ref_trunc}
        info = next(iter(infos.values()))["env"]
        for key in ("is_illegal", "is_ambiguous", "skipped_steps"):
            assert info[key] == ref_info[key], key
        steps += 1
    assert together >= 3 and episodes >= 2


def test_one_substation_agent_plays_as_the_catalog_action():
    """One agent acting alone: its configuration plays as the catalog's discrete action."""
    env = parallel_env(TASK, split="validation")
    reference = grid_vec.make(TASK, split="validation", action_subset=None)
    rng = np.random.default_rng(3)
    played = ended = 0
    for step in range(30):
        if not env.agents:
            obs, _ = env.reset(seed=step)
            reference.reset(seed=step)
        actions = _random_actions(env, obs, rng, asking=int(rng.integers(0, 2)))
        index = 0
        for agent, choice in actions.items():
            if choice:
                index = int(env.layout.choices[env.layout.names.index(agent), choice])
        obs, rewards, terms, _, _ = env.step(actions)
        ref_obs, ref_reward, ref_term, _, _ = reference.step(index)
        np.testing.assert_array_equal(env.state(), ref_obs)
        assert next(iter(rewards.values())) == ref_reward
        assert all(terms.values()) == ref_term and (not env.agents) == ref_term
        played += index > 0
        ended += ref_term
    assert played >= 5 and ended >= 1


def test_beyond_max_sub_changed_the_most_loaded_substation_acts_and_the_others_wait():
    env = parallel_env(TASK, split="train")  # max_sub_changed 1
    obs, _ = env.reset(seed=0)
    layout = env.layout
    rho = env.state()[layout.obs_slices["rho"]]
    loading = [rho[layout.sub_branches[i]].max() for i in range(layout.num_agents)]
    first, second = np.argsort(loading)[::-1][:2]
    actions = {name: 0 for name in env.agents}
    for i in (first, second):
        actions[layout.names[i]] = int(np.flatnonzero(obs[layout.names[i]]["action_mask"])[1])
    _, _, _, _, infos = env.step(actions)
    assert not infos[layout.names[first]]["deferred"]
    assert infos[layout.names[second]]["deferred"]
    assert not infos[layout.names[first]]["env"]["is_illegal"]
    topo = env.state()[layout.obs_slices["topo_vect"]]
    lo, hi = layout.slot_range(first)
    chosen = layout.buses[int(layout.choices[first, actions[layout.names[first]]])]
    np.testing.assert_array_equal(topo[lo:hi], chosen)


def test_a_choice_the_mask_refuses_is_dropped_and_flagged():
    params = Parameters(nb_timestep_cooldown_sub=3)
    env = parallel_env(
        TASK,
        agents=["substation_1", "substation_4"],
        split="train",
        parameters=params,
        heuristics=None,  # every step a decision: the cooldown is still running after one
    )
    obs, _ = env.reset(seed=0)
    obs, _, _, _, infos = env.step({"substation_1": 1, "substation_4": 0})
    assert not infos["substation_1"]["refused"] and env.agents
    assert obs["substation_1"]["action_mask"].tolist() == [1] + [0] * (
        len(obs["substation_1"]["action_mask"]) - 1
    )
    _, _, _, _, infos = env.step({"substation_1": 1, "substation_4": 1})
    assert infos["substation_1"]["refused"]
    assert not infos["substation_4"]["refused"]
    assert not infos["substation_4"]["env"]["is_illegal"]


def test_local_rewards_are_the_line_margin_of_each_agents_branches():
    env = parallel_env(TASK, split="train", reward="local")
    env.reset(seed=1)
    _, rewards, _, _, _ = env.step({})
    state, layout = env.state(), env.layout
    rho, status = state[layout.obs_slices["rho"]], state[layout.obs_slices["line_status"]]
    for i, name in enumerate(layout.names):
        mine = layout.sub_branches[i]
        expected = (np.maximum(1 - rho[mine], 0) * status[mine]).mean()
        assert rewards[name] == pytest.approx(expected, rel=1e-6)
    assert len(set(rewards.values())) > 1


def test_an_agents_observation_holds_its_substations_elements():
    env = parallel_env(TASK, agents=["substation_4", "generator_2"], split="train")
    obs, _ = env.reset(seed=0)
    layout, state = env.layout, env.state()
    topo = state[layout.obs_slices["topo_vect"]]
    for name in layout.names:
        i = layout.names.index(name)
        lo, hi = layout.slot_range(i)
        slots = obs[name]["observation"][: layout.slots.shape[1] * 7].reshape(-1, 7)
        np.testing.assert_array_equal(slots[: hi - lo, 4], topo[lo:hi])  # bus bars
        assert (slots[: hi - lo, 0] == 1).all() and (slots[hi - lo :] == 0).all()
    gen = env.env.model.gen_sub[2]
    assert layout.substation[1] == gen
    gen_p = state[layout.obs_slices["gen_p"]][2]
    assert obs["generator_2"]["observation"][-2] == pytest.approx(gen_p)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"scope": "lines"}, ValueError, "scope must be one of"),
        ({"agents": ["substation_0"]}, ValueError, "unknown agent 'substation_0'"),
        ({"agents": ["generator_1", "generator_1"]}, ValueError, "distinct"),
        ({"reward": "team"}, ValueError, "reward must be one of"),
        ({"action_type": "discrete"}, ValueError, "sets action_type itself"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        parallel_env(TASK, split="train", **kwargs)


def test_an_action_outside_an_agents_space_names_the_agent():
    env = parallel_env(TASK, "substations_and_generators", split="train")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent substation_1: action must be an int in"):
        env.step({"substation_1": 99})
    with pytest.raises(ValueError, match="agent generator_0: action must be a redispatch"):
        env.step({"generator_0": np.array([1e6])})
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        env.step({"nobody": 0})


@pytest.mark.grid2op
def test_joint_actions_play_as_grid2op_plays_the_action_they_make():
    """On grid2op's 14-bus sandbox, substation and generator agents acting together: the
    topology, cooldowns, flows and verdicts equal grid2op + LightSimBackend playing the one
    grid2op action (``set_bus`` of the substations, ``redispatch`` of the generators) the
    agents make."""
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    from pathlib import Path

    from lightsim2grid import LightSimBackend

    sandbox = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
    params = Parameters(max_sub_changed=2, nb_timestep_cooldown_sub=2)
    env = parallel_env(sandbox, "substations_and_generators", parameters=params, opponent=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = grid2op.make(str(sandbox), backend=LightSimBackend())
    p = theirs.parameters
    p.MAX_SUB_CHANGED, p.NB_TIMESTEP_COOLDOWN_SUB = 2, 2
    theirs.change_parameters(p)
    theirs.set_thermal_limit(env.env.thermal_limit)
    rng = np.random.default_rng(0)
    compared = together = redispatched = 0
    obs = None
    for step in range(60):
        if not env.agents:
            theirs.set_id(0)
            theirs.reset()
            obs, _ = env.reset(options={"scenario_id": 0})
        actions = _random_actions(env, obs, rng, asking=int(rng.integers(0, 3)))
        parts = _grid2op_dict(env, actions)
        together += len(parts.get("set_bus", {}).get("substations_id", [])) == 2
        redispatched += "redispatch" in parts
        g_obs, _, g_done, g_info = theirs.step(theirs.action_space(parts))
        obs, _, terms, _, infos = env.step(actions)
        info = infos[env.possible_agents[0]]["env"]
        assert info["is_illegal"] == g_info["is_illegal"], f"step {step}: {parts}"
        assert all(terms.values()) == g_done, f"step {step}: {parts}"
        if g_done:
            continue
        view = env.env.view(env.state())
        where = f"step {step}: {parts}"
        np.testing.assert_array_equal(view.topo_vect, g_obs.topo_vect, where)
        np.testing.assert_array_equal(
            view.time_before_cooldown_sub, g_obs.time_before_cooldown_sub, where
        )
        np.testing.assert_allclose(
            view.actual_dispatch, g_obs.actual_dispatch, atol=1e-3, err_msg=where
        )
        np.testing.assert_allclose(view.rho, g_obs.rho, rtol=1e-4, atol=1e-5, err_msg=where)
        compared += 1
    assert compared >= 30 and together >= 5 and redispatched >= 20


def test_the_rule_follows_parameters_set_after_the_env_was_made():
    """``set_parameters`` raising ``max_sub_changed`` to 2: two asking substations both act."""
    env = parallel_env(TASK, split="train", heuristics=None)
    env.env.set_parameters(Parameters(max_sub_changed=2))
    obs, _ = env.reset(seed=0)
    layout = env.layout
    movers = layout.names[:2]
    actions = {name: 0 for name in env.agents}
    for name in movers:
        actions[name] = int(np.flatnonzero(obs[name]["action_mask"])[1])
    _, _, _, _, infos = env.step(actions)
    assert not any(infos[name]["deferred"] for name in movers)
    assert not infos[movers[0]]["env"]["is_illegal"]
    topo = env.state()[layout.obs_slices["topo_vect"]]
    for name in movers:
        i = layout.names.index(name)
        lo, hi = layout.slot_range(i)
        np.testing.assert_array_equal(
            topo[lo:hi], layout.buses[int(layout.choices[i, actions[name]])]
        )
