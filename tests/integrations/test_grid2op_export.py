"""Recorded runs exported in grid2op's layout (``grid-vec export``): grid2op's
``EpisodeData.from_disk`` loads them, their observations are the recording's, their actions
the agent's as grid2op actions, and a do-nothing run, and runs of grid2op's own search
agents, are what grid2op's own Runner writes."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grid2op", reason="needs the grid2op extra")

import grid2op
from grid2op.Agent import DoNothingAgent, PowerLineSwitch, TopologyGreedy
from grid2op.Episode import EpisodeData as Grid2opEpisodeData
from grid2op.Reward import L2RPNReward
from grid2op.Runner import Runner as Grid2opRunner

import grid_vec
from grid_vec.cli import main
from grid_vec.integrations.grid2op import Grid2opBatchPolicy, make_env, reference_env
from grid_vec.integrations.grid2op_export import ExportError, export_run
from grid_vec.runner import RandomAgent, Runner, load_run
from grid_vec.vector.batched import BatchedGridVecEnv

pytestmark = pytest.mark.grid2op
SANDBOX = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
STEPS = 12


@pytest.fixture(scope="module")
def random_run(tmp_path_factory) -> Path:
    """Random catalog actions on the sandbox, recorded by ``grid-vec run``."""
    run = tmp_path_factory.mktemp("random") / "run"
    argv = ["run", "--env", str(SANDBOX), "--agent", "random", "--episodes", "2"]
    argv += ["--max-iter", str(STEPS), "--save", str(run), "--no-progress"]
    assert main(argv) == 0
    return run


def _exported(run: Path, out: Path, **kwargs) -> list:
    episodes = export_run(run, out, **kwargs)
    assert [e.episode for e in episodes] == sorted(e.result.episode for e in load_run(run))
    return episodes


def test_an_exported_run_loads_in_grid2op_with_the_recorded_observations_and_actions(
    random_run, tmp_path
):
    out = tmp_path / "random"
    exported = _exported(random_run, out)
    recorded = {e.result.episode: e for e in load_run(random_run)}
    env = grid_vec.make(str(SANDBOX))
    reference = reference_env(SANDBOX)
    for episode in exported:
        theirs = Grid2opEpisodeData.from_disk(str(out), episode.name)
        ours = recorded[episode.episode]
        assert len(theirs.observations) == len(ours) + 1  # random actions end episodes early
        assert len(theirs.actions) == len(ours)
        views = [env.view(row) for row in ours.observations]
        for name in ("rho", "p_or", "a_or", "v_or", "load_p", "gen_p", "line_status"):
            want = np.stack([np.asarray(getattr(v, name)) for v in views])
            got = np.stack(
                [np.asarray(getattr(o, name), dtype=want.dtype) for o in theirs.observations]
            )
            np.testing.assert_array_equal(got, want, err_msg=name)
        for t, action in enumerate(ours.actions):
            want = reference.action_space(env.grid2op_action(int(action)))
            assert theirs.actions[t] == want, f"step {t}: {theirs.actions[t]} != {want}"
        n = len(ours)  # the arrays have max_steps rows, NaN past the episode's end
        np.testing.assert_array_equal(theirs.rewards[:n], ours.rewards.astype(np.float32))
        assert np.isnan(theirs.rewards[n:]).all() and len(theirs.rewards) == STEPS
        assert theirs.meta["nb_timestep_played"] == len(ours)
        assert theirs.meta["cumulative_reward"] == pytest.approx(ours.result.cum_reward)
        np.testing.assert_array_equal(~theirs.legal[:n], ours.info("is_illegal"))


def test_an_exported_do_nothing_run_is_what_grid2ops_runner_writes(tmp_path):
    """Same scenario, same agent: the files, the observations (float32 rounding apart), the
    env modifications (the scenario's injections, bitwise), the rewards and the flags."""
    ours_run, ours_out, theirs_out = tmp_path / "run", tmp_path / "ours", tmp_path / "theirs"
    env = BatchedGridVecEnv(grid_vec.make(str(SANDBOX)).sharing_one_batch(1))
    try:
        Runner(env, grid_vec.runner.DoNothingAgent()).run(
            1,
            max_iter=STEPS,
            episode_id=[1],
            reset_options={"max_steps": STEPS},
            path_save=ours_run,
        )
    finally:
        env.close()
    (episode,) = _exported(ours_run, ours_out)
    theirs_out.mkdir()
    from lightsim2grid import LightSimBackend

    # grid2op opening the folder itself (reference_env opens a copy: its chronics_path is
    # the copy's)
    reference = grid2op.make(str(SANDBOX), backend=LightSimBackend())
    runner = Grid2opRunner(**reference.get_params_for_runner(), agentClass=DoNothingAgent)
    runner.run(nb_episode=1, episode_id=[1], max_iter=STEPS, path_save=str(theirs_out))
    assert sorted(p.name for p in (theirs_out / "0001").iterdir()) == sorted(
        p.name for p in episode.path.iterdir() if p.name != Grid2opEpisodeData.LEGAL_AMBIGUOUS
    )
    ours = Grid2opEpisodeData.from_disk(str(ours_out), "0001")
    theirs = Grid2opEpisodeData.from_disk(str(theirs_out), "0001")
    assert len(ours.observations) == len(theirs.observations) == STEPS + 1
    for o, g in zip(ours.observations, theirs.observations, strict=True):
        np.testing.assert_allclose(o.rho, g.rho, atol=1e-5)
        np.testing.assert_allclose(o.p_or, g.p_or, atol=1e-4)
        np.testing.assert_array_equal(o.topo_vect, g.topo_vect)
        assert (o.current_step, o.max_step, o.hour_of_day) == (
            g.current_step,
            g.max_step,
            g.hour_of_day,
        )
    for o, g in zip(ours.env_actions, theirs.env_actions, strict=True):
        np.testing.assert_array_equal(o.to_vect(), g.to_vect())
    np.testing.assert_allclose(ours.rewards, theirs.rewards, rtol=1e-6)
    np.testing.assert_array_equal(ours.disc_lines, theirs.disc_lines)
    for key in ("nb_timestep_played", "chronics_max_timestep", "chronics_path"):
        assert ours.meta[key] == theirs.meta[key], key


def test_general_topology_actions_are_exported_as_grid2op_set_bus_actions(tmp_path):
    run, out = tmp_path / "run", tmp_path / "out"
    env = BatchedGridVecEnv(grid_vec.make(str(SANDBOX), action_type="set_bus").sharing_one_batch(1))
    try:
        Runner(env, RandomAgent(env.single_action_space), seed=3).run(
            1, max_iter=6, reset_options={"max_steps": 6}, path_save=run
        )
    finally:
        env.close()
    (episode,) = _exported(run, out)
    (ours,) = load_run(run)
    theirs = Grid2opEpisodeData.from_disk(str(out), episode.name)
    single = grid_vec.make(str(SANDBOX), action_type="set_bus")
    reference = reference_env(SANDBOX)
    from gymnasium import spaces

    for t in range(len(ours)):
        action = spaces.unflatten(single.action_space, ours.actions[t])
        want = reference.action_space(single.grid2op_action(action))
        assert theirs.actions[t] == want
        g_set = want.set_bus  # grid2op's topology order: each asked element where we asked it
        assert (g_set != 0).sum() == (action["set_bus"] != 0).sum()


def test_a_recording_that_does_not_play_again_is_refused_naming_the_episode_and_step(
    random_run, tmp_path
):
    run = tmp_path / "run"
    (run / "episode_00000").mkdir(parents=True)
    source = random_run / "episode_00000"
    (run / "episode_00000" / "meta.json").write_bytes((source / "meta.json").read_bytes())
    with zipfile.ZipFile(source / "arrays.npz") as zf:
        arrays = {n[: -len(".npy")]: np.load(zf.open(n)) for n in zf.namelist()}
    arrays["actions"] = arrays["actions"].copy()
    # another action at step 2 (do-nothing, or toggling branch 0)
    arrays["actions"][1] = 1 if arrays["actions"][1] == 0 else 0
    np.savez(run / "episode_00000" / "arrays.npz", **arrays)
    with pytest.raises(ExportError, match=r"episode_00000.*does not play again.*step 2 "):
        export_run(run, tmp_path / "out")
    assert not (tmp_path / "out" / "0001").exists()
    assert not any(p.name.startswith(".") for p in (tmp_path / "out").iterdir())


def test_a_recording_naming_objects_the_export_cannot_make_is_refused(random_run, tmp_path):
    run = tmp_path / "run"
    (run / "episode_00000").mkdir(parents=True)
    source = random_run / "episode_00000"
    meta = json.loads((source / "meta.json").read_text())
    meta["env_kwargs"]["opponent"] = "RandomLineOpponent(...)"
    (run / "episode_00000" / "meta.json").write_text(json.dumps(meta))
    (run / "episode_00000" / "arrays.npz").write_bytes((source / "arrays.npz").read_bytes())
    with pytest.raises(ExportError, match=r"meta.json: env_kwargs has keys .*opponent"):
        export_run(run, tmp_path / "out")


def test_grid_vec_export_writes_the_episodes_and_refuses_mistakes_in_one_line(
    random_run, tmp_path, capsys
):
    out = tmp_path / "agents" / "random"
    assert main(["export", str(random_run), "--grid2op", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert names == ["0001", "0002"] or len(names) == 2
    capsys.readouterr()
    assert main(["export", str(random_run), "--grid2op", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "exists" in err and "--skip-existing" in err
    assert main(["export", str(random_run), "--grid2op", str(out), "--skip-existing"]) == 0
    assert main(["export", str(tmp_path / "nothing"), "--grid2op", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a directory of a saved run" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", str(empty), "--grid2op", str(out)]) == 2
    assert "no recorded episode" in capsys.readouterr().err
    # a run of an embedded grid has no grid2op folder to export for
    embedded = tmp_path / "embedded"
    argv = ["run", "--env", "case14", "--episodes", "1", "--max-iter", "3", "--save", str(embedded)]
    assert main([*argv, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["export", str(embedded), "--grid2op", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'case14'" in err and "not a grid2op dataset folder" in err
    assert not (tmp_path / "nowhere").exists()


def test_the_opponents_attacks_are_exported_at_every_step_they_last(tmp_path):
    """grid2op's Runner records the opponent's attack at every step it holds its branch down;
    the recording marks the step an attack starts (``info["attacked_branch"]``)."""
    folder = SANDBOX.parent / "rte_case14_opponent"
    run, out = tmp_path / "run", tmp_path / "out"
    argv = ["run", "--env", str(folder), "--episodes", "1", "--max-iter", "100"]
    assert main([*argv, "--save", str(run), "--no-progress"]) == 0
    (episode,) = export_run(run, out)
    (ours,) = load_run(run)
    starts = np.flatnonzero(ours.info("attacked_branch") >= 0)
    assert len(starts) >= 1  # the opponent attacked in this episode
    theirs = Grid2opEpisodeData.from_disk(str(out), episode.name)
    attacking = np.flatnonzero(np.abs(theirs.attacks.collection).sum(axis=1) > 0)
    assert set(starts) <= set(attacking) and len(attacking) > len(starts)
    for t in attacking:
        block_start = max(s for s in starts if s <= t)  # the attack it belongs to
        branch = ours.info("attacked_branch")[block_start]
        status = theirs.attacks[int(t)].line_set_status
        assert status[branch] == -1 and np.count_nonzero(status) == 1, t


def test_a_recording_with_a_malformed_seed_or_action_is_one_export_error(random_run, tmp_path):
    """A recorded run is untrusted: a seed of another type, or an action the env refuses,
    is an ExportError naming the file (never a traceback of the env's)."""
    source = random_run / "episode_00000"
    with zipfile.ZipFile(source / "arrays.npz") as zf:
        arrays = {n[: -len(".npy")]: np.load(zf.open(n)) for n in zf.namelist()}
    meta = json.loads((source / "meta.json").read_text())
    for name, change in (
        ("seed", lambda m, a: m.update(env_seed="42")),
        ("action", lambda m, a: a["actions"].__setitem__(0, 10_000)),  # beyond the catalog
    ):
        run = tmp_path / name / "run"
        (run / "episode_00000").mkdir(parents=True)
        m, a = json.loads(json.dumps(meta)), {k: v.copy() for k, v in arrays.items()}
        change(m, a)
        (run / "episode_00000" / "meta.json").write_text(json.dumps(m))
        np.savez(run / "episode_00000" / "arrays.npz", **a)
        with pytest.raises(ExportError, match=r"episode_00000"):
            export_run(run, tmp_path / name / "out")


def _runs_of_both(agent_class, tmp_path: Path, episodes: list[int], steps: int) -> list[tuple]:
    """grid2op's ``agent_class`` on the sandbox, recorded by grid_vec's Runner (the env and
    policy ``grid-vec run --agent grid2op-...`` plays: ``make_env``'s ``set_bus_continuous``
    env, ``Grid2opBatchPolicy``) then exported, and by grid2op's own Runner, with the same
    scenarios and seeds: per episode, (ours, theirs) as grid2op's ``EpisodeData`` reads them.

    L2RPNReward on both sides (the branches' margins), as the search tests of
    test_grid2op_agents.py: with the sandbox's RedispReward the greedy agents meet candidates
    one float32 ulp apart in grid2op's reward and equal in grid_vec's (see TIES there), and
    grid2op's argmax then picks by rounding."""
    run, ours_out, theirs_out = tmp_path / "run", tmp_path / "ours", tmp_path / "theirs"
    seeds = {"env_seeds": [11 + e for e in episodes], "agent_seeds": [3 + e for e in episodes]}
    reference = reference_env(SANDBOX, reward_class=L2RPNReward)  # its spaces build the agent
    env = BatchedGridVecEnv(make_env(SANDBOX, reward="L2RPNReward").sharing_one_batch(2))
    try:
        Runner(env, Grid2opBatchPolicy(agent_class(reference.action_space), reference)).run(
            len(episodes),
            max_iter=steps,
            episode_id=episodes,
            reset_options={"max_steps": steps},
            path_save=run,
            **seeds,
        )
    finally:
        env.close()
    exported = _exported(run, ours_out)
    from lightsim2grid import LightSimBackend

    # grid2op opening the folder itself (reference_env opens a copy: another chronics_path)
    g2op = grid2op.make(str(SANDBOX), backend=LightSimBackend(), reward_class=L2RPNReward)
    Grid2opRunner(**g2op.get_params_for_runner(), agentClass=agent_class).run(
        nb_episode=len(episodes),
        episode_id=episodes,
        max_iter=steps,
        path_save=str(theirs_out),
        **seeds,
    )
    pairs = []
    for episode in exported:
        ours = Grid2opEpisodeData.from_disk(str(ours_out), episode.name)
        theirs = Grid2opEpisodeData.from_disk(str(theirs_out), episode.name)
        assert len(ours.actions) == len(theirs.actions) == steps, episode.name
        assert ours.meta["env_seed"] == theirs.meta["env_seed"], episode.name
        pairs.append((ours, theirs))
    assert len(pairs) == len(episodes)
    return pairs


def _types(action) -> dict[str, bool]:
    """What grid2op's tools count an action as (``get_types``)."""
    kinds = ("injection", "voltage", "topology", "line", "redispatching", "storage", "curtail")
    return dict(zip(kinds, action.get_types(), strict=True))


def test_an_exported_topology_greedy_run_is_action_by_action_what_grid2ops_runner_writes(
    tmp_path,
):
    """TopologyGreedy through Grid2opBatchPolicy (the env's ``set_bus_continuous`` space):
    each exported action vector is grid2op's own, so grid2op's tools count its topology
    moves and no curtailment (the agent leaves every limit unchanged: grid2op's -1)."""
    moves = 0
    for ours, theirs in _runs_of_both(TopologyGreedy, tmp_path, [0, 2], 20):
        for t, (o, g) in enumerate(zip(ours.actions, theirs.actions, strict=True)):
            np.testing.assert_array_equal(o.to_vect(), g.to_vect(), err_msg=f"step {t}")
            assert o == g, f"step {t}: {o} != {g}"
            assert not _types(o)["curtail"] and not _types(o)["redispatching"], t
            moves += _types(o)["topology"]
    assert moves >= 6  # the agent did move substations, in both episodes


def _change_as_set(action, obs, space):
    """A PowerLineSwitch action of grid2op's (nothing, or one ``change_line_status``) as the
    ``set_line_status`` it is in the state ``obs`` shows: grid_vec's general topology action
    has no "change", its bridge plays one as the set of the other status."""
    assert set(action.as_dict()) <= {"change_line_status"}, action
    switched = np.flatnonzero(action.line_change_status)
    if not len(switched):
        return space({})
    return space({"set_line_status": [(int(b), -1 if obs.line_status[b] else 1) for b in switched]})


def test_an_exported_powerline_switch_run_is_action_by_action_what_grid2ops_runner_writes(
    tmp_path,
):
    """PowerLineSwitch through Grid2opBatchPolicy: each exported action is grid2op's own,
    its ``change_line_status`` as the set of the branch's other status (the state both
    runners recorded before the step), with no curtailment."""
    space = reference_env(SANDBOX).action_space
    switched = 0
    for ours, theirs in _runs_of_both(PowerLineSwitch, tmp_path, [0, 1], 20):
        for t, (o, g) in enumerate(zip(ours.actions, theirs.actions, strict=True)):
            before = theirs.observations[t]
            np.testing.assert_array_equal(ours.observations[t].line_status, before.line_status)
            want = _change_as_set(g, before, space)
            np.testing.assert_array_equal(o.to_vect(), want.to_vect(), err_msg=f"step {t}")
            assert o == want, f"step {t}: {o} != {want}"
            assert not _types(o)["curtail"], t
            switched += _types(o)["line"]
    assert switched >= 3  # the agent did switch branches
