"""Actions GridEnvs refuse, under GridVecEnv: named by sub-env, refused whole before any env
steps (whatever the batch's dtype or the envs' layout over workers), as GridEnv and the batched
env refuse them; and a wait's spin bounded by its deadline."""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from vec_toy_envs import FaultyEnv

import grid_vec
from grid_vec.vector import GridVecEnv, WorkerTimeoutError, make_vec
from grid_vec.vector.doorbell import STRONG_ORDER

pytestmark = pytest.mark.usefixtures("shm_and_children")


def _steps(envs) -> list[int]:
    return [t["steps"] for t in envs.call("timings")]


@pytest.mark.parametrize("envs_per_worker", [3, 1], ids=["one-worker", "three-workers"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_refused_continuous_action_names_its_sub_env_and_no_env_plays(envs_per_worker, dtype):
    envs = make_vec("case14", 3, envs_per_worker=envs_per_worker, action_type="redispatch")
    try:
        envs.reset(seed=0)
        high = envs.single_action_space.high
        actions = np.zeros((3, len(high)), dtype=dtype)
        actions[2, 0] = 10 * high[0]  # beyond the ramp: GridEnv refuses it
        with pytest.raises(ValueError, match=r"^sub-env 2: .*outside the action space") as info:
            envs.step(actions)
        assert info.value.env_index == 2
        assert _steps(envs) == [0, 0, 0]  # refused whole: envs 0 and 1 did not step either
        actions[2, 0] = 0.0
        envs.step(actions)  # nothing was sent: the env is usable at once
        assert _steps(envs) == [1, 1, 1]
    finally:
        envs.close()


def test_batched_env_names_the_sub_env_of_a_refused_action():
    envs = make_vec("case14", 3, vectorization="batched", action_type="redispatch")
    envs.reset(seed=0)
    actions = np.zeros((3, envs.single_action_space.shape[0]), dtype=np.float32)
    actions[1, 0] = np.inf
    with pytest.raises(ValueError, match=r"^sub-env 1: .*must be finite") as info:
        envs.step(actions)
    assert info.value.env_index == 1
    envs.close()


def test_batched_env_names_the_sub_env_of_a_refused_catalog_action():
    """A batch of catalog indices is refused by the sub-env holding the bad one (it was
    always named sub-env 0: a (k,) refusal mask was read as one action's)."""
    envs = make_vec("case14", 4, vectorization="batched")
    envs.reset(seed=0)
    actions = np.zeros(4, dtype=np.int64)
    actions[2] = envs.single_action_space.n
    with pytest.raises(ValueError, match=r"^sub-env 2: .*ints in") as info:
        envs.step(actions)
    assert info.value.env_index == 2
    envs.close()


def test_combined_action_with_an_extra_key_is_refused_as_gridenv_and_batched_env_refuse_it():
    one = grid_vec.make("case14", action_type="combined")
    one.reset(seed=0)
    size = one.action_space["continuous"].shape[0]
    with pytest.raises(ValueError, match=r"keys 'topology'.* and 'continuous'"):
        one.step({"topology": 0, "continuous": np.zeros(size, np.float32), "extra": 0})
    batch = {
        "topology": np.zeros(2, np.int64),
        "continuous": np.zeros((2, size), np.float32),
        "extra": np.zeros(2),
    }
    for vectorization in ("multiprocess", "batched"):
        envs = make_vec("case14", 2, vectorization=vectorization, action_type="combined")
        try:
            envs.reset(seed=0)
            with pytest.raises(ValueError, match=r"keys 'topology' and 'continuous'.*'extra'"):
                envs.step(batch)
            del batch["extra"]
            envs.step(batch)
            batch["extra"] = np.zeros(2)
        finally:
            envs.close()


@pytest.mark.skipif(not STRONG_ORDER, reason="spin_us is 0 where nothing rings")
@pytest.mark.timeout(30)
def test_spin_longer_than_step_timeout_stops_at_the_deadline():
    hang = functools.partial(FaultyEnv, "hang", at=1)  # the step sleeps for 60 s
    envs = GridVecEnv([hang], spin_us=7e6, step_timeout=1.0)
    try:
        envs.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(WorkerTimeoutError):
            envs.step(np.zeros(1, np.int64))
        assert time.monotonic() - start < 3.0  # the 7 s spin stopped at the 1 s deadline
    finally:
        envs.close()
