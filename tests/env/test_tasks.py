"""Named tasks: disjoint splits, envs that play only their split's scenarios, the task's
settings (and the caller's overrides), through grid_vec and gymnasium alike."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import grid_vec
from grid_vec.chronics.subset import SubsetSource
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.env.embedded import embedded_model
from grid_vec.env.tasks import TASKS, task_split

TOPOLOGY = "grid_vec/Case14Topology-v0"


@pytest.mark.parametrize("task_id", list(TASKS))
def test_a_tasks_splits_never_overlap(task_id):
    splits = TASKS[task_id].splits
    seen: set[int] = set()
    for ids in splits.values():
        assert seen.isdisjoint(ids)
        seen |= set(ids)
    assert len(splits["test"]) == 32


def test_an_env_of_a_split_plays_only_that_splits_scenarios():
    allowed = {f"synthetic_{i:04d}" for i in task_split(TOPOLOGY, "test")[1]}
    env = grid_vec.make(TOPOLOGY, split="test", heuristics=None)
    played = set()
    for seed in range(40):
        _, info = env.reset(seed=seed)
        played.add(info["scenario_name"])
    assert played <= allowed and len(played) > 10
    assert set(env.unwrapped._handler.source.names) == allowed


def test_a_task_sets_its_settings_and_the_callers_keywords_win():
    env = gym.make(TOPOLOGY, split="validation")
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (env.action_space.n,)
    _, reward, _, _, info = env.step(0)
    assert info["skipped_steps"] > 0  # idle while max rho < 0.9
    # line_margin summed over the steps played: each in (0, 1), unlike flat's 1 per step
    assert 1.0 < reward < info["skipped_steps"] + 1
    plain = grid_vec.make(TOPOLOGY, split="validation", heuristics=None, action_mask=False)
    _, info = plain.reset(seed=0)
    assert "action_mask" not in info
    assert "skipped_steps" not in plain.step(0)[4]


def test_task_vector_envs_are_built_from_the_split():
    allowed = {f"synthetic_{i:04d}" for i in task_split(TOPOLOGY, "train")[1]}
    env = grid_vec.make_vec(TOPOLOGY, 3, vectorization="batched", split="train")
    _, info = env.reset(seed=0)
    assert set(info["scenario_name"]) <= allowed
    _, reward, *_ = env.step(np.zeros(3, dtype=np.int64))
    assert reward.shape == (3,)
    env.close()


def test_bad_splits_are_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        grid_vec.make(TOPOLOGY, split="holdout")
    with pytest.raises(ValueError, match="only applies to named tasks"):
        grid_vec.make("case14", split="test")


def test_a_subset_source_numbers_its_scenarios_and_refuses_bad_ids():
    source = SyntheticSource(embedded_model("case14"), seed=0, n_scenarios=8)
    subset = SubsetSource(source, [5, 2])
    assert len(subset) == 2 and subset.names == ["synthetic_0005", "synthetic_0002"]
    assert subset.info(0).id == 0 and subset.info(0).name == "synthetic_0005"
    np.testing.assert_array_equal(subset.read(1, 0, 3).load_p, source.read(2, 0, 3).load_p)
    for ids in ([], [1, 1], [8]):
        with pytest.raises(ValueError):
            SubsetSource(source, ids)
    with pytest.raises(ValueError):
        subset.info(2)


def test_the_topology_task_plays_its_stored_reduced_action_set():
    from grid_vec.env.tasks import load_action_set

    subset = load_action_set(TOPOLOGY)
    env = grid_vec.make(TOPOLOGY, split="test")
    assert subset[0] == 0 and env.action_space.n == len(subset) > 1
    assert grid_vec.make(TOPOLOGY, split="test", action_subset=None).action_space.n == 126


@pytest.mark.parametrize(
    "content", ["not json", '{"actions": []}', '{"actions": [0, "1"]}', "[0, 1]"]
)
def test_a_damaged_action_set_file_is_named_in_the_error(tmp_path, monkeypatch, content):
    import grid_vec.env.tasks as tasks

    monkeypatch.setattr(tasks, "ACTION_SET_DIR", tmp_path)
    (tmp_path / "case14topology.json").write_text(content)
    with pytest.raises(ValueError, match=r"case14topology\.json"):
        grid_vec.make(TOPOLOGY, split="test")
