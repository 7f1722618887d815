"""What the heuristics save an agent: env-steps per agent decision and agent decisions per
second, do-nothing agent, embedded case14 (``grid_vec.make("case14")``), with
``Heuristics(idle_below_rho=0.9)`` (and with line reconnection) against plain stepping.

Subjects: one GridEnv, and ``make_vec("case14", 32, vectorization="batched")`` (the rows
still idle are stepped together). Episodes that end are reset inside the timed loop (by hand
for GridEnv, by the vector env's autoreset, SAME_STEP, for the batch). Env-steps are the
batch's own count of steps played (``timings()["steps"]``), agent decisions the calls to
``step`` (times the number of envs). Each repetition times every subject for ``--seconds``
in turn; medians of the repetitions.

    python benchmarks/bench_heuristics.py [--reps 3] [--seconds 3] [--threshold 0.9]

JSON: OUT/bench_heuristics.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.core.rules.heuristics import Heuristics


def _single(heuristics: Heuristics | None) -> Any:
    env = grid_vec.make("case14", heuristics=heuristics)
    env.reset(seed=0)

    def run(seconds: float) -> tuple[int, int, float]:
        start_steps = env.timings()["steps"]
        decisions, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            *_, terminated, truncated, _ = env.step(0)
            decisions += 1
            if terminated or truncated:
                env.reset()
        return decisions, env.timings()["steps"] - start_steps, time.perf_counter() - t0

    return run


def _batched(heuristics: Heuristics | None, n: int = 32) -> Any:
    envs = grid_vec.make_vec(
        "case14",
        n,
        vectorization="batched",
        heuristics=heuristics,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    envs.reset(seed=0)
    actions = np.zeros(n, dtype=np.int64)

    def steps() -> int:
        return sum(t["steps"] for t in envs.timings())

    def run(seconds: float) -> tuple[int, int, float]:
        start_steps = steps()
        decisions, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            envs.step(actions)
            decisions += n
        return decisions, steps() - start_steps, time.perf_counter() - t0

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=3.0)
    parser.add_argument("--threshold", type=positive_float, default=0.9)
    add_out_argument(parser)
    args = parser.parse_args()
    idle = Heuristics(idle_below_rho=args.threshold)
    idle_reconnect = Heuristics(idle_below_rho=args.threshold, reconnect_lines=True)
    subjects = {
        "GridEnv plain": _single(None),
        "GridEnv idle": _single(idle),
        "GridEnv idle+reconnect": _single(idle_reconnect),
        "batched x32 plain": _batched(None),
        "batched x32 idle": _batched(idle),
        "batched x32 idle+reconnect": _batched(idle_reconnect),
    }
    for run in subjects.values():  # warm up
        run(0.2)
    samples: dict[str, list[tuple[int, int, float]]] = {name: [] for name in subjects}
    for _ in range(args.reps):
        for name, run in subjects.items():
            samples[name].append(run(args.seconds))
    results = {}
    print(f"case14, do-nothing agent, idle_below_rho={args.threshold}")
    print(f"{'subject':28} {'env-steps/decision':>19} {'decisions/s':>12} {'env-steps/s':>12}")
    for name, runs in samples.items():
        per_decision = statistics.median(s / d for d, s, _ in runs)
        decisions_s = statistics.median(d / t for d, _, t in runs)
        steps_s = statistics.median(s / t for _, s, t in runs)
        results[name] = {
            "env_steps_per_decision": per_decision,
            "decisions_per_s": decisions_s,
            "env_steps_per_s": steps_s,
        }
        print(f"{name:28} {per_decision:19.1f} {decisions_s:12.0f} {steps_s:12.0f}")
    write_result(
        {"threshold": args.threshold, "results": results},
        args.out,
        "bench_heuristics.json",
        indent=2,
    )


if __name__ == "__main__":
    main()
