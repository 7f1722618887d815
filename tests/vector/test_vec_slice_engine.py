"""The slice engine (vector/slice_engine.py): one batch step with autoreset for
BatchedGridVecEnv and for a GridVecEnv worker hosting GridEnvs. The worker keeps the infos
columns (records in the shared block on the usual step: a bare reply), plays the actions the
parent checked without checking them again, and gives what BatchedGridVecEnv and
SyncVectorEnv give."""

from __future__ import annotations

import os

import numpy as np
import pytest
from batch_compare import assert_same, factory
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from grid_vec.core.parameters import Parameters
from grid_vec.env.embedded import embedded_model
from grid_vec.vector import GridVecEnv, slice_engine
from grid_vec.vector import protocol as p
from grid_vec.vector.batched import BatchedGridVecEnv
from grid_vec.vector.doorbell import Doorbell
from grid_vec.vector.infos import InfoSchema, merge_slices
from grid_vec.vector.shared_buffers import SharedBlock
from grid_vec.vector.slice_engine import SliceEngine
from grid_vec.vector.worker import Server, WorkerSpec


@pytest.fixture(scope="module")
def case14():
    return embedded_model("case14")


def _cascading(case14):
    """Envs whose limits sit near their base flows: illegal actions, trips, game overs and
    autoresets within a few dozen random catalog actions."""
    env = factory(case14)()
    obs, _ = env.reset(seed=0)
    a_or = env.view(obs).a_or.astype(np.float64)
    factors = np.resize([1.03, 1.1, 1.25, 5.0, 5.0], case14.n_branch)
    cooldowns = Parameters(nb_timestep_cooldown_line=3, nb_timestep_cooldown_sub=3)
    limits = np.maximum(a_or * factors, 1.0)
    return factory(case14, thermal_limits=limits, parameters=cooldowns, max_iter=25)


class _InProcessWorker:
    """A worker's server in this process: its commands called directly (no pipe read)."""

    def __init__(self, env_factory, n: int, mode: AutoresetMode) -> None:
        envs = env_factory().sharing_one_batch(n)
        env = envs[0]
        self.schema = InfoSchema.of(env.fixed_info())
        self.block = SharedBlock(n, env.observation_space, env.action_space, self.schema.dtype)
        spec = WorkerSpec(
            env_ids=tuple(range(n)),
            block=self.block,
            obs_space=env.observation_space,
            act_space=env.action_space,
            obs_shared=True,
            autoreset_mode=mode,
            observation_mode="same",
            doorbell=Doorbell(),
            spin_s=0.0,
            info_schema=self.schema,
        )
        self.fds = os.pipe()
        self.server = Server(spec, envs, *self.fds)
        self.n = n

    def infos(self, status: int, payload) -> dict:
        """The parent's infos of a reply (as GridVecEnv reads them)."""
        if status == p.OK_BLOCK:
            return self.schema.unpack(self.block.info)
        assert status == p.OK_DATA, payload
        return merge_slices([(0, payload[0])], self.n)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_worker_hosts_the_batched_envs_slice_engine(case14, mode, monkeypatch):
    """Worker and BatchedGridVecEnv step through one SliceEngine and give the same outputs,
    infos included, over illegal actions, trips, game overs and autoresets; actions sent as
    checked by the parent are not checked again (``batch_actions`` is never called)."""
    env_factory = _cascading(case14)
    n = 5
    worker = _InProcessWorker(env_factory, n, mode)
    batched = BatchedGridVecEnv.from_factory(env_factory, n, autoreset_mode=mode)
    assert type(worker.server.engine) is SliceEngine and type(batched._engine) is SliceEngine

    def no_second_check(*args, **kwargs):
        raise AssertionError("the worker checked actions the parent checked")

    monkeypatch.setattr(slice_engine, "batch_actions", no_second_check)
    try:
        status, payload = worker.server.reset([(7 + i, None, False) for i in range(n)])
        _, ref_infos = batched.reset(seed=7)
        assert_same(worker.infos(status, payload), ref_infos, "reset")
        rng = np.random.default_rng(0)
        seen = {"block": 0, "illegal": 0, "tripped": 0, "ended": 0}
        for t in range(45):
            actions = rng.integers(0, batched.single_action_space.n, n) * (t % 3 > 0)
            worker.block.act[0][:] = actions
            status, payload = worker.server.step(None, checked=True)
            obs, rewards, terminated, truncated, infos = batched.step(actions)
            assert_same(worker.block.obs[0], obs, f"step {t} obs")
            assert_same(worker.block.rewards, rewards, f"step {t} rewards")
            assert_same(worker.block.terminated, terminated, f"step {t} terminated")
            assert_same(worker.block.truncated, truncated, f"step {t} truncated")
            assert_same(worker.infos(status, payload), infos, f"step {t} infos")
            seen["block"] += status == p.OK_BLOCK
            seen["illegal"] += int(np.sum(infos.get("is_illegal", 0)))
            seen["tripped"] += int(np.sum(infos.get("tripped_branches", 0)))
            seen["ended"] += int(np.sum(terminated | truncated))
        assert all(seen.values()), seen
    finally:
        worker.close()
        batched.close()


