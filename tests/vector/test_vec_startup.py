"""Start-up: GridVecEnv works wherever a Python program can run on Linux, and workers that
die while starting are reported, never waited on forever.

Each program runs in a real subprocess; its workers are forked (a single-threaded program) or
fresh interpreters (``context="spawn"``, or a program running threads, as a notebook's kernel
does), see ``grid_vec/vector/launch.py``; neither imports the program's ``__main__``.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
import threading

import gymnasium as gym
import numpy as np
import pytest

from grid_vec.vector import GridVecEnv, WorkerCrashedError

# No __main__ guard, on purpose: spawn-started workers would re-run it (or fail to find it).
PROGRAM = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from grid_vec.vector import GridVecEnv

    print("top level ran", flush=True)

    def make():
        return gym.make("CartPole-v1")

    envs = GridVecEnv([make, lambda: gym.make("CartPole-v1")], envs_per_worker=1, context=None)
    envs.reset(seed=0)
    _, rewards, *_ = envs.step(np.zeros(2, dtype=np.int64))
    forked = [w.process.forked for w in envs._workers]
    envs.close()
    print("rewards", rewards.tolist(), flush=True)
    print("forked", forked, flush=True)
    """
)
STARTS = {None: "[True, True]", "spawn": "[False, False]"}  # context -> how workers started


def program(context: str | None) -> str:
    return PROGRAM.replace("context=None", f"context={context!r}")


def _run(args: list[str], cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _assert_ran_once(out: subprocess.CompletedProcess, context: str | None) -> None:
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    expected = ["top level ran", "rewards [1.0, 1.0]", f"forked {STARTS[context]}"]
    assert out.stdout.splitlines() == expected


@pytest.mark.parametrize("context", list(STARTS))
def test_program_piped_to_python_stdin_runs_its_vector_env_once(tmp_path, context):
    _assert_ran_once(_run(["-"], tmp_path, stdin=program(context)), context)


@pytest.mark.parametrize("context", list(STARTS))
def test_program_given_to_python_c_runs_its_vector_env_once(tmp_path, context):
    _assert_ran_once(_run(["-c", program(context)], tmp_path), context)


@pytest.mark.parametrize("context", list(STARTS))
def test_script_without_main_guard_runs_its_vector_env_once(tmp_path, context):
    script = tmp_path / "unguarded.py"
    script.write_text(program(context), encoding="utf-8")
    _assert_ran_once(_run([str(script)], tmp_path), context)


def test_notebook_cell_runs_a_vector_env(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    kernelspec = pytest.importorskip("ipykernel.kernelspec")
    kernelspec.install(kernel_name="grid-vec-startup", prefix=str(tmp_path))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRAM)])
    client = nbclient.NotebookClient(
        notebook, kernel_name="grid-vec-startup", timeout=120, resources={"metadata": {}}
    )
    client.execute(cwd=str(tmp_path))
    outputs = notebook.cells[0].outputs
    assert all(o.get("name") == "stdout" for o in outputs), outputs  # no error, no stderr
    text = "".join(o.text for o in outputs)
    # a kernel runs threads of its own: its workers are fresh interpreters
    assert text.splitlines() == ["top level ran", "rewards [1.0, 1.0]", "forked [False, False]"]


def test_factories_import_modules_from_the_parents_sys_path(tmp_path, monkeypatch):
    # a module found only through a sys.path entry added at run time (as notebooks do)
    (tmp_path / "startup_only_here.py").write_text(
        "import gymnasium as gym\n\ndef make():\n    return gym.make('CartPole-v1')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import startup_only_here

    envs = GridVecEnv([startup_only_here.make], envs_per_worker=1)
    try:
        assert envs.call("spec")[0].id == "CartPole-v1"
    finally:
        envs.close()


@pytest.mark.parametrize("context", [None, *multiprocessing.get_all_start_methods()])
def test_every_context_is_accepted_and_steps(context):
    envs = GridVecEnv([lambda: gym.make("CartPole-v1")] * 2, context=context)
    try:
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(np.zeros(2, dtype=np.int64))
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()


def test_unknown_context_raises_value_error():
    with pytest.raises(ValueError, match="context must be None or one of"):
        GridVecEnv([lambda: gym.make("CartPole-v1")], context="thread")


def test_vector_env_built_in_another_thread_steps():
    results = []

    def build_and_step() -> None:
        envs = GridVecEnv([lambda: gym.make("CartPole-v1")] * 2, envs_per_worker=1)
        envs.reset(seed=0)
        results.append(envs.step(np.zeros(2, dtype=np.int64))[1].tolist())
        envs.close()

    thread = threading.Thread(target=build_and_step)
    thread.start()
    thread.join(timeout=120)
    assert results == [[1.0, 1.0]]


class _ExitWhenUnpickled:
    """Kills the worker that unpickles it: a worker dying while loading its factories."""

    def __reduce__(self):
        import os

        return os._exit, (3,)


def test_worker_dying_while_loading_a_large_factory_raises_instead_of_hanging():
    # A factory far larger than a pipe buffer (64 KiB): the parent's write of it must not
    # stay blocked on a worker that died before reading it all.
    payload = np.ones(200_000, dtype=np.uint8)
    killer = _ExitWhenUnpickled()

    def make():
        assert payload.size and killer
        return gym.make("CartPole-v1")

    with pytest.raises(WorkerCrashedError, match="while starting") as info:
        GridVecEnv([make, make], envs_per_worker=1)
    assert "exit codes [3" in str(info.value)
