"""Steps per second under seeded random continuous actions (redispatch, curtailment, storage
when the grid has some), resets included, side by side with grid2op + LightSimBackend.

Subjects, on one folder (default ``l2rpn_wcci_2022_dev``; ``--folder``), maintenance and
opponent off on every side, the ``flat`` reward:

* grid2op: grid2op + LightSimBackend, the same actions as grid2op dicts;
* GridEnv: one ``grid_vec.make(folder, action_type="continuous")``;
* batched xN: ``make_vec(folder, N, vectorization="batched")``, N = ``--batch`` (8).

Actions: each step, with probability ``--act`` (0.1), a new action drawn uniformly from
``--scale`` (0.3) x the box (limits in [1 - scale, 1]), else the last one with no redispatch
(storage setpoints, like redispatch, do not persist: an agent sends them again). The same
seeded draws for every subject. Episodes that end are reset inside the timed loop (an
autoreset step counts as an env step). Each repetition times every subject for ``--seconds``
in turn, starting one further along the list each time; reported: the median of the
repetitions (min..max) in env-steps/s, and steps per episode.

    python benchmarks/bench_continuous.py [--folder l2rpn_wcci_2022_dev] [--reps 3]
        [--seconds 5] [--batch 8] [--act 0.1] [--scale 0.3]

Needs the ``grid2op`` extra. JSON: OUT/bench_continuous_<folder>.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env
from grid_vec.bench.protocol import describe_machine


class Actions:
    """Seeded actions of one env's continuous layout: a new draw with probability ``act``,
    else the last one without its redispatch."""

    def __init__(self, layout, seed: int, act: float, scale: float) -> None:
        self.layout, self.act = layout, act
        self.rng = np.random.default_rng(seed)
        n_r = len(layout.redispatch_gens)
        self.low, self.high = layout.low.astype(np.float64), layout.high.astype(np.float64)
        self.low[:n_r] *= scale
        self.high[:n_r] *= scale
        curtail = slice(n_r, n_r + len(layout.curtail_gens))
        self.low[curtail] = 1.0 - scale
        storage = slice(curtail.stop, layout.size)
        self.low[storage] *= scale
        self.high[storage] *= scale
        self.keep = np.where(self.low > 0, self.high, 0.0).astype(np.float32)  # limits at 1
        self.n_r = n_r

    def next(self) -> np.ndarray:
        if self.rng.random() < self.act:
            action = self.rng.uniform(self.low, self.high).astype(np.float32)
        else:
            action = self.keep.copy()
        self.keep = action.copy()
        self.keep[: self.n_r] = 0.0
        return action


def grid_vec_subject(folder: Path, seed: int, act: float, scale: float) -> Callable:
    env = grid_vec.make(
        folder, action_type="continuous", reward="flat", opponent=None, maintenance=False
    )
    env.reset(seed=seed)
    actions = Actions(env.unwrapped._batch.continuous, seed, act, scale)
    ends = [0]

    def run(k: int) -> int:
        for _ in range(k):
            _, _, term, trunc, _ = env.step(actions.next())
            if term or trunc:
                ends[0] += 1
                env.reset()
        return k

    return run, ends


def batched_subject(folder: Path, n: int, seed: int, act: float, scale: float) -> Callable:
    env = grid_vec.make_vec(
        folder, n, vectorization="batched", action_type="continuous", reward="flat",
        opponent=None, maintenance=False,
    )  # fmt: skip
    env.reset(seed=seed)
    layout = env.unwrapped._batch.continuous
    draws = [Actions(layout, seed + i, act, scale) for i in range(n)]
    ends = [0]

    def run(k: int) -> int:
        for _ in range(k):
            _, _, term, trunc, _ = env.step(np.stack([d.next() for d in draws]))
            ends[0] += int(np.sum(term | trunc))
        return k * n

    return run, ends


def grid2op_subject(folder: Path, seed: int, act: float, scale: float) -> Callable:
    from grid2op.Action import PlayableAction

    ours = grid_vec.make(folder, action_type="continuous", opponent=None, maintenance=False)
    layout = ours.unwrapped._batch.continuous
    env = grid2op_env(folder, maintenance=False, opponent=False, action_class=PlayableAction)
    env.seed(seed)
    env.reset()
    actions = Actions(layout, seed, act, scale)
    ends = [0]

    def run(k: int) -> int:
        for _ in range(k):
            _, _, done, _ = env.step(env.action_space(layout.grid2op_action(actions.next())))
            if done:
                ends[0] += 1
                env.reset()
        return k

    return run, ends


def timed(run: Callable[[int], int], seconds: float) -> tuple[float, int]:
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += run(10)
    return elapsed, steps


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="l2rpn_wcci_2022_dev", help="a bundled folder")
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=5.0)
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--act", type=float, default=0.1)
    parser.add_argument("--scale", type=float, default=0.3)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = bundled_folder(args.folder)
    draw = (0, args.act, args.scale)
    subjects = {
        "grid2op + LightSimBackend": grid2op_subject(folder, *draw),
        "GridEnv": grid_vec_subject(folder, *draw),
        f"batched x{args.batch}": batched_subject(folder, args.batch, *draw),
    }
    for run, _ in subjects.values():  # warm-up
        timed(run, min(1.0, args.seconds))
    rates: dict[str, list[float]] = {name: [] for name in subjects}
    totals = {name: [0, 0] for name in subjects}  # steps, episodes ended, over the timed runs
    names = list(subjects)
    for rep in range(args.reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            run, ends = subjects[name]
            before = ends[0]
            elapsed, steps = timed(run, args.seconds)
            rates[name].append(steps / elapsed)
            totals[name][0] += steps
            totals[name][1] += ends[0] - before
    rows = {}
    base = statistics.median(rates["grid2op + LightSimBackend"])
    for name, values in rates.items():
        median = statistics.median(values)
        steps, ended = totals[name]
        rows[name] = {
            "steps_per_s": median,
            "min": min(values),
            "max": max(values),
            "vs_grid2op": median / base,
            "steps_per_episode": steps / ended if ended else None,
        }
        print(
            f"{name:28s} {median:9.0f} steps/s ({min(values):.0f}..{max(values):.0f}), "
            f"{median / base:5.1f}x grid2op, "
            + (f"{steps / ended:.1f} steps/episode" if ended else "no episode ended")
        )
    command = ["python", "benchmarks/bench_continuous.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "machine": describe_machine().as_dict(),
           "folder": args.folder, "results": rows}  # fmt: skip
    write_result(doc, args.out, f"bench_continuous_{args.folder}.json")
    return doc


if __name__ == "__main__":
    main()
