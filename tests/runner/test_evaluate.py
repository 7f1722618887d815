"""Task scores: the Runner's time-step and other-reward accounting equals stepping the env
by hand; the score's figures; ``grid-vec eval`` and ``grid-vec actions`` on the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import grid_vec
from grid_vec.cli import main
from grid_vec.runner import Runner
from grid_vec.runner.action_sets import reduced_action_set
from grid_vec.runner.agents import DoNothingAgent
from grid_vec.runner.evaluate import COST, evaluate_task, format_by_scenario, survival_fraction
from grid_vec.runner.results import EpisodeResult

TASK = "grid_vec/Case14Topology-v0"


def _by_hand(scenario: int, env_seed: int) -> tuple[int, int, float, float]:
    """(agent steps, time steps, reward, operational cost) of do-nothing on a test scenario."""
    env = grid_vec.make(TASK, split="test", other_rewards={COST: COST})
    env.reset(seed=env_seed, options={"scenario_id": scenario})
    calls, steps, reward, cost, done = 0, 0, 0.0, 0.0, False
    while not done:
        _, r, terminated, truncated, info = env.step(0)
        calls += 1
        steps += 1 + info["skipped_steps"]
        reward += r
        cost += info["other_rewards"][COST]
        done = terminated or truncated
    return calls, steps, reward, cost


@pytest.mark.parametrize("vectorization", ["batched", "multiprocess"])
def test_the_runner_counts_the_time_steps_the_env_played_on_its_own(vectorization):
    envs = grid_vec.make_vec(
        TASK, 2, vectorization=vectorization, split="test", other_rewards={COST: COST}
    )
    with Runner(envs, DoNothingAgent(), seed=3) as runner:
        results = runner.run(3, episode_id=[0, 2, 4])
    envs.close()
    for result in results:
        calls, steps, reward, cost = _by_hand(result.scenario_id, result.env_seed)
        assert result.steps == calls and result.env_steps == steps > calls
        assert result.cum_reward == pytest.approx(reward, rel=1e-12)
        assert result.other_rewards[COST] == pytest.approx(cost, rel=1e-12)


def test_without_heuristics_env_steps_are_the_agents_steps():
    envs = grid_vec.make_vec("case14", 2, vectorization="batched")
    with Runner(envs, DoNothingAgent(), seed=0) as runner:
        results = runner.run(2, max_iter=30)
    assert all(r.env_steps == r.steps == 30 and r.other_rewards == {} for r in results)


def test_results_recorded_before_env_steps_existed_still_load():
    envs = grid_vec.make_vec("case14", 1, vectorization="batched")
    with Runner(envs, DoNothingAgent(), seed=0) as runner:
        (result,) = runner.run(1, max_iter=5)
    old = result.to_dict()
    del old["env_steps"], old["other_rewards"]
    loaded = EpisodeResult.from_dict(old)
    assert loaded.env_steps is None and loaded.steps == 5
    with pytest.raises(ValueError, match="other_rewards"):
        EpisodeResult.from_dict({**result.to_dict(), "other_rewards": {"x": "1"}})


def test_a_task_score_sums_its_episodes():
    score = evaluate_task(TASK, "do_nothing", scenarios=3, num_envs=2)
    assert [r.scenario_id for r in score.episodes] == [0, 1, 2]
    survival = [_by_hand(r.scenario_id, r.env_seed)[1] for r in score.episodes]
    assert score.survival.tolist() == survival
    playable = [r.max_steps - 1 for r in score.episodes]
    fractions = [
        1.0 if not r.terminated else s / p
        for r, s, p in zip(score.episodes, survival, playable, strict=True)
    ]
    assert score.score == pytest.approx(100 * np.mean(fractions))
    row = score.row()
    assert row["agent"] == "do_nothing" and row["episodes"] == 3
    assert 0 < row["cost_per_step_mwh"] < 10


def test_grid_vec_eval_prints_the_scores_and_refuses_mistakes(capsys, tmp_path):
    out = tmp_path / "rows.json"
    code = main(["eval", TASK, "--agent", "do_nothing", "--scenarios", "2", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "| do-nothing |" in text and out.exists()
    assert main(["eval", "grid_vec/Nope-v0"]) == 2
    assert main(["eval", TASK, "--agent", "genius"]) == 2
    assert main(["eval", TASK, "--scenarios", "0"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 3


def test_a_reduced_set_keeps_do_nothing_and_the_most_picked():
    counts = np.array([50, 0, 7, 3, 7, 0, 1])
    assert reduced_action_set(counts, 3) == [0, 2, 4, 3]
    assert reduced_action_set(counts, 10) == [0, 2, 4, 3, 6]
    with pytest.raises(ValueError):
        reduced_action_set(counts, 0)


def test_grid_vec_eval_refuses_more_scenarios_than_the_split_has(capsys):
    assert main(["eval", TASK, "--scenarios", "33"]) == 2
    assert "32 scenarios" in capsys.readouterr().err


def test_grid_vec_actions_writes_a_reduced_set_greedy_picked(tmp_path, capsys):
    code = main(
        [
            "actions",
            TASK,
            "--scenarios",
            "1",
            "--size",
            "4",
            "--workers",
            "1",
            "--out",
            str(tmp_path),
            "--max-steps",
            "40",
        ]
    )
    assert code == 0
    written = json.loads((tmp_path / "case14topology.json").read_text())
    assert written["actions"][0] == 0 and 1 < len(written["actions"]) <= 5
    assert written["picks"][1:] == sorted(written["picks"][1:], reverse=True)
    assert sum(written["picks"]) <= written["decisions"] <= 40
    assert written["command"].startswith("grid-vec actions")
    assert written["command"].endswith("--max-steps 40")


def test_grid_vec_eval_by_scenario_prints_each_agents_survival_and_the_scenarios_all_lost(
    capsys, tmp_path
):
    out = tmp_path / "rows.json"
    argv = ["eval", TASK, "--agent", "do-nothing", "--agent", "random", "--scenarios", "3"]
    code = main([*argv, "--by-scenario", "--json", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert [row["scenarios"] for row in rows] == [[0, 1, 2]] * 2
    # random ends every episode early: the scenarios none survived are do-nothing's losses
    assert all(rows[1]["terminated"])
    lost = [k for k, ended in enumerate(rows[0]["terminated"]) if ended]
    table = {
        line.split(" ")[1]: line
        for line in text.splitlines()
        if line.startswith("| ") and line.split(" ")[1].isdigit()
    }
    for k in range(3):
        cells = [str(row["survival"][k]) if row["terminated"][k] else "full" for row in rows]
        assert table[str(k)].endswith(f" | {cells[0]} | {cells[1]} |")
    listed = ", ".join(map(str, lost)) if lost else "none"
    assert f"scenarios no agent survived: {len(lost)} of 3 ({listed})" in text


def test_a_scenario_table_refuses_scores_of_different_scenarios():
    two = evaluate_task(TASK, "do_nothing", scenarios=2, num_envs=2)
    three = evaluate_task(TASK, "do_nothing", scenarios=3, num_envs=2, agent_name="other")
    assert format_by_scenario([three]).count("\n| ") == 3
    with pytest.raises(ValueError, match="other scenarios"):
        format_by_scenario([two, three])


def test_survival_fraction_counts_an_episode_without_game_over_whole_and_caps_at_one():
    survived = np.array([50, 10, 300])
    playable = np.array([100, 100, 200])
    # a game over at 50 of 100: 0.5; no game over at 10 (truncated): 1; 300 of 200: capped at 1
    assert survival_fraction(survived, playable, np.array([True, False, True])) == 2.5 / 3
    assert survival_fraction(survived, playable, np.array([True, True, True])) == 1.6 / 3
