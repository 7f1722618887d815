"""Throughput against the number of workers: GridVecEnv beside LightEnv processes and
gymnasium's AsyncVectorEnv, for the sandbox and case118, do-nothing and random topology.

For each grid and each worker count ``w`` (1, 2, 4, 8, 16, capped at the usable cores;
``--workers`` to choose), resets included (autoreset inside the timed loop), env-steps/s:

* GridVecEnv: ``make_vec(grid, w * E, envs_per_worker=E)``, default settings: ``w`` slices
  of ``E`` envs (``--envs-per-worker``, default 16), each stepped as one batch; from 2
  slices on, ``w - 1`` worker processes and the parent steps the last one
  (``step_in_parent``);
* GridVecEnv all in workers: the same slices with ``step_in_parent=False``: ``w`` worker
  processes, the parent waiting on their doorbells;
* LightEnv x w: ``w`` processes each running one lightsim2grid LightEnv (C++), timed together
  (as ``bench_batched.py``'s LightEnv x2; on the env's grid, scenario, rules and catalog);
* AsyncVectorEnv: gymnasium's, ``w`` GridEnvs, one per process (its design);
* one batch (the "one core" reference): ``make_vec(grid, E, vectorization="batched")``, one
  process, no worker: the scaling column divides by it.

Each repetition times every (subject, actions) cell of a (grid, w) for ``--seconds``, in an
order shifted by one at each repetition, so machine noise hits all alike; medians over
``--reps`` with the min..max spread, and the load average. grid_vec plays the ``flat``
reward (no reward's cost in the figures).

    python benchmarks/bench_scaling.py [--grids l2rpn_case14_sandbox case118]
        [--workers 1 2 4] [--envs-per-worker 16] [--reps 3] [--seconds 2] [--plot PNG]
        [--out OUT]

JSON: OUT/bench_scaling.json (with --out OUT). ``--plot PNG``: env-steps/s against workers,
one panel per (grid, actions), the spread as error bars.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.protocol import describe_machine
from grid_vec.bench.workloads import SANDBOX, action_table, grid_target
from grid_vec.vector.arguments import usable_cpus

MODES = ("do-nothing", "random")
WORKERS = (1, 2, 4, 8, 16)
SEED = 0
GRIDVEC, IN_WORKERS, LIGHT, ASYNC, ONE = (
    "GridVecEnv",
    "GridVecEnv all in workers",
    "LightEnv processes",
    "AsyncVectorEnv",
    "one batch (1 core)",
)


@dataclass
class Cell:
    """One (subject, actions) of a (grid, workers): ``timed(seconds)`` returns (elapsed s,
    env-steps)."""

    subject: str
    actions: str
    timed: Callable[[float], tuple[float, int]]
    samples: list[float] = field(default_factory=list)  # env-steps/s


def stepping(envs: Any, n: int, mode: str) -> Callable[[float], tuple[float, int]]:
    """A vector env of ``n`` envs stepped for ``seconds`` with a seeded action table."""
    rows = itertools.cycle(action_table(int(envs.single_action_space.n), n, mode, SEED))
    for _ in range(10):  # warm-up: caches, branch predictors, the doorbell's first rings
        envs.step(next(rows))

    def timed(seconds: float) -> tuple[float, int]:
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            envs.step(next(rows))
            steps += n
        return elapsed, steps

    return timed


def vector_cells(name: str, envs: Any, n: int, closers: list) -> list[Cell]:
    closers.append(envs.close)
    envs.reset(seed=SEED)
    return [Cell(name, mode, stepping(envs, n, mode)) for mode in MODES]


def _light_process(conn: Any, grid: str) -> None:
    """One LightEnv of the LightEnv subject: answers (mode, seconds) with (elapsed, steps)."""
    from grid_vec.bench.lightenv import LightEnvSession

    session = LightEnvSession(grid_vec.make(grid_target(grid)), SEED)
    runs = {mode: session.runner(mode) for mode in MODES}
    for run in runs.values():
        run(50)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        run, seconds = runs[msg[0]], msg[1]
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            steps += run(16)
        conn.send((elapsed, steps))


def light_cells(grid: str, workers: int, closers: list) -> list[Cell]:
    """``workers`` LightEnv processes, started together and timed together: the slowest
    one's time, every one's steps."""
    try:
        import grid_vec.bench.lightenv  # noqa: F401  (lightsim2grid's LightEnv)
    except ImportError as exc:
        print(f"  LightEnv not available: {exc}")
        return []
    # forked, as bench_vector_ceiling's batches: a spawned child could not import this
    # script when it is loaded as a module (the tests)
    ctx = mp.get_context("fork")
    pipes = [ctx.Pipe() for _ in range(workers)]
    procs = [ctx.Process(target=_light_process, args=(c, grid), daemon=True) for _, c in pipes]
    for proc in procs:
        proc.start()
    for _, child in pipes:
        child.close()  # the children's ends: a child that dies is then an EOF here
    conns = [parent for parent, _ in pipes]

    def close() -> None:
        for conn in conns:
            with contextlib.suppress(OSError):  # a process that died: killed below
                conn.send(None)
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join()

    closers.append(close)
    for conn in conns:
        try:
            ready = conn.recv()
        except EOFError:
            ready = None
        if ready != "ready":
            raise RuntimeError("a LightEnv process failed to start (see its stderr)")

    def together(mode: str) -> Callable[[float], tuple[float, int]]:
        def timed(seconds: float) -> tuple[float, int]:
            for conn in conns:
                conn.send((mode, seconds))
            answers = [conn.recv() for conn in conns]
            return max(a[0] for a in answers), sum(a[1] for a in answers)

        return timed

    return [Cell(LIGHT, mode, together(mode)) for mode in MODES]


def _grid_env(grid: str) -> Any:
    return grid_vec.make(grid_target(grid), reward="flat")


def subjects(grid: str, workers: int, per_worker: int, closers: list) -> list[Cell]:
    """Every cell of (grid, workers), opened and warmed up."""
    path, n = grid_target(grid), workers * per_worker
    cells = vector_cells(
        GRIDVEC, grid_vec.make_vec(path, n, envs_per_worker=per_worker, reward="flat"), n, closers
    )
    in_workers = {"step_in_parent": False}
    envs = grid_vec.make_vec(
        path, n, envs_per_worker=per_worker, reward="flat", vector_kwargs=in_workers
    )
    cells += vector_cells(IN_WORKERS, envs, n, closers)
    cells += light_cells(grid, workers, closers)
    fns = [lambda: _grid_env(grid)] * workers
    cells += vector_cells(ASYNC, AsyncVectorEnv(fns, context="fork"), workers, closers)
    if workers == 1:  # the one-core reference: measured once per grid, beside w = 1
        one = grid_vec.make_vec(path, per_worker, vectorization="batched", reward="flat")
        cells += vector_cells(ONE, one, per_worker, closers)
    return cells


def measure(grid: str, workers: int, per_worker: int, reps: int, seconds: float) -> list[dict]:
    """Medians (env-steps/s) and spreads of every cell of (grid, workers)."""
    closers: list[Callable[[], None]] = []
    try:
        cells = subjects(grid, workers, per_worker, closers)
        for rep in range(reps):
            shift = rep % len(cells)
            for cell in cells[shift:] + cells[:shift]:
                elapsed, steps = cell.timed(seconds)
                cell.samples.append(steps / elapsed)
    finally:
        for close in reversed(closers):
            close()
    load = os.getloadavg()
    return [
        {
            "grid": grid,
            "workers": workers,
            "envs_per_worker": per_worker,
            "subject": c.subject,
            "actions": c.actions,
            "env_steps_per_s": statistics.median(c.samples),
            "min": min(c.samples),
            "max": max(c.samples),
            "samples": c.samples,
            "load": load,
        }
        for c in cells
    ]


def add_scaling(rows: list[dict]) -> None:
    """Each row's throughput over the one-core reference of its grid and actions."""
    base = {(r["grid"], r["actions"]): r["env_steps_per_s"] for r in rows if r["subject"] == ONE}
    for r in rows:
        ref = base.get((r["grid"], r["actions"]))
        r["of_one_core"] = None if ref is None else r["env_steps_per_s"] / ref


