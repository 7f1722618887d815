"""Agent decisions per second of a task with heuristics: the batched env's lockstep ``step``
against its pool mode (``send`` / ``recv`` of the first ``batch_size`` turns ended).

With the task's heuristics a turn is the agent's step and the steps the env plays on its own
until the grid needs a decision: a lockstep step of N envs waits for the longest turn (its
last ``play_step`` calls move one or two envs), where a pool of M envs hands out the first K
turns ended and plays every other turn on, together. The subjects (one batched core each, in
this process, SAME_STEP autoreset inside the timed loop):

* ``lockstep N``: ``step`` of N envs (``--num-envs``), the PPO example's default;
* ``pool M/K``: ``send`` / ``recv`` of M envs, K per batch (``--pool``, as ``M/K``).

Policies: ``do-nothing`` and ``random`` (a legal action of the task's set with probability
0.3 per decision, else do-nothing). Repetitions alternate the subjects; medians and spreads
(max - min) of decisions/s, and env-steps (time steps played) per decision.

    python benchmarks/bench_pool.py [--task grid_vec/Case14Topology-v0] [--num-envs 16]
        [--pool 64/16 --pool 128/32] [--seconds 10] [--reps 3] [--out DIR]

JSON: OUT/bench_pool.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Any

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result

POLICIES = ("do-nothing", "random")
P_ACT = 0.3


def choose(masks: np.ndarray, policy: str, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``masks`` (the legal actions)."""
    actions = np.zeros(len(masks), dtype=np.int64)
    if policy == "random":
        for j in np.flatnonzero(rng.random(len(masks)) < P_ACT).tolist():
            actions[j] = rng.choice(np.flatnonzero(masks[j]))
    return actions


def lockstep(task: str, n: int, policy: str) -> Any:
    envs = grid_vec.make_vec(task, n, vectorization="batched", autoreset_mode="SameStep")
    _, infos = envs.reset(seed=0)
    masks = infos["action_mask"]
    rng = np.random.default_rng(0)

    def run(seconds: float) -> tuple[int, int, float]:
        nonlocal masks
        decisions, steps, t0 = 0, 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            *_, infos = envs.step(choose(masks, policy, rng))
            masks = infos["action_mask"]
            decisions += n
            steps += n + int(infos["skipped_steps"].sum())
        return decisions, steps, time.perf_counter() - t0

    return run


def pooled(task: str, m: int, k: int, policy: str) -> Any:
    envs = grid_vec.make_vec(
        task, m, vectorization="batched", autoreset_mode="SameStep", vector_kwargs={"batch_size": k}
    )
    _, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    envs.send(choose(infos["action_mask"], policy, rng), np.arange(m))

    def run(seconds: float) -> tuple[int, int, float]:
        decisions, steps, t0 = 0, 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            batch = envs.recv()
            envs.send(choose(batch.infos["action_mask"], policy, rng), batch.env_ids)
            decisions += k
            steps += k + int(batch.infos["skipped_steps"].sum())
        return decisions, steps, time.perf_counter() - t0

    return run


def pool_size(text: str) -> tuple[int, int]:
    """``M/K``: a pool of M envs, K per batch."""
    try:
        m, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected M/K (two integers), got {text!r}") from None
    if not 1 <= k <= m:
        raise argparse.ArgumentTypeError(f"expected 1 <= K <= M, got {text!r}")
    return m, k


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--num-envs", type=positive_int, default=16)
    p.add_argument("--pool", type=pool_size, action="append")
    p.add_argument("--seconds", type=positive_float, default=10.0)
    p.add_argument("--reps", type=positive_int, default=3)
    add_out_argument(p)
    args = p.parse_args()
    pools = args.pool or [(64, 16), (128, 32)]
    subjects: dict[tuple[str, str], Any] = {}
    for policy in POLICIES:
        subjects[(f"lockstep {args.num_envs}", policy)] = lockstep(args.task, args.num_envs, policy)
        for m, k in pools:
            subjects[(f"pool {m}/{k}", policy)] = pooled(args.task, m, k, policy)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in subjects}
    for rep in range(args.reps):
        for key, run in subjects.items():
            decisions, steps, seconds = run(args.seconds)
            runs[key].append((decisions / seconds, steps / max(decisions, 1)))
        print(f"repetition {rep + 1}/{args.reps} done (load {os.getloadavg()[0]:.2f})")
    rows = []
    print(f"{args.task}, decisions/s, median (spread) of {args.reps} alternating repetitions")
    for (subject, policy), values in runs.items():
        rates = [r for r, _ in values]
        base = statistics.median(r for r, _ in runs[(f"lockstep {args.num_envs}", policy)])
        row = {
            "subject": subject,
            "policy": policy,
            "decisions_per_s": statistics.median(rates),
            "spread": max(rates) - min(rates),
            "steps_per_decision": statistics.median(s for _, s in values),
            "vs_lockstep": statistics.median(rates) / base,
        }
        rows.append(row)
        print(
            f"  {policy:10s} {subject:14s} {row['decisions_per_s']:9,.0f} "
            f"(±{row['spread']:,.0f})  x{row['vs_lockstep']:.2f}  "
            f"{row['steps_per_decision']:.1f} steps/decision"
        )
    write_result(
        {
            "task": args.task,
            "seconds": args.seconds,
            "reps": args.reps,
            "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "load_after": os.getloadavg()[0],
            "rows": rows,
        },
        args.out,
        "bench_pool.json",
    )


if __name__ == "__main__":
    main()
