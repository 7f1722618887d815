"""GridVecEnv on the embedded case14 grid: env-steps/s against SyncVectorEnv, and memory.

Side by side in one run, repetitions alternating between the contenders: 32 case14 GridEnvs
in a GridVecEnv (default: 2 workers of 16 envs) and in gymnasium's SyncVectorEnv, do-nothing
actions, median env-steps/s. Then the resident memory (VmRSS) of the parent and of one
worker carrying 1 and 16 case14 envs. JSON: benchmarks/results/bench_vector_case14.json.

    python benchmarks/bench_vector_case14.py [--envs 32] [--workers 2] [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import SyncVectorEnv, VectorEnv

from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv

RESULTS = Path(__file__).parent / "results"


def _steps_per_second(env: VectorEnv, steps: int) -> float:
    actions = np.zeros(env.num_envs, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    return steps * env.num_envs / (time.perf_counter() - start)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100, help="batch steps per repetition")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)

    factory = env_factory("case14")
    fns = [factory] * args.envs
    contenders: dict[str, VectorEnv] = {
        "SyncVectorEnv": SyncVectorEnv(fns),
        "GridVecEnv": GridVecEnv(fns, envs_per_worker=-(-args.envs // args.workers)),
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for env in contenders.values():
            env.reset(seed=0)
            _steps_per_second(env, 20)  # warm-up
        for _ in range(args.reps):
            for name, env in contenders.items():
                samples[name].append(_steps_per_second(env, args.steps))
    finally:
        for env in contenders.values():
            env.close()
    medians = {name: statistics.median(s) for name, s in samples.items()}

    memory = {"parent_mb": _rss_mb(os.getpid())}
    for n in (1, 16):
        envs = GridVecEnv([factory] * n, envs_per_worker=n)
        try:
            envs.reset(seed=0)
            envs.step(np.zeros(n, dtype=np.int64))
            memory[f"worker_{n}_envs_mb"] = _rss_mb(envs.worker_pids()[0])
        finally:
            envs.close()
    memory["per_extra_env_mb"] = (memory["worker_16_envs_mb"] - memory["worker_1_envs_mb"]) / 15

    result = {
        "workload": f"case14, {args.envs} envs, do-nothing",
        "workers": args.workers,
        "env_steps_per_s": medians,
        "samples": samples,
        "gridvec_over_sync": medians["GridVecEnv"] / medians["SyncVectorEnv"],
        "memory": memory,
    }
    for name, value in medians.items():
        print(f"{name:>14}: {value:9.0f} env-steps/s")
    print(f"GridVecEnv / SyncVectorEnv: {result['gridvec_over_sync']:.2f}x")
    print(
        "memory (MB): parent {parent_mb:.0f}, worker with 1 env {worker_1_envs_mb:.0f}, "
        "with 16 envs {worker_16_envs_mb:.0f} ({per_extra_env_mb:.2f} per extra env)".format(
            **memory
        )
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_vector_case14.json").write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