def format_rows(rows: list[dict]) -> str:
    lines = [
        "| grid | actions | workers | subject | env-steps/s (min..max) | × one core |",
        "|---|---|---:|---|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["grid"], r["actions"], r["workers"])):
        scale = "" if r.get("of_one_core") is None else f"{r['of_one_core']:.2f}×"
        lines.append(
            f"| {r['grid']} | {r['actions']} | {r['workers']} | {r['subject']} | "
            f"{r['env_steps_per_s']:,.0f} ({r['min']:,.0f}..{r['max']:,.0f}) | {scale} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """env-steps/s against workers, one panel per (grid, actions), log-log."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((r["grid"], r["actions"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (grid, mode) in zip(axes[0], panels, strict=True):
        mine = [r for r in rows if (r["grid"], r["actions"]) == (grid, mode)]
        for subject in dict.fromkeys(r["subject"] for r in mine):
            pts = sorted((r for r in mine if r["subject"] == subject), key=lambda r: r["workers"])
            x = [r["workers"] for r in pts]
            y = np.array([r["env_steps_per_s"] for r in pts])
            err = [y - [r["min"] for r in pts], [r["max"] for r in pts] - y]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=subject)
        ax.set(title=f"{grid}\n{mode}", xlabel="workers (cores used)", ylabel="env-steps/s")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["workers"] for r in mine}))
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="+", default=[SANDBOX, "case118"])
    parser.add_argument(
        "--workers",
        nargs="+",
        type=positive_int,
        help="worker counts (default 1 2 4 8 16 up to the usable cores)",
    )
    parser.add_argument("--envs-per-worker", type=positive_int, default=16)
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=2.0)
    parser.add_argument("--plot", type=Path, metavar="PNG", help="write the curves as a PNG")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    cores = usable_cpus()
    workers = args.workers or [w for w in WORKERS if w <= cores]
    rows: list[dict] = []
    for grid in args.grids:
        for w in workers:
            print(f"{grid}: {w} worker(s)", flush=True)
            rows += measure(grid, w, args.envs_per_worker, args.reps, args.seconds)
    add_scaling(rows)
    print(format_rows(rows))
    if args.plot is not None:
        plot(rows, args.plot)
    command = ["python", "benchmarks/bench_scaling.py", *(sys.argv[1:] if argv is None else argv)]
    doc = {
        "benchmark": "bench_scaling",
        "command": " ".join(command),
        "machine": describe_machine().as_dict(),
        "usable_cores": cores,
        "reps": args.reps,
        "seconds": args.seconds,
        "rows": rows,
    }
    write_result(doc, args.out, "bench_scaling.json")
    return doc


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