def test_a_forged_step_of_unchecked_actions_is_an_error_reply_not_a_dead_worker(case14):
    """The protocol is internal: a STEP_CHECKED whose actions nobody checked can make the
    batch step raise, and the worker answers that as a sub-env error; a plain STEP checks."""
    worker = _InProcessWorker(factory(case14), 3, AutoresetMode.NEXT_STEP)
    try:
        worker.server.reset([(i, None, False) for i in range(3)])
        worker.block.act[0][:] = [0, 10**9, 0]
        for checked in (True, False):
            status, entries = worker.server.step(None, checked=checked)
            assert status == p.ERROR and entries
        worker.block.act[0][:] = 0
        assert worker.server.step(None, checked=True)[0] == p.OK_BLOCK  # still serving
    finally:
        worker.close()


def test_grid_env_workers_take_the_bare_ok_path_on_do_nothing_steps(case14, monkeypatch):
    """Every info of a do-nothing step is of fixed layout: each worker writes it into the
    shared block and answers a bare OK_BLOCK, so no reply is read (``_gather`` is not
    called); the infos are SyncVectorEnv's."""
    env_factory = factory(case14)
    envs = GridVecEnv([env_factory] * 6, envs_per_worker=3, spin_us=2e6)
    reference = SyncVectorEnv([env_factory] * 6)
    try:
        assert_same(envs.reset(seed=3), reference.reset(seed=3), "reset")

        def gather(*args, **kwargs):
            raise AssertionError("a step reply was read: the bare-OK path was not taken")

        monkeypatch.setattr(envs, "_gather", gather)
        actions = np.zeros(6, dtype=np.int64)
        for t in range(10):
            assert_same(envs.step(actions), reference.step(actions), f"step {t}")
    finally:
        envs.close()
        reference.close()


def test_grid_env_fixed_info_is_the_layout_of_every_step(case14):
    """``GridEnv.fixed_info`` (the block's layout) has the schema of a step's info, with
    other rewards, action masks and heuristics alike."""
    from grid_vec.core.rules.heuristics import Heuristics

    for kwargs in (
        {},
        {"other_rewards": ["flat"], "action_mask": True},
        {"heuristics": Heuristics(idle_below_rho=0.5, reconnect_lines=True)},
    ):
        env = factory(case14, **kwargs)()
        env.reset(seed=0)
        info = env.step(0)[4]
        assert InfoSchema.of(env.fixed_info()) == InfoSchema.of(info), kwargs


def test_only_a_bare_grid_env_is_stepped_as_a_batch_row(case14):
    """The worker tells GridEnvs by what their class declares, without importing the core: a
    wrapper or a subclass (whose step may differ) is stepped as any env."""
    import gymnasium as gym

    from grid_vec.env.grid_env import GridEnv
    from grid_vec.vector.worker import is_grid_env

    class Louder(GridEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, 2 * reward, terminated, truncated, info

    env = factory(case14)()
    assert is_grid_env(env)
    assert not is_grid_env(gym.wrappers.RecordEpisodeStatistics(env))
    louder = Louder(case14, env.unwrapped._source)
    assert not is_grid_env(louder)
    assert slice_engine.shared_batch([louder]) is None
