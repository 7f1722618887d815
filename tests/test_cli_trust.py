"""The ``grid-vec`` console script (real subprocesses): every ordinary mistake is one line on
stderr and exit status 2, found before the work where it can be; Ctrl-C at any moment exits
130 without a traceback; a quick trial writes nothing into the package or the tracked
benchmark results; one spelling of agent names, the other accepted."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grid_vec
from grid_vec.cli import MAX_EPISODES, main
from grid_vec.runner import load_run

REPO = Path(__file__).resolve().parents[1]
TOPOLOGY = "grid_vec/Case14Topology-v0"
SANDBOX_TOPOLOGY = "grid_vec/Sandbox14Topology-v0"
RUN = ["run", "--num-envs", "1", "--no-progress"]


# what the grid-vec console script runs (pyproject.toml's entry point)
COMMAND = [sys.executable, "-m", "grid_vec_launcher"]


def grid_vec_cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COMMAND, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def assert_one_line_exit_2(proc: subprocess.CompletedProcess, start: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(start), proc.stderr


def test_eval_refuses_a_negative_seed_in_one_line():
    proc = grid_vec_cli("eval", TOPOLOGY, "--seed", "-1")
    assert_one_line_exit_2(proc, "grid-vec eval: argument --seed: must be a non-negative")


def test_eval_json_to_an_unwritable_place_is_refused_before_any_episode(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    started = time.monotonic()
    proc = grid_vec_cli("eval", TOPOLOGY, "--json", str(a_file / "rows.json"))
    assert_one_line_exit_2(proc, f"grid-vec eval: argument --json: {a_file} is not a directory")
    assert time.monotonic() - started < 30  # nothing played (a full eval takes minutes)


def test_actions_out_to_an_unwritable_place_is_refused_before_any_pick(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    proc = grid_vec_cli("actions", TOPOLOGY, "--out", str(a_file / "sets"))
    assert_one_line_exit_2(proc, f"grid-vec actions: argument --out: {a_file} is not a directory")


def test_actions_with_more_scenarios_than_the_train_split_is_one_line():
    proc = grid_vec_cli("actions", TOPOLOGY, "--scenarios", "100000")
    assert_one_line_exit_2(proc, "grid-vec actions: --scenarios: the train split has 960 ")


def test_run_with_an_absurd_number_of_episodes_is_refused_at_once():
    started = time.monotonic()
    proc = grid_vec_cli("run", "--episodes", str(10**21), "--no-save")
    assert_one_line_exit_2(
        proc, f"grid-vec run: argument --episodes: must be at most {MAX_EPISODES}"
    )
    assert time.monotonic() - started < 30


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    save = tmp_path_factory.mktemp("recorded") / "run"
    assert main([*RUN, "--episodes", "2", "--max-iter", "3", "--save", str(save)]) == 0
    return save


@pytest.mark.parametrize("entry", ["dangling symlink", "regular file"])
def test_resume_over_an_episode_entry_no_episode_can_replace_is_one_line_naming_it(
    recorded, tmp_path, entry
):
    run = tmp_path / "run"
    shutil.copytree(recorded, run)
    blocker = run / "episode_00002"
    if entry == "regular file":
        blocker.write_text("mine")
    else:
        blocker.symlink_to(tmp_path / "nowhere")
    argv = [*RUN, "--episodes", "3", "--max-iter", "3", "--save", str(run), "--resume"]
    proc = grid_vec_cli(*argv)
    assert_one_line_exit_2(proc, f"grid-vec run: --resume: {blocker}: ")
    assert [e.result.episode for e in load_run(run)] == [0, 1]  # nothing played or removed


def _grid2op_sample(name: str) -> Path:
    spec = importlib.util.find_spec("grid2op")
    if spec is None:
        pytest.skip("needs the grid2op extra (its dataset samples)")
    return Path(spec.origin).parent / "data" / name


def test_eval_meeting_a_damaged_scenario_mid_run_is_one_line_naming_the_file(tmp_path):
    sample = _grid2op_sample("l2rpn_case14_sandbox")
    root = tmp_path / "l2rpn_case14_sandbox"
    root.mkdir()
    for item in sample.iterdir():
        if item.is_file():
            shutil.copy(item, root / item.name)
    chronics = sorted(p for p in (sample / "chronics").iterdir() if p.is_dir())
    for k in range(66):  # enough chronics for every split of the task
        shutil.copytree(chronics[k % len(chronics)], root / "chronics" / f"{k:04d}")
    damaged = root / "chronics" / "0001" / "load_p.csv.bz2"
    damaged.write_bytes(b"not bz2 at all")
    argv = [
        "eval",
        SANDBOX_TOPOLOGY,
        "--data-dir",
        str(root),
        "--agent",
        "do-nothing",
        "--no-progress",
    ]
    proc = grid_vec_cli(*argv, "--scenarios", "2", "--num-envs", "1")
    assert_one_line_exit_2(proc, "grid-vec eval: ")
    assert "0001" in proc.stderr and "load_p" in proc.stderr


def test_the_missing_dataset_error_names_the_cli_option(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_VEC_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    proc = grid_vec_cli("eval", "grid_vec/Neurips36Topology-v0")
    assert_one_line_exit_2(proc, "grid-vec eval: the grid2op dataset ")
    assert "--data-dir FOLDER" in proc.stderr and "data_dir=" not in proc.stderr


# 0.2 and 0.4 s land while the grid_vec package imports (gymnasium, numpy: 0.1-0.5 s), before
# cli.main runs: the launcher's guard catches them. (A Ctrl-C before the interpreter runs any
# code of ours, within its own start-up, is Python's to report.)
@pytest.mark.parametrize("delay", [0.2, 0.4, 1.0, 2.5])
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(delay):
    # eval plays in this one process (no worker is forked): the moment is the CLI's alone.
    argv = [
        "eval",
        TOPOLOGY,
        "--agent",
        "greedy",
        "--scenarios",
        "8",
        "--num-envs",
        "1",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        [*COMMAND, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err == "grid-vec: interrupted\n"


def _hashes(*roots: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _tracked_changes() -> str:
    proc = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", "grid_vec", "benchmarks"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return proc.stdout if proc.returncode == 0 else ""


def test_a_quick_trial_writes_nothing_into_the_package_or_the_tracked_results(tmp_path):
    package, results = Path(grid_vec.__file__).parent, REPO / "benchmarks" / "results"
    before, tracked = _hashes(package, results), _tracked_changes()
    out = tmp_path / "sets"
    argv = ["actions", TOPOLOGY, "--max-steps", "3", "--scenarios", "2", "--out", str(out)]
    proc = grid_vec_cli(*argv, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    written = out / "case14topology.json"
    assert f"wrote {written}" in proc.stdout
    proc = grid_vec_cli("bench", "--quick", "--budget", "5", "--no-plot", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "not written" in proc.stdout
    assert _hashes(package, results) == before
    assert _tracked_changes() == tracked

    # the written set is played on request, the shipped one otherwise
    actions = json.loads(written.read_text())["actions"]
    env = grid_vec.make(TOPOLOGY, split="test", action_set=written)
    assert env.action_space.n == len(actions)
    assert grid_vec.make(TOPOLOGY, split="test").action_space.n == 31


def test_an_action_set_written_for_another_task_is_refused_naming_the_file(tmp_path):
    other = tmp_path / "set.json"
    other.write_text(json.dumps({"task": "grid_vec/Case118Topology-v0", "actions": [0, 1]}))
    proc = grid_vec_cli("eval", TOPOLOGY, "--action-set", str(other), "--scenarios", "1")
    assert_one_line_exit_2(proc, f"grid-vec eval: {other}: written for ")


@pytest.mark.parametrize("spelling", ["do-nothing", "do_nothing"])
def test_both_agent_spellings_on_run_and_eval(spelling, tmp_path, capsys):
    save = tmp_path / "run"
    argv = [*RUN, "--agent", spelling, "--episodes", "1", "--max-iter", "2", "--save", str(save)]
    assert main(argv) == 0
    assert load_run(save)[0].meta["agent"] == "DoNothingAgent"
    rows = tmp_path / "rows.json"
    argv = ["eval", TOPOLOGY, "--agent", spelling, "--scenarios", "1", "--num-envs", "1"]
    assert main([*argv, "--json", str(rows)]) == 0
    assert [r["agent"] for r in json.loads(rows.read_text())] == ["do-nothing"]
    assert "| do-nothing |" in capsys.readouterr().out


def test_a_ctrl_c_swallowed_in_a_finalizer_is_raised_again_at_once():
    from grid_vec.cli import _noting_interrupts

    class Finalised:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # the handler runs here, inside __del__: swallowed
                pass

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt), _noting_interrupts():
        Finalised()
        time.sleep(10)  # the interrupt is raised again during this sleep
    assert time.monotonic() - start < 1.0  # reported swallowed, not the 2 s repeat
