"""Fault suite: every way a GridVecEnv worker can get stuck or die ends in a clear error.

Real worker processes, real pipes and shared memory; faults are real signals (SIGSTOP,
SIGKILL) or toy envs that kill themselves. Each test is bounded by a ``timeout`` mark well
under the toy envs' own hangs (60 s and more), so an error that came from waiting the hang
out would fail the test.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError
from process_checks import alive, state, wait_gone
from vec_toy_envs import CountEnv, FaultyEnv, RelapseEnv, TextActionEnv

from grid_vec.vector import GridVecEnv, WorkerCrashedError, WorkerTimeoutError, supervision

pytestmark = [pytest.mark.usefixtures("shm_and_children"), pytest.mark.timeout(40)]


def _stop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until the kernel shows it stopped."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while state(pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state(pid) == "T"


def test_large_action_to_a_stopped_worker_raises_step_timeout_error():
    envs = GridVecEnv([TextActionEnv], step_timeout=0.5)
    envs.reset(seed=0)
    pid = envs.worker_pids()[0]
    _stop(pid)
    big = ("ab" * 150_000,)  # pickled, several times the 64 KiB pipe buffer
    with pytest.raises(WorkerTimeoutError, match=r"step_timeout=0.5s.*sub-envs \[0\] lost"):
        envs.step(big)
    assert not alive(pid)
    with pytest.raises(WorkerCrashedError, match="is dead"):  # not a pending step
        envs.step(big)
    envs.close()


def test_large_action_with_restart_comes_back_truncated_after_a_stalled_write():
    envs = GridVecEnv([TextActionEnv, TextActionEnv], envs_per_worker=1, step_timeout=0.5)
    envs.restart_on_crash = True
    envs.reset(seed=0)
    pid = envs.worker_pids()[1]
    _stop(pid)
    _, _, _, truncated, _ = envs.step(("a", "ab" * 150_000))
    assert truncated.tolist() == [False, True]
    assert envs.restarts == 1 and not alive(pid)
    envs.step(("a", "ab" * 150_000))  # the new worker reads its large command
    envs.close()


def test_pool_recv_with_a_stuck_worker_raises_step_timeout_error():
    fns = [CountEnv, functools.partial(FaultyEnv, "hang", at=1)]
    envs = GridVecEnv(fns, envs_per_worker=1, step_timeout=0.5)
    envs.reset(seed=0)
    envs.send(np.zeros(2, np.int64), [0, 1])
    stuck = envs.worker_pids()[1]
    with pytest.raises(WorkerTimeoutError, match=r"step_timeout=0.5s.*sub-envs \[1\] lost"):
        envs.recv()
    assert not alive(stuck)
    assert envs.pending_env_ids == (0,)  # env 0 answered: it is still there to recv
    envs.batch_size = 1
    *_, ids = envs.recv()
    assert ids.tolist() == [0]
    envs.close()


def test_pool_recv_with_a_stuck_worker_and_restart_returns_it_truncated():
    fns = [CountEnv, functools.partial(FaultyEnv, "hang", at=1)]
    envs = GridVecEnv(fns, envs_per_worker=1, step_timeout=0.5, restart_on_crash=True)
    envs.reset(seed=0)
    envs.send(np.zeros(2, np.int64), [0, 1])
    _, _, _, truncated, _, ids = envs.recv()
    assert dict(zip(ids.tolist(), truncated.tolist(), strict=True)) == {0: False, 1: True}
    assert envs.restarts == 1
    envs.close()


def test_close_without_timeout_terminates_a_stopped_worker_after_the_grace(monkeypatch):
    monkeypatch.setattr(supervision, "CLOSE_GRACE_S", 0.5)  # the default is a few seconds
    envs = GridVecEnv([CountEnv, CountEnv], envs_per_worker=1)
    envs.reset(seed=0)
    pids = envs.worker_pids()
    _stop(pids[1])
    envs.close()
    assert envs.closed and wait_gone(pids) == []
    exit_codes = [w.process.exitcode for w in envs._workers]
    assert exit_codes[0] == 0  # the healthy worker closed its envs and exited
    assert exit_codes[1] in (-signal.SIGTERM, -signal.SIGKILL)
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.zeros(2, np.int64))


def test_close_grace_default_is_a_few_seconds():
    assert 1.0 <= supervision.CLOSE_GRACE_S <= 10.0


@pytest.fixture
def flags(tmp_path: Path):
    """A directory whose files switch RelapseEnv's faults on."""

    def set_flags(*names: str) -> None:
        for name in ("init", "reset", "step"):
            path = tmp_path / name
            if name in names:
                path.touch()
            else:
                path.unlink(missing_ok=True)

    set_flags.dir = str(tmp_path)
    return set_flags


