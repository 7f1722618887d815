"""(observation, action) pairs of a recorded expert run, read back bounded and checked."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

import grid_vec
from grid_vec.runner import Runner
from grid_vec.runner.episode_data import EpisodeDataError
from grid_vec.runner.expert import ExpertAgent
from grid_vec.runner.imitation import load_pairs, unflatten_actions

COMBINED = "grid_vec/Case14Combined-v0"


class Logged:
    """A batched policy that plays the expert and keeps what it saw and played."""

    def __init__(self) -> None:
        self.expert = ExpertAgent(threshold=0.9)
        self.seen: list[np.ndarray] = []
        self.played: list[dict[str, np.ndarray]] = []

    def bind(self, env) -> None:
        self.expert.bind(env)

    def __call__(self, obs):
        actions = self.expert(obs)
        self.seen.append(np.array(obs[0]))
        self.played.append({key: np.array(value[0]) for key, value in actions.items()})
        return actions


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """An expert's run of 2 episodes on Case14Combined's training split, one sub-env (so
    every call of the policy is one decision of an episode), and what it played."""
    root = tmp_path_factory.mktemp("expert_run")
    vec = grid_vec.make_vec(
        COMBINED, 1, vectorization="batched", autoreset_mode=AutoresetMode.DISABLED
    )
    policy = Logged()
    with Runner(vec, policy, seed=3) as runner:
        results = runner.run(2, max_iter=400, path_save=root)
    vec.close()
    return root, policy, results, grid_vec.make(COMBINED).action_space


def test_the_recorded_pairs_read_back_equal_to_what_was_played(recorded):
    root, policy, results, space = recorded
    pairs = load_pairs(root, space)
    assert len(pairs) == sum(r.steps for r in results) == len(policy.seen)
    assert np.array_equal(pairs.observations, np.stack(policy.seen))
    assert np.array_equal(pairs.actions["topology"], [a["topology"] for a in policy.played])
    assert np.array_equal(pairs.actions["continuous"], [a["continuous"] for a in policy.played])
    assert pairs.actions["topology"].dtype == np.int64
    assert pairs.episodes.tolist() == [0] * results[0].steps + [1] * results[1].steps
    assert (pairs.actions["topology"] != 0).any()  # the expert acted


def test_pairs_are_refused_for_another_action_space_or_past_max_pairs(recorded):
    root, _, results, space = recorded
    with pytest.raises(EpisodeDataError, match="recorded with action space"):
        load_pairs(root, spaces.Discrete(31))
    with pytest.raises(EpisodeDataError, match="max_pairs"):
        load_pairs(root, space, max_pairs=results[0].steps)


def test_a_hostile_recorded_action_is_refused_naming_the_file(recorded, tmp_path):
    root, _, _, space = recorded
    episode = tmp_path / "episode_00000"
    episode.mkdir()
    meta = json.loads((root / "episode_00000" / "meta.json").read_text())
    (episode / "meta.json").write_text(json.dumps(meta))
    with np.load(root / "episode_00000" / "arrays.npz") as data:
        arrays = dict(data)
    arrays["actions"][0, 5] = 2.0  # the topology one-hot (after 5 redispatch columns) broken
    np.savez_compressed(episode / "arrays.npz", **arrays)
    assert zipfile.is_zipfile(episode / "arrays.npz")
    with pytest.raises(EpisodeDataError, match=r"arrays\.npz: recorded actions outside"):
        load_pairs(tmp_path, space)


def test_unflatten_checks_each_kind_of_space():
    discrete, box = spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert unflatten_actions(discrete, np.array([0, 2])).tolist() == [0, 2]
    for bad in (np.array([3]), np.array([0.5])):
        with pytest.raises(EpisodeDataError):
            unflatten_actions(discrete, bad)
    assert unflatten_actions(box, np.zeros((1, 2))).dtype == np.float32
    for bad in (np.array([[2.0, 0.0]]), np.array([[np.nan, 0.0]]), np.zeros((1, 3))):
        with pytest.raises(EpisodeDataError):
            unflatten_actions(box, bad)
    combined = spaces.Dict({"topology": discrete, "continuous": box})
    flat = np.array([[0.5, -0.5, 0.0, 1.0, 0.0]])
    read = unflatten_actions(combined, flat)
    assert read["topology"].tolist() == [1] and read["continuous"].tolist() == [[0.5, -0.5]]
    with pytest.raises(EpisodeDataError):
        unflatten_actions(combined, np.array([[0.5, -0.5, 0.0, 0.5, 0.5]]))
    with pytest.raises(TypeError):
        unflatten_actions(spaces.MultiBinary(2), np.zeros((1, 2)))


def test_a_run_without_episodes_gives_no_pairs(tmp_path):
    pairs = load_pairs(tmp_path, spaces.Discrete(3))
    assert len(pairs) == 0 and pairs.actions.shape == (0,)
