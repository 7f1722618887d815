"""grid2viz (grid2op's visualisation app) opens a run exported by ``grid-vec export``, and
its scenario-selection page renders the run's scenarios and agent in headless Chromium.

grid2viz's pins cannot live beside grid_vec's (numpy < 2, dash 2, plotly < 6): it runs from a
virtual environment of its own (``.ci/grid2viz-requirements.txt``), whose ``grid2viz``
executable ``GRID_VEC_GRID2VIZ`` names; Chromium is Debian's ``chromium``. Both are installed
by ``.ci/run``; without them the test skips. The screenshot is kept in
``$GRID_VEC_TEST_ARTIFACTS`` (the test's temporary directory by default).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("grid2op", reason="needs the grid2op extra")

import grid2op

from grid_vec.cli import main

pytestmark = [pytest.mark.grid2op, pytest.mark.slow]
SANDBOX = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
GRID2VIZ = os.environ.get("GRID_VEC_GRID2VIZ") or shutil.which("grid2viz")
CHROMEDRIVER = shutil.which("chromedriver")
PAGE_SCRIPT = Path(__file__).with_name("grid2viz_page.py")
HEADING = "Percentage of Agents' survival time over a scenario"
AGENT = "grid_vec_reconnect"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _grid2viz(agents: Path, port: int, log: Path):
    """grid2viz serving ``agents`` on ``port``, stopped (its whole process group) after."""
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                GRID2VIZ,
                "--agents_path",
                str(agents),
                "--env_path",
                str(SANDBOX),
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=agents,
            start_new_session=True,  # its pool's workers too are stopped with it
        )
        try:
            deadline = time.monotonic() + 180
            while True:
                assert server.poll() is None, f"grid2viz exited: {log.read_text()[-2000:]}"
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                        if page.status == 200:
                            break
                except OSError:
                    pass
                assert time.monotonic() < deadline, (
                    f"grid2viz never served: {log.read_text()[-2000:]}"
                )
                time.sleep(1)
            yield server
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def _page(url: str, screenshot: Path) -> list[str]:
    """The texts drawn in the charts of the page at ``url`` once drawn (a screenshot
    saved), read by Selenium in grid2viz's environment."""
    python = Path(GRID2VIZ).with_name("python")
    done = subprocess.run(
        [str(python), str(PAGE_SCRIPT), url, str(screenshot), HEADING, CHROMEDRIVER],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    GRID2VIZ is None or CHROMEDRIVER is None,
    reason="needs the grid2viz extra: a venv with grid2viz (GRID_VEC_GRID2VIZ, see .ci/run) "
    "and Debian's chromium and chromium-driver",
)
def test_grid2viz_renders_an_exported_run_in_headless_chromium(tmp_path):
    run, agents = tmp_path / "run", tmp_path / "agents"
    argv = ["run", "--env", str(SANDBOX), "--agent", "reconnect", "--episodes", "2"]
    assert main([*argv, "--max-iter", "30", "--save", str(run), "--no-progress"]) == 0
    assert main(["export", str(run), "--grid2op", str(agents / AGENT)]) == 0
    scenarios = sorted(p.name for p in (agents / AGENT).iterdir() if p.is_dir())
    assert len(scenarios) == 2
    artifacts = Path(os.environ.get("GRID_VEC_TEST_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    screenshot = artifacts / "grid2viz_scenario_selection.png"
    log = tmp_path / "grid2viz.log"
    port = _free_port()
    with _grid2viz(agents, port, log):
        drawn = _page(f"http://127.0.0.1:{port}/", screenshot)
    assert screenshot.stat().st_size > 10_000  # a page, not a blank
    # the scenario-selection page's survival heatmap: the agent's column, a row per scenario
    labels = [text.strip() for text in drawn]
    assert AGENT in labels and all(name in labels for name in scenarios), labels
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
