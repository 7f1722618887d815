"""Tasks over grid2op datasets: found where grid2op keeps them, split by chronics without
overlap, played with the folder's own rules, maintenance and opponent.

The datasets themselves are downloads (grid2op ships a sample of each, a few chronics): the
tests build a full-size stand-in from the sample, its grid and rules files as they are and
its chronics copied under new names until there are enough for every split. They need the
grid2op extra (for its samples) and skip without it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from env_helpers import grid2op_sample

import grid_vec
from grid_vec.cli import main
from grid_vec.env.tasks import TASKS, dataset_folder

SANDBOX_TOPOLOGY = "grid_vec/Sandbox14Topology-v0"
N_CHRONICS = 66  # test 32, validation 32, train 2


def _stand_in(sample: Path, root: Path, n_chronics: int = N_CHRONICS) -> Path:
    """``sample``'s files, and its chronics copied round-robin as ``n_chronics`` chronics."""
    root.mkdir(parents=True)
    for item in sample.iterdir():
        if item.is_file():
            shutil.copy(item, root / item.name)
    chronics = sorted(p for p in (sample / "chronics").iterdir() if p.is_dir())
    for k in range(n_chronics):
        shutil.copytree(chronics[k % len(chronics)], root / "chronics" / f"{k:04d}")
    return root


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    sample = grid2op_sample("l2rpn_case14_sandbox")
    return _stand_in(sample, tmp_path_factory.mktemp("data") / "l2rpn_case14_sandbox")


def _names(task_id: str, split: str, data_dir: Path) -> list[str]:
    env = grid_vec.make(task_id, split=split, data_dir=data_dir)
    return list(env.unwrapped._source.names)


def test_dataset_splits_are_disjoint_chronics_and_train_takes_the_rest(sandbox):
    splits = {s: _names(SANDBOX_TOPOLOGY, s, sandbox) for s in ("test", "validation", "train")}
    assert splits["test"] == [f"{k:04d}" for k in range(32)]
    assert splits["validation"] == [f"{k:04d}" for k in range(32, 64)]
    assert splits["train"] == [f"{k:04d}" for k in range(64, N_CHRONICS)]
    everything = [n for names in splits.values() for n in names]
    assert len(set(everything)) == len(everything) == N_CHRONICS


def test_a_dataset_task_plays_the_folders_rules_with_the_tasks_settings(sandbox):
    env = grid_vec.make(SANDBOX_TOPOLOGY, split="test", data_dir=sandbox)
    folder_env = grid_vec.make(sandbox)
    assert env.parameters == folder_env.parameters  # difficulty_levels.json's competition
    np.testing.assert_array_equal(env.model.thermal_limit_a, folder_env.model.thermal_limit_a)
    assert env.action_type == "discrete"
    _, info = env.reset(seed=0)
    assert info["scenario_name"] in {f"{k:04d}" for k in range(32)}
    assert info["action_mask"].dtype == bool and info["action_mask"][0]
    assert env.step(0)[-1]["action_mask"].shape == (env.action_space.n,)


def test_the_continuous_dataset_task_steps_a_box_action(sandbox):
    env = grid_vec.make("grid_vec/Sandbox14Redispatch-v0", split="validation", data_dir=sandbox)
    env.reset(seed=1)
    _, reward, *_ = env.step(np.zeros(env.action_space.shape, np.float32))
    assert np.isfinite(reward)


def test_the_36_bus_task_keeps_the_datasets_maintenance_and_opponent(tmp_path):
    sample = grid2op_sample("l2rpn_neurips_2020_track1")
    data = _stand_in(sample, tmp_path / "l2rpn_neurips_2020_track1_small")
    env = grid_vec.make("grid_vec/Neurips36Topology-v0", split="test", data_dir=data)
    folder_env = grid_vec.make(data)
    assert env.opponent is not None and type(env.opponent) is type(folder_env.opponent)
    assert env.model.n_sub == 36
    scenario = env.unwrapped._source.read(0, 0, 100)
    assert (scenario.maintenance_time >= 0).any()  # the chronics' maintenance.csv
    env.reset(seed=0, options={"scenario_id": 0})
    assert np.isfinite(env.step(0)[1])


def test_a_missing_dataset_names_where_it_was_looked_for_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GRID_VEC_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(ValueError, match=r"grid2op\.make\('l2rpn_case14_sandbox'\)") as info:
        grid_vec.make(SANDBOX_TOPOLOGY)
    assert str(tmp_path / "l2rpn_case14_sandbox") in str(info.value)


def test_the_dataset_is_found_under_the_data_dir_variable(sandbox, monkeypatch):
    monkeypatch.setenv("GRID_VEC_DATA_DIR", str(sandbox.parent))
    assert dataset_folder("l2rpn_case14_sandbox") == sandbox


def test_grid2ops_sample_is_too_small_and_says_so():
    sample = grid2op_sample("l2rpn_case14_sandbox")
    with pytest.raises(ValueError, match="has 3 scenarios; its tasks need at least 65"):
        grid_vec.make(SANDBOX_TOPOLOGY, split="test", data_dir=sample)


def test_data_dir_is_refused_outside_dataset_tasks(sandbox):
    with pytest.raises(ValueError, match="only applies to grid2op datasets"):
        grid_vec.make("grid_vec/Case14Topology-v0", data_dir=sandbox)
    with pytest.raises(ValueError, match="only applies to the dataset tasks"):
        grid_vec.make("case14", data_dir=sandbox)


def test_grid_vec_eval_scores_a_dataset_task_and_answers_a_missing_one_in_one_line(
    sandbox, tmp_path, capsys
):
    code = main(
        ["eval", SANDBOX_TOPOLOGY, "--data-dir", str(sandbox), "--agent", "do_nothing",
         "--scenarios", "2", "--num-envs", "2"]
    )  # fmt: skip
    assert code == 0
    assert "| do-nothing |" in capsys.readouterr().out
    assert main(["eval", SANDBOX_TOPOLOGY, "--data-dir", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "grid2op.make" in err


def test_every_dataset_task_names_a_dataset_and_reduced_sets_stay_embedded():
    datasets = {t.grid for t in TASKS.values() if t.dataset}
    assert datasets == {
        "l2rpn_case14_sandbox",
        "l2rpn_neurips_2020_track1_small",
        "l2rpn_wcci_2022",
    }
    assert not any(t.reduced_actions for t in TASKS.values() if t.dataset)
