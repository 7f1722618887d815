"""grid2op's own agents evaluated on grid_vec (``grid_vec.integrations.grid2op``) against the
same agents on grid2op + LightSimBackend, start-up included.

For each agent (DoNothingAgent, RecoPowerlineAgent, PowerLineSwitch, TopologyGreedy, built
unchanged from grid2op's ``action_space``), each repetition times, on each side and
alternating which goes first:

* grid2op: ``grid2op.make(folder, backend=LightSimBackend())`` (no opponent), then the usual
  loop ``agent.act(obs, reward, done)`` / ``env.step`` over ``--episodes`` scenarios of at
  most ``--steps`` steps (the greedy agents call ``obs.simulate`` per candidate);
* grid_vec: ``make_env(folder)`` and ``reference_env(folder)`` (grid2op's env whose spaces
  build the agent and the observations), then the same loop through ``Grid2opAgentPolicy``
  (the candidates of the greedy agents simulated together).

Both play ``L2RPNReward`` (the greedy agents' candidates tied in float32 under the sandbox's
``RedispReward`` are not the physics' choice: see ``tests/integrations/test_grid2op_agents.py``)
on the folder's thermal limits with branch 4 at 60% of its limit (it trips and comes back,
so the agents have something to do). The steps where the two sides' actions differ are
counted. With ``--runner``, each agent also through each side's Runner: grid2op's
``Runner(**env.get_params_for_runner(), agentClass=...)`` with one process, and grid_vec's
``Runner`` with ``Grid2opBatchPolicy`` over a batched vector env of ``--episodes`` sub-envs (one
core too); there the episode lengths are compared (steps that differ in number).
Reported: median seconds per evaluation (min..max), the ratio grid2op / grid_vec,
and the load. JSON: OUT/bench_grid2op_agents.json (with --out OUT).

    python benchmarks/bench_grid2op_agents.py [--reps 3] [--episodes 2] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env

AGENTS = ("DoNothingAgent", "RecoPowerlineAgent", "PowerLineSwitch", "TopologyGreedy")


def _grid2op_side(folder, agent_class, limits, episodes: int, steps: int) -> list:
    from grid2op.Reward import L2RPNReward

    env = grid2op_env(folder, opponent=False, reward_class=L2RPNReward)
    env.set_thermal_limit(limits)
    agent, played = agent_class(env.action_space), []
    for scenario in range(episodes):
        env.set_id(scenario)
        obs, reward, done = env.reset(), 0.0, False
        for _ in range(steps):
            action = agent.act(obs, reward, done)
            played.append(action)
            obs, reward, done, _ = env.step(action)
            if done:
                break
    return played


def _grid_vec_side(folder, agent_class, limits, episodes: int, steps: int) -> list:
    from grid2op.Reward import L2RPNReward

    from grid_vec.integrations.grid2op import Grid2opAgentPolicy, make_env, reference_env

    env = make_env(folder, opponent=None, reward="L2RPNReward", thermal_limits=limits)
    reference = reference_env(folder, reward_class=L2RPNReward)
    policy, played = Grid2opAgentPolicy(agent_class(reference.action_space), env, reference), []
    for scenario in range(episodes):
        obs, _ = env.reset(options={"scenario_id": scenario})
        reward, done = 0.0, False
        for _ in range(steps):
            action = policy.act(obs, reward, done)
            played.append(policy.last_action)
            obs, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            if done:
                break
    return played


def _grid2op_runner(folder, agent_class, limits, episodes: int, steps: int) -> list:
    """grid2op's Runner, one process (grid_vec's batched Runner below uses one core too)."""
    from grid2op.Reward import L2RPNReward
    from grid2op.Runner import Runner

    env = grid2op_env(folder, opponent=False, reward_class=L2RPNReward)
    env.set_thermal_limit(limits)
    runner = Runner(**env.get_params_for_runner(), agentClass=agent_class)
    results = runner.run(nb_episode=episodes, max_iter=steps, nb_process=1)
    return [int(r[3]) for r in results]  # steps played per episode


def _grid_vec_runner(folder, agent_class, limits, episodes: int, steps: int) -> list:
    """grid_vec's Runner over a batched vector env of ``episodes`` sub-envs."""
    from grid2op.Reward import L2RPNReward

    import grid_vec
    from grid_vec.integrations.grid2op import (
        GRID2OP_OBSERVATION,
        Grid2opBatchPolicy,
        reference_env,
    )
    from grid_vec.runner import Runner

    envs = grid_vec.make_vec(
        folder, episodes, vectorization="batched", action_type="set_bus",
        observation_attributes=GRID2OP_OBSERVATION, opponent=None, reward="L2RPNReward",
        thermal_limits=limits,
    )  # fmt: skip
    reference = reference_env(folder, reward_class=L2RPNReward)
    policy = Grid2opBatchPolicy(agent_class(reference.action_space), reference)
    with Runner(envs, policy) as runner:
        results = runner.run(episodes, max_iter=steps, episode_id=list(range(episodes)))
    return [r.steps for r in results]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=positive_int, default=3, help="repetitions")
    parser.add_argument("--episodes", type=positive_int, default=2, help="scenarios per run")
    parser.add_argument("--steps", type=positive_int, default=20, help="most steps per episode")
    parser.add_argument("--agents", nargs="+", choices=AGENTS, default=list(AGENTS))
    parser.add_argument(
        "--runner",
        action="store_true",
        help="also each side's Runner (grid2op's, 1 process; grid_vec's, a batched env)",
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import grid2op.Agent

    import grid_vec

    folder = bundled_folder("l2rpn_case14_sandbox")
    limits = grid_vec.make(folder).thermal_limit.copy()
    limits[4] *= 0.6
    rows = []
    for name, runner in [(a, False) for a in args.agents] + [
        (a, True) for a in args.agents if args.runner
    ]:
        agent_class = getattr(grid2op.Agent, name)
        sides = (
            {"grid2op": _grid2op_runner, "grid_vec": _grid_vec_runner}
            if runner
            else {"grid2op": _grid2op_side, "grid_vec": _grid_vec_side}
        )
        times: dict[str, list[float]] = {side: [] for side in sides}
        differing = steps = 0
        for rep in range(args.reps):
            order = list(sides) if rep % 2 == 0 else list(sides)[::-1]
            played = {}
            for side in order:
                start = time.perf_counter()
                played[side] = sides[side](folder, agent_class, limits, args.episodes, args.steps)
                times[side].append(time.perf_counter() - start)
            if runner:  # the Runners give episode lengths: the steps that differ in number
                steps = sum(played["grid2op"])
                differing = sum(abs(a - b) for a, b in zip(*played.values(), strict=True))
                continue
            steps = len(played["grid2op"])
            differing = sum(
                a != b for a, b in zip(played["grid2op"], played["grid_vec"], strict=False)
            ) + abs(len(played["grid2op"]) - len(played["grid_vec"]))
        med = {side: statistics.median(t) for side, t in times.items()}
        row = {
            "agent": name, "runner": runner, "steps": steps, "differing_steps": differing,
            **{f"{side}_s": med[side] for side in sides},
            **{f"{side}_range_s": [min(t), max(t)] for side, t in times.items()},
            "ratio": med["grid2op"] / med["grid_vec"],
        }  # fmt: skip
        rows.append(row)
        label = name + (" (Runner)" if runner else "")
        print(
            f"{label:29s} {steps:4d} steps  grid2op {med['grid2op']:7.2f} s "
            f"({min(times['grid2op']):.2f}..{max(times['grid2op']):.2f})  grid_vec "
            f"{med['grid_vec']:7.2f} s ({min(times['grid_vec']):.2f}..{max(times['grid_vec']):.2f})"
            f"  {row['ratio']:5.1f}x  differing steps: {differing}",
            flush=True,
        )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    command = ["python", "benchmarks/bench_grid2op_agents.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "rows": rows, "load": list(load),
           "date": time.strftime("%Y-%m-%d %H:%M")}  # fmt: skip
    write_result(doc, args.out, "bench_grid2op_agents.json")
    return doc


if __name__ == "__main__":
    main()
