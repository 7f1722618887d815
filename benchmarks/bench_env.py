"""Do-nothing steps per second of a GridEnv, side by side with grid2op + LightSimBackend.

Measured in one run: the embedded case14 (synthetic scenarios, lightsim2grid backend),
grid_vec on grid2op's ``l2rpn_case14_sandbox`` folder (when the folder source is available),
and grid2op itself with ``LightSimBackend`` on that folder (skipped with a message when
grid2op is not installed). Every row times the same number of do-nothing steps after the
same warm-up, with the same harness; the repetitions of the rows alternate (round-robin), so
that load changes on a shared machine hit every row alike; median of the repetitions;
episodes that end are reset (resets are not timed).

    python benchmarks/bench_env.py [--steps 3000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import grid_vec
from grid_vec.bench import add_out_argument, write_result

GRID2OP = "grid2op+LightSimBackend l2rpn_case14_sandbox"


def steps_per_second(reset, step, n_steps: int) -> float:
    """Time ``n_steps`` do-nothing steps (resets excluded), after a short warm-up."""
    reset()
    for _ in range(min(200, n_steps)):
        if step():
            reset()
    elapsed, done = 0.0, 0
    while done < n_steps:
        t0 = time.perf_counter()
        over = step()
        elapsed += time.perf_counter() - t0
        done += 1
        if over:
            reset()
    return n_steps / elapsed


def grid_vec_runner(target, n_steps: int) -> Callable[[], float]:
    """One repetition per call: steps/s of a GridEnv on ``target`` (a new seed each time)."""
    env = grid_vec.make(target)

    def step() -> bool:
        _, _, term, trunc, _ = env.step(0)
        return term or trunc

    seeds = iter(range(10**6))
    return lambda: steps_per_second(lambda: env.reset(seed=next(seeds)), step, n_steps)


def grid2op_runner(path: Path, n_steps: int) -> Callable[[], float]:
    """One repetition per call: steps/s of grid2op + LightSimBackend on the folder ``path``."""
    import grid2op
    from lightsim2grid import LightSimBackend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = grid2op.make(str(path), backend=LightSimBackend())
    do_nothing = env.action_space()

    def step() -> bool:
        return env.step(do_nothing)[2]

    return lambda: steps_per_second(env.reset, step, n_steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    add_out_argument(parser)
    args = parser.parse_args()
    runners: dict[str, Callable[[], float]] = {
        "grid_vec embedded case14": grid_vec_runner("case14", args.steps)
    }
    try:
        import grid2op
    except ImportError:
        print("grid2op not installed: skipping the side-by-side comparison")
        grid2op = None
    if grid2op is not None:
        sandbox = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
        try:
            runners["grid_vec l2rpn_case14_sandbox"] = grid_vec_runner(sandbox, args.steps)
        except ImportError as exc:
            print(f"grid_vec folder source unavailable ({exc}): skipping that row")
        runners[GRID2OP] = grid2op_runner(sandbox, args.steps)
    # repetitions alternate between the rows: a change of machine load hits them all alike
    rows: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.repeats):
        for name, run in runners.items():
            rows[name].append(run())
    medians = {name: statistics.median(values) for name, values in rows.items()}
    reference = medians.get(GRID2OP)
    print(f"{'environment':46s} {'steps/s (median)':>17s} {'x grid2op':>10s}")
    for name, value in medians.items():
        ratio = f"{value / reference:10.1f}" if reference else f"{'-':>10s}"
        print(f"{name:46s} {value:17,.0f} {ratio}")
    doc = {
        "steps": args.steps,
        "repeats": args.repeats,
        "machine": platform.processor() or platform.machine(),
        "runs_steps_per_s": rows,
        "median_steps_per_s": medians,
        "ratio_vs_grid2op": ({k: v / reference for k, v in medians.items()} if reference else None),
    }
    write_result(doc, args.out, "bench_env.json")


if __name__ == "__main__":
    main()
