"""The multi-agent view's throughput: env-steps per second of ``grid_vec.marl.vector_env``
(x32, batched in this process) on grid2op's 14-bus sandbox, beside the single-agent batched
env playing the same joint actions (the cost of the view), and beside MARL2Grid's published
MAPPO training throughput (192-484 steps/s from 20-60 grid2op envs on a 72-CPU node).

Subjects, each over ``--num-envs`` envs of ``l2rpn_case14_sandbox`` (no heuristics: every
step is a decision of every agent; the dataset's opponent and maintenance play):

* ``multi-agent view``: ``MultiAgentVecEnv.step`` with the agents' actions (one per
  substation agent, or per agent of ``--scope``): what a MAPPO loop calls;
* ``single-agent env, same actions``: the ``BatchedGridVecEnv`` under the view stepped with
  the joint actions the view made of the same agents' actions, recorded in a first pass
  (same seeds, same actions: the same trajectories, resets included);

for two policies: ``do-nothing`` (every agent leaves its part unchanged) and ``random``
(each substation agent asks a legal configuration with probability ``--p-act`` per step,
each generator agent a random redispatch). Episodes that end are reset by the autoreset
inside the timed loop. Repetitions alternate the subjects; medians and spreads.

    python benchmarks/bench_marl.py [--num-envs 32] [--steps 300] [--reps 3] [--out DIR]

JSON: OUT/bench_marl.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.marl import SCOPES, vector_env
from grid_vec.marl.agents import KIND_SUBSTATION

MARL2GRID_STEPS_PER_S = (192, 484)  # MAPPO training, 14-bus grid, 20-60 envs, 72 CPUs


def sandbox() -> Path:
    """grid2op's packaged 14-bus sandbox (the bench extra installs grid2op)."""
    import grid2op

    return Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"


def agent_actions(vec, masks: np.ndarray, rng: np.random.Generator, p_act: float) -> np.ndarray:
    """The random policy's ``(N, A)`` actions (``p_act`` 0: do-nothing)."""
    layout = vec.layout
    actions = np.zeros((vec.num_envs, vec.num_agents))
    if p_act <= 0:
        return actions
    for i in range(vec.num_agents):
        if layout.kind[i] == KIND_SUBSTATION:
            for e in np.flatnonzero(rng.random(vec.num_envs) < p_act).tolist():
                actions[e, i] = rng.choice(np.flatnonzero(masks[e, i]))
        else:
            actions[:, i] = rng.uniform(layout.low[i], layout.high[i], vec.num_envs) * 0.2
    return actions


def record(vec, steps: int, p_act: float, seed: int) -> tuple[list, list]:
    """The agents' actions of ``steps`` steps from ``reset(seed)``, and the joint actions the
    view made of them (computed untimed)."""
    rng = np.random.default_rng(seed)
    result = vec.reset(seed=seed)
    agents, joints = [], []
    for _ in range(steps):
        actions = agent_actions(vec, result.action_masks, rng, p_act)
        joints.append(vec.resolve(actions).env_actions())
        agents.append(actions)
        result = vec.step(actions)
    return agents, joints


def time_view(vec, agents: list, seed: int) -> float:
    vec.reset(seed=seed)
    t0 = time.perf_counter()
    for actions in agents:
        vec.step(actions)
    return time.perf_counter() - t0


def time_single(vec, joints: list, seed: int) -> float:
    inner = vec.vec_env
    inner.reset(seed=seed)
    t0 = time.perf_counter()
    for action in joints:
        inner.step(action)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=positive_int, default=32)
    parser.add_argument("--steps", type=positive_int, default=300)
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--scope", choices=list(SCOPES), default="substations")
    parser.add_argument("--p-act", type=float, default=0.05)
    add_out_argument(parser)
    args = parser.parse_args()
    vec = vector_env(sandbox(), args.num_envs, args.scope, heuristics=None)
    env_steps = args.num_envs * args.steps
    results = {}
    print(
        f"l2rpn_case14_sandbox, {args.num_envs} envs, scope {args.scope} ({vec.num_agents} "
        f"agents), {args.steps} steps per repetition, load {os.getloadavg()[0]:.2f}"
    )
    for policy, p_act in (("do-nothing", 0.0), ("random", args.p_act)):
        agents, joints = record(vec, args.steps, p_act, seed=0)
        samples: dict[str, list[float]] = {"multi-agent view": [], "single-agent env": []}
        for _ in range(args.reps):
            samples["multi-agent view"].append(env_steps / time_view(vec, agents, 0))
            samples["single-agent env"].append(env_steps / time_single(vec, joints, 0))
        rows = {
            name: {
                "env_steps_per_s": statistics.median(s),
                "min": min(s),
                "max": max(s),
                "samples": s,
            }
            for name, s in samples.items()
        }
        view, single = (rows[k]["env_steps_per_s"] for k in samples)
        rows["view_cost"] = 1.0 - view / single
        results[policy] = rows
        for name in samples:
            r = rows[name]
            print(
                f"  {policy:10} {name:18} {r['env_steps_per_s']:9,.0f} env-steps/s "
                f"({r['min']:,.0f}..{r['max']:,.0f})"
            )
        print(f"  {policy:10} the view costs {100 * rows['view_cost']:.1f}% of the throughput")
    low, high = MARL2GRID_STEPS_PER_S
    print(f"MARL2Grid (published, MAPPO training, 72 CPUs): {low}-{high} steps/s")
    vec.close()
    write_result(
        {
            "num_envs": args.num_envs,
            "steps": args.steps,
            "scope": args.scope,
            "p_act": args.p_act,
            "agents": list(vec.agents),
            "results": results,
            "marl2grid_steps_per_s": list(MARL2GRID_STEPS_PER_S),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "load": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d"),
        },
        args.out,
        "bench_marl.json",
        indent=2,
    )


if __name__ == "__main__":
    main()
