"""Pool mode: send(actions, env_ids) / recv() of the first batch_size envs ready."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import SyncVectorEnv
from gymnasium.vector.vector_env import VectorEnv
from vec_compare import assert_same
from vec_toy_envs import CountEnv, FaultyEnv, SlowEnv, StatusEnv

from grid_vec.vector import GridVecEnv, WorkerCrashedError

pytestmark = pytest.mark.usefixtures("shm_and_children")


def test_recv_returns_the_envs_ready_first():
    fns = [functools.partial(SlowEnv, d) for d in (0.0, 0.4, 0.0, 0.4)]
    envs = GridVecEnv(fns, envs_per_worker=1, batch_size=2)
    envs.reset(seed=0)
    envs.send(np.zeros(4, np.int64), [0, 1, 2, 3])
    obs, rewards, terminated, truncated, infos, ids = envs.recv()
    assert sorted(ids.tolist()) == [0, 2]
    assert obs.shape == (2, 3) and rewards.shape == terminated.shape == truncated.shape == (2,)
    assert infos["t"].tolist() == [1, 1] and infos["_t"].tolist() == [True, True]
    envs.send(np.ones(2, np.int64), ids)
    assert sorted(envs.recv()[-1].tolist()) == [0, 2]
    assert sorted(envs.recv(timeout=5)[-1].tolist()) == [1, 3]
    with pytest.raises(NoAsyncCallError):
        envs.recv()
    envs.close()


def test_pool_trajectories_equal_lockstep_ones():
    fns = [functools.partial(CountEnv, episode_len=n) for n in (2, 3, 4, 5)]
    seeds = [10, 11, 12, 13]
    rng = np.random.default_rng(0)
    plan = rng.integers(0, 3, (4, 12))  # plan[i, k]: action of env i at its k-th step
    ref = SyncVectorEnv(fns)
    ref_obs, _ = ref.reset(seed=seeds)
    expected = {i: [(ref_obs[i], 0.0, False, False)] for i in range(4)}
    for k in range(plan.shape[1]):
        obs, rew, term, trunc, _ = ref.step(plan[:, k])
        for i in range(4):
            expected[i].append((obs[i], rew[i], term[i], trunc[i]))
    ref.close()

    envs = GridVecEnv(fns, envs_per_worker=2, batch_size=3)
    obs, _ = envs.reset(seed=seeds)
    got = {i: [(obs[i], 0.0, False, False)] for i in range(4)}
    counts = np.zeros(4, np.int64)
    envs.send(plan[np.arange(4), counts], np.arange(4))
    while envs.pending_env_ids:
        envs.batch_size = min(3, len(envs.pending_env_ids))
        obs, rew, term, trunc, _, ids = envs.recv()
        for j, i in enumerate(ids):
            got[i].append((obs[j], rew[j], term[j], trunc[j]))
        counts[ids] += 1
        again = ids[counts[ids] < plan.shape[1]]
        if again.size:
            envs.send(plan[again, counts[again]], again)
    for i in range(4):
        for (a, b, c, d), (x, y, z, w) in zip(expected[i], got[i][: len(expected[i])], strict=True):
            np.testing.assert_array_equal(a, x)
            assert (b, c, d) == (y, z, w)
    envs.close()


class _Batch:
    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


@pytest.mark.parametrize("batch_size", [2, 3])
def test_pool_infos_equal_those_of_the_envs_merged_by_gymnasium(batch_size):
    """A worker's whole slice comes back as info records; whether a batch is exactly that
    slice (2) or mixes slices (3), its infos are the envs' own, merged by ``_add_info``."""
    fns = [functools.partial(StatusEnv, episode_len=n, change_at=3) for n in (4, 5, 6, 7)]
    seeds = [1, 2, 3, 4]
    refs = [fn() for fn in fns]
    for env, seed in zip(refs, seeds, strict=True):
        env.reset(seed=seed)
    done = [False] * 4

    def reference_step(i: int, action: int) -> dict:
        if done[i]:
            done[i] = False
            return refs[i].reset()[1]
        _, _, terminated, truncated, info = refs[i].step(action)
        done[i] = terminated or truncated
        return info

    envs = GridVecEnv(fns, envs_per_worker=2, batch_size=batch_size)
    envs.reset(seed=seeds)
    envs.send(np.ones(4, np.int64), np.arange(4))
    expected = {i: reference_step(i, 1) for i in range(4)}
    for _ in range(30):
        *_, infos, ids = envs.recv()
        want, batch = {}, _Batch(len(ids))
        for j, i in enumerate(ids):
            want = batch._add_info(want, expected.pop(int(i)), j)
        assert_same(infos, want)
        actions = ids % 2
        envs.send(actions, ids)
        for i, action in zip(ids.tolist(), actions.tolist(), strict=True):
            expected[i] = reference_step(i, action)
    assert envs._schemas  # records came back
    envs.close()


