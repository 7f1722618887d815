"""GridVecEnv against gymnasium's AsyncVectorEnv: same factories, same calls, same outputs."""

from __future__ import annotations

import functools
import multiprocessing

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.utils import batch_space
from vec_compare import assert_same, both
from vec_toy_envs import (
    CountEnv,
    DictActionEnv,
    FaultyEnv,
    NestedEnv,
    OtherActionEnv,
    OtherSpaceEnv,
    StatusEnv,
    TextEnv,
)

from grid_vec.vector import GridVecEnv

COUNT_FNS = [
    functools.partial(CountEnv, episode_len=2),
    functools.partial(CountEnv, episode_len=3, truncate=True),
    functools.partial(CountEnv, episode_len=4),
]


def rollout(envs, actions, mode: AutoresetMode, seed=7):
    out = [envs.reset(seed=seed)]
    for action in actions:
        out.append(envs.step(action))
        if mode == AutoresetMode.DISABLED:
            done = out[-1][2] | out[-1][3]
            if done.any():
                out.append(envs.reset(options={"reset_mask": done}))
    return out


def sample_actions(envs, steps: int):
    envs.action_space.seed(3)
    return [envs.action_space.sample() for _ in range(steps)]


@pytest.mark.parametrize("shared_memory", [True, False])
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_rollouts_match_async(mode, shared_memory):
    with both(COUNT_FNS, autoreset_mode=mode, shared_memory=shared_memory) as (ref, ours):
        actions = sample_actions(ref, 9)
        assert_same(rollout(ref, actions, mode), rollout(ours, actions, mode))
        assert ours.metadata == ref.metadata
        assert ours.metadata["autoreset_mode"] == mode


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_fixed_layout_infos_match_async(mode):
    """Infos sent as raw records (and their layout changes, and slices that do not fit a
    layout) give what gymnasium's env-after-env merge gives."""
    fns = [functools.partial(StatusEnv, episode_len=n, change_at=3) for n in (6, 6, 7, 9)]
    with both(fns, autoreset_mode=mode) as (ref, ours):
        actions = sample_actions(ref, 24)
        assert_same(rollout(ref, actions, mode), rollout(ours, actions, mode))
        assert len(ours._schemas) >= 2  # the records path ran, in two layouts


@pytest.mark.parametrize(
    ("env_fn", "mode", "shared"),
    [
        (NestedEnv, AutoresetMode.SAME_STEP, True),
        (NestedEnv, AutoresetMode.NEXT_STEP, False),
        (DictActionEnv, AutoresetMode.NEXT_STEP, True),
        (TextEnv, AutoresetMode.SAME_STEP, False),
    ],
)
def test_composite_and_generic_spaces_match_async(env_fn, mode, shared):
    fns = [env_fn] * 3
    with both(fns, autoreset_mode=mode, shared_memory=shared) as (ref, ours):
        assert ours.observation_space == ref.observation_space
        assert ours.action_space == ref.action_space
        actions = sample_actions(ref, 7)
        assert_same(rollout(ref, actions, mode), rollout(ours, actions, mode))


def test_seeds_calls_and_attributes_match_async():
    with both(COUNT_FNS) as (ref, ours):
        seeds = [5, None, 11]
        ref_obs, _ = ref.reset(seed=seeds)
        obs, _ = ours.reset(seed=seeds)
        np.testing.assert_array_equal(obs[[0, 2]], ref_obs[[0, 2]])
        assert ours.seeds == (5, None, 11)
        for envs in (ref, ours):
            envs.reset(seed=100)
        assert ours.seeds == (100, 101, 102)
        assert ours.np_random_seed == ref.np_random_seed == (100, 101, 102)
        for envs in (ref, ours):
            envs.step(np.array([1, 2, 0]))
        assert_same(ref.call("add", 1, b=2), ours.call("add", 1, b=2))
        assert_same(ref.get_attr("episode_len"), ours.get_attr("episode_len"))
        assert_same(ref.render(), ours.render())
        for envs in (ref, ours):
            envs.set_attr("tag", ["a", "b", "c"])
        assert_same(ref.get_attr("tag"), ours.get_attr("tag"))
        for envs in (ref, ours):
            envs.set_attr("tag", "same")
        assert_same(ref.get_attr("tag"), ours.get_attr("tag"))
        for envs in (ref, ours):
            envs.call_async("add", 3)
        assert_same(ref.call_wait(timeout=5), ours.call_wait(timeout=5))
        assert ours.call_each("add", [2, 0], args=[(10,), (20,)], kwargs=[{}, {"b": 1}]) == (
            ref.call("add", 10)[2],
            ref.call("add", 20, b=1)[0],
        )
        assert ours.call_each("pid") == tuple(ours.call("pid"))
        assert len(set(ours.call("pid"))) == ours.num_workers == 2


