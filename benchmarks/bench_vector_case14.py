"""GridVecEnv on the embedded case14 grid: env-steps/s against SyncVectorEnv, and memory.

Side by side in one run, repetitions alternating between the contenders: 32 case14 GridEnvs
in a GridVecEnv (default: 2 workers of 16 envs) and in gymnasium's SyncVectorEnv, do-nothing
actions, median env-steps/s. The ratio is the median of the ratios of neighbouring
repetitions: on a noisy machine, a second in which a core is slow then hits both sides of a
pair. Also measured: the same GridVecEnv in pool mode (``send``/``recv`` of one worker's
envs: they come back as soon as they are done, without waiting for the other worker). Then
the resident memory (VmRSS) of the parent and of one worker carrying 1 and 16 case14 envs.
JSON: OUT/bench_vector_case14.json (with --out OUT).

    python benchmarks/bench_vector_case14.py [--envs 32] [--workers 2] [--reps 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import SyncVectorEnv, VectorEnv

from grid_vec.bench import add_out_argument, write_result
from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv

SYNC, LOCKSTEP, POOL = "SyncVectorEnv", "GridVecEnv", "GridVecEnv pool mode"


def _steps_per_second(env: VectorEnv, steps: int) -> float:
    """``steps`` batches of do-nothing actions through ``step``."""
    actions = np.zeros(env.num_envs, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    return steps * env.num_envs / (time.perf_counter() - start)


def _pool_steps_per_second(env: GridVecEnv, steps: int) -> float:
    """As many env steps as ``steps`` batches, through ``recv``/``send`` of ``batch_size``
    envs at a time (every env was sent once beforehand)."""
    actions = np.zeros(env.batch_size, dtype=np.int64)
    env_steps = 0
    start = time.perf_counter()
    while env_steps < steps * env.num_envs:
        *_, ids = env.recv()
        env.send(actions, ids)
        env_steps += len(ids)
    return env_steps / (time.perf_counter() - start)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def _memory(factory: Callable[[], Any]) -> dict[str, float]:
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
    return memory


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100, help="batch steps per repetition")
    parser.add_argument("--reps", type=int, default=15)
    add_out_argument(parser)
    args = parser.parse_args(argv)

    factory = env_factory("case14")
    fns = [factory] * args.envs
    per_worker = -(-args.envs // args.workers)
    contenders: dict[str, VectorEnv] = {
        SYNC: SyncVectorEnv(fns),
        LOCKSTEP: GridVecEnv(fns, envs_per_worker=per_worker),
        POOL: GridVecEnv(fns, envs_per_worker=per_worker, batch_size=per_worker),
    }
    measure: dict[str, Callable[[Any, int], float]] = {
        SYNC: _steps_per_second,
        LOCKSTEP: _steps_per_second,
        POOL: _pool_steps_per_second,
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for name, env in contenders.items():
            env.reset(seed=0)
            if name == POOL:
                env.send(np.zeros(args.envs, dtype=np.int64), range(args.envs))
            measure[name](env, 20)  # warm-up
        for _ in range(args.reps):
            for name, env in contenders.items():
                samples[name].append(measure[name](env, args.steps))
    finally:
        for env in contenders.values():
            env.close()
    medians = {name: statistics.median(s) for name, s in samples.items()}
    over_sync = {
        name: statistics.median(x / y for x, y in zip(samples[name], samples[SYNC], strict=True))
        for name in (LOCKSTEP, POOL)
    }
    memory = _memory(factory)

    result = {
        "workload": f"case14, {args.envs} envs, do-nothing",
        "workers": args.workers,
        "env_steps_per_s": medians,
        "samples": samples,
        "gridvec_over_sync": over_sync[LOCKSTEP],
        "pool_over_sync": over_sync[POOL],
        "ratio_of_medians": medians[LOCKSTEP] / medians[SYNC],
        "memory": memory,
    }
    for name, value in medians.items():
        print(f"{name:>20}: {value:9.0f} env-steps/s")
    print(
        f"GridVecEnv / SyncVectorEnv: {over_sync[LOCKSTEP]:.2f}x (median of paired repetitions; "
        f"ratio of medians {result['ratio_of_medians']:.2f}x); "
        f"pool mode / SyncVectorEnv: {over_sync[POOL]:.2f}x"
    )
    print(
        "memory (MB): parent {parent_mb:.0f}, worker with 1 env {worker_1_envs_mb:.0f}, "
        "with 16 envs {worker_16_envs_mb:.0f} ({per_extra_env_mb:.2f} per extra env)".format(
            **memory
        )
    )
    write_result(result, args.out, "bench_vector_case14.json", indent=2)
    return result


if __name__ == "__main__":
    main()
