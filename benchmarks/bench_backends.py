"""Microseconds per power-flow step (set_injections + run_ac + results) for each backend.

Also timed: the environment's hot path on lightsim2grid (``set_injections_trusted`` +
``run_ac`` + ``read_flows`` into a preallocated array: no re-validation, no result object).

Run: ``python benchmarks/bench_backends.py`` (options: ``--repeats``, ``--steps``).
Every step sets freshly perturbed loads (+-5 %), so the solver really iterates. Each
repetition times every step and keeps its median; the table shows the median over the
repetitions, and the pandapower / lightsim2grid ratio measured in the same run.
Writes ``OUT/bench_backends.json`` (with ``--out OUT``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from grid_vec.bench import add_out_argument, write_result
from grid_vec.grid import make_backend
from grid_vec.grid.backend import flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

CASES = ("case14", "case118")


def time_steps(backend, injections: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    """Seconds per step for each set of injections (public, validated API)."""
    timings = np.empty(len(injections))
    for i, args in enumerate(injections):
        start = time.perf_counter()
        backend.set_injections(*args)
        if not backend.run_ac():
            raise RuntimeError("benchmark power flow diverged")
        backend.results()
        timings[i] = time.perf_counter() - start
    return timings


def time_hot_path(backend, injections: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    """Seconds per step through the environment's hot path."""
    flows = np.empty(flow_slices(backend.model)["all"].stop)
    timings = np.empty(len(injections))
    for i, args in enumerate(injections):
        start = time.perf_counter()
        backend.set_injections_trusted(*args)
        if not backend.run_ac():
            raise RuntimeError("benchmark power flow diverged")
        backend.read_flows(flows)
        timings[i] = time.perf_counter() - start
    return timings


def bench_case(case: str, repeats: int, steps: dict[str, int]) -> dict[str, dict]:
    model = compile_net(load_network(case), name=case)
    rng = np.random.default_rng(0)
    rows = {
        "lightsim2grid": ("lightsim2grid", time_steps),
        "lightsim2grid hot path": ("lightsim2grid", time_hot_path),
        "pandapower": ("pandapower", time_steps),
    }
    out = {}
    for row, (name, timer) in rows.items():
        backend = make_backend(model, name)
        per_repeat = []
        for _ in range(repeats):
            scale = 1.0 + 0.05 * rng.standard_normal((steps[name], model.n_load))
            injections = [
                (model.load_p0 * s, model.load_q0 * s, model.gen_p0, model.gen_v0) for s in scale
            ]
            timer(backend, injections[:5])  # warm-up
            per_repeat.append(float(np.median(timer(backend, injections))) * 1e6)
        out[row] = {"us_per_step": float(np.median(per_repeat)), "repeats_us": per_repeat}
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000, help="lightsim2grid steps per repeat")
    parser.add_argument("--pp-steps", type=int, default=20, help="pandapower steps per repeat")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    steps = {"lightsim2grid": args.steps, "pandapower": args.pp_steps}

    results = {case: bench_case(case, args.repeats, steps) for case in CASES}
    header = ("case", "lightsim2grid us", "hot path us", "pandapower us", "ratio")
    print(f"{header[0]:<8} {header[1]:>17} {header[2]:>12} {header[3]:>14} {header[4]:>8}")
    for case, res in results.items():
        ls, ref = res["lightsim2grid"]["us_per_step"], res["pandapower"]["us_per_step"]
        hot = res["lightsim2grid hot path"]["us_per_step"]
        res["ratio_pandapower_over_lightsim"] = ref / ls
        print(f"{case:<8} {ls:>17.1f} {hot:>12.1f} {ref:>14.1f} {ref / ls:>7.0f}x")

    report = {
        "command": "python " + " ".join(["benchmarks/bench_backends.py", *(argv or sys.argv[1:])]),
        "python": platform.python_version(),
        "machine": platform.platform(),
        "repeats": args.repeats,
        "steps": steps,
        "results": results,
    }
    write_result(report, args.out, "bench_backends.json", indent=2)
    return report


if __name__ == "__main__":
    main()
