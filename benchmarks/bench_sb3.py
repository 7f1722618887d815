"""SB3 PPO rollout collection: the SB3 adapter over GridVecEnv vs SB3's SubprocVecEnv.

Each contender runs the same GridEnv factories (case14, 8 envs by default) under
``PPO("MlpPolicy", ...)``; a callback times every rollout (``n_steps`` steps of every env:
policy forward pass, env steps, buffer writes), training in between is not timed. The first
rollout of each repetition is a warm-up. Repetitions alternate between contenders (machine
noise hits all alike); the table shows the median steps/s and the ratio to SubprocVecEnv;
the JSON goes to OUT/bench_sb3.json (with --out OUT).

    python benchmarks/bench_sb3.py                      # case14, 8 envs, 3 repetitions
    python benchmarks/bench_sb3.py --envs 16 --reps 5 --with-dummy
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from grid_vec.bench import add_out_argument, write_result
from grid_vec.env.make import env_factory
from grid_vec.integrations.sb3 import make_sb3_vec_env


class RolloutTimer(BaseCallback):
    """Wall time of each rollout collection."""

    def __init__(self) -> None:
        super().__init__()
        self.durations: list[float] = []
        self._start = 0.0

    def _on_rollout_start(self) -> None:
        self._start = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.durations.append(time.perf_counter() - self._start)

    def _on_step(self) -> bool:
        return True


def contenders(n_envs: int, with_dummy: bool) -> dict[str, Callable[[], VecEnv]]:
    fns = [env_factory("case14")] * n_envs
    out: dict[str, Callable[[], VecEnv]] = {
        "SubprocVecEnv": lambda: SubprocVecEnv(fns, start_method="spawn"),
        "adapter+GridVecEnv": lambda: make_sb3_vec_env(fns),
        "adapter+GridVecEnv(1/worker)": lambda: make_sb3_vec_env(fns, envs_per_worker=1),
    }
    if with_dummy:
        out["DummyVecEnv"] = lambda: DummyVecEnv(fns)
    return out


def measure(build: Callable[[], VecEnv], n_steps: int, rollouts: int) -> float:
    """Median steps/s over the rollouts of one PPO run (first rollout is warm-up)."""
    venv = build()
    try:
        model = PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=n_steps, n_epochs=1, seed=0)
        timer = RolloutTimer()
        model.learn(n_steps * venv.num_envs * (rollouts + 1), callback=timer)
        steps = n_steps * venv.num_envs
        return statistics.median(steps / d for d in timer.durations[1:])
    finally:
        venv.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--n-steps", type=int, default=128, help="PPO n_steps per env")
    parser.add_argument("--rollouts", type=int, default=4, help="timed rollouts per repetition")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--with-dummy", action="store_true", help="also DummyVecEnv")
    parser.add_argument("--name", default="bench_sb3")
    add_out_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)

    runs = contenders(args.envs, args.with_dummy)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.reps):
        for name, build in runs.items():
            samples[name].append(measure(build, args.n_steps, args.rollouts))
    ref = statistics.median(samples["SubprocVecEnv"])
    rows: list[dict[str, Any]] = []
    print(f"case14, {args.envs} envs, PPO n_steps={args.n_steps}, cores={os.cpu_count()}")
    print(f"{'contender':<30}{'steps/s':>10}{'x Subproc':>11}")
    for name, values in samples.items():
        med = statistics.median(values)
        rows.append(
            {"contender": name, "steps_per_s": med, "samples": values, "x_subproc": med / ref}
        )
        print(f"{name:<30}{med:>10.0f}{med / ref:>11.2f}")
    out = {
        "env": "case14",
        "n_envs": args.envs,
        "n_steps": args.n_steps,
        "rollouts": args.rollouts,
        "reps": args.reps,
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    write_result(out, args.out, f"{args.name}.json", indent=2)


if __name__ == "__main__":
    main()
