"""SB3 VecEnv expectations on the adapter: API, per-env access, wrappers, training."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import sb3_envs
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv

# before anything that needs stable-baselines3, grid_vec.integrations.sb3 included
pytest.importorskip("stable_baselines3", reason="needs the sb3 extra")

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from grid_vec.integrations.sb3 import (
    SB3VecEnv,
    make_sb3_vec_env,
    unbatch_infos,
    with_wrapper_check,
)

pytestmark = pytest.mark.sb3

SAME = AutoresetMode.SAME_STEP


def monitored_drift() -> gym.Env:
    return Monitor(sb3_envs.drift_env())


@pytest.fixture(params=["grid", "sync"])
def venv(request, no_leftovers):
    fns = [with_wrapper_check(f) for f in (sb3_envs.drift_env, monitored_drift, sb3_envs.drift_env)]
    vec = GridVecEnv(fns, autoreset_mode=SAME) if request.param == "grid" else None
    vec = vec or SyncVectorEnv(fns, autoreset_mode=SAME)
    adapter = SB3VecEnv(vec)
    yield adapter
    adapter.close()


def test_shapes_and_types(venv):
    assert venv.num_envs == 3
    assert venv.observation_space == gym.spaces.Box(-5.0, 5.0, (3,), np.float32)
    obs = venv.reset()
    assert obs.shape == (3, 3) and obs.dtype == np.float32
    assert [info["seed"] for info in venv.reset_infos] == [-1, -1, -1]
    venv.step_async(np.array([0, 1, 1]))
    obs, rewards, dones, infos = venv.step_wait()
    assert obs.shape == (3, 3) and rewards.shape == (3,) and dones.dtype == np.bool_
    assert isinstance(infos, list) and len(infos) == 3
    assert all(info["TimeLimit.truncated"] is False for info in infos)


def test_returned_observations_are_not_overwritten(venv):
    first = venv.reset()
    kept = first.copy()
    for _ in range(3):
        venv.step(np.zeros(3, dtype=np.int64))
    np.testing.assert_array_equal(first, kept)


def test_seed_and_options_apply_once(venv):
    assert venv.seed(7) == [7, 8, 9]
    venv.set_options({"start": 0.25})
    obs = venv.reset()
    assert [info["seed"] for info in venv.reset_infos] == [7, 8, 9]
    np.testing.assert_allclose(obs[:, 0], 0.25)
    obs = venv.reset()
    assert [info["seed"] for info in venv.reset_infos] == [-1, -1, -1]
    assert not np.allclose(obs[:, 0], 0.25)


def test_attributes_methods_and_indices(venv):
    venv.reset()
    assert venv.get_attr("label") == ["drift"] * 3
    venv.set_attr("label", "moved", indices=[0, 2])
    assert venv.get_attr("label") == ["moved", "drift", "moved"]
    venv.set_attr("label", ("a", "tuple"))  # one value for all, never split per env
    assert venv.get_attr("label", indices=1) == [("a", "tuple")]
    venv.set_options([{"start": 1.0}, {"start": -1.0}, {}])
    venv.reset()
    assert venv.env_method("scaled", 2.0, indices=[1, 0]) == [-2.0, 2.0]
    assert venv.env_method("scaled", factor=0.5)[:2] == [0.5, -0.5]
    assert venv.has_attr("label") and not venv.has_attr("no_such_attribute")
    with pytest.raises(ValueError, match="out of range"):
        venv.get_attr("label", indices=[3])


def test_env_is_wrapped(venv):
    assert venv.env_is_wrapped(Monitor) == [False, True, False]
    assert venv.env_is_wrapped(TimeLimit, indices=[0]) == [True]
    assert venv.env_is_wrapped(gym.wrappers.RecordEpisodeStatistics) == [False] * 3
    with pytest.raises(TypeError, match="wrapper_class"):
        venv.env_is_wrapped(int)


@pytest.mark.parametrize("kind", ["grid", "sync", "async"])
def test_env_is_wrapped_checks_classes_not_names(kind, no_leftovers):
    """A wrapper named like SB3's Monitor is not one; a subclass of a wrapper counts."""
    fns = [sb3_envs.namesake_monitored_drift, monitored_drift]
    vector = {"grid": GridVecEnv, "sync": SyncVectorEnv, "async": AsyncVectorEnv}[kind]
    adapter = SB3VecEnv(vector([with_wrapper_check(f) for f in fns], autoreset_mode=SAME))
    try:
        assert adapter.env_is_wrapped(Monitor) == [False, True]
        assert adapter.env_is_wrapped(sb3_envs.Monitor) == [True, False]
        assert adapter.env_is_wrapped(gym.Wrapper, indices=[1, 0]) == [True, True]
        assert adapter.env_is_wrapped(gym.ObservationWrapper) == [False, False]
    finally:
        adapter.close()


