"""The Runner's executor object: the interface, the local default, and the layering it keeps
(``runner/`` imports nothing from ``integrations/``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from runner_toy_envs import StatefulRandomAgent, ToyEnv

from grid_vec.runner import EpisodeExecutor, Runner, VectorEnvExecutor

RUNNER_DIR = Path(__file__).resolve().parents[2] / "grid_vec" / "runner"


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` or ``from ... import`` of ``path`` names, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_runner_modules_import_nothing_from_integrations():
    files = sorted(RUNNER_DIR.glob("*.py"))
    assert len(files) > 5
    offending = {
        path.name: sorted(n for n in imported_modules(path) if n.startswith("grid_vec.integ"))
        for path in files
    }
    assert {k: v for k, v in offending.items() if v} == {}


def test_importing_and_running_the_runner_loads_no_integrations_module():
    code = (
        "import sys\n"
        "from gymnasium.vector import AutoresetMode, SyncVectorEnv\n"
        "from runner_toy_envs import ToyEnv\n"
        "from grid_vec.runner import DoNothingAgent, Runner\n"
        "env = SyncVectorEnv([ToyEnv], autoreset_mode=AutoresetMode.DISABLED)\n"
        "Runner(env, DoNothingAgent()).run(2)\n"
        "print(sorted(m for m in sys.modules if m.startswith('grid_vec.integrations')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,  # a bound on hangs
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


def sync(n: int) -> SyncVectorEnv:
    return SyncVectorEnv([ToyEnv] * n, autoreset_mode=AutoresetMode.DISABLED)


class CountingExecutor(EpisodeExecutor):
    """An executor of its own: plays on a local executor, counting what it is handed."""

    def __init__(self) -> None:
        self.inner = VectorEnvExecutor()
        self.played: list[list[int]] = []
        self.closed = 0

    def start(self, env, agent, idle_action) -> None:
        self.inner.start(env, agent, idle_action)

    def play(self, specs, max_iter, root, ep_bar, step_bar):
        self.played.append([s.index for s in specs])
        return self.inner.play(specs, max_iter, root, ep_bar, step_bar)

    def close(self) -> None:
        self.closed += 1
        self.inner.close()


def test_a_custom_executor_plays_the_episodes_with_local_results(tmp_path):
    with Runner(sync(2), StatefulRandomAgent(3), seed=4) as runner:
        reference = runner.run(5, max_iter=6)
    executor = CountingExecutor()
    with Runner([ToyEnv, ToyEnv], StatefulRandomAgent(3), seed=4, executor=executor) as runner:
        assert runner.env is None  # the base class plays nowhere in this process
        assert runner.run(3, max_iter=6, path_save=tmp_path) == reference[:3]
        # resume: the Runner loads the 3 recorded episodes and hands over only the others
        assert runner.run(5, max_iter=6, path_save=tmp_path, resume=True) == reference
    assert executor.played == [[0, 1, 2], [3, 4]]
    assert executor.closed == 1 and executor.inner.env.closed


def test_a_string_executor_is_refused_naming_the_ray_executor():
    env = sync(1)
    try:
        with pytest.raises(TypeError, match=r"executor='ray'.*integrations\.ray\.RayExecutor"):
            Runner(env, StatefulRandomAgent(3), executor="ray")
        with pytest.raises(TypeError, match="executor must be an EpisodeExecutor or None"):
            Runner(env, StatefulRandomAgent(3), executor=object())
    finally:
        env.close()


def test_an_executor_serves_one_runner_and_leaves_a_given_env_open():
    env = sync(2)
    try:
        executor = VectorEnvExecutor()
        with Runner(env, StatefulRandomAgent(3), executor=executor) as runner:
            assert runner.env is env
            with pytest.raises(RuntimeError, match="already serves a Runner"):
                Runner(env, StatefulRandomAgent(3), executor=executor)
        assert not env.closed
    finally:
        env.close()


def test_vector_env_executor_play_before_start_is_refused():
    with pytest.raises(RuntimeError, match=r"start\(\) the executor"):
        VectorEnvExecutor().play([], None, None, None, None)
