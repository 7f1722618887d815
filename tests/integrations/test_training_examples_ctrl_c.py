"""Ctrl-C in a training example (a real subprocess, as a user stops it) loses nothing: it
saves the training so far as the end of training would, prints one line saying where and the
exact command that scores it, and exits 130 without a traceback; that command scores it."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TASK = "grid_vec/Case14Topology-v0"
# what the grid-vec console script runs (pyproject.toml's entry point)
GRID_VEC = [sys.executable, "-m", "grid_vec_launcher"]

# example -> (the extra its imports need, small settings, the files it saves, the command
# that scores them with {out} for its output folder)
CASES = {
    "ppo_task": (
        "torch",
        ["--num-envs", "8", "--pool", "4", "--num-steps", "8"],
        ["ppo.pt"],
        f"grid-vec eval {TASK} --agent {{out}}/ppo.pt --split validation",
    ),
    "sb3_task": (
        "stable_baselines3",
        ["--num-envs", "4"],
        ["model.zip", "vecnormalize.pkl"],
        f"grid-vec eval {TASK} --agent {{out}}/model.zip --trust-pickle --split validation",
    ),
    "mappo_task": (
        "torch",
        ["--num-envs", "4", "--num-steps", "8"],
        ["mappo.pt"],
        f"python {EXAMPLES}/mappo_task.py --score {{out}}/mappo.pt --eval-split validation",
    ),
}


def interrupted_after_a_rollout(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` until it prints its first line of training, then send it SIGINT."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # a line of the learning curve: a rollout was trained on
            if " decisions " in line or " timesteps " in line:
                break
        else:
            raise AssertionError(f"no training line: {proc.communicate()[1][-2000:]}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.parametrize(
    "example",
    [
        "ppo_task",
        "sb3_task",
        # scoring plays the whole validation split twice (MAPPO, do-nothing): ~30 s
        pytest.param("mappo_task", marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_saves_the_training_so_far_and_prints_the_command_that_scores_it(example, tmp_path):
    extra, settings, files, command = CASES[example]
    pytest.importorskip(extra, reason="needs the sb3 extra (torch, stable-baselines3)")
    out = tmp_path / "run"
    script = EXAMPLES / f"{example}.py"
    argv = [sys.executable, str(script), *settings, "--eval-split", "validation"]
    done = interrupted_after_a_rollout([*argv, "--out", str(out), "--minutes", "30"])

    assert done.returncode == 130, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert all((out / name).is_file() for name in files)
    command = command.format(out=out)
    *_, said = done.stderr.splitlines()
    assert said.startswith(f"{example}: interrupted after "), said
    assert f"s of training): saved {out / files[0]}" in said, said
    assert said.split("; score it with: ")[-1] == command, said

    # the command it printed scores what was saved (grid-vec eval on one scenario, for time)
    program, *args = shlex.split(command)
    if program == "grid-vec":
        run = [*GRID_VEC, *args, "--scenarios", "1", "--no-progress"]
        row = f"| {out / files[0]} | 1 |"  # the agent's row: one episode
    else:
        run = [sys.executable, *args]
        row = "| mappo |"
    scored = subprocess.run(run, capture_output=True, text=True, timeout=240)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert row in scored.stdout, scored.stdout
