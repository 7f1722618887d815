"""Episodes/hour of the Runner on a local Ray instance vs the local Runner (same episodes).

    python benchmarks/bench_ray.py                              # 8 x 288 steps, case14
    python benchmarks/bench_ray.py --episodes 16 --recorded

All rows play the same seeded do-nothing episodes: the local Runner over a GridVecEnv of
``--workers`` sub-envs (worker processes), over one in-process env (SyncVectorEnv: the work
of one actor, for scale), and the Ray Runner over ``--workers`` actors. Ray start-up and
actor creation are timed apart (paid once per campaign, not per episode). Medians of
``--repeat`` runs. Writes OUT/bench_ray.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import ray
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from grid_vec.bench import add_out_argument, write_result
from grid_vec.env.make import env_factory
from grid_vec.integrations.ray import RayExecutor
from grid_vec.runner import DoNothingAgent, Runner


def timed_runs(runner: Runner, args: argparse.Namespace) -> list[float]:
    """Seconds of each of ``args.repeat`` runs of the same episodes."""
    times = []
    for _ in range(args.repeat):
        path = Path(tempfile.mkdtemp(prefix="bench_ray-")) if args.recorded else None
        try:
            start = time.perf_counter()
            runner.run(args.episodes, max_iter=args.steps, path_save=path)
            times.append(time.perf_counter() - start)
        finally:
            if path is not None:
                shutil.rmtree(path)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="case14")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--steps", type=int, default=288, help="steps per episode")
    parser.add_argument("--workers", type=int, default=2, help="sub-envs / actors")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--recorded", action="store_true", help="record every episode too")
    add_out_argument(parser)
    args = parser.parse_args()
    factory = env_factory(args.env)

    with Runner([factory] * args.workers, DoNothingAgent(), seed=0) as runner:
        local = timed_runs(runner, args)
    sync_env = SyncVectorEnv([factory], autoreset_mode=AutoresetMode.DISABLED)
    try:
        in_process = timed_runs(Runner(sync_env, DoNothingAgent(), seed=0), args)
    finally:
        sync_env.close()

    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        start = time.perf_counter()
        executor = RayExecutor(num_actors=args.workers)
        runner = Runner([factory], DoNothingAgent(), seed=0, executor=executor)
        actors_start = time.perf_counter() - start
        with runner:
            remote = timed_runs(runner, args)
    finally:
        ray.shutdown()

    rows = {
        "local Runner (GridVecEnv)": statistics.median(local),
        "local Runner (SyncVectorEnv, 1 env)": statistics.median(in_process),
        "Ray Runner (local instance)": statistics.median(remote),
    }
    base = rows["local Runner (GridVecEnv)"]
    print(
        f"{args.episodes} episodes x {args.steps} steps, {args.env}, do-nothing, "
        f"{args.workers} workers, recorded={args.recorded}, median of {args.repeat}"
    )
    print(f"{'executor':<38}{'run s':>8}{'episodes/h':>12}{'vs local':>10}")
    for name, seconds in rows.items():
        rate = args.episodes / seconds * 3600
        print(f"{name:<38}{seconds:>8.3f}{rate:>12.0f}{base / seconds:>10.2f}")
    print(f"one-off: ray.init {ray_start:.2f} s, {args.workers} actors ready {actors_start:.2f} s")
    report = {
        "config": vars(args),
        "seconds": {"local": local, "local_sync_1env": in_process, "ray": remote},
        "median_s": rows,
        "episodes_per_hour": {k: args.episodes / v * 3600 for k, v in rows.items()},
        "ray_vs_local": base / rows["Ray Runner (local instance)"],
        "one_off_s": {"ray_init": ray_start, "actors_ready": actors_start},
    }
    write_result(report, args.out, "bench_ray.json")


if __name__ == "__main__":
    main()