def test_pool_argument_and_state_errors():
    envs = GridVecEnv([CountEnv] * 3, batch_size=1)
    envs.reset()
    with pytest.raises(NoAsyncCallError):
        envs.recv()
    for ids in ([0, 0], [3], [], [[0]], [0.5]):
        with pytest.raises(ValueError, match="env_ids"):
            envs.send(np.zeros(len(ids) if ids else 0, np.int64), ids)
    with pytest.raises(ValueError, match="actions"):
        envs.send(np.array([5]), [1])
    envs.send(np.array([1]), [1])
    with pytest.raises(ValueError, match="not yet returned"):
        envs.send(np.array([1]), [1])
    with pytest.raises(AlreadyPendingCallError):
        envs.step(np.zeros(3, np.int64))
    with pytest.raises(AlreadyPendingCallError):
        envs.call("add", 1)
    assert envs.recv()[-1].tolist() == [1]
    envs.step(np.zeros(3, np.int64))  # back to lockstep use
    with pytest.raises(ValueError, match="batch_size"):
        GridVecEnv([CountEnv], batch_size=2)
    envs.close()


def test_pool_restart_on_crash_returns_the_lost_envs_truncated():
    fns = [CountEnv, functools.partial(FaultyEnv, "kill", at=2)]
    envs = GridVecEnv(fns, envs_per_worker=1, batch_size=2, restart_on_crash=True)
    envs.reset(seed=0)
    for _ in range(2):
        envs.send(np.zeros(2, np.int64), [0, 1])
        _, _, _, truncated, _, ids = envs.recv()
    assert dict(zip(ids.tolist(), truncated.tolist(), strict=True)) == {0: False, 1: True}
    assert envs.restarts == 1
    envs.close()


def test_send_refused_for_a_dead_worker_sends_nothing_to_the_live_ones():
    # worker 0 carries envs 0-1, worker 1 envs 2-3 (it dies at its second step)
    fns = [CountEnv, CountEnv, functools.partial(FaultyEnv, "kill", at=2), CountEnv]
    envs = GridVecEnv(fns, envs_per_worker=2, batch_size=2)
    envs.reset(seed=0)
    envs.send(np.zeros(2, np.int64), [2, 3])
    envs.recv()
    envs.send(np.zeros(2, np.int64), [2, 3])
    with pytest.raises(WorkerCrashedError):
        envs.recv()
    with pytest.raises(WorkerCrashedError, match="worker 1 is dead"):
        envs.send(np.zeros(4, np.int64), [0, 1, 2, 3])
    assert envs.pending_env_ids == ()
    # worker 0 was sent nothing: the next thing it answers is this call, not a step
    assert envs.call_each("add", [0, 1], args=[(0,), (0,)]) == (0, 0)
    envs.send(np.zeros(2, np.int64), [0, 1])
    *_, ids = envs.recv()
    assert sorted(ids.tolist()) == [0, 1]
    assert envs.call_each("add", [0, 1], args=[(0,), (0,)]) == (1, 1)
    envs.close()
