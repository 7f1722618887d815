import subprocess
import sys

import pytest

from grid_vec import __version__
from grid_vec.cli import main
from grid_vec.runner import load_run


def test_version_flag_prints_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_console_script_runs_as_module():
    out = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "grid-vec" in out.stdout and "run" in out.stdout and "replay" in out.stdout


def test_run_records_episodes_and_replay_summarises_them(tmp_path, capsys):
    save = tmp_path / "run"
    args = ["run", "--episodes", "3", "--num-envs", "2", "--max-iter", "20", "--no-progress"]
    assert main([*args, "--save", str(save)]) == 0
    table = capsys.readouterr().out
    assert "mean" in table and "synthetic_" in table
    episodes = load_run(save)
    assert [e.result.episode for e in episodes] == [0, 1, 2]
    assert all(len(e) <= 20 for e in episodes)

    assert main(["replay", str(save), "--no-plot"]) == 0
    replayed = capsys.readouterr().out
    assert table.splitlines()[2] == replayed.splitlines()[2]  # first episode row

    # resuming a finished run plays nothing new and gives the same table
    assert main([*args, "--save", str(save), "--resume"]) == 0
    assert capsys.readouterr().out.splitlines()[:5] == table.splitlines()[:5]


@pytest.mark.parametrize("agent", ["random", "reconnect", "greedy"])
def test_run_each_baseline_agent(agent, capsys):
    argv = ["run", "--agent", agent, "--episodes", "2", "--max-iter", "5", "--no-save"]
    assert main([*argv, "--no-progress"]) == 0
    assert "mean" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--episodes", "0"], "--episodes: must be a positive integer"),
        (["run", "--seed", "-1"], "--seed: must be a non-negative integer"),
        (["run", "--agent", "clever"], "invalid choice: 'clever'"),
    ],
)
def test_run_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_resume_needs_save_and_replay_needs_a_run(tmp_path, capsys):
    assert main(["run", "--resume"]) == 2
    assert "--resume needs --save" in capsys.readouterr().err
    assert main(["replay", str(tmp_path)]) == 2
    assert "no recorded episode" in capsys.readouterr().err
