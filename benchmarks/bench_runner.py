"""Runner overhead: Runner (do-nothing, with and without recording) vs a hand-written episode
loop over the same vector env, medians of several repetitions.

    python benchmarks/bench_runner.py                      # toy env, AsyncVectorEnv, 2 envs
    python benchmarks/bench_runner.py --env case14 --vector gridvec

The toy env mimics an embedded case14 GridEnv: a 550-float observation, one-day episodes of
288 steps, ~80 µs of work per step. Writes OUT/bench_runner.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv

from grid_vec.bench import add_out_argument, write_result
from grid_vec.runner import DoNothingAgent, Runner, derive_seed


class BusyEnv(gym.Env):
    """Fixed-cost steps over a 550-float, slowly varying observation (compressible like a
    grid observation); 288-step episodes."""

    def __init__(self, step_cost: float = 80e-6, length: int = 288) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (550,), np.float32)
        self.action_space = spaces.Discrete(10)
        self.step_cost = step_cost
        self.length = length
        self._t = 0
        self._base = np.zeros(550, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._t = 0
        self._base = self.np_random.uniform(0, 1, 550).astype(np.float32)
        return self._obs(), {}

    def step(self, action: Any):
        end = time.perf_counter() + self.step_cost
        while time.perf_counter() < end:
            pass
        self._t += 1
        return self._obs(), 1.0, False, self._t >= self.length, {}

    def _obs(self) -> np.ndarray:
        return np.round(self._base * (1 + 0.01 * np.sin(self._t / 20)), 3)


def make_factory(name: str):
    if name == "toy":
        return BusyEnv
    import grid_vec

    return lambda: grid_vec.make(name)


def make_vector(kind: str, factory, n: int) -> VectorEnv:
    fns = [factory] * n
    if kind == "sync":
        return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)
    if kind == "async":
        return AsyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)
    from grid_vec.vector import GridVecEnv

    return GridVecEnv(fns, autoreset_mode=AutoresetMode.DISABLED)


def hand_loop(env: VectorEnv, nb_episode: int, max_iter: int) -> list[float]:
    """The minimal loop doing the Runner's job: seeded episodes, partial resets, rewards."""
    n = env.num_envs
    seeds = [derive_seed(0, i, 0) for i in range(nb_episode)]
    slot_episode = [i if i < nb_episode else -1 for i in range(n)]
    next_episode = n
    env.reset(seed=[seeds[e] if e >= 0 else None for e in slot_episode])
    actions = np.zeros(n, dtype=np.int64)
    cum, steps = np.zeros(n), np.zeros(n, dtype=np.int64)
    totals = [0.0] * nb_episode
    active = np.array([e >= 0 for e in slot_episode])
    while active.any():
        _, rewards, terminated, truncated, _ = env.step(actions)
        cum += np.where(active, rewards, 0.0)
        steps += active
        ended = terminated | truncated | (steps >= max_iter)
        if ended.any():
            reset_seeds: list[int | None] = [None] * n
            for i in np.flatnonzero(ended):
                if active[i]:
                    totals[slot_episode[i]] = float(cum[i])
                slot_episode[i] = next_episode if next_episode < nb_episode else -1
                next_episode += 1
                active[i] = slot_episode[i] >= 0
                cum[i], steps[i] = 0.0, 0
                if active[i]:
                    reset_seeds[i] = seeds[slot_episode[i]]
            if active.any():
                env.reset(seed=reset_seeds, options={"reset_mask": ended})
    return totals


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="toy", help="toy, or a grid_vec.make id/path")
    parser.add_argument("--vector", default="async", choices=("sync", "async", "gridvec"))
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-iter", type=int, default=288)
    parser.add_argument("--repeats", type=int, default=7)
    add_out_argument(parser)
    args = parser.parse_args()

    env = make_vector(args.vector, make_factory(args.env), args.num_envs)
    runner = Runner(env, DoNothingAgent())
    tmp = Path(tempfile.mkdtemp(prefix="bench_runner_"))
    times: dict[str, list[float]] = {"hand loop": [], "runner": [], "runner + saving": []}
    try:
        hand = hand_loop(env, args.episodes, args.max_iter)
        ran = [r.cum_reward for r in runner.run(args.episodes, max_iter=args.max_iter)]
        assert np.allclose(hand, ran), "the hand loop and the Runner disagree"
        for rep in range(args.repeats):  # interleaved, so drifts hit every variant alike
            times["hand loop"].append(timed(lambda: hand_loop(env, args.episodes, args.max_iter)))
            times["runner"].append(timed(lambda: runner.run(args.episodes, max_iter=args.max_iter)))
            path = tmp / f"rep{rep}"
            times["runner + saving"].append(
                timed(lambda p=path: runner.run(args.episodes, max_iter=args.max_iter, path_save=p))
            )
        saved_bytes = sum(f.stat().st_size for f in (tmp / "rep0").rglob("*") if f.is_file())
    finally:
        env.close()
        shutil.rmtree(tmp, ignore_errors=True)

    medians = {k: statistics.median(v) for k, v in times.items()}
    base = medians["hand loop"]
    steps = args.episodes * args.max_iter
    print(
        f"env={args.env} vector={args.vector} num_envs={args.num_envs} "
        f"episodes={args.episodes} steps/episode<={args.max_iter} repeats={args.repeats}"
    )
    print(f"{'variant':<18}{'median s':>10}{'µs/step':>10}{'ratio':>8}")
    for name, value in medians.items():
        print(f"{name:<18}{value:>10.4f}{1e6 * value / steps:>10.1f}{value / base:>8.3f}")
    print(f"recorded size per episode: {saved_bytes / args.episodes / 1024:.0f} KiB")
    doc = {
        "args": vars(args),
        "median_seconds": medians,
        "ratio_to_hand_loop": {k: v / base for k, v in medians.items()},
        "all_seconds": times,
        "recorded_bytes_per_episode": saved_bytes / args.episodes,
    }
    write_result(doc, args.out, "bench_runner.json")


if __name__ == "__main__":
    main()
