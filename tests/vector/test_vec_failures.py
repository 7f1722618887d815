"""Reliability: crashes, hangs, bad actions, leaks, gc and KeyboardInterrupt."""

from __future__ import annotations

import functools
import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from process_checks import alive, wait_gone
from vec_toy_envs import BadInitEnv, CountEnv, DictActionEnv, FaultyEnv, NestedEnv, SlowEnv

from grid_vec.vector import GridVecEnv, WorkerCrashedError, WorkerTimeoutError

pytestmark = pytest.mark.usefixtures("shm_and_children")


@pytest.mark.parametrize("fault", ["kill", "segfault"])
def test_dead_worker_is_reported_as_dead_not_timed_out_naming_lost_envs(fault):
    fns = [CountEnv, CountEnv, functools.partial(FaultyEnv, fault, at=2), CountEnv]
    envs = GridVecEnv(fns, envs_per_worker=2, step_timeout=60)
    envs.reset(seed=0)
    envs.step(np.zeros(4, np.int64))
    with pytest.raises(WorkerCrashedError, match=r"sub-envs \[2, 3\] lost") as info:
        envs.step(np.zeros(4, np.int64))
    assert type(info.value) is WorkerCrashedError  # seen by its sentinel, not step_timeout
    assert info.value.env_ids == (2, 3)
    with pytest.raises(WorkerCrashedError, match=r"\[2, 3\]"):
        envs.step(np.zeros(4, np.int64))  # stays an error, never a hang
    envs.close()
    envs.close()


@pytest.mark.timeout(30)  # the worker's step hangs for 60 s
def test_worker_killed_from_outside_during_wait_is_detected():
    envs = GridVecEnv([functools.partial(FaultyEnv, "hang", at=1)], context="fork")
    envs.reset()
    envs.step_async(np.zeros(1, np.int64))
    pid = envs.worker_pids()[0]
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerCrashedError, match=r"sub-envs \[0\] lost") as info:
        envs.step_wait()
    assert type(info.value) is WorkerCrashedError
    envs.close()
    assert not alive(pid)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_restart_on_crash_brings_envs_back_truncated(mode):
    fns = [CountEnv, functools.partial(FaultyEnv, "kill", at=2, episode_len=100)]
    envs = GridVecEnv(fns, envs_per_worker=1, restart_on_crash=True, autoreset_mode=mode)
    envs.reset(seed=0)
    old_pid = envs.worker_pids()[1]
    envs.step(np.zeros(2, np.int64))
    obs, reward, terminated, truncated, _ = envs.step(np.zeros(2, np.int64))
    assert truncated.tolist() == [False, True] and not terminated[1] and reward[1] == 0.0
    assert envs.restarts == 1 and envs.worker_pids()[1] != old_pid
    assert not alive(old_pid)
    assert obs.shape == (2, 3)
    if mode == AutoresetMode.NEXT_STEP:  # the step after a done is a reset step
        _, reward, _, truncated, _ = envs.step(np.zeros(2, np.int64))
        assert reward[1] == 0.0 and not truncated[1]
    _, _, _, truncated, _ = envs.step(np.zeros(2, np.int64))  # the new env steps on (t=1)
    assert not truncated.any()
    envs.close()


def test_restart_on_crash_during_reset_redoes_the_reset():
    fns = [CountEnv, functools.partial(FaultyEnv, "kill_on_reset", at=2)]
    envs = GridVecEnv(fns, envs_per_worker=1, restart_on_crash=True)
    envs.reset(seed=0)  # the factory's first reset happens in the restarted worker
    obs, info = envs.reset(seed=5)
    assert envs.restarts == 1 and envs.seeds == (5, 6)
    assert info["seed"].tolist() == [5, 6]
    expected = CountEnv().reset(seed=6)[0]
    np.testing.assert_array_equal(obs[1], expected)
    envs.close()


@pytest.mark.timeout(30)  # the worker's step hangs for 60 s
def test_step_timeout_kills_a_stuck_worker():
    envs = GridVecEnv([functools.partial(FaultyEnv, "hang", at=1)], step_timeout=0.3)
    envs.reset()
    pid = envs.worker_pids()[0]
    with pytest.raises(WorkerTimeoutError, match=r"step_timeout=0.3s.*sub-envs \[0\] lost"):
        envs.step(np.zeros(1, np.int64))
    assert not alive(pid)
    envs.close()


@pytest.mark.timeout(30)  # the worker's step hangs for 60 s
def test_close_with_timeout_terminates_a_stuck_worker():
    envs = GridVecEnv([functools.partial(FaultyEnv, "hang", at=1)])
    envs.reset()
    pid = envs.worker_pids()[0]
    envs.step_async(np.zeros(1, np.int64))
    envs.close(timeout=0.3)
    assert envs.closed and not alive(pid)


def test_step_timeout_with_restart_returns_truncated():
    fns = [functools.partial(FaultyEnv, "hang", at=1), CountEnv]
    envs = GridVecEnv(fns, envs_per_worker=1, step_timeout=0.3, restart_on_crash=True)
    envs.reset()
    _, _, _, truncated, _ = envs.step(np.zeros(2, np.int64))
    assert truncated.tolist() == [True, False]
    envs.close()


