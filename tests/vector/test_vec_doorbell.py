"""Doorbells: steps signalled through shared memory (rings) and through the pipe (a sleeping
side woken by a WAKE) give the same transitions, and supervision still bounds every wait.

Real worker processes, real pipes and shared memory.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv
from vec_compare import assert_same
from vec_toy_envs import CountEnv, FaultyEnv, PausingEnv, QuietEnv

from grid_vec.vector import GridVecEnv, WorkerTimeoutError
from grid_vec.vector.doorbell import P_BELLS, P_TOTAL, W_BELLS

pytestmark = [pytest.mark.usefixtures("shm_and_children"), pytest.mark.timeout(60)]

NUM_ENVS, STEPS = 4, 14


def _episode(envs, *, parent_pause: float = 0.0) -> list:
    """Reset, then STEPS steps; the parent pauses before every fourth step (so a spinning
    worker gives up and sleeps)."""
    out = [envs.reset(seed=11)]
    for i in range(STEPS):
        if parent_pause and i % 4 == 3:
            time.sleep(parent_pause)
        out.append(envs.step(np.arange(NUM_ENVS) % 3))
    envs.close()
    return out


def _grid(fn, **kw) -> GridVecEnv:
    return GridVecEnv([fn] * NUM_ENVS, envs_per_worker=2, **kw)


def test_rings_pipe_fallback_and_slowed_workers_give_sync_transitions():
    expected = _episode(SyncVectorEnv([PausingEnv] * NUM_ENVS))
    runs = {
        "spinning": _episode(_grid(PausingEnv, spin_us=1e5)),  # rings, nobody sleeps
        "spin_us=0": _episode(_grid(PausingEnv, spin_us=0)),  # every ring needs its WAKE
        # the worker's pauses outlast the parent's spin, and the parent's the worker's
        "slowed": _episode(_grid(PausingEnv, spin_us=300), parent_pause=0.003),
    }
    for name, got in runs.items():
        assert_same(got, expected, name)


def test_bare_ok_steps_take_the_hot_path_and_steps_with_infos_the_general_one():
    # worker 0 (two QuietEnvs) answers every step with a bare OK; worker 1 (a CountEnv) has
    # infos on odd steps: then worker 0's ring must be left to the general wait, not lost
    fns = [QuietEnv, QuietEnv, CountEnv, QuietEnv]
    expected = _episode(SyncVectorEnv(fns))
    envs = GridVecEnv(fns, envs_per_worker=2, spin_us=1e5)
    hot_path = envs._took_bare_oks
    taken: list[bool] = []

    def spy(spin_until: float) -> bool:
        taken.append(hot_path(spin_until))
        return taken[-1]

    envs._took_bare_oks = spy
    assert_same(_episode(envs), expected)
    assert len(taken) == STEPS and True in taken and False in taken


def test_lockstep_steps_and_their_replies_are_rings():
    envs = _grid(CountEnv, spin_us=0)
    envs.reset(seed=0)
    for _ in range(5):
        envs.step(np.zeros(NUM_ENVS, np.int64))
    for w in envs._workers:
        slots = w.bell.slots
        assert slots[P_BELLS] == slots[P_TOTAL] == slots[W_BELLS] == 6  # reset + 5 steps
    envs.close()


@pytest.mark.parametrize("spin_us", [0, 1e5])
def test_pool_mode_mixing_rings_and_pipe_commands_matches_lockstep(spin_us):
    envs = _grid(CountEnv, spin_us=spin_us, batch_size=2)
    ref = _grid(CountEnv)
    obs, _ = envs.reset(seed=5)
    ref_obs, _ = ref.reset(seed=5)
    assert_same(obs, ref_obs)
    for _ in range(6):
        # a worker's first send is a ring, the second a pipe command queued behind it
        envs.send(np.ones(2, np.int64), [0, 2])
        envs.send(np.ones(2, np.int64), [1, 3])
        got: dict[int, tuple] = {}
        for _ in range(2):
            o, r, term, trunc, _, ids = envs.recv()
            for j, i in enumerate(ids.tolist()):
                got[i] = (o[j], r[j], term[j], trunc[j])
        ref_o, ref_r, ref_term, ref_trunc, _ = ref.step(np.ones(NUM_ENVS, np.int64))
        for i in range(NUM_ENVS):
            assert_same(got[i], (ref_o[i], ref_r[i], ref_term[i], ref_trunc[i]), f"env {i}")
    envs.close()
    ref.close()


def test_step_timeout_fires_on_a_hung_worker_while_the_parent_spins():
    fns = [CountEnv, functools.partial(FaultyEnv, "hang", at=2)]
    envs = GridVecEnv(fns, envs_per_worker=1, step_timeout=0.5, spin_us=2e5)
    envs.reset(seed=0)
    envs.step(np.zeros(2, np.int64))
    with pytest.raises(WorkerTimeoutError, match=r"step_timeout=0.5s.*sub-envs \[1\] lost"):
        envs.step(np.zeros(2, np.int64))
    envs.close()
