"""``step_in_parent``: the parent steps the last slice itself, with the worker's engine. Every
sub-env plays exactly what it plays when every slice is a worker process (bitwise), through
lockstep, pool mode and calls, for GridEnvs (one batch per slice) and other envs alike."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
from vec_compare import assert_same
from vec_toy_envs import CountEnv, FaultyEnv

from grid_vec.bench.workloads import action_table, sandbox_path
from grid_vec.vector import GridVecEnv, make_vec

pytestmark = pytest.mark.usefixtures("shm_and_children")

N_ENVS = 6


def _play(envs, actions: np.ndarray, steps: int) -> list:
    """Reset, then ``steps`` lockstep steps: every output, infos included."""
    out = [envs.reset(seed=5)]
    for i in range(steps):
        out.append(envs.step(actions[i % len(actions)]))
    return out


@pytest.mark.parametrize("actions", ["do-nothing", "random"])
def test_parent_slice_plays_the_workers_trajectories_bitwise(actions):
    # the sandbox with random topology actions: game overs and autoresets within 40 steps (the
    # folder ships inside grid2op: the grid2op extra, installed in CI's second phase)
    pytest.importorskip("grid2op")
    runs = []
    for in_parent in (False, True):
        envs = make_vec(
            str(sandbox_path()),
            N_ENVS,
            envs_per_worker=3,
            reward="flat",
            vector_kwargs={"step_in_parent": in_parent},
        )
        try:
            table = action_table(envs.single_action_space.n, N_ENVS, actions, seed=1)
            runs.append(_play(envs, table, 40))
            pids = envs.worker_pids()
            assert (pids[-1] == os.getpid()) is in_parent
            assert pids[0] != os.getpid()
        finally:
            envs.close()
    assert_same(runs[0], runs[1])


def test_parent_slice_alone_is_a_serial_env():
    # one slice, stepped in the parent: no worker process at all
    fns = [functools.partial(CountEnv, episode_len=5)] * 3
    ours = GridVecEnv(fns, envs_per_worker=3, step_in_parent=True)
    ref = GridVecEnv(fns, envs_per_worker=1)
    try:
        assert ours.worker_pids() == (os.getpid(),)
        actions = np.array([[0, 1, 2], [2, 1, 0]])
        assert_same(_play(ref, actions, 12), _play(ours, actions, 12))
    finally:
        ours.close()
        ref.close()


def test_parent_slice_serves_calls_attributes_and_pool_mode():
    fns = [functools.partial(CountEnv, episode_len=4)] * 4
    ours = GridVecEnv(fns, envs_per_worker=2, step_in_parent=True, batch_size=2)
    ref = GridVecEnv(fns, envs_per_worker=2, batch_size=2)
    try:
        for envs in (ours, ref):
            envs.reset(seed=3)
        pids = ours.call("pid")
        assert pids[2] == pids[3] == os.getpid() != pids[0]
        assert_same(
            ref.call_each("add", [3, 0], args=[(1,), (2,)]),
            ours.call_each("add", [3, 0], args=[(1,), (2,)]),
        )
        ours.set_attr("tag", ["a", "b", "c", "d"])
        assert ours.get_attr("tag") == ("a", "b", "c", "d")
        # pool mode: the parent's envs first in the send, and alone in a recv
        for envs in (ours, ref):
            envs.send(np.array([1, 2, 0]), [3, 2, 0])
        first = [ref.recv(), ours.recv()]
        assert sorted(first[1].env_ids.tolist()) in ([2, 3], [0, 2], [0, 3])
        for envs in (ours, ref):
            envs.send(np.array([1]), [1])
        rest = {}
        for name, envs, batch in (("ref", ref, first[0]), ("ours", ours, first[1])):
            got = {
                int(i): (batch.observations[j], batch.rewards[j])
                for j, i in enumerate(batch.env_ids)
            }
            while envs.pending_env_ids:
                more = envs.recv()
                got.update(
                    {
                        int(i): (more.observations[j], more.rewards[j])
                        for j, i in enumerate(more.env_ids)
                    }
                )
            rest[name] = got
        assert sorted(rest["ref"]) == sorted(rest["ours"]) == [0, 1, 2, 3]
        for i in range(4):
            assert_same(rest["ref"][i], rest["ours"][i], f"env {i}")
    finally:
        ours.close()
        ref.close()


def test_an_error_in_the_parent_slice_names_its_sub_env_and_the_env_goes_on():
    fns = [functools.partial(FaultyEnv, "raise", at=2)] * 2
    envs = GridVecEnv(fns, envs_per_worker=1, step_in_parent=True)
    try:
        envs.reset(seed=0)
        envs.step(np.array([0, 0]))
        with pytest.raises(ValueError, match="faulty step") as info:
            envs.step(np.array([0, 0]))
        assert info.value.env_index in (0, 1)
        envs.reset(seed=0)  # both slices answered: the env is usable
        envs.step(np.array([1, 1]))
    finally:
        envs.close()


def test_closing_closes_the_parent_slice_envs():
    envs = make_vec("case14", 4, envs_per_worker=2, vector_kwargs={"step_in_parent": True})
    local = envs._workers[-1].local
    assert len(local.envs) == 2
    envs.reset(seed=0)
    envs.close()
    assert envs._workers[-1].local is None
    assert not local.envs and not local.replies


@pytest.mark.parametrize(
    ("num_envs", "kwargs", "expected"),
    [
        (4, {}, True),  # make_vec's GridEnvs in 2 slices: the parent steps one
        (2, {}, False),  # one slice: a worker steps it (the parent would step everything)
        (4, {"step_timeout": 30.0}, False),  # only a process can be killed when it hangs
        (4, {"restart_on_crash": True}, False),  # only a process can be restarted
        (4, {"step_in_parent": False}, False),
    ],
)
def test_the_parent_steps_a_slice_of_make_vec_envs_by_default(num_envs, kwargs, expected):
    envs = make_vec("case14", num_envs, envs_per_worker=2, vector_kwargs=kwargs)
    try:
        assert envs.step_in_parent is expected
        assert (envs._workers[-1].local is not None) is expected
        assert (envs.worker_pids()[-1] == os.getpid()) is expected
    finally:
        envs.close()


def test_other_envs_are_stepped_in_workers_by_default():
    envs = GridVecEnv([functools.partial(CountEnv)] * 4, envs_per_worker=2)
    try:
        assert not envs.step_in_parent
        assert os.getpid() not in envs.worker_pids()
    finally:
        envs.close()
