"""Resuming a ``grid-vec run``: refused with other settings (one line naming the option),
damaged episodes played again, and a Ctrl-C'd run (a real subprocess) resumed to the results
of an uninterrupted run."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from process_checks import alive

from grid_vec.cli import main
from grid_vec.runner import load_run

RUN = ["run", "--num-envs", "1", "--no-progress"]
SETTINGS = ["--episodes", "3", "--max-iter", "8", "--seed", "1"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A run of 3 episodes (case14, do-nothing, lightsim2grid, max_iter 8, seed 1)."""
    save = tmp_path_factory.mktemp("recorded") / "run"
    assert main([*RUN, *SETTINGS, "--save", str(save)]) == 0
    return save


def snapshot(run: Path) -> dict[str, int]:
    return {str(p.relative_to(run)): p.stat().st_mtime_ns for p in run.rglob("*")}


def assert_same_run(run: Path, reference: Path) -> None:
    episodes, expected = load_run(run), load_run(reference)
    assert [e.result for e in episodes] == [e.result for e in expected]
    for episode, other in zip(episodes, expected, strict=True):
        np.testing.assert_array_equal(episode.observations, other.observations)
        np.testing.assert_array_equal(episode.actions, other.actions)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--env", "case118"], "another --env: recorded 'grid_vec/Case14-v0', this run asks "),
        (["--agent", "random"], "another --agent: recorded 'do-nothing', this run asks 'random'"),
        (["--backend", "pandapower"], "another --backend: recorded 'lightsim2grid', this run"),
        (["--max-iter", "9"], "another --max-iter: recorded 8, this run asks 9"),
        (["--seed", "2"], "another --seed (its episode seeds are not those of --seed 2)"),
    ],
    ids=["env", "agent", "backend", "max-iter", "seed"],
)
def test_resume_with_another_setting_is_one_line_naming_it(recorded, change, message, capsys):
    before = snapshot(recorded)
    assert main([*RUN, *SETTINGS, *change, "--save", str(recorded), "--resume"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"grid-vec run: --resume: {recorded}/episode_00000 was recorded with ")
    assert message in err
    assert snapshot(recorded) == before


def test_saving_over_a_recorded_run_needs_resume(recorded, capsys):
    assert main([*RUN, *SETTINGS, "--save", str(recorded)]) == 2
    assert capsys.readouterr().err == (
        f"grid-vec run: --save {recorded} already holds a recorded run (3 episodes): add "
        f"--resume to continue it, or choose another --save\n"
    )


def test_resume_plays_a_truncated_episode_again(recorded, tmp_path, caplog):
    run = tmp_path / "run"
    shutil.copytree(recorded, run)
    arrays = run / "episode_00001" / "arrays.npz"
    arrays.write_bytes(arrays.read_bytes()[:-100])
    assert main([*RUN, *SETTINGS, "--save", str(run), "--resume"]) == 0
    assert "episode 1 is damaged, playing it again" in caplog.text
    assert_same_run(run, recorded)


def _children(pid: int) -> list[int]:
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="lists children with /proc")
def test_ctrl_c_exits_130_with_the_resume_command_and_resuming_completes_the_run(tmp_path):
    run = tmp_path / "run"
    argv = [*RUN, "--episodes", "24", "--max-iter", "288", "--save", str(run)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "grid_vec.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 120
        while not list(run.glob("episode_*")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no episode recorded within 120 s"
            time.sleep(0.01)
        workers = _children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    saved = len(list(run.glob("episode_*")))
    assert 1 <= saved < 24
    command = f"grid-vec {shlex.join([*argv, '--resume'])}"
    assert err == (
        f"grid-vec run: interrupted, {saved} of 24 episodes saved under {run}; "
        f"resume with: {command}\n"
    )
    assert "episode" not in out  # no results table
    assert workers  # the GridVecEnv workers (and multiprocessing's resource tracker)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "worker processes outlived the interrupted run"
        time.sleep(0.05)

    assert main(shlex.split(command)[1:]) == 0
    reference = tmp_path / "reference"
    assert main([*RUN, "--episodes", "24", "--max-iter", "288", "--save", str(reference)]) == 0
    assert_same_run(run, reference)
