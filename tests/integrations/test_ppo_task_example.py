"""examples/ppo_task.py run as a user runs it: a budget of decisions trains the same policy
twice from the same seed (a wall-clock budget cuts where the machine's speed puts it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ppo_task.py"
TINY = ["--num-envs", "8", "--pool", "4", "--num-steps", "8", "--eval-split", "validation"]


def run_example(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *TINY, "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_ppo_example_refuses_a_budget_of_no_decisions_in_one_line(tmp_path):
    done = run_example(tmp_path / "run", "--decisions", "0")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["--decisions must be a positive number, got 0"]


@pytest.mark.slow
def test_ppo_example_with_a_decision_budget_trains_the_same_policy_twice_from_one_seed(tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    for out in runs:
        done = run_example(out, "--decisions", "256", "--seed", "3")
        assert done.returncode == 0, done.stderr[-2000:]
    curves = [
        [line.split(",", 1)[1] for line in (out / "curve.csv").read_text().splitlines()[1:]]
        for out in runs
    ]
    assert len(curves[0]) >= 2  # several rollouts and updates, not one
    assert curves[0] == curves[1]  # decisions, time steps, episodes and survival per rollout
    first, second = (torch.load(out / "ppo.pt", weights_only=True)["network"] for out in runs)
    assert first.keys() == second.keys()
    assert all(torch.equal(first[key], second[key]) for key in first)


def test_ppo_example_refuses_a_run_to_clone_that_is_not_one_in_one_line(tmp_path):
    done = run_example(tmp_path / "run", "--bc-from", str(tmp_path / "nothing"), "--minutes", "0")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("--bc-from: ") and "nothing" in line


@pytest.mark.slow
def test_ppo_example_clones_an_expert_s_recorded_decisions_before_ppo(tmp_path):
    """``--bc-from`` fits the policy to an expert's run (``grid-vec run --agent expert``)
    before PPO: the clone plays the expert's acting decisions, which the untrained policy,
    biased to do-nothing, never does."""
    import grid_vec
    from grid_vec.cli import main
    from grid_vec.runner.imitation import load_pairs

    run = tmp_path / "expert"
    task = "grid_vec/Case14Topology-v0"
    argv = ["run", "--env", task, "--agent", "expert", "--episodes", "4", "--num-envs", "2"]
    assert main([*argv, "--max-iter", "600", "--no-progress", "--save", str(run)]) == 0
    pairs = load_pairs(run, grid_vec.make(task).action_space)
    assert (pairs.actions != 0).any()
    done = run_example(
        tmp_path / "bc", "--bc-from", str(run), "--bc-epochs", "30", "--minutes", "0"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cloned = next(line for line in done.stdout.splitlines() if line.startswith("cloned "))
    assert cloned.startswith(f"cloned {len(pairs)} decisions of {run} ")
    acting = float(cloned.rsplit(", ", 1)[1].split("%")[0])
    assert acting > 50.0  # of the acting decisions (the untrained policy: 0%)
    assert (tmp_path / "bc" / "ppo.pt").is_file()
