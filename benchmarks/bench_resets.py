"""Resets counted: random catalog actions on ``l2rpn_case14_sandbox``, with and without the
scenario cache.

Random actions end episodes within a few steps, so resets weigh most: each one finds its
scenario parsed in the process's scenario cache, or (``GRID_VEC_SCENARIO_CACHE_MB=0``, the
reference, what every reset paid before the cache) parses the scenario's CSV files again.
Each repetition runs one GridEnv for ``--seconds`` in a fresh process, alternating between
the two settings; medians of steps/s and of the time per reset, with their spread.
JSON: OUT/bench_resets.json (with --out OUT).

    python benchmarks/bench_resets.py [--reps 5] [--seconds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from grid_vec.bench import add_out_argument, write_result

PROBE = """
import importlib.util, os, sys, time, warnings
import numpy as np
import grid_vec

warnings.simplefilter("ignore")
data = os.path.dirname(importlib.util.find_spec("grid2op").origin)
env = grid_vec.make(os.path.join(data, "data", "l2rpn_case14_sandbox"))
rng = np.random.default_rng(0)
env.reset(seed=0)
steps = resets = 0
in_reset = 0.0
start = time.perf_counter()
while time.perf_counter() - start < float(sys.argv[1]):
    _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
    steps += 1
    if terminated or truncated:
        t = time.perf_counter()
        env.reset()
        in_reset += time.perf_counter() - t
        resets += 1
print(steps / (time.perf_counter() - start), in_reset / max(resets, 1))
"""

SETTINGS = {"scenario cache": None, "no cache (reference)": "0"}


def _run(cache_mb: str | None, seconds: float) -> tuple[float, float]:
    env = dict(os.environ)
    env.pop("GRID_VEC_SCENARIO_CACHE_MB", None)
    if cache_mb is not None:
        env["GRID_VEC_SCENARIO_CACHE_MB"] = cache_mb
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(seconds)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    steps_per_s, reset_s = out.stdout.split()
    return float(steps_per_s), float(reset_s)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in SETTINGS}
    for _ in range(args.reps):
        for name, cache_mb in SETTINGS.items():
            samples[name].append(_run(cache_mb, args.seconds))
    table = {}
    for name, values in samples.items():
        rates = [v[0] for v in values]
        resets = [v[1] * 1e3 for v in values]
        table[name] = {
            "steps_per_s": statistics.median(rates),
            "steps_per_s_range": [min(rates), max(rates)],
            "ms_per_reset": statistics.median(resets),
            "ms_per_reset_range": [min(resets), max(resets)],
        }
        row = table[name]
        print(
            f"{name:<22} {row['steps_per_s']:8.0f} steps/s ({min(rates):.0f}-{max(rates):.0f})"
            f"  {row['ms_per_reset']:6.3f} ms per reset ({min(resets):.3f}-{max(resets):.3f})"
        )
    ratio = table["scenario cache"]["steps_per_s"] / table["no cache (reference)"]["steps_per_s"]
    print(f"scenario cache / no cache: {ratio:.2f}x steps/s, random actions, resets included")
    document = {"reps": args.reps, "seconds": args.seconds, "results": table, "ratio": ratio}
    write_result(document, args.out, "bench_resets.json", indent=2)


if __name__ == "__main__":
    main()