def test_env_is_wrapped_on_uninspectable_workers_warns_and_answers_false(no_leftovers):
    adapter = SB3VecEnv(GridVecEnv([monitored_drift], autoreset_mode=SAME))
    try:
        with pytest.warns(UserWarning, match="with_wrapper_check"):
            assert adapter.env_is_wrapped(Monitor) == [False]
    finally:
        adapter.close()


def test_make_sb3_vec_env_sub_envs_answer_env_is_wrapped(no_leftovers):
    adapter = make_sb3_vec_env([monitored_drift, sb3_envs.drift_env])
    try:
        assert adapter.env_is_wrapped(Monitor) == [True, False]
        adapter.reset()
        assert adapter.env_method("scaled", 0.0) == [0.0, 0.0]  # the envs are unchanged
    finally:
        adapter.close()


def test_render_tiles_rgb_frames(venv):
    venv.reset()
    assert venv.render_mode == "rgb_array"
    for i in range(3):  # a DriftEnv frame is filled with its step count
        venv.set_attr("t", i + 1, indices=[i])
    frames = venv.get_images()
    assert [im.shape for im in frames] == [(4, 6, 3)] * 3
    assert [int(im[0, 0, 0]) for im in frames] == [1, 2, 3]
    tiled = venv.render()  # 2 x 2 tiles of 4 x 6 pixels, the last one blank
    assert tiled.shape == (8, 12, 3)
    np.testing.assert_array_equal(tiled[:4, :6], frames[0])
    np.testing.assert_array_equal(tiled[:4, 6:], frames[1])
    np.testing.assert_array_equal(tiled[4:, :6], frames[2])
    assert not tiled[4:, 6:].any()


def test_vec_monitor_and_vec_normalize_wrap_it(venv):
    wrapped = VecMonitor(VecNormalize(venv, gamma=0.9))
    obs = wrapped.reset()
    episodes = []
    for _ in range(20):
        obs, _rewards, dones, infos = wrapped.step(np.ones(3, dtype=np.int64))
        normalize = wrapped.venv
        np.testing.assert_allclose(obs, normalize.normalize_obs(normalize.get_original_obs()))
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == (3,)
            episodes.append(infos[i]["episode"])
    assert episodes and all(ep["l"] >= 1 for ep in episodes)
    assert wrapped.venv.obs_rms.count > 20


def test_async_vector_env_targets_all_or_refuses(no_leftovers):
    fns = [with_wrapper_check(sb3_envs.drift_env)] * 2
    adapter = SB3VecEnv(AsyncVectorEnv(fns, autoreset_mode=SAME))
    try:
        adapter.reset()
        assert adapter.env_method("scaled", 0.0) == [0.0, 0.0]
        assert adapter.env_is_wrapped(TimeLimit, indices=[1]) == [True]
        with pytest.raises(ValueError, match="subset"):
            adapter.env_method("scaled", 1.0, indices=[1])
    finally:
        adapter.close()
    adapter.close()  # idempotent


def test_refuses_what_it_cannot_map():
    with pytest.raises(TypeError, match="VectorEnv"):
        SB3VecEnv(sb3_envs.drift_env())
    vec = SyncVectorEnv([sb3_envs.drift_env])
    with pytest.raises(ValueError, match="NEXT_STEP"):
        SB3VecEnv(vec)
    vec.close()
    with pytest.raises(ValueError, match="NEXT_STEP"):
        make_sb3_vec_env([sb3_envs.drift_env], autoreset_mode=AutoresetMode.NEXT_STEP)


def test_unbatch_infos_handles_masks_and_nesting():
    infos = {
        "a": np.array([1, 0, 3]),
        "_a": np.array([True, False, True]),
        "_private": np.array([5, 6, 7]),
        "__private": np.array([False, True, False]),
        "n": {"b": np.array([0.5, 0.0, 0.0]), "_b": np.array([True, False, False])},
        "_n": np.array([True, True, False]),
    }
    assert unbatch_infos(infos, 3) == [
        {"a": 1, "n": {"b": 0.5}},
        {"_private": 6, "n": {}},
        {"a": 3},
    ]


def test_importing_grid_vec_does_not_import_sb3_or_torch():
    code = (
        "import sys, grid_vec, grid_vec.integrations, grid_vec.vector; "
        "assert not {'stable_baselines3', 'torch'} & set(sys.modules), 'heavy import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # a bound on hangs


@pytest.mark.slow
def test_ppo_collects_rollouts_and_updates_its_policy_through_grid_vec_env(no_leftovers):
    adapter = VecMonitor(make_sb3_vec_env([env_factory("case14", max_iter=50)] * 4))
    try:
        model = PPO("MlpPolicy", adapter, n_steps=256, batch_size=256, n_epochs=2, seed=0)
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(4096)
        assert model.num_timesteps == 4096
        # the gradient steps changed the policy, and episodes ended and were counted
        after = list(model.policy.parameters())
        assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
        assert len(model.ep_info_buffer) > 0
        assert all(0 < ep["l"] <= 50 for ep in model.ep_info_buffer)
    finally:
        adapter.close()
