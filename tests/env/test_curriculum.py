"""grid_vec.env.curriculum: the training scenarios do-nothing loses early, read from
grid-vec eval's per-scenario JSON (the shipped file's claims checked against the env)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec._untrusted import UntrustedFileError
from grid_vec.cli import main
from grid_vec.env.curriculum import DIFFICULTY_DIR, difficulty_path, hard_training_scenarios
from grid_vec.env.tasks import TASKS, task_split

TASK = "grid_vec/Case14Topology-v0"
ROOT = Path(__file__).resolve().parents[2]


def do_nothing_survival(env, scenario: int) -> tuple[int, bool]:
    """Time steps do-nothing plays on ``scenario`` and whether a game over ended them."""
    env.set_scenario_id(scenario)
    env.reset(seed=0)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(0)
        steps += 1 + int(info["skipped_steps"])
        if terminated or truncated:
            return steps, bool(terminated)


@pytest.mark.parametrize("task_id", [TASK, "grid_vec/Case118Topology-v0"])
def test_shipped_file_names_the_scenarios_do_nothing_loses_before_600_steps(task_id):
    assert difficulty_path(task_id).is_file()
    hard = hard_training_scenarios(task_id, 600)
    assert 0 < len(hard) < 960 and hard == sorted(hard)
    env = grid_vec.make(task_id, split="train").unwrapped
    kept = set(hard)
    left_out = [i for i in range(40) if i not in kept][:3]
    for scenario in hard[:3]:
        steps, over = do_nothing_survival(env, scenario)
        assert over and steps < 600, scenario
    for scenario in left_out:
        steps, over = do_nothing_survival(env, scenario)
        assert not over or steps >= 600, scenario


@pytest.mark.parametrize("path", sorted(DIFFICULTY_DIR.glob("*.json")), ids=lambda p: p.name)
def test_each_shipped_difficulty_file_is_a_tasks_and_covers_its_training_split(path):
    task_id = next(t for t in TASKS if difficulty_path(t) == path)
    row = json.loads(path.read_text())[0]
    assert row["scenarios"] == list(range(len(task_split(task_id, "train")[1])))
    assert hard_training_scenarios(task_id, 600) == hard_training_scenarios(task_id, 600, path)


def test_a_file_written_by_grid_vec_eval_reads_back_as_its_hard_scenarios(tmp_path, capsys):
    out = tmp_path / "train.json"
    args = ["eval", TASK, "--split", "train", "--scenarios", "6", "--agent", "do-nothing"]
    assert main([*args, "--by-scenario", "--json", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    row = json.loads(out.read_text())[0]
    survival, ended = np.array(row["survival"]), np.array(row["terminated"])
    for below in (300, 2016):
        expected = [i for i in range(6) if ended[i] and survival[i] < below]
        assert hard_training_scenarios(TASK, below, out) == expected
    assert hard_training_scenarios(TASK, 1, out) == []


def rows_file(tmp_path: Path, rows) -> Path:
    path = tmp_path / "rows.json"
    path.write_text(rows if isinstance(rows, str) else json.dumps(rows))
    return path


def good_row(**changes):
    row = {"task": TASK, "split": "train", "agent": "do-nothing", "scenarios": [0, 1, 2],
           "survival": [100, 2015, 500], "terminated": [True, False, True]}  # fmt: skip
    return {**row, **changes}


def test_a_row_is_read_for_its_task_split_and_do_nothing_only(tmp_path):
    rows = [good_row(agent="greedy", survival=[1, 1, 1]), good_row(split="test"), good_row()]
    assert hard_training_scenarios(TASK, 600, rows_file(tmp_path, rows)) == [0, 2]
    assert hard_training_scenarios(TASK, 200, rows_file(tmp_path, rows)) == [0]


@pytest.mark.parametrize(
    "content, says",
    [
        ("not json", "difficulty file is not JSON"),
        ({"rows": []}, "list of rows"),
        ([good_row(task="grid_vec/Case118Topology-v0")], "no do-nothing row"),
        ([good_row(survival=None)], "'survival' must be a list of ints"),
        ([good_row(terminated=[1, 0, 1])], "'terminated' must be a list of bools"),
        ([good_row(survival=[1, 2])], "3 scenarios, 2 survivals"),
        ("[" * 10 + "]" * 10, "nests 10 levels deep"),
    ],
)
def test_a_bad_difficulty_file_is_one_error_naming_the_file(tmp_path, content, says):
    path = rows_file(tmp_path, content)
    with pytest.raises(UntrustedFileError, match=says) as caught:
        hard_training_scenarios(TASK, 600, path)
    assert str(path) in str(caught.value)


def test_a_missing_file_and_a_bad_threshold_are_refused(tmp_path):
    with pytest.raises(UntrustedFileError, match=r"missing\.json"):
        hard_training_scenarios(TASK, 600, tmp_path / "missing.json")
    for below in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="below must be a positive int"):
            hard_training_scenarios(TASK, below)


def test_ppo_example_answers_a_bad_difficulty_file_in_one_line(tmp_path):
    pytest.importorskip("torch", reason="needs the sb3 extra (torch)")
    bad = rows_file(tmp_path, "not json")
    example = [sys.executable, str(ROOT / "examples" / "ppo_task.py")]
    done = subprocess.run(
        [*example, "--difficulty", str(bad), "--minutes", "0", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"--hard-below: {bad}: difficulty file is not JSON: Expecting value at line 1 column 1"
    )
    assert "Traceback" not in done.stderr
