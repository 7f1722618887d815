"""The do-nothing agent plays the action that changes nothing on every action space of a grid
env: not zeros clipped to a continuous box (which curtailed every renewable generator to
nothing) nor a sample of a ``Dict`` space (a general topology action drawn at random), but
the env's own ``do_nothing_action``; envs that declare none keep ``default_action``."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from runner_toy_envs import ToyEnv

import grid_vec
from grid_vec.core.records import CURTAILMENT
from grid_vec.runner import Runner, load_run
from grid_vec.runner.agents import DoNothingAgent, default_action, do_nothing_of
from grid_vec.vector.batched import BatchedGridVecEnv
from grid_vec.vector.vec_env import GridVecEnv

STEPS = 8


def _trajectory(env, action) -> list[np.ndarray]:
    return _trajectory_of(env, action, seed=3, steps=STEPS, options={"scenario_id": 0})


def _trajectory_of(env, action, *, seed: int, steps: int, options=None) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed, options=options)
    seen = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(action)
        seen.append(obs)
        assert not (terminated or truncated)
    return seen


@pytest.mark.parametrize(
    "action_type", ["redispatch", "continuous", "combined", "set_bus", "set_bus_continuous"]
)
def test_the_do_nothing_action_of_every_space_plays_as_catalog_action_0(action_type):
    env = grid_vec.make("case14", action_type=action_type)
    action = env.unwrapped.do_nothing_action
    assert env.action_space.contains(action)
    reference = _trajectory(grid_vec.make("case14"), 0)
    for ours, theirs in zip(_trajectory(env, action), reference, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("vectorization", ["batched", "multiprocess"])
def test_the_do_nothing_agent_plays_the_envs_own_do_nothing_action(vectorization, tmp_path):
    vec = grid_vec.make_vec("case14", 2, action_type="set_bus", vectorization=vectorization)
    try:
        declared = vec.get_attr("do_nothing_action")[0]
        assert {k: v.tolist() for k, v in do_nothing_of(vec).items()} == {
            k: v.tolist() for k, v in declared.items()
        }
        # the sample default_action draws from a Dict space changes the topology
        sampled = default_action(vec.single_action_space)
        assert np.any(sampled["set_bus"] != 0) or np.any(sampled["set_line_status"] != 0)
        runner = Runner(vec, DoNothingAgent())
        runner.run(2, max_iter=STEPS, path_save=tmp_path / "run")
    finally:
        vec.close()
    for episode in load_run(tmp_path / "run"):
        assert len(episode) == STEPS and not episode.result.terminated
        for row in episode.actions:  # recorded flattened: one-hot per element
            played = gym.spaces.unflatten(vec.single_action_space, row)
            assert not any(np.any(part) for part in played.values()), played


def test_an_env_declaring_no_do_nothing_action_keeps_default_action(tmp_path):
    vec = GridVecEnv([ToyEnv, ToyEnv])
    try:
        assert do_nothing_of(vec) == default_action(vec.single_action_space) == 0
    finally:
        vec.close()
    sync = gym.vector.SyncVectorEnv([ToyEnv])
    assert do_nothing_of(sync) == 0
    sync.close()


def test_on_the_sandbox_the_do_nothing_agent_curtails_nothing():
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    sandbox = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
    envs = grid_vec.make(str(sandbox), action_type="continuous").sharing_one_batch(1)
    vec = BatchedGridVecEnv(envs)
    try:
        space = vec.single_action_space
        curtail = next(p for p in envs[0].continuous.parts if p.control is CURTAILMENT)
        assert curtail.stop > curtail.start, "the sandbox has renewable generators"
        zeros = default_action(space)
        assert np.all(zeros[curtail.start : curtail.stop] == 0)  # would curtail them to 0
        action = do_nothing_of(vec)
        assert np.all(action[curtail.start : curtail.stop] == -1)
        obs, _ = vec.reset(seed=0)
        played = [obs[0]]
        for _ in range(5):
            obs, *_ = vec.step(action[None])
            played.append(obs[0])
        # as catalog action 0 plays: no renewable generator curtailed
        reference = _trajectory_of(grid_vec.make(str(sandbox)), 0, seed=0, steps=5)
        for ours, theirs in zip(played, reference, strict=True):
            np.testing.assert_array_equal(ours, theirs)
    finally:
        vec.close()
