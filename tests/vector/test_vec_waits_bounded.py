"""Every wait on a worker ends within ``step_timeout``: calls and grid commands as steps do,
and a doorbell spin longer than the timeout does not push the error past it.

Real worker processes, real pipes and shared memory; the worker is stuck by a real SIGSTOP.
Each test is bounded by a ``timeout`` mark, and the time each error took is measured: an
error that came late (after the whole spin, after a second of SIGTERM grace) fails it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from process_checks import alive, state
from vec_toy_envs import CountEnv

from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv, WorkerCrashedError, WorkerTimeoutError

pytestmark = [pytest.mark.usefixtures("shm_and_children"), pytest.mark.timeout(40)]

STEP_TIMEOUT = 2.0
# what the error may take beyond step_timeout: killing the worker, a loaded 2-core machine
SLACK = 1.0


@contextlib.contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """SIGSTOP ``pid`` (waiting until the kernel shows it stopped); SIGCONT it on the way out
    should it still exist, so that a failing test leaves no stopped process behind."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while state(pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state(pid) == "T"
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _case14(restart_on_crash: bool = False) -> GridVecEnv:
    """Two case14 GridEnvs, one per worker, reset."""
    envs = GridVecEnv(
        [env_factory("case14")] * 2,
        envs_per_worker=1,
        step_timeout=STEP_TIMEOUT,
        restart_on_crash=restart_on_crash,
    )
    envs.reset(seed=0)
    return envs


# each waits on worker 1 (and on worker 0 too, but for snapshot(1))
COMMANDS: dict[str, Callable[[GridVecEnv], Any]] = {
    "simulate_candidates": lambda envs: envs.simulate_candidates(np.zeros((2, 3), np.int64)),
    "simulate": lambda envs: envs.simulate(np.zeros(2, np.int64)),
    "snapshot": lambda envs: envs.snapshot(1),
    "contingencies": lambda envs: envs.contingencies(),
    "set_scenario_id": lambda envs: envs.set_scenario_id(3),
    "set_attr": lambda envs: envs.set_attr("spare", 1),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_grid_command_to_a_stopped_worker_raises_step_timeout_error_within_step_timeout(
    command,
):
    envs = _case14()
    pid = envs.worker_pids()[1]
    with _stopped(pid):
        start = time.monotonic()
        with pytest.raises(WorkerTimeoutError, match=r"step_timeout=2.0s.*sub-envs \[1\] lost"):
            COMMANDS[command](envs)
        elapsed = time.monotonic() - start
    assert STEP_TIMEOUT <= elapsed < STEP_TIMEOUT + SLACK, elapsed
    assert not alive(pid)  # killed, as after a step that exceeds step_timeout
    # the state a step timeout leaves: the worker is named dead, never waited on again
    assert envs.worker_pids() == (envs.worker_pids()[0], None)
    with pytest.raises(WorkerCrashedError, match=r"worker 1 is dead"):
        envs.step(np.zeros(2, np.int64))
    with pytest.raises(WorkerCrashedError, match=r"worker 1 is dead"):
        COMMANDS["simulate"](envs)
    envs.close()


def test_simulate_candidates_timeout_with_restart_on_crash_restarts_the_worker():
    envs = _case14(restart_on_crash=True)
    pid = envs.worker_pids()[1]
    with _stopped(pid):
        start = time.monotonic()
        with pytest.raises(WorkerTimeoutError, match=r"sub-envs \[1\] lost"):
            COMMANDS["simulate_candidates"](envs)
        elapsed = time.monotonic() - start
    # step_timeout, then the restart (a fork and a reset of case14)
    assert STEP_TIMEOUT <= elapsed < STEP_TIMEOUT + 2 * SLACK, elapsed
    assert not alive(pid) and envs.restarts == 1
    assert envs.worker_pids()[1] not in (None, pid)
    found = COMMANDS["simulate_candidates"](envs)  # the restarted worker answers
    assert found.rewards.shape == (2, 3)
    envs.step(np.zeros(2, np.int64))
    envs.close()


@pytest.mark.parametrize("wait", ["step", "call"])
def test_doorbell_spin_longer_than_step_timeout_still_raises_within_it(wait):
    # the parent would spin 5 s for the reply; step_timeout is 1 s: the spin is clipped to
    # the time left, and the error comes at the deadline, not after the spin
    envs = GridVecEnv([CountEnv], step_timeout=1.0, spin_us=5e6)
    envs.reset(seed=0)
    pid = envs.worker_pids()[0]
    with _stopped(pid):
        start = time.monotonic()
        with pytest.raises(WorkerTimeoutError, match=r"step_timeout=1.0s.*sub-envs \[0\] lost"):
            if wait == "step":  # a bare ring: the hot path's spin, then the general wait
                envs.step(np.zeros(1, np.int64))
            else:
                envs.call("t")
        elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 1.0 + 0.5, elapsed
    assert not alive(pid)
    envs.close()
