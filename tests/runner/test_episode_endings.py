"""Results say how an episode ended, and ``--max-iter`` counts time steps: the run table and
replay give the game-over reason and the tripped branches; under a task's heuristics (the env
plays steps on its own) the cap is on time steps, not on the agent's decisions."""

from __future__ import annotations

import functools

import grid_vec
from grid_vec.cli import main
from grid_vec.runner import Runner, format_results_table, load_run
from grid_vec.runner.agents import DoNothingAgent

TOPOLOGY = "grid_vec/Case14Topology-v0"  # heuristics: the env plays on while rho < 0.9


def _tight_case14():
    """case14 rated at 60% of its calibration: lines trip and the grid fails within a day."""
    limits = grid_vec.make("case14").unwrapped.model.thermal_limit_a * 0.6
    return grid_vec.make("case14", thermal_limits=limits)


def test_max_iter_of_grid_vec_run_counts_time_steps_under_a_tasks_heuristics(tmp_path):
    save = tmp_path / "run"
    argv = ["run", "--env", TOPOLOGY, "--episodes", "2", "--num-envs", "1", "--max-iter", "40"]
    assert main([*argv, "--no-progress", "--save", str(save)]) == 0
    results = [e.result for e in load_run(save)]
    for r in results:
        assert r.env_steps is not None and r.env_steps <= 40
        assert r.terminated or (r.truncated and r.env_steps == 40)
    # the env played steps on its own, so the agent decided fewer times than 40
    assert any(r.steps < r.env_steps for r in results)


def test_the_runners_max_iter_is_reached_in_time_steps_not_in_decisions():
    env = functools.partial(grid_vec.make, TOPOLOGY)
    with Runner([env], DoNothingAgent()) as runner:
        (result,) = runner.run(1, max_iter=40)
    assert result.truncated and result.env_steps >= 40
    assert result.steps < 40  # decisions: the cap was not counted in them


def test_the_run_table_gives_the_game_over_reason_and_the_trips(tmp_path):
    with Runner([_tight_case14], DoNothingAgent()) as runner:
        (result,) = runner.run(1, max_iter=288, path_save=tmp_path / "run")
    (episode,) = load_run(tmp_path / "run")
    assert result.terminated and result.game_over_reason
    assert result.game_over_reason == str(episode.info("game_over_reason")[-1])
    assert result.trips == int(episode.info("tripped_branches").sum()) > 0
    assert episode.result == result  # kept in meta.json
    row = format_results_table([result]).splitlines()[2]
    assert row.endswith(f"{result.trips}  {result.game_over_reason}")


def test_replay_says_how_each_episode_ended_and_names_the_tripped_lines(tmp_path, capsys):
    save = tmp_path / "run"
    argv = ["run", "--env", "case118", "--episodes", "1", "--num-envs", "1", "--max-iter", "400"]
    assert main([*argv, "--no-progress", "--save", str(save)]) == 0
    (episode,) = load_run(save)
    assert episode.result.terminated, "case118's first scenario fails within 400 steps"
    capsys.readouterr()
    assert main(["replay", str(save), "--no-plot"]) == 0
    out = capsys.readouterr().out
    reason = episode.result.game_over_reason
    assert reason in out.split("\n\n")[0]  # the table
    names = grid_vec.make("case118").unwrapped.model.branch_names
    step, branches = episode.trips()[0]
    line = out.split("\n\n")[1].splitlines()[0]
    assert line.startswith(f"episode 0: {reason} after {episode.result.steps} steps; tripped: ")
    assert f"{names[branches[0]]} (step {step})" in line
