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
