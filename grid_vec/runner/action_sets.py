"""Reduced action sets of the named tasks: the catalog actions greedy-by-simulate picks.

A task with hundreds of discrete actions, most of which end an episode within a few steps,
is hard to explore; published setups restrict the agent to the actions a good expert uses.
:func:`count_greedy_picks` plays the greedy baseline (each decision point: the legal action
whose simulated step has the lowest maximum line loading, do-nothing on ties) on a task's
training scenarios, with the whole catalog, and counts how often it picks each action;
:func:`reduced_action_set` keeps do-nothing and the ``size`` most picked. The set a task plays
by default is shipped in the package (``grid_vec/env/data/action_sets/``, read-only data, read
by :mod:`grid_vec.env.tasks`); the command that wrote it, which now writes into the working
directory (or ``--out DIR``), never into the package::

    grid-vec actions grid_vec/Case14Topology-v0 --scenarios 64 --size 30

A written set is played with ``grid_vec.make(task, action_set=PATH)`` or ``--action-set PATH``
on ``grid-vec eval`` and ``grid-vec run``.

Deterministic: the scenarios are the first ``scenarios`` of the training split, each seeded
with its position, and the count does not depend on the number of processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._signals import sigint_ignored
from grid_vec.env.tasks import TASKS, action_set_path
from grid_vec.runner.agents import candidate_scores
from grid_vec.runner.progress import make_bars


def greedy_choice(env: Any, mask: np.ndarray | None) -> int:
    """The legal catalog action whose simulated step has the lowest maximum rho (do-nothing
    first on ties; actions ending the game or illegal rank last): ``GreedyAgent(rank=
    "max_rho")``'s ranking (:func:`~grid_vec.runner.agents.simulated_score`) on one env,
    trying only the actions its mask allows, all of them in one ``simulate_candidates`` call.

    Args:
        env: a started GridEnv (unwrapped).
        mask: its ``info["action_mask"]``, or None (every action tried).

    Returns:
        The action.
    """
    candidates = np.flatnonzero(mask) if mask is not None else np.arange(env.action_space.n)
    found = env.simulate_candidates(candidates)
    return int(candidates[np.argmax(candidate_scores(found, by_rho=True))])


def _count_scenarios(
    task_id: str, positions: Sequence[int], max_steps: int | None = None, bar: Any = None
) -> np.ndarray:
    """The greedy picks (one count per catalog action) over the training scenarios at
    ``positions`` (within the split), each played to its end or its first ``max_steps``
    decisions; ``bar`` (a progress bar, or None) counts the scenarios played."""
    from grid_vec.env.make import make

    env = make(task_id, split="train", action_subset=None, action_mask=True)
    counts = np.zeros(len(env.unwrapped.catalog), dtype=np.int64)
    for position in positions:
        _, info = env.reset(seed=int(position), options={"scenario_id": int(position)})
        done, decisions = False, 0
        while not done and (max_steps is None or decisions < max_steps):
            action = greedy_choice(env.unwrapped, info.get("action_mask"))
            counts[action] += 1
            decisions += 1
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        if bar is not None:
            bar.update(1)
    env.close()
    return counts


def count_greedy_picks(
    task_id: str,
    scenarios: int,
    workers: int = 1,
    max_steps: int | None = None,
    pbar: Any = False,
) -> np.ndarray:
    """How often greedy-by-simulate picks each catalog action on the first ``scenarios`` of
    the task's training split.

    Args:
        task_id: a named task with discrete actions.
        scenarios: how many training scenarios to play (from the first).
        workers: processes to play them in (the counts do not depend on it).
        max_steps: decisions per scenario at most (None: each scenario to its end).
        pbar: progress in scenarios played, as :meth:`~grid_vec.runner.Runner.run` takes it
            (``"auto"``: tqdm on a terminal, a plain line elsewhere).

    Returns:
        (n_catalog,) int64 counts.

    Raises:
        ValueError: an unknown task, or ``scenarios`` / ``workers`` below 1 or ``scenarios``
            beyond the split.
        KeyboardInterrupt: a Ctrl-C, raised once the worker processes are stopped (they
            ignore SIGINT themselves, leaving its answer to this process); an error of a job
            stops them too before it is raised.
    """
    if task_id not in TASKS:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    if TASKS[task_id].dataset:
        raise ValueError(f"{task_id} plays a dataset: reduced sets are for embedded tasks only")
    n_train = len(TASKS[task_id].splits["train"])
    if not 1 <= scenarios <= n_train:
        raise ValueError(f"scenarios must be in [1, {n_train}], got {scenarios}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be >= 1 or None, got {max_steps}")
    bar, _, owned = make_bars(pbar, scenarios, desc="scenarios")
    try:
        if workers == 1:
            return _count_scenarios(task_id, range(scenarios), max_steps, bar)
        # one job a scenario, so that progress is seen as scenarios end (a job builds its
        # env from the compiled-grid cache: milliseconds)
        counts = None
        pool = ProcessPoolExecutor(min(workers, scenarios), initializer=_ignore_sigint)
        try:
            with _sigint_held():  # the pool's processes start in the first submit
                jobs = [
                    pool.submit(_count_scenarios, task_id, [p], max_steps) for p in range(scenarios)
                ]
            for job in as_completed(jobs):
                counts = job.result() if counts is None else counts + job.result()
                bar.update(1)
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown()
        return counts
    finally:
        if owned:
            bar.close()


def _ignore_sigint() -> None:
    """Initializer of the pool's processes: a Ctrl-C is the parent's to answer (it stops the
    pool, and the CLI prints its one line); a process that raised KeyboardInterrupt too would
    print its own traceback. Started with SIGINT blocked (:func:`_sigint_held`), it ignores
    the signal before unblocking it, so that none held meanwhile reaches it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Block SIGINT in this thread for the block (where the platform can): a process forked
    or started meanwhile inherits the mask, so a Ctrl-C before its initializer ignores the
    signal cannot interrupt it; this process receives the Ctrl-C when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` at once after a Ctrl-C or an error: cancel the jobs not started and end
    the processes playing one (the pool's own shutdown would wait for each job to finish,
    and its processes ignore SIGINT). Runs with Ctrl-C ignored, so that a second one cannot
    leave processes behind."""
    with sigint_ignored():
        # the executor lists its processes only in a private attribute (Python 3.14 adds
        # terminate_workers(), which does not join them)
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5.0)
            if process.is_alive():  # SIGTERM handled or held: not left running
                process.kill()
                process.join()


def reduced_action_set(counts: np.ndarray, size: int) -> list[int]:
    """Do-nothing, then the ``size`` most picked other actions (ties: lowest index first);
    actions never picked are left out.

    Raises:
        ValueError: ``size`` below 1.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    order = np.argsort(-counts[1:], kind="stable") + 1
    picked = [int(a) for a in order[:size] if counts[a] > 0]
    return [0, *picked]


def action_set_output(task_id: str, directory: str | os.PathLike[str]) -> Path:
    """The file :func:`write_action_set` writes under ``directory``.

    Raises:
        ValueError: it is the set shipped in the package (read-only data).
    """
    path = Path(directory) / action_set_path(task_id).name
    if path.resolve() == action_set_path(task_id).resolve():
        raise ValueError(f"{path} is the action set shipped in the package: write elsewhere")
    return path


def write_action_set(
    task_id: str,
    scenarios: int,
    size: int,
    workers: int = 1,
    directory: str | os.PathLike[str] = ".",
    max_steps: int | None = None,
    pbar: Any = False,
) -> Path:
    """Count the greedy picks, keep the reduced set and write it under ``directory``, named
    as the task's shipped file (``case14topology.json``), which is never overwritten.

    Args:
        task_id, scenarios, workers, max_steps, pbar: as :func:`count_greedy_picks`'s.
        size: as :func:`reduced_action_set`'s.
        directory: where to write (created if needed; default: the working directory).

    Returns:
        The file written (atomically: a temporary file renamed).
    """
    from grid_vec.env.make import make

    path = action_set_output(task_id, directory)
    counts = count_greedy_picks(task_id, scenarios, workers, max_steps, pbar)
    actions = reduced_action_set(counts, size)
    env = make(task_id, split="train", action_subset=None)
    command = f"grid-vec actions {task_id} --scenarios {scenarios} --size {size}"
    data = {
        "task": task_id,
        "command": command + ("" if max_steps is None else f" --max-steps {max_steps}"),
        "scenarios": scenarios,
        "decisions": int(counts.sum()),
        "actions": actions,
        "picks": [int(counts[a]) for a in actions],
        "described": [env.unwrapped.describe_action(a) for a in actions],
    }
    env.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)
    return path