def test_reset_options_and_mask_match_async():
    with both(COUNT_FNS, autoreset_mode=AutoresetMode.DISABLED, copy=False) as (ref, ours):
        for envs in (ref, ours):
            envs.reset(seed=1, options={"start": 5})
        mask = np.array([True, False, True])
        outs = [envs.reset(options={"reset_mask": mask, "start": 2}) for envs in (ref, ours)]
        assert_same(*outs)


def _raises(exc_type, fn, *args, **kwargs):
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_call_state_errors_match_async():
    with both(COUNT_FNS) as (ref, ours):
        for envs in (ref, ours):
            envs.reset(seed=0)
            _raises(NoAsyncCallError, envs.step_wait)
            _raises(NoAsyncCallError, envs.reset_wait)
            _raises(NoAsyncCallError, envs.call_wait)
            envs.step_async(np.zeros(3, np.int64))
            _raises(AlreadyPendingCallError, envs.step_async, np.zeros(3, np.int64))
            _raises(AlreadyPendingCallError, envs.reset_async)
            _raises(AlreadyPendingCallError, envs.call_async, "add", 1)
            _raises(AlreadyPendingCallError, envs.set_attr, "tag", 1)
            envs.step_wait()
            _raises(ValueError, envs.set_attr, "tag", [1, 2])
            _raises(ValueError, envs.reset, seed=[1, 2])
            _raises(TypeError, envs.reset, options={"reset_mask": [True] * 3})
            _raises(ValueError, envs.reset, options={"reset_mask": np.ones(2, np.bool_)})
            _raises(TypeError, envs.reset, options={"reset_mask": np.ones(3, np.int64)})
            _raises(ValueError, envs.reset, options={"reset_mask": np.zeros(3, np.bool_)})
            envs.reset()  # still usable after every error above
            _raises(ValueError, envs.call, "step", 0)  # AsyncVectorEnv loses its workers here
        ours.reset()
        for envs in (ref, ours):
            envs.close()
            envs.close()  # idempotent
            _raises(ClosedEnvironmentError, envs.reset)
            _raises(ClosedEnvironmentError, envs.step, np.zeros(3, np.int64))
            _raises(ClosedEnvironmentError, envs.call, "add", 1)


def test_wait_timeouts_match_async():
    fns = [functools.partial(FaultyEnv, "hang", at=1)]
    with both(fns) as (ref, ours):
        for envs in (ref, ours):
            envs.reset()
            envs.step_async(np.zeros(1, np.int64))
            _raises(multiprocessing.TimeoutError, envs.step_wait, timeout=0.2)
        ours.close(terminate=True)
        ref.close(terminate=True)


def test_observation_modes_and_space_checks_match_async():
    mixed = [CountEnv, OtherSpaceEnv]
    with pytest.raises(RuntimeError, match="observation_mode='same'"):
        AsyncVectorEnv(mixed, context="fork")
    with pytest.raises(RuntimeError, match="observation_mode='same'"):
        GridVecEnv(mixed)
    with both(mixed, observation_mode="different") as (ref, ours):
        assert ours.observation_space == ref.observation_space
        assert_same(ref.reset(seed=2), ours.reset(seed=2))
    with pytest.raises(RuntimeError, match="action space"):
        GridVecEnv([CountEnv, OtherActionEnv])
    single = CountEnv().observation_space
    custom = (batch_space(single, 2), single)
    with both(mixed, observation_mode=custom) as (ref, ours):
        assert ours.single_observation_space == custom[1]
        assert_same(ref.reset(seed=4), ours.reset(seed=4))
    with pytest.raises(ValueError, match="observation_mode"):
        GridVecEnv([CountEnv], observation_mode="other")


def test_sub_env_exception_is_reraised_with_index_and_traceback():
    fns = [CountEnv, functools.partial(FaultyEnv, "raise", at=2), CountEnv]
    with both(fns) as (ref, ours):
        messages = []
        for envs in (ref, ours):
            envs.reset(seed=0)
            envs.step(np.zeros(3, np.int64))
            with pytest.raises(ValueError) as info:
                envs.step(np.zeros(3, np.int64))
            messages.append(str(info.value))
        assert messages[0] == messages[1] == "faulty step at t=2"
        assert info.value.env_index == 1
        assert "sub-env 1" in str(info.value.__cause__)
        assert "in step" in str(info.value.__cause__)  # the worker's traceback
        ours.reset(seed=0)  # the vector env stays usable and closable
        ours.step(np.ones(3, np.int64))
