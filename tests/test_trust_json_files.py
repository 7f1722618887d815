"""Every JSON file grid_vec reads goes through one bounded parser (``_untrusted.parse_json``):
numbers beyond Python's int limit are one error naming the file, in each kind of file; the
values of action sets and difficulty files are checked against the task and split they
claim; a resumed run refuses an action set changed since it was recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid_vec._untrusted import JsonBounds, UntrustedFileError, parse_json, read_json
from grid_vec.cli import main
from grid_vec.env.curriculum import hard_training_scenarios
from grid_vec.env.tasks import read_action_set

TOPOLOGY = "grid_vec/Case14Topology-v0"  # 126 catalog actions; 960 training scenarios
HUGE = "9" * 5000  # over Python's 4300-digit int limit


def assert_one_line(err: str, *parts: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


@pytest.mark.parametrize("number", [HUGE, "-" + HUGE, HUGE + ".5", "1e999", "-1e999"])
def test_a_number_out_of_bounds_is_one_error_naming_the_file_and_line(tmp_path, number):
    path = tmp_path / "doc.json"
    path.write_text('{\n"a":\n' + number + "}")
    with pytest.raises(UntrustedFileError, match="out of bounds") as caught:
        read_json(path, 1 << 20, error=UntrustedFileError, what="document")
    assert str(caught.value).startswith(f"{path}: document line 3: number ")
    assert len(str(caught.value)) < 300


def test_the_bounds_keep_what_the_runner_writes():
    text = json.dumps({"seed": 2**128 - 1, "reward": float("nan"), "x": 1e308, "y": -3})
    value = parse_json(text, "here:", error=UntrustedFileError)
    assert value["seed"] == 2**128 - 1 and value["x"] == 1e308 and value["y"] == -3
    with pytest.raises(UntrustedFileError, match="out of bounds"):
        parse_json(
            "[1e16]", "here:", error=UntrustedFileError, bounds=JsonBounds(max_abs_number=1e15)
        )


def test_a_huge_number_in_a_recordings_meta_is_one_line_on_replay(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["run", "--env", "case14", "--episodes", "1", "--max-iter", "2", "--num-envs", "1"]
    assert main([*argv, "--save", str(run), "--no-progress"]) == 0
    meta = next(run.glob("*/meta.json"))
    meta.write_text(meta.read_text().replace('"env_seed": ', f'"env_seed": {HUGE}, "was": ', 1))
    capsys.readouterr()
    assert main(["replay", str(run)]) == 2
    assert_one_line(capsys.readouterr().err, str(meta), "out of bounds")


def test_a_huge_number_in_an_action_set_is_one_line_on_eval(tmp_path, capsys):
    path = tmp_path / "set.json"
    path.write_text(f'{{"task": "{TOPOLOGY}", "actions": [0, {HUGE}]}}')
    assert main(["eval", TOPOLOGY, "--action-set", str(path), "--scenarios", "1"]) == 2
    assert_one_line(capsys.readouterr().err, str(path), "out of bounds")


def test_a_huge_number_in_a_difficulty_file_names_it(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(f'[{{"agent": "do-nothing", "scenarios": [{HUGE}]}}]')
    with pytest.raises(UntrustedFileError, match="out of bounds") as caught:
        hard_training_scenarios(TOPOLOGY, 600, path)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([0, 126], "'actions'[1] = 126 is not a catalog index (the catalog has 126 actions)"),
        ([0, -3], "'actions'[1] = -3 is not a catalog index"),
        ([0, 5, 5], "'actions' lists 5 more than once"),
        ([5, 0], "'actions' must start with do-nothing (0)"),
        ([0, 1.0], "'actions' must be a non-empty list of catalog indices"),
        ([0, True], "'actions' must be a non-empty list of catalog indices"),
    ],
)
def test_an_action_set_out_of_the_catalog_is_refused_naming_the_file(
    tmp_path, capsys, actions, message
):
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"task": TOPOLOGY, "actions": actions}))
    assert main(["eval", TOPOLOGY, "--action-set", str(path), "--scenarios", "1"]) == 2
    assert_one_line(capsys.readouterr().err, f"grid-vec eval: {path}: {message}")


def test_the_shipped_action_sets_are_within_their_catalogs():
    import grid_vec
    from grid_vec.env.tasks import TASKS, action_set_path

    for task_id, task in TASKS.items():
        if task.reduced_actions and not task.dataset:
            n = len(grid_vec.make(task_id, action_subset=None).unwrapped.catalog)
            assert read_action_set(action_set_path(task_id), task_id, n)[0] == 0


def _difficulty(tmp_path: Path, ids: list[int]) -> Path:
    path = tmp_path / "rows.json"
    row = {"agent": "do-nothing", "task": TOPOLOGY, "split": "train", "scenarios": ids}
    row |= {"survival": [10] * len(ids), "terminated": [True] * len(ids)}
    path.write_text(json.dumps([row]))
    return path


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([0, -1], "'scenarios'[1] = -1 is not a scenario of"),
        ([0, 960], "'scenarios'[1] = 960 is not a scenario of"),
        ([3, 4, 3], "scenario 3 appears twice"),
    ],
)
def test_a_difficulty_file_with_ids_outside_the_split_is_refused_naming_it(tmp_path, ids, message):
    path = _difficulty(tmp_path, ids)
    with pytest.raises(UntrustedFileError) as caught:
        hard_training_scenarios(TOPOLOGY, 600, path)
    assert str(caught.value).startswith(f"{path}: row 0: ") and message in str(caught.value)
    # the split's size is the caller's when given
    path = _difficulty(tmp_path, [0, 5])
    with pytest.raises(UntrustedFileError, match="'scenarios'\\[1\\] = 5 is not a scenario"):
        hard_training_scenarios(TOPOLOGY, 600, path, n_train=5)
    assert hard_training_scenarios(TOPOLOGY, 600, path, n_train=6) == [0, 5]


def test_resume_refuses_an_action_set_changed_since_the_run_was_recorded(tmp_path, capsys):
    path, run = tmp_path / "set.json", tmp_path / "run"
    path.write_text(json.dumps({"task": TOPOLOGY, "actions": [0, 1, 2]}))
    argv = ["run", "--env", TOPOLOGY, "--action-set", str(path), "--episodes", "2"]
    argv += ["--max-iter", "2", "--num-envs", "1", "--save", str(run), "--no-progress"]
    assert main(argv) == 0
    recorded = json.loads(next(run.glob("*/meta.json")).read_text())
    assert recorded["env_kwargs"]["action_subset"] == [0, 1, 2]
    assert main([*argv, "--resume"]) == 0  # the same set: nothing to play again
    path.write_text(json.dumps({"task": TOPOLOGY, "actions": [0, 1, 3]}))
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    assert_one_line(
        capsys.readouterr().err,
        "grid-vec run: --resume: ",
        f"was recorded with another --action-set: the action set recorded is not the one "
        f"{path} holds",
    )
    without = [a for a in argv if a not in ("--action-set", str(path))]
    assert main([*without, "--resume"]) == 2
    assert_one_line(capsys.readouterr().err, "is not the task's own")
