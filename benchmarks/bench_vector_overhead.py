"""Per-step overhead of GridVecEnv over BatchedGridVecEnv: 16 case14 GridEnvs in one worker.

Both step the same batched core (GridVecEnv's worker hosts one batch for its slice); the
difference is what the worker process costs: the doorbell round trip, the shared block, the
infos' way back. Do-nothing actions; repetitions alternate between the two; medians and the
spread (min-max) in µs per batch step. Also counted: the GridVecEnv steps that took the
bare-OK path of ``step_wait`` (no reply to decode: every info in the shared block).

    python benchmarks/bench_vector_overhead.py [--envs 16] [--steps 300] [--reps 9]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv
from grid_vec.vector.batched import BatchedGridVecEnv


def _per_step_us(env: Any, steps: int) -> float:
    actions = np.zeros(env.num_envs, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    return (time.perf_counter() - start) / steps * 1e6


def _count_bare_oks(env: GridVecEnv) -> list[int]:
    """[steps that took the bare-OK path, steps that did not], counted from now on."""
    counts = [0, 0]
    took = env._took_bare_oks

    def counted(spin_until: float) -> bool:
        result = took(spin_until)
        counts[0 if result else 1] += 1
        return result

    env._took_bare_oks = counted
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300, help="batch steps per repetition")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    factory = env_factory("case14", reward="flat", opponent=None)
    batched = BatchedGridVecEnv.from_factory(factory, args.envs)
    workers = GridVecEnv([factory] * args.envs, envs_per_worker=args.envs)
    times: dict[str, list[float]] = {"BatchedGridVecEnv": [], "GridVecEnv": []}
    try:
        for env in (batched, workers):
            env.reset(seed=0)
            _per_step_us(env, 20)  # warm up
        counts = _count_bare_oks(workers)
        for _ in range(args.reps):
            times["BatchedGridVecEnv"].append(_per_step_us(batched, args.steps))
            times["GridVecEnv"].append(_per_step_us(workers, args.steps))
    finally:
        batched.close()
        workers.close()
    print(f"{args.envs} case14 envs, do-nothing, µs per batch step (median, min-max):")
    for name, values in times.items():
        print(
            f"  {name:18s} {statistics.median(values):8.1f}  ({min(values):.1f}-{max(values):.1f})"
        )
    diffs = [w - b for w, b in zip(times["GridVecEnv"], times["BatchedGridVecEnv"], strict=True)]
    print(
        f"  overhead           {statistics.median(diffs):8.1f}  ({min(diffs):.1f}-{max(diffs):.1f})"
        " (pairwise)"
    )
    print(f"  bare-OK steps: {counts[0]} of {sum(counts)}")


if __name__ == "__main__":
    main()