def test_late_reply_after_wait_timeout_is_discarded():
    envs = GridVecEnv([functools.partial(SlowEnv, 0.3)])
    envs.reset(seed=3)
    envs.step_async(np.zeros(1, np.int64))
    with pytest.raises(multiprocessing.TimeoutError):
        envs.step_wait(timeout=0.05)
    envs.set_attr("delay", 0.0)  # waits for the late reply first, then stays in step
    _, _, _, _, info = envs.step(np.zeros(1, np.int64))
    assert envs.get_attr("t") == (2,) and info == {}
    envs.close()


def test_bad_discrete_actions_raise_before_sending():
    envs = GridVecEnv([CountEnv, CountEnv])
    envs.reset(seed=0)
    for bad in [
        np.array([0, 3]),  # out of Discrete(3)
        np.array([0, -1]),
        np.array([0.0, 1.0]),  # float for a Discrete
        np.array([0, 1, 2]),  # wrong batch size
        np.array([[0], [1]]),  # wrong shape
        "01",
    ]:
        with pytest.raises(ValueError, match="actions"):
            envs.step(bad)
        envs.step([1, 2])  # nothing was sent: the env is usable at once
    envs.close()


def test_bad_composite_actions_raise_before_sending():
    envs = GridVecEnv([NestedEnv, NestedEnv, DictActionEnv][:2])
    envs.reset(seed=0)
    good = (np.array([0, 1]), np.zeros((2, 2), np.float32))
    for bad in [
        (np.array([0, 1]), np.full((2, 2), 1, np.complex64)),  # not a real number
        (np.array([0, 1]), np.full((2, 2), np.nan, np.float32)),
        (np.array([0, 1]),),
        {"a": 1},
    ]:
        with pytest.raises(ValueError):
            envs.step(bad)
    envs.step(good)
    envs.close()
    envs = GridVecEnv([DictActionEnv])
    envs.reset()
    with pytest.raises(ValueError, match="missing key 'mb'"):
        envs.step({"md": np.array([[0, 1]])})
    with pytest.raises(ValueError, match="integers 0 or 1"):
        envs.step({"md": np.array([[0, 1]]), "mb": np.array([[0, 2]])})
    envs.step({"md": np.array([[2, 1]]), "mb": np.array([[0, 1]])})
    envs.close()


def test_failed_sub_env_construction_is_reported_and_cleaned_up(monkeypatch):
    monkeypatch.setenv("GRID_VEC_TEST_PARENT", str(os.getpid()))
    with pytest.raises(RuntimeError, match="cannot build in a worker") as info:
        GridVecEnv([BadInitEnv, BadInitEnv])
    assert info.value.env_index in (0, 1)


def test_garbage_collection_without_close_stops_workers():
    envs = GridVecEnv([CountEnv, CountEnv], envs_per_worker=1)
    envs.reset()
    pids = envs.worker_pids()
    del envs
    gc.collect()
    assert wait_gone(pids) == []


SCRIPT = """
import json, os, signal, sys, threading, time
import cloudpickle, numpy as np
sys.path.insert(0, {tests!r})
import vec_toy_envs
cloudpickle.register_pickle_by_value(vec_toy_envs)
from grid_vec.vector import GridVecEnv
# Python's own Ctrl-C handler, whatever this interpreter inherited: a test run started in the
# background by a non-interactive shell passes SIGINT on ignored, and Python keeps it so
signal.signal(signal.SIGINT, signal.default_int_handler)
envs = GridVecEnv([vec_toy_envs.SlowEnv] * 2, envs_per_worker=1, daemon={daemon})
envs.reset()
envs.set_attr("delay", 0.5)
print(json.dumps(envs.worker_pids()), flush=True)
threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    envs.step(np.zeros(2, np.int64))
except KeyboardInterrupt:
    print("interrupted", flush=True)
{ending}
"""


@pytest.mark.parametrize(
    ("ending", "daemon"),
    [("envs.close()", True), ("os._exit(0)", True), ("raise SystemExit(0)", False)],
)
def test_no_process_left_after_interrupt_or_abrupt_exit(ending, daemon):
    code = SCRIPT.format(tests=str(Path(__file__).parent), ending=ending, daemon=daemon)
    repo = Path(__file__).parents[2]
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo,
    )
    lines = out.stdout.splitlines()
    assert "interrupted" in lines, out.stderr
    pids = json.loads(lines[0])
    assert wait_gone(pids) == []  # after os._exit, workers die with their parent


def test_fresh_worker_imports_stay_small_and_unpicklable_results_are_errors():
    # fresh interpreter: a forked worker would have whatever earlier tests imported here
    envs = GridVecEnv([CountEnv], context="spawn")
    assert envs.call("loaded_modules") == ([],)
    with pytest.raises(TypeError, match="generator"):
        envs.call("generator")
    assert envs.call("add", 1) == (1,)
    envs.close()
