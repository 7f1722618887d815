"""Ctrl-C during ``grid-vec actions --workers 2``: one line, exit status 130, no process left.

The command plays its scenarios in a process pool; a real ``grid-vec`` process gets a real
SIGINT while its pool's processes play. A terminal's Ctrl-C reaches the whole foreground
process group (the pool's processes too); ``kill -INT`` reaches the command alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_checks import live_children, wait_gone

TOPOLOGY = "grid_vec/Case14Topology-v0"
# what the grid-vec console script runs (pyproject.toml's entry point)
COMMAND = [sys.executable, "-m", "grid_vec_launcher"]
WORKERS = 2


@pytest.mark.timeout(60)
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the pool's processes in /proc")
# a job takes seconds: 0 s lands as the pool's processes start (before their initializer
# ran), 1 s while they build their env, 2 s while they play
@pytest.mark.parametrize(("target", "delay"), [("group", 0.0), ("group", 2.0), ("command", 1.0)])
def test_ctrl_c_during_actions_with_workers_prints_one_line_exits_130_and_leaves_no_process(
    target, delay, tmp_path
):
    # 8 whole scenarios of greedy-by-simulate: far longer than the test waits
    argv = ["actions", TOPOLOGY, "--scenarios", "8", "--workers", str(WORKERS)]
    proc = subprocess.Popen(
        [*COMMAND, *argv, "--no-progress", "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 30
        while len(live_children(proc.pid)) < WORKERS:  # the pool starts with its first job
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no pool process within 30 s"
            time.sleep(0.01)
        time.sleep(delay)
        pool = live_children(proc.pid)
        assert proc.poll() is None
        start = time.monotonic()
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert [line for line in err.splitlines() if line.strip()] == ["grid-vec: interrupted"], err
    assert out == ""  # nothing written: the set is not complete
    assert not list(tmp_path.iterdir())
    assert elapsed < 5.0, elapsed  # the running jobs are stopped, not waited for
    assert len(pool) == WORKERS
    assert wait_gone(pool, bound=5.0) == []