def _relapse_envs(flags) -> GridVecEnv:
    fns = [CountEnv, functools.partial(RelapseEnv, flags.dir)]
    return GridVecEnv(fns, envs_per_worker=1, restart_on_crash=True)


def _assert_usable_after_reset(envs: GridVecEnv) -> None:
    with pytest.raises(WorkerCrashedError, match=r"worker 1 is dead.*reset\(\) restarts it"):
        envs.step(np.zeros(2, np.int64))  # a clear error, not AlreadyPendingCallError
    obs, info = envs.reset(seed=3)
    assert obs.shape == (2, 3) and info["seed"].tolist() == [3, 4]
    _, _, terminated, truncated, _ = envs.step(np.ones(2, np.int64))
    assert not terminated.any() and not truncated.any()
    assert envs.get_attr("t") == (1, 1)


def test_restart_whose_factory_raises_leaves_a_usable_env(flags):
    envs = _relapse_envs(flags)
    envs.reset(seed=0)
    flags("step", "init")
    with pytest.raises(RuntimeError, match="init flag is set") as info:
        envs.step(np.zeros(2, np.int64))
    assert info.value.env_index == 1  # the note naming the sub-env is kept
    flags()
    _assert_usable_after_reset(envs)
    assert envs.restarts == 2
    envs.close()


def test_restarted_worker_that_dies_again_leaves_a_usable_env(flags):
    envs = _relapse_envs(flags)
    envs.reset(seed=0)
    flags("step", "reset")
    with pytest.raises(WorkerCrashedError, match=r"restarted workers \[1\] died again") as info:
        envs.step(np.zeros(2, np.int64))
    assert info.value.env_ids == (1,)
    flags()
    _assert_usable_after_reset(envs)
    envs.close()


def test_reset_that_cannot_restart_a_worker_raises_and_the_next_reset_works(flags):
    envs = _relapse_envs(flags)
    envs.reset(seed=0)
    flags("step", "init")
    with pytest.raises(RuntimeError, match="init flag is set"):
        envs.step(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match="init flag is set"):
        envs.reset(seed=1)  # the restart fails again: still a clear error
    flags()
    envs.reset(seed=1)
    envs.step(np.zeros(2, np.int64))
    assert envs.restarts == 3
    envs.close()


PARENT = """
import json, os, sys, time
import cloudpickle, numpy as np
sys.path.insert(0, {tests!r})
import vec_toy_envs
cloudpickle.register_pickle_by_value(vec_toy_envs)
from grid_vec.vector import GridVecEnv
if __name__ == "__main__":
    fn = lambda: vec_toy_envs.LongStepEnv({marks!r})
    envs = GridVecEnv([fn, fn], envs_per_worker=1)
    envs.reset()
    print(json.dumps(envs.worker_pids()), flush=True)
    envs.step_async(np.zeros(2, np.int64))
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_inside_a_long_step_die_with_a_sigkilled_parent(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(PARENT.format(tests=str(Path(__file__).parent), marks=str(marks)))
    )
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        pids = json.loads(parent.stdout.readline())
        deadline = time.monotonic() + 30
        while len(os.listdir(marks)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sorted(int(name) for name in os.listdir(marks)) == sorted(pids)  # in the step
        parent.kill()
        parent.wait()
        assert wait_gone(pids, bound=10.0) == []
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        for pid in pids if "pids" in locals() else []:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_workers_started_from_a_thread_outlive_that_thread():
    # PR_SET_PDEATHSIG fires when the starting *thread* ends: only the main thread may use it
    made: list[GridVecEnv] = []
    thread = threading.Thread(target=lambda: made.append(GridVecEnv([CountEnv])))
    thread.start()
    thread.join()
    envs = made[0]
    envs.reset(seed=0)
    envs.step(np.zeros(1, np.int64))
    assert all(alive(pid) for pid in envs.worker_pids())
    envs.close()
