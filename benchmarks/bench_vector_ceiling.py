"""GridVecEnv on two workers against what the machine allows: two independent in-process
batches of the same split, run side by side (the GridVecEnv III issue's reference).

Subjects, each stepping ``--envs`` envs of one grid (resets included: autoreset inside the
timed loop), env-steps/s and µs per env-step:

* one batch: ``make_vec(grid, n, vectorization="batched")`` in this process (one core);
* two batches: two processes, each stepping a batch of ``n / 2`` in-process, started together
  and timed together (their env-steps/s added): the ceiling of a 2-way split;
* GridVecEnv: ``make_vec(grid, n, envs_per_worker=n / 2)``, the default settings (since
  2026-12-07 ``step_in_parent``: one worker process steps one half while the parent steps
  the other itself, with the worker's engine); "2 workers": ``step_in_parent=False``, two
  worker processes and the parent spinning on their doorbells (the default before), and
  the same with ``spin_us=0`` (every wait sleeps on the pipes).

Each repetition times every subject for ``--seconds`` in turn, starting one further along
the list each time, so machine noise hits all alike; medians over ``--reps`` with the spread,
and the load. grid_vec plays the ``flat`` reward (no reward's cost in the figures).

    python benchmarks/bench_vector_ceiling.py [--grids l2rpn_case14_sandbox case118]
        [--actions do-nothing random] [--envs 32] [--reps 3] [--seconds 2] [--out OUT]

JSON: OUT/bench_vector_ceiling.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.protocol import describe_machine
from grid_vec.bench.report import format_subject_rows, subject_summaries
from grid_vec.bench.workloads import SANDBOX, grid_target, timed_steps

SUBJECTS = (
    "one batch",
    "two batches",
    "GridVecEnv",
    "GridVecEnv 2 workers",
    "GridVecEnv 2 workers spin_us=0",
)


def _batch_process(conn: Any, grid: str, n: int, actions: str, seconds: float) -> None:
    """One of the two side-by-side batches: built, then timed when the parent says go."""
    env = grid_vec.make_vec(grid_target(grid), n, vectorization="batched", reward="flat")
    try:
        conn.send("ready")
        conn.recv()
        conn.send(timed_steps(env, n, actions, seconds))
    finally:
        env.close()


def two_batches(grid: str, n: int, actions: str, seconds: float) -> float:
    """The added env-steps/s of two batches of ``n / 2`` in two processes, timed together."""
    context = mp.get_context("fork")
    ends, processes = [], []
    try:
        for _ in range(2):
            mine, theirs = context.Pipe()
            args = (theirs, grid, n // 2, actions, seconds)
            process = context.Process(target=_batch_process, args=args, daemon=True)
            process.start()
            ends.append(mine)
            processes.append(process)
        for end in ends:
            end.recv()
        for end in ends:
            end.send("go")
        return sum(end.recv() for end in ends)
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()


def one_batch(grid: str, n: int, actions: str, seconds: float) -> float:
    env = grid_vec.make_vec(grid_target(grid), n, vectorization="batched", reward="flat")
    try:
        return timed_steps(env, n, actions, seconds)
    finally:
        env.close()


def grid_vec_env(**vector: Any) -> Callable[[str, int, str, float], float]:
    def run(grid: str, n: int, actions: str, seconds: float) -> float:
        env = grid_vec.make_vec(
            grid_target(grid), n, envs_per_worker=n // 2, reward="flat", vector_kwargs=vector
        )
        try:
            return timed_steps(env, n, actions, seconds)
        finally:
            env.close()

    return run


RUNS: dict[str, Callable[[str, int, str, float], float]] = {
    "one batch": one_batch,
    "two batches": two_batches,
    "GridVecEnv": grid_vec_env(),
    "GridVecEnv 2 workers": grid_vec_env(step_in_parent=False),
    "GridVecEnv 2 workers spin_us=0": grid_vec_env(step_in_parent=False, spin_us=0),
}


def measure(grid: str, n: int, actions: str, reps: int, seconds: float) -> dict[str, Any]:
    """Every subject ``reps`` times, in a rotating order; medians, spreads, ratios."""
    samples: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    for rep in range(reps):
        order = SUBJECTS[rep % len(SUBJECTS) :] + SUBJECTS[: rep % len(SUBJECTS)]
        for name in order:
            samples[name].append(RUNS[name](grid, n, actions, seconds))
    return {
        "grid": grid,
        "actions": actions,
        "envs": n,
        "subjects": subject_summaries(samples, "two batches", "of_the_ceiling"),
        "load": os.getloadavg(),
    }


def format_rows(results: list[dict[str, Any]]) -> str:
    return format_subject_rows(results, "of_the_ceiling", "of two batches")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="+", default=[SANDBOX, "case118"])
    parser.add_argument("--actions", nargs="+", default=["do-nothing", "random"])
    parser.add_argument("--envs", type=positive_int, default=32, help="an even number")
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=2.0)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    if args.envs % 2:
        parser.error(f"--envs must be even (a 2-way split), got {args.envs}")
    results = []
    for grid in args.grids:
        for actions in args.actions:
            results.append(measure(grid, args.envs, actions, args.reps, args.seconds))
            print(format_rows(results[-1:]).split("\n", 2)[-1], flush=True)
    print(format_rows(results))
    doc = {
        "benchmark": "bench_vector_ceiling",
        "command": " ".join(
            ["python", "benchmarks/bench_vector_ceiling.py", *(argv or sys.argv[1:])]
        ),
        "machine": describe_machine().as_dict(),
        "reps": args.reps,
        "seconds": args.seconds,
        "results": results,
        "numpy": np.__version__,
    }
    write_result(doc, args.out, "bench_vector_ceiling.json")
    return doc


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
