"""Forked workers (``grid_vec/vector/launch.py``): chosen only when it is safe, and a forked
worker carries nothing of its parent but what it needs.

Each parent is a real subprocess, so that the threads it runs and the modules it loads are
exactly the program's (the test process may run threads of its own).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import gymnasium as gym
import numpy as np
import pytest
from process_checks import live_children, shm_entries

from grid_vec.vector import GridVecEnv
from grid_vec.vector.launch import FORK_UNSAFE_MODULES, fork_is_safe


def _parent(program: str, tmp_path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``program`` as a fresh Python process in ``tmp_path``; it must exit 0."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return out


BUILD = """
import gymnasium as gym
import numpy as np
from grid_vec.vector import GridVecEnv

def make():
    return gym.make("CartPole-v1")

def forked_and_steps(**kwargs):
    envs = GridVecEnv([make] * 2, envs_per_worker=1, **kwargs)
    try:
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(np.zeros(2, dtype=np.int64))
        assert rewards.tolist() == [1.0, 1.0]
        return [w.process.forked for w in envs._workers]
    finally:
        envs.close()
"""


def test_a_single_threaded_parent_forks_its_workers(tmp_path):
    out = _parent(BUILD + "print(forked_and_steps())", tmp_path)
    assert out.stdout.strip() == "[True, True]"


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_context_spawn_or_forkserver_starts_fresh_interpreters(tmp_path, context):
    out = _parent(BUILD + f"print(forked_and_steps(context={context!r}))", tmp_path)
    assert out.stdout.strip() == "[False, False]"


def test_a_parent_running_another_thread_starts_fresh_interpreters(tmp_path):
    program = (
        BUILD
        + """
import threading
stop = threading.Event()
helper = threading.Thread(target=stop.wait)
helper.start()
print(forked_and_steps())
stop.set()
helper.join()
"""
    )
    assert _parent(program, tmp_path).stdout.strip() == "[False, False]"


def test_a_parent_with_a_thread_pool_library_loaded_starts_fresh_interpreters(tmp_path):
    # the module need not be the real library: being loaded under its name is what counts
    program = "import sys, types; sys.modules['torch'] = types.ModuleType('torch')\n" + BUILD
    assert _parent(program + "print(forked_and_steps())", tmp_path).stdout.strip() == (
        "[False, False]"
    )


def test_fork_is_safe_reflects_threads_and_loaded_modules(monkeypatch):
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        assert not fork_is_safe()
    finally:
        stop.set()
        helper.join()
    if threading.active_count() == 1:  # this process may run threads of other tests' making
        assert fork_is_safe() is not any(m in sys.modules for m in FORK_UNSAFE_MODULES)
        monkeypatch.setitem(sys.modules, "torch", sys)
        assert not fork_is_safe()


def test_a_forked_worker_runs_no_parent_exit_handler_finalizer_or_buffered_output(tmp_path):
    program = (
        BUILD
        + """
import atexit, gc, os, sys

def note(what):
    with open("notes.txt", "a") as f:
        f.write(f"{what} {os.getpid()}\\n")

atexit.register(note, "atexit")

class Finalized:
    def __del__(self):
        note("finalizer")

PARENT = os.getpid()

def make():  # collects garbage in a worker: none of the parent's may be found there
    if os.getpid() != PARENT:  # the parent builds one env too, to read the spaces
        gc.collect()
    return gym.make("CartPole-v1")

gc.disable()
cycle = Finalized()
cycle.me = cycle  # garbage that only a collection finds, and none runs in the parent yet
del cycle
sys.stdout.write("buffered before the workers start;")  # no newline, not flushed
forked = forked_and_steps()
gc.enable()
gc.collect()
print(forked, os.getpid())
"""
    )
    out = _parent(program, tmp_path)
    head, tail = out.stdout.strip().split(";")
    assert head == "buffered before the workers start"
    forked, parent_pid = tail.rsplit(" ", 1)
    assert forked == "[True, True]"
    notes = (tmp_path / "notes.txt").read_text().split()
    # the parent's own collection, then its own exit: each once, and no other process's
    assert notes == ["finalizer", parent_pid, "atexit", parent_pid]


def test_a_forked_worker_holds_only_its_own_descriptors_and_default_signal_handlers(tmp_path):
    program = (
        BUILD
        + """
import os, signal
import numpy as np
from grid_vec.vector import GridVecEnv

secret = open("secret.txt", "w")  # a descriptor of the parent's own
signal.signal(signal.SIGTERM, lambda *a: open("handled.txt", "w").close())
envs = GridVecEnv([make] * 2, envs_per_worker=1)
envs.reset(seed=0)
worker = envs._workers[0].process
assert worker.forked
fds = os.listdir(f"/proc/{worker.pid}/fd")
targets = [os.readlink(f"/proc/{worker.pid}/fd/{fd}") for fd in fds]
print(any(t.endswith("secret.txt") for t in targets))
os.kill(worker.pid, signal.SIGTERM)  # the default action: the worker ends, no handler runs
worker.join(30)
print(worker.exitcode)
envs.close()
"""
    )
    lines = _parent(program, tmp_path).stdout.split()
    assert lines == ["False", str(-15)]
    assert not (tmp_path / "handled.txt").exists()


def test_a_forked_workers_logging_lands_in_the_parents_log_file(tmp_path):
    program = (
        BUILD
        + """
import logging, os
logging.basicConfig(filename="run.log", level=logging.INFO, format="%(process)d %(message)s")

def make():
    logging.getLogger("env").info("built in a worker")
    return gym.make("CartPole-v1")

print(forked_and_steps(), os.getpid())
"""
    )
    forked, parent_pid = _parent(program, tmp_path).stdout.strip().rsplit(" ", 1)
    assert forked == "[True, True]"
    lines = (tmp_path / "run.log").read_text().splitlines()
    workers = [line for line in lines if line.endswith("built in a worker")]
    # the parent builds one env to read the spaces, each worker its own
    assert len(workers) == 3 and len({line.split()[0] for line in workers} - {parent_pid}) == 2


def test_forked_workers_leave_no_process_or_shared_memory_behind():
    before = shm_entries()
    envs = GridVecEnv([lambda: gym.make("CartPole-v1")] * 2, envs_per_worker=1)
    pids = [w.process.pid for w in envs._workers]
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=np.int64))
    envs.close()
    assert not set(pids) & set(live_children(os.getpid()))
    assert shm_entries() == before
