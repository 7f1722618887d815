"""Long jobs are not silent: ``pbar="auto"`` draws tqdm's bars on a terminal and writes a
periodic plain line elsewhere."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

import pytest

from grid_vec.runner.progress import LineBar, NoBar, make_bars


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_bar_writes_at_most_one_line_per_period_and_one_when_closed(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("grid_vec.runner.progress.time.monotonic", clock)
    out = io.StringIO()
    bar = LineBar(total=4, desc="episodes", stream=out, period=30.0)
    bar.update()  # t = 0: too soon
    clock.now = 31.0
    bar.update()
    clock.now = 40.0
    bar.update()  # 9 s after the last line: too soon
    clock.now = 75.0
    bar.update()
    bar.close()
    bar.close()  # once only
    assert out.getvalue().splitlines() == [
        "episodes: 2/4 (50%), 31 s",
        "episodes: 4/4 (100%), 75 s",
        "episodes: 4/4 (100%), 75 s",
    ]


def test_auto_off_a_terminal_is_a_line_bar_of_episodes(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    episodes, steps, owned = make_bars("auto", 7)
    assert isinstance(episodes, LineBar) and episodes.total == 7
    assert isinstance(steps, NoBar) and owned


_RUN_WITH_AUTO = textwrap.dedent(
    """
    import grid_vec
    from grid_vec.runner import Runner
    from grid_vec.runner.agents import DoNothingAgent

    if __name__ == "__main__":
        with Runner([lambda: grid_vec.make("case14")], DoNothingAgent()) as runner:
            runner.run(2, max_iter=5, pbar="auto")
    """
)


def _stderr_of_runner(tmp_path, *, terminal: bool) -> str:
    script = tmp_path / "run_auto.py"
    script.write_text(_RUN_WITH_AUTO, encoding="utf-8")
    return _stderr_of([sys.executable, str(script)], terminal=terminal)


def _stderr_of(argv: list[str], *, terminal: bool) -> str:
    """The standard error of ``argv`` run to its end, written to a pipe or to a terminal."""
    if not terminal:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stderr
    parent, child = pty.openpty()
    # a terminal of 100 columns (a fresh pseudo-terminal has 0, where tqdm draws nothing)
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        process = subprocess.Popen(argv, stderr=child, stdout=subprocess.DEVNULL)
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(parent, 4096)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert process.wait(timeout=120) == 0
    finally:
        os.close(parent)
    return b"".join(chunks).decode("utf-8", "replace")


def test_auto_on_a_terminal_draws_tqdm_bars(tmp_path):
    stderr = _stderr_of_runner(tmp_path, terminal=True)
    assert "episodes: 100%" in stderr and "2/2" in stderr  # tqdm's bar, redrawn in place
    assert "\r" in stderr


def test_auto_off_a_terminal_writes_the_final_count_as_a_plain_line(tmp_path):
    stderr = _stderr_of_runner(tmp_path, terminal=False)
    assert "episodes: 2/2 (100%)" in stderr
    assert "\r" not in stderr


_EVAL = [sys.executable, "-m", "grid_vec_launcher", "eval", "grid_vec/Case14Topology-v0"]
_EVAL_ARGS = ["--agent", "do-nothing", "--scenarios", "2", "--num-envs", "1"]


def test_grid_vec_eval_shows_its_progress_on_a_terminal():
    stderr = _stderr_of([*_EVAL, *_EVAL_ARGS], terminal=True)
    assert "episodes: 100%" in stderr and "2/2" in stderr


@pytest.mark.slow
def test_grid_vec_eval_off_a_terminal_writes_progress_lines_and_no_progress_silences_them():
    assert "episodes: 2/2 (100%)" in _stderr_of([*_EVAL, *_EVAL_ARGS], terminal=False)
    assert "episodes" not in _stderr_of([*_EVAL, *_EVAL_ARGS, "--no-progress"], terminal=False)


# what the grid-vec console script runs (as tests/test_cli_trust.py's COMMAND)
_RUN = [sys.executable, "-m", "grid_vec_launcher", "run", "--num-envs", "1", "--no-save"]
_RUN_ARGS = ["--episodes", "3", "--max-iter", "4"]


def test_grid_vec_run_off_a_terminal_writes_progress_lines_and_no_progress_silences_them():
    # stderr a pipe, as in a log: eval's plain lines (LineBar), never tqdm's cursor codes
    stderr = _stderr_of([*_RUN, *_RUN_ARGS], terminal=False)
    assert "episodes: 3/3 (100%)" in stderr
    assert "\r" not in stderr and "\x1b" not in stderr
    assert "episodes" not in _stderr_of([*_RUN, *_RUN_ARGS, "--no-progress"], terminal=False)


def test_grid_vec_actions_counts_the_scenarios_it_played(tmp_path):
    argv = [sys.executable, "-m", "grid_vec_launcher", "actions", "grid_vec/Case14Topology-v0"]
    argv += ["--scenarios", "2", "--max-steps", "2", "--workers", "2", "--out", str(tmp_path)]
    assert "scenarios: 2/2 (100%)" in _stderr_of(argv, terminal=False)
