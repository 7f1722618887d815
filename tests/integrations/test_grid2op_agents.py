"""grid2op's own agents, unchanged, on grid_vec (``grid_vec.integrations.grid2op``): the same
actions at every step and the same end step as on grid2op + LightSimBackend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grid2op", reason="needs the grid2op extra")

import grid2op
from grid2op.Agent import (
    DoNothingAgent,
    PowerLineSwitch,
    RecoPowerlineAgent,
    TopologyGreedy,
)
from grid2op.Reward import L2RPNReward

import grid_vec
from grid_vec.bench.grid2op_reference import grid2op_env
from grid_vec.integrations.grid2op import (
    Grid2opAgentPolicy,
    UnplayableAction,
    make_env,
    reference_env,
)

pytestmark = pytest.mark.grid2op
# TIES: the greedy agents rank their candidates by simulated reward in float32 (GreedyAgent's
# ``resulting_rewards``). With the sandbox's RedispReward (losses and redispatch cost, which
# grid2op sums in float32) two candidates a few 1e-6 apart in grid_vec's float64 reward are
# one float32 ulp apart there and equal in grid2op's, whose argmax then takes the first:
# seen with PowerLineSwitch (do-nothing against reconnecting a branch, 67.078834 against
# 67.078839) and TopologyGreedy. Such a choice is rounding, not physics; the search tests
# use L2RPNReward (the branches' margins), which tells the candidates apart.
DATA = Path(grid2op.__file__).parent / "data"


def play_both(folder: Path, agent_class, steps: int, scenario: int, limits_scale=None, **reward):
    """The agent on grid2op + LightSimBackend and, through the policy, on grid_vec (no
    opponent on either side; ``limits_scale``: the thermal limits scaled, per branch):
    (grid2op's actions, grid_vec's agent's actions, each side's end step or None)."""
    ours_kw = {"opponent": None, **({"reward": reward["name"]} if reward else {})}
    ours = make_env(folder, **ours_kw)
    if limits_scale is not None:
        ours = make_env(folder, thermal_limits=ours.thermal_limit * limits_scale, **ours_kw)
    kwargs = {"reward_class": reward["cls"]} if reward else {}
    theirs = grid2op_env(folder, opponent=False, **kwargs)
    theirs.set_thermal_limit(ours.thermal_limit)
    theirs.set_id(scenario)
    g_obs, reward_g, done = theirs.reset(), 0.0, False
    agent = agent_class(theirs.action_space)
    g_actions, g_end = [], None
    for t in range(steps):
        action = agent.act(g_obs, reward_g, done)
        g_actions.append(action)
        g_obs, reward_g, done, _ = theirs.step(action)
        if done:
            g_end = t + 1
            break
    reference = reference_env(folder, **kwargs)
    policy = Grid2opAgentPolicy(agent_class(reference.action_space), ours, reference)
    obs, _ = ours.reset(options={"scenario_id": scenario})
    policy.reset(obs)
    actions, end, reward_o, done = [], None, 0.0, False
    for t in range(steps):
        played = policy.act(obs, reward_o, done)
        actions.append(policy.last_action)
        obs, reward_o, terminated, truncated, _ = ours.step(played)
        done = terminated or truncated
        if done:
            end = t + 1
            break
    return g_actions, actions, g_end, end


def _first_difference(g_actions, actions) -> int | None:
    for t, (a, b) in enumerate(zip(g_actions, actions, strict=False)):
        if a != b:
            return t
    return None if len(g_actions) == len(actions) else min(len(g_actions), len(actions))


@pytest.fixture(scope="module")
def sandbox() -> Path:
    return DATA / "l2rpn_case14_sandbox"


def _scaled(branch: int, factor: float) -> np.ndarray:
    scale = np.ones(20)
    scale[branch] = factor
    return scale


def test_do_nothing_and_reco_powerline_play_as_on_grid2op_to_the_same_end(sandbox):
    """Branch 17 at 60% of its limit: it trips, a cascade follows and the episode ends at the
    same step on both sides, for DoNothingAgent and RecoPowerlineAgent alike."""
    for agent_class in (DoNothingAgent, RecoPowerlineAgent):
        g_actions, actions, g_end, end = play_both(sandbox, agent_class, 300, 0, _scaled(17, 0.6))
        assert _first_difference(g_actions, actions) is None, agent_class.__name__
        assert end == g_end and end is not None, agent_class.__name__


def test_reco_powerline_puts_tripped_branches_back_as_on_grid2op(sandbox):
    """Branch 4 at 60% of its limit trips again and again; RecoPowerlineAgent reconnects it
    whenever its delay is over, at the same steps as on grid2op."""
    g_actions, actions, g_end, end = play_both(sandbox, RecoPowerlineAgent, 120, 0, _scaled(4, 0.6))
    assert _first_difference(g_actions, actions) is None and end == g_end
    assert sum(bool(a.line_set_status.any()) for a in actions) >= 5


def test_powerline_switch_searching_with_simulate_plays_as_on_grid2op(sandbox):
    """PowerLineSwitch simulates every branch toggle at each step (``obs.simulate``, here
    grid_vec's) and plays the best: the same choices as on grid2op (L2RPNReward: see
    TIES)."""
    g_actions, actions, g_end, end = play_both(
        sandbox, PowerLineSwitch, 25, 0, _scaled(4, 0.6), name="L2RPNReward", cls=L2RPNReward
    )
    assert _first_difference(g_actions, actions) is None
    assert end == g_end
    nothing = grid2op_env(sandbox, opponent=False).action_space({})
    assert any(a != nothing for a in actions)  # it switched something


def test_topology_greedy_searching_every_configuration_plays_as_on_grid2op(sandbox):
    """TopologyGreedy simulates every unitary substation configuration (179 on the sandbox)
    at each step and picks the same ones as on grid2op (L2RPNReward: see TIES)."""
    g_actions, actions, g_end, end = play_both(
        sandbox, TopologyGreedy, 15, 0, name="L2RPNReward", cls=L2RPNReward
    )
    assert _first_difference(g_actions, actions) is None
    assert end == g_end
    nothing = grid2op_env(sandbox, opponent=False).action_space({})
    assert sum(a != nothing for a in actions) >= 3


def test_a_36_bus_folder_plays_as_on_grid2op():
    folder = DATA / "l2rpn_neurips_2020_track1"
    g_actions, actions, g_end, end = play_both(folder, RecoPowerlineAgent, 60, 0)
    assert _first_difference(g_actions, actions) is None and end == g_end
    g_actions, actions, g_end, end = play_both(folder, PowerLineSwitch, 6, 0)
    assert _first_difference(g_actions, actions) is None and end == g_end


def test_the_observation_carries_grid_vecs_state_under_grid2ops_names(sandbox):
    ours = make_env(sandbox, opponent=None)
    theirs = grid2op_env(sandbox, opponent=False)
    theirs.set_id(0)
    g_obs = theirs.reset()
    policy = Grid2opAgentPolicy(DoNothingAgent(theirs.action_space), ours, theirs)
    obs, _ = ours.reset(options={"scenario_id": 0})
    built = policy.observation(obs)
    assert type(built).__name__ == type(g_obs).__name__
    for name in ("rho", "p_or", "a_or", "gen_p", "load_p", "theta_or", "gen_margin_up"):
        np.testing.assert_allclose(getattr(built, name), getattr(g_obs, name), rtol=1e-4, atol=1e-3)
    for name in ("topo_vect", "line_status", "time_before_cooldown_line", "current_step"):
        np.testing.assert_array_equal(getattr(built, name), getattr(g_obs, name), name)
    assert built.topo_vect.dtype == g_obs.topo_vect.dtype and built.line_status.dtype == bool
    assert (built.year, built.month, built.day, built.hour_of_day) == (
        g_obs.year, g_obs.month, g_obs.day, g_obs.hour_of_day,
    )  # fmt: skip
    # grid2op's own helpers read the values put there
    np.testing.assert_array_equal(built.sub_topology(1), g_obs.sub_topology(1))
    np.testing.assert_array_equal(built.connectivity_matrix(), g_obs.connectivity_matrix())
    # simulate is grid_vec's, and leaves the env as it was
    before = ours.snapshot()
    sim_obs, sim_reward, sim_done, sim_info = built.simulate(theirs.action_space({}))
    g_sim = g_obs.simulate(theirs.action_space({}))
    np.testing.assert_allclose(sim_obs.rho, g_sim[0].rho, rtol=1e-4, atol=1e-4)
    assert sim_done == g_sim[2] and not sim_info["is_illegal"]
    assert sim_reward == pytest.approx(g_sim[1], rel=1e-5)
    for name, value in before.state.items():
        np.testing.assert_array_equal(value, ours.snapshot().state[name], name)


def test_grid2op_actions_translate_both_ways_and_unplayable_ones_are_named(sandbox):
    ours = make_env(sandbox, opponent=None)
    theirs = grid2op_env(sandbox, opponent=False)
    policy = Grid2opAgentPolicy(DoNothingAgent(theirs.action_space), ours, theirs)
    obs, _ = ours.reset(options={"scenario_id": 0})
    space = theirs.action_space
    g_obs = policy.observation(obs)
    # change_bus: the other bus bar of the element now; change_line_status: the other status
    changed = policy.action(space({"change_bus": {"substations_id": [(1, [True] * 6)]}}), g_obs)
    sub_1 = slice(ours.topology.sub_start[1], ours.topology.sub_start[2])
    assert (changed["set_bus"][sub_1] == 2).all() and changed["set_bus"].sum() == 12
    toggled = policy.action(space({"change_line_status": [3]}), g_obs)
    assert toggled["set_line_status"][3] == -1 and toggled["set_line_status"].sum() == -1
    # the reverse gives the same grid2op action back
    config = space({"set_bus": {"substations_id": [(1, [1, 2, 1, 2, 1, 2])]}})
    assert policy.to_grid2op(policy.action(config)) == config
    # an action grid2op finds ambiguous is one the env finds ambiguous too
    ambiguous = space({"set_line_status": [(3, -1)], "set_bus": {"lines_or_id": [(3, 2)]}})
    assert ambiguous.is_ambiguous()[0]
    _, _, _, _, info = ours.step(policy.action(ambiguous, g_obs))
    assert info["is_ambiguous"]
    # the continuous parts, in the box's columns; a curtailment left unchanged (grid2op's -1)
    # is the box's -1 (the env leaves the limit as it is), not the limit now (which would set
    # it again); the reverse again gives the same action back
    layout = ours.continuous
    mixed = space({"redispatch": [(1, -2.5)], "curtail": [(3, 0.4)], "set_line_status": [(3, -1)]})
    played = policy.action(mixed, g_obs)
    column = {
        int(g): layout.start_of("redispatch") + i for i, g in enumerate(layout.redispatch_gens)
    }
    curtail = {
        int(g): layout.start_of("curtailment") + i for i, g in enumerate(layout.curtail_gens)
    }
    assert played["continuous"][column[1]] == -2.5 and played["continuous"][curtail[3]] == 0.4
    others = [c for g, c in curtail.items() if g != 3]
    np.testing.assert_array_equal(played["continuous"][others], -1.0)
    assert played["set_line_status"][3] == -1
    assert policy.to_grid2op(played) == mixed
    # an action without curtailment: every column -1, and grid2op's action back has none
    topology = space({"set_line_status": [(3, -1)]})
    played = policy.action(topology, g_obs)
    np.testing.assert_array_equal(played["continuous"][list(curtail.values())], -1.0)
    back = policy.to_grid2op(played)
    assert back == topology and not back.get_types()[-1]  # get_types()[-1]: curtailment
    np.testing.assert_array_equal(back.to_vect(), topology.to_vect())
    alone = make_env(sandbox, continuous=False, opponent=None)
    topology_only = Grid2opAgentPolicy(DoNothingAgent(space), alone, theirs)
    with pytest.raises(UnplayableAction, match=r"redispatch.*make_env"):
        topology_only.action(space({"redispatch": [(0, 1.0)]}))
    with pytest.raises(ValueError, match="make_env"):
        Grid2opAgentPolicy(DoNothingAgent(space), grid_vec.make(sandbox), theirs)


def test_the_example_plays_an_agent_on_both_and_reports_the_same_actions(tmp_path):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "examples" / "grid2op_agents.py"
    argv = ["--agent", "PowerLineSwitch", "--steps", "4", "--compare", "--export", str(tmp_path)]
    out = subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "grid_vec: PowerLineSwitch played 4 steps" in out.stdout
    assert "the same action at 4 of 4 steps" in out.stdout
    # the Runner's run, exported and read back by grid2op
    assert out.stdout.count("grid2op reads 5 observations") == 2, out.stdout
    assert len(list((tmp_path / "grid2op" / "PowerLineSwitch").glob("*/observations.npz"))) == 2


def test_the_runner_plays_a_grid2op_agent_as_a_loop_plays_it(sandbox):
    """``Grid2opBatchPolicy`` in grid_vec's Runner, on a batched vector env of 2 sub-envs
    over 3 scenarios: each episode's length and summed reward are those of the agent played
    through ``Grid2opAgentPolicy`` on a GridEnv, scenario by scenario (TopologyGreedy: the
    candidates of both sub-envs simulated in one call)."""
    from grid_vec.integrations.grid2op import GRID2OP_OBSERVATION, Grid2opBatchPolicy
    from grid_vec.runner import Runner

    base = make_env(sandbox).thermal_limit * _scaled(17, 0.6)
    kwargs = {"opponent": None, "reward": "L2RPNReward", "thermal_limits": base}
    reference = reference_env(sandbox, reward_class=L2RPNReward)
    envs = grid_vec.make_vec(
        sandbox, 2, vectorization="batched", action_type="set_bus",
        observation_attributes=GRID2OP_OBSERVATION, **kwargs,
    )  # fmt: skip
    with Runner(envs, Grid2opBatchPolicy(TopologyGreedy(reference.action_space), reference)) as run:
        results = run.run(3, max_iter=8, episode_id=[0, 1, 2])
    env = make_env(sandbox, **kwargs)
    for result in results:
        policy = Grid2opAgentPolicy(TopologyGreedy(reference.action_space), env, reference)
        obs, _ = env.reset(seed=result.env_seed, options={"scenario_id": result.scenario_id})
        total, steps, done, reward = 0.0, 0, False, 0.0
        while not done and steps < 8:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs, reward, done))
            total, steps, done = total + reward, steps + 1, terminated or truncated
        assert (result.steps, result.terminated) == (steps, done), result
        assert result.cum_reward == pytest.approx(total, rel=1e-9), result


def test_the_observation_holds_the_grid_vec_envs_thermal_limits(sandbox):
    """An agent that reads ``obs.thermal_limit`` (OptimCVXPY does) sees the limits the env
    plays, not those grid2op's env was made with (it saw rho > 1 under limits it found
    loose, and did nothing)."""
    theirs = grid2op_env(sandbox, opponent=False)
    limits = np.asarray(theirs.get_thermal_limit()) * 0.8
    ours = make_env(sandbox, opponent=None, thermal_limits=limits)
    policy = Grid2opAgentPolicy(DoNothingAgent(theirs.action_space), ours, theirs)
    obs, _ = ours.reset(options={"scenario_id": 0})
    g_obs = policy.observation(obs)
    np.testing.assert_allclose(g_obs.thermal_limit, limits, rtol=1e-6)
    np.testing.assert_allclose(g_obs.a_or / g_obs.thermal_limit, g_obs.rho, rtol=1e-4)


def test_grid_vec_run_plays_a_grid2op_agent_as_the_loop_plays_it(sandbox, tmp_path, capsys):
    """``grid-vec run --agent grid2op-powerline-switch`` (GridVecEnv workers, the Runner,
    ``Grid2opBatchPolicy``) records each episode's actions as the agent chooses them through
    ``Grid2opAgentPolicy`` on a GridEnv from the same seed; the run names the agent, a resume
    with another one is refused, and the run exports."""
    from gymnasium import spaces

    from grid_vec.cli import main
    from grid_vec.integrations.grid2op_export import export_run
    from grid_vec.runner import load_run

    run = tmp_path / "run"
    argv = ["run", "--env", str(sandbox), "--agent", "grid2op-powerline-switch", "--episodes", "2"]
    assert main([*argv, "--max-iter", "6", "--save", str(run), "--no-progress"]) == 0
    theirs = grid2op_env(sandbox)
    for episode in load_run(run):
        assert episode.meta["agent"] == "grid2op.PowerLineSwitch"
        env = make_env(sandbox)
        policy = Grid2opAgentPolicy(PowerLineSwitch(theirs.action_space), env, theirs)
        obs, _ = env.reset(seed=episode.meta["env_seed"], options=episode.meta["reset_options"])
        for t, recorded in enumerate(episode.actions):
            action = policy.act(obs, 0.0, False)
            played = spaces.flatten(env.action_space, action)
            np.testing.assert_array_equal(played, recorded, err_msg=f"step {t}")
            obs, *_ = env.step(action)
    capsys.readouterr()
    other = [*argv[:4], "grid2op-topology-greedy", *argv[5:]]
    assert main([*other, "--max-iter", "6", "--save", str(run), "--resume"]) == 2
    assert "recorded 'grid2op-powerline-switch'" in capsys.readouterr().err
    assert len(export_run(run, tmp_path / "export")) == 2
