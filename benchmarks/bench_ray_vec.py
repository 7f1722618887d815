"""RayVecEnv against GridVecEnv on the same 2-way split, side by side in one run.

Subjects, each stepping ``--envs`` envs of one grid, resets included (NEXT_STEP autoreset
inside the timed loop), env-steps/s and µs per env-step:

* GridVecEnv: ``make_vec(grid, n, envs_per_worker=n / 2)``, its default settings (one
  worker process steps one half, the parent the other with the worker's engine);
* RayVecEnv: ``make_vec(grid, n, vectorization="ray", envs_per_worker=n / 2)``, its default
  settings: the driver steps one half itself (``step_in_driver``) while one Ray actor steps
  the other as one batch of the engine, over the ``--transport`` link (``socket`` by
  default; ``ray``: Ray actor calls), its processes spinning ``--spin-us`` for messages
  before they sleep (default: RayVecEnv's, 1 ms);
* RayVecEnv, 2 actors: the same with ``step_in_driver=False``, each half in an actor;
* Ray node: ``vector_kwargs={"transport": "node"}``: GridVecEnv whose worker is a Ray actor of
  this node (:mod:`grid_vec.integrations.ray_launch`: the shared block and doorbells, no
  socket), the parent stepping the other half; "Ray node, 2 actors": each half in an actor
  (``step_in_parent=False``).

Both are built once per workload and kept; each repetition times them in turn, the first
one alternating, so machine noise hits both alike; medians over ``--reps`` with the spread,
the ratio of the medians (the goal of issue #57: RayVecEnv ≥ 0.9× GridVecEnv), and the
load. Ray is started here (a local instance of 3 logical CPUs: one per actor of the two
RayVecEnvs, built side by side; the machine's cores are what they are) unless it runs
already. grid_vec plays the ``flat`` reward.

    python benchmarks/bench_ray_vec.py [--grid l2rpn_case14_sandbox]
        [--actions do-nothing random] [--envs 32] [--reps 3] [--seconds 3]
        [--transport socket] [--spin-us US] [--subjects NAME ...] [--out OUT]

JSON: OUT/bench_ray_vec.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import ray

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.protocol import describe_machine
from grid_vec.bench.report import format_subject_rows, subject_summaries
from grid_vec.bench.workloads import SANDBOX, grid_target, timed_steps

# each subject: make_vec's vectorization and, for RayVecEnv, its own arguments beside the
# command line's
SUBJECT_SETTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    "GridVecEnv": ("multiprocess", {}),
    "RayVecEnv": ("ray", {}),
    "RayVecEnv, 2 actors": ("ray", {"step_in_driver": False}),
    "Ray node": ("ray", {"transport": "node"}),
    "Ray node, 2 actors": ("ray", {"transport": "node", "step_in_parent": False}),
}
SUBJECTS = tuple(SUBJECT_SETTINGS)
GOAL = 0.9  # RayVecEnv's share of GridVecEnv's env-steps/s that issue #57 asks for


def build(subject: str, grid: str, n: int, ray_kwargs: dict[str, Any]) -> Any:
    """The vector env of ``subject``: ``n`` envs of ``grid`` in two slices (``ray_kwargs``:
    RayVecEnv's arguments from the command line)."""
    vectorization, own = SUBJECT_SETTINGS[subject]
    return grid_vec.make_vec(
        grid_target(grid),
        n,
        envs_per_worker=n // 2,
        vectorization=vectorization,
        vector_kwargs={**ray_kwargs, **own} if vectorization == "ray" else None,
        reward="flat",
    )


def measure(
    grid: str,
    n: int,
    actions: str,
    reps: int,
    seconds: float,
    ray_kwargs: dict[str, Any],
    subjects: tuple[str, ...] = SUBJECTS,
) -> dict[str, Any]:
    """The ``subjects`` (GridVecEnv and RayVecEnv among them) ``reps`` times, the first
    one rotating; medians, spreads, the ratios to GridVecEnv."""
    envs = {}
    try:
        for name in subjects:
            envs[name] = build(name, grid, n, ray_kwargs)
        samples: dict[str, list[float]] = {name: [] for name in subjects}
        for rep in range(reps):
            turn = rep % len(subjects)
            for name in subjects[turn:] + subjects[:turn]:
                samples[name].append(timed_steps(envs[name], n, actions, seconds))
    finally:
        for env in envs.values():
            env.close()
    subjects = subject_summaries(samples, "GridVecEnv", "of_grid_vec_env")
    return {
        "grid": grid,
        "actions": actions,
        "envs": n,
        "ray_vec_env": ray_kwargs,
        "subjects": subjects,
        "ray_over_grid_vec_env": subjects["RayVecEnv"]["of_grid_vec_env"],
        "load": os.getloadavg(),
    }


def format_rows(results: list[dict[str, Any]]) -> str:
    return format_subject_rows(results, "of_grid_vec_env", "of GridVecEnv")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default=SANDBOX)
    parser.add_argument("--actions", nargs="+", default=["do-nothing", "random"])
    parser.add_argument("--envs", type=positive_int, default=32, help="an even number")
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=3.0)
    parser.add_argument("--transport", choices=("socket", "ray"), default="socket")
    parser.add_argument(
        "--spin-us", type=float, default=None, help="RayVecEnv's spin_us (default: its own)"
    )
    parser.add_argument(
        "--subjects",
        nargs="+",
        choices=SUBJECTS,
        default=list(SUBJECTS),
        help="what to time (GridVecEnv and RayVecEnv always)",
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    if args.envs % 2:
        parser.error(f"--envs must be even (a 2-way split), got {args.envs}")
    subjects = tuple(
        name for name in SUBJECTS if name in {"GridVecEnv", "RayVecEnv"} | set(args.subjects)
    )
    started = not ray.is_initialized()
    if started:  # one logical CPU per actor of the subjects, all built at once
        # two slices each: one actor where the driver steps the other (RayVecEnv's default)
        actors = sum(
            1 if own.get("step_in_driver", own.get("step_in_parent", True)) else 2
            for vectorization, own in map(SUBJECT_SETTINGS.get, subjects)
            if vectorization == "ray"
        )
        ray.init(num_cpus=actors, include_dashboard=False, log_to_driver=False)
    try:
        results = []
        for actions in args.actions:
            ray_kwargs: dict[str, Any] = {"transport": args.transport}
            if args.spin_us is not None:
                ray_kwargs["spin_us"] = args.spin_us
            results.append(
                measure(
                    args.grid, args.envs, actions, args.reps, args.seconds, ray_kwargs, subjects
                )
            )
            print(format_rows(results[-1:]).split("\n", 2)[-1], flush=True)
    finally:
        if started:
            ray.shutdown()
    print(format_rows(results))
    for r in results:
        for name, subject in r["subjects"].items():
            if name == "GridVecEnv":
                continue
            ratio = subject["of_grid_vec_env"]
            verdict = "met" if ratio >= GOAL else "not met"
            print(f"{r['actions']}: {name} / GridVecEnv = {ratio:.2f} (goal ≥ {GOAL}: {verdict})")
    doc = {
        "benchmark": "bench_ray_vec",
        "command": " ".join(["python", "benchmarks/bench_ray_vec.py", *(argv or sys.argv[1:])]),
        "machine": describe_machine().as_dict(),
        "ray": ray.__version__,
        "reps": args.reps,
        "seconds": args.seconds,
        "results": results,
    }
    write_result(doc, args.out, "bench_ray_vec.json")
    return doc


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
