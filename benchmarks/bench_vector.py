"""Per-batch-step cost of GridVecEnv against gymnasium's AsyncVectorEnv (and SyncVectorEnv).

Default workload: a trivial env (observation Box(550,) float32, Discrete(2) actions, no
work in step), so the time measured is the vector env's own overhead. Repetitions of each
contender alternate within one run (machine noise hits both alike); the table shows medians
and the ratio AsyncVectorEnv / GridVecEnv, and the JSON goes to
benchmarks/results/bench_vector.json. The resident memory of the parent and of one worker
carrying 1 and 16 envs is reported too.

    python benchmarks/bench_vector.py                       # trivial env, 1 2 4 8 envs
    python benchmarks/bench_vector.py --factory grid_vec:make --kwargs '{"id_or_path": "case14"}' \
        --envs 32 --workers 2 --with-sync --name bench_vector_case14
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from grid_vec.bench.workloads import TrivialEnv
from grid_vec.vector import GridVecEnv

RESULTS = Path(__file__).parent / "results"


def _load_factory(spec: str, kwargs: dict[str, Any]) -> Callable[[], gym.Env]:
    module, _, name = spec.partition(":")
    return functools.partial(getattr(importlib.import_module(module), name), **kwargs)


def _rss_kb(pid: int) -> dict[str, int]:
    """Resident set (VmRSS) and private (unshared) memory of a process, in kB."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    with open(f"/proc/{pid}/smaps_rollup") as f:
        private = sum(int(line.split()[1]) for line in f if line.startswith("Private_"))
    return {"rss_kb": rss, "private_kb": private}


def _time_steps(envs: gym.vector.VectorEnv, actions: np.ndarray, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        envs.step(actions)
    return (time.perf_counter() - start) / steps


def compare(
    factory: Callable[[], gym.Env],
    num_envs: int,
    *,
    steps: int,
    reps: int,
    workers: int | None,
    with_sync: bool,
) -> dict[str, Any]:
    """Median seconds per batch step of each contender on ``num_envs`` copies of ``factory``."""
    fns = [factory] * num_envs
    per_worker = None if workers is None else -(-num_envs // workers)
    contenders: dict[str, gym.vector.VectorEnv] = {
        "GridVecEnv": GridVecEnv(fns, envs_per_worker=per_worker),
        "AsyncVectorEnv": AsyncVectorEnv(fns, shared_memory=True),
    }
    if with_sync:
        contenders["SyncVectorEnv"] = SyncVectorEnv(fns)
    try:
        actions = np.zeros(num_envs, dtype=np.int64)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for envs in contenders.values():
            envs.reset(seed=0)
            _time_steps(envs, actions, max(steps // 5, 10))  # warm-up
        for _ in range(reps):
            for name, envs in contenders.items():
                times[name].append(_time_steps(envs, actions, steps))
        medians = {name: statistics.median(values) for name, values in times.items()}
        grid = contenders["GridVecEnv"]
        return {
            "num_envs": num_envs,
            "num_workers": grid.num_workers,
            "median_s_per_batch_step": medians,
            "async_over_gridvec": medians["AsyncVectorEnv"] / medians["GridVecEnv"],
            "env_steps_per_s": {name: num_envs / m for name, m in medians.items()},
        }
    finally:
        for envs in contenders.values():
            envs.close()


def memory(factory: Callable[[], gym.Env], counts: tuple[int, ...] = (1, 16)) -> dict[str, Any]:
    """RSS of one worker carrying each count of envs after a reset and a few steps."""
    import os

    out: dict[str, Any] = {"parent": _rss_kb(os.getpid())}
    for count in counts:
        envs = GridVecEnv([factory] * count, envs_per_worker=count)
        envs.reset(seed=0)
        for _ in range(10):
            envs.step(np.zeros(count, np.int64))
        out[f"worker_{count}_envs"] = _rss_kb(envs.worker_pids()[0])
        envs.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--steps", type=int, default=1000, help="steps per repetition")
    parser.add_argument("--reps", type=int, default=7, help="repetitions (median)")
    parser.add_argument("--workers", type=int, default=None, help="GridVecEnv workers")
    parser.add_argument("--factory", default=None, help="module:callable building one env")
    parser.add_argument("--kwargs", default="{}", help="JSON keyword arguments of --factory")
    parser.add_argument("--with-sync", action="store_true", help="also time SyncVectorEnv")
    parser.add_argument("--name", default="bench_vector", help="results file name")
    args = parser.parse_args(argv)

    factory = (
        TrivialEnv if args.factory is None else _load_factory(args.factory, json.loads(args.kwargs))
    )
    rows = [
        compare(
            factory,
            n,
            steps=args.steps,
            reps=args.reps,
            workers=args.workers,
            with_sync=args.with_sync,
        )
        for n in args.envs
    ]
    names = list(rows[0]["median_s_per_batch_step"])
    print(f"{'envs':>4} {'workers':>7} " + " ".join(f"{n + ' us':>18}" for n in names) + "  ratio")
    for row in rows:
        cells = " ".join(f"{row['median_s_per_batch_step'][n] * 1e6:18.1f}" for n in names)
        ratio = row["async_over_gridvec"]
        print(f"{row['num_envs']:>4} {row['num_workers']:>7} {cells}  {ratio:5.1f}x")
    mem = memory(factory)
    for key, value in mem.items():
        print(
            f"memory {key}: RSS {value['rss_kb'] / 1024:.1f} MB, private "
            f"{value['private_kb'] / 1024:.1f} MB"
        )
    result = {"args": vars(args), "rows": rows, "memory": mem}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
