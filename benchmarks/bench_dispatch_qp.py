"""The dispatch programme alone: µs per solve, scipy's ``minimize(method="SLSQP")`` against
``grid_vec.core.rules.dispatch_qp.solve`` (SLSQP's compiled kernel without scipy's wrapper),
on the programmes a seeded random-redispatch run poses, and whether the two agree bitwise.

The programmes are recorded while one ``grid_vec.make(folder, action_type="redispatch")``
plays ``--steps`` steps with seeded actions (each step, with probability ``--act``, a new
redispatch drawn from ``--scale`` x the box; resets included). Then each repetition times
every recorded programme through both solvers, in alternating order; reported: the median
(min..max) over the repetitions of the mean µs per solve, and the largest |difference| of
the two solvers' points (0.0 when they agree to the bit) and how many statuses differ.

    python benchmarks/bench_dispatch_qp.py [--folder l2rpn_case14_sandbox] [--steps 300]
        [--reps 5] [--act 0.5] [--scale 0.3]

Needs the ``grid2op`` extra (for its bundled folders). JSON: OUT/bench_dispatch_qp_<folder>.json
(with --out OUT).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder
from grid_vec.bench.protocol import describe_machine
from grid_vec.core.rules import dispatch, dispatch_qp


def record(folder: Path, steps: int, act: float, scale: float) -> list[dispatch_qp.Programme]:
    """The programmes ``steps`` seeded random-redispatch steps pose."""
    env = grid_vec.make(
        folder, action_type="redispatch", reward="flat", opponent=None, maintenance=False
    )
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    low, high = env.action_space.low * scale, env.action_space.high * scale
    seen: list[dispatch_qp.Programme] = []
    solve = dispatch.solve

    def recording(programme: dispatch_qp.Programme) -> dispatch_qp.Solution:
        seen.append(programme)
        return solve(programme)

    dispatch.solve = recording
    try:
        for _ in range(steps):
            draw = rng.uniform(low, high) if rng.random() < act else np.zeros_like(low)
            _, _, term, trunc, _ = env.step(draw.astype(np.float32))
            if term or trunc:
                env.reset()
    finally:
        dispatch.solve = solve
    return seen


def timed(solver, programmes: list[dispatch_qp.Programme]) -> float:
    """Mean µs per solve over ``programmes``."""
    start = time.perf_counter()
    for programme in programmes:
        solver(programme)
    return (time.perf_counter() - start) / len(programmes) * 1e6


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="l2rpn_case14_sandbox", help="a bundled folder")
    parser.add_argument("--steps", type=positive_int, default=300)
    parser.add_argument("--reps", type=positive_int, default=5)
    parser.add_argument("--act", type=float, default=0.5)
    parser.add_argument("--scale", type=float, default=0.3)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = bundled_folder(args.folder)
    programmes = record(folder, args.steps, args.act, args.scale)
    if not programmes:
        sys.exit("no programme was posed: raise --steps or --act")
    worst, statuses = 0.0, 0
    for programme in programmes:
        ref, ours = dispatch_qp.solve_with_minimize(programme), dispatch_qp.solve(programme)
        worst = max(worst, float(np.max(np.abs(ref.x - ours.x), initial=0.0)))
        statuses += (ref.success, ref.message) != (ours.success, ours.message)
    solvers = {"scipy minimize": dispatch_qp.solve_with_minimize, "dispatch_qp": dispatch_qp.solve}
    times: dict[str, list[float]] = {name: [] for name in solvers}
    names = list(solvers)
    for rep in range(args.reps):
        for name in names[rep % 2 :] + names[: rep % 2]:
            times[name].append(timed(solvers[name], programmes))
    sizes = [len(p.x0) for p in programmes]
    print(
        f"{len(programmes)} programmes from {args.steps} steps of {args.folder} "
        f"({min(sizes)}..{max(sizes)} generators each)"
    )
    rows = {}
    for name, values in times.items():
        rows[name] = {"us_per_solve": statistics.median(values), "min": min(values),
                      "max": max(values)}  # fmt: skip
        print(f"{name:16s} {rows[name]['us_per_solve']:8.1f} µs per solve "
              f"({min(values):.1f}..{max(values):.1f})")  # fmt: skip
    print(f"largest |x difference| {worst!r}, statuses that differ: {statuses}")
    command = ["python", "benchmarks/bench_dispatch_qp.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "machine": describe_machine().as_dict(),
           "folder": args.folder, "programmes": len(programmes), "results": rows,
           "max_abs_x_difference": worst, "statuses_differing": statuses}  # fmt: skip
    write_result(doc, args.out, f"bench_dispatch_qp_{args.folder}.json")
    return doc


if __name__ == "__main__":
    main()
