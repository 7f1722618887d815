"""A packaged L2RPN agent from PyPI, unchanged, on grid_vec and on grid2op + LightSimBackend:
the same scenarios, each side's steps survived, cumulative reward and time, and the steps
where the two sides' actions differ.

The agent is ``OptimCVXPY`` of ``l2rpn-baselines`` 0.8.0 (the ``l2rpn`` extra), the L2RPN
2022-2023 optimisation baseline: each step, by the highest ``obs.rho``, it solves a DC
optimal power flow (cvxpy) for redispatch, curtailment and storage to bring the flows back
under their limits ("danger"), or back to the reference dispatch, reconnecting a branch
("safe"), or does nothing; it reads some twenty observation attributes and the grid's
reactances from the grid2op env it is built with. It runs through
``Grid2opAgentPolicy`` over ``make_env(folder)`` (action type ``"set_bus_continuous"``).

Why this agent: ``curriculumagent`` (PyPI, the issue's first choice) does not install here:
it pins tensorflow 2.12.1, ray 2.5.1 and scipy 1.15.3 (numpy < 2) beside torch and
lightning. ``l2rpn-baselines`` installs, and ``OptimCVXPY`` needs no trained weights (its
other agents ship none). It was written for older releases: cvxpy is pinned to 1.6.0 (1.7
changed how a ``Parameter`` indexes), and two names it imports were removed since, which
:func:`load_agent_class` puts back before importing it (``numpy.NaN``, numpy 2's
``numpy.nan``; ``lightsim2grid.gridmodel.init``, now ``init_from_pandapower``). Its code
runs as published, the same on both sides.

Both sides: no opponent, the folder's reward, thermal limits (times ``--limits-scale``) and
maintenance; scenarios ``0 .. --scenarios - 1`` from their start, at most ``--steps`` steps.
Reported per scenario: each side's steps, summed reward and seconds (start-up included),
grid2op's ``DoNothingAgent``'s steps and summed reward on grid_vec (what the agent's
actions change), the steps where the agent acted (an action other than do-nothing), those
where the two sides' actions differ, and the largest difference of the highest rho of a
step. The agent is slow (a cvxpy solve per step out of the "do nothing" band), so both sides
take about its time.

    python benchmarks/compare_l2rpn_baseline.py [--folder l2rpn_case14_sandbox]
        [--scenarios 3] [--steps 288] [--limits-scale 1.0] [--out OUT]

JSON: OUT/compare_l2rpn_baseline_<folder>.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env


def load_agent_class() -> type:
    """``l2rpn_baselines``' ``OptimCVXPY``, with the two names it imports that numpy 2 and
    lightsim2grid 1.x removed put back (aliases of their new names).

    Raises:
        ModuleNotFoundError: the ``l2rpn`` extra is not installed.
    """
    import lightsim2grid.gridmodel as gridmodel

    if not hasattr(np, "NaN"):
        np.NaN = np.nan  # type: ignore[attr-defined]  # numpy < 2's name, read by the agent
    if not hasattr(gridmodel, "init"):
        gridmodel.init = gridmodel.init_from_pandapower  # lightsim2grid < 1's name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from l2rpn_baselines.OptimCVXPY import OptimCVXPY
    return OptimCVXPY


@dataclass
class Episode:
    """One scenario played by the agent on one side."""

    steps: int = 0
    reward: float = 0.0
    seconds: float = 0.0
    actions: list = field(default_factory=list, repr=False)  # grid2op actions, per step
    rho_max: list = field(default_factory=list, repr=False)  # the highest rho, per step


def play_grid2op(folder: Any, scenario: int, steps: int, limits: np.ndarray) -> Episode:
    """The agent on grid2op + LightSimBackend (thermal limits ``limits``)."""
    agent_class = load_agent_class()
    start = time.perf_counter()
    env = grid2op_env(folder, opponent=False)
    env.set_thermal_limit(limits)
    env.set_id(scenario)
    obs, reward, done = env.reset(), 0.0, False
    agent, episode = agent_class(env.action_space, env), Episode()
    while episode.steps < steps and not done:
        action = agent.act(obs, reward, done)
        obs, reward, done, _ = env.step(action)
        episode.actions.append(action)
        episode.steps += 1
        episode.reward += float(reward)
        episode.rho_max.append(float(np.max(obs.rho)))
    episode.seconds = time.perf_counter() - start
    return episode


def packaged_agent(reference: Any) -> Any:
    """``OptimCVXPY`` built on grid2op's env ``reference`` (it reads the grid's reactances)."""
    return load_agent_class()(reference.action_space, reference)


def play_grid_vec(
    folder: Any,
    scenario: int,
    steps: int,
    limits: np.ndarray,
    build: Callable[[Any], Any] = packaged_agent,
) -> Episode:
    """A grid2op agent (``build(grid2op's env)``; the packaged one by default) through
    ``Grid2opAgentPolicy`` on grid_vec's env of the folder."""
    from grid_vec.integrations.grid2op import Grid2opAgentPolicy, make_env

    start = time.perf_counter()
    env = make_env(folder, opponent=None, thermal_limits=limits)
    reference = grid2op_env(folder, opponent=False)  # builds the agent and its observations
    reference.set_thermal_limit(limits)
    policy = Grid2opAgentPolicy(build(reference), env, reference)
    obs, _ = env.reset(options={"scenario_id": scenario})
    reward, done, episode = 0.0, False, Episode()
    while episode.steps < steps and not done:
        action = policy.act(obs, reward, done)
        obs, reward, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
        episode.actions.append(policy.last_action)
        episode.steps += 1
        episode.reward += float(reward)
        episode.rho_max.append(float(np.max(env.view(obs).rho)))
    episode.seconds = time.perf_counter() - start
    return episode


def differing_steps(ours: Episode, theirs: Episode) -> list[int]:
    """The steps (from 1) both sides played where the agent's actions differ."""
    return [
        t + 1 for t, (a, b) in enumerate(zip(ours.actions, theirs.actions, strict=False)) if a != b
    ]


def action_difference(ours: Episode, theirs: Episode) -> float:
    """The largest difference between the two sides' action vectors at a step where they
    differ (MW of redispatch or storage, ratio of curtailment; 0: none differ)."""
    worst = 0.0
    for t in differing_steps(ours, theirs):
        a, b = ours.actions[t - 1].to_vect(), theirs.actions[t - 1].to_vect()
        both = np.isfinite(a) & np.isfinite(b)
        worst = max(worst, float(np.abs(a[both] - b[both]).max(initial=0.0)))
    return worst


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="l2rpn_case14_sandbox", help="a bundled folder")
    parser.add_argument("--scenarios", type=positive_int, default=3)
    parser.add_argument("--steps", type=positive_int, default=288)
    parser.add_argument(
        "--limits-scale",
        type=float,
        default=1.0,
        help="the folder's thermal limits times this, on both sides (< 1: the agent is in "
        "danger more often, so it redispatches and curtails more)",
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = bundled_folder(args.folder)
    from grid_vec.integrations.grid2op import make_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from grid2op.Agent import DoNothingAgent

    probe = make_env(folder)
    limits = probe.thermal_limit * args.limits_scale  # given to both sides
    if args.scenarios > len(probe.scenario_order):
        parser.error(f"--scenarios: {args.folder} has {len(probe.scenario_order)} scenarios")
    rows = []
    for scenario in range(args.scenarios):
        sides = {}
        order = ("grid_vec", "grid2op") if scenario % 2 else ("grid2op", "grid_vec")
        for side in order:  # alternating which goes first
            play = play_grid_vec if side == "grid_vec" else play_grid2op
            sides[side] = play(folder, scenario, args.steps, limits)
        ours, theirs = sides["grid_vec"], sides["grid2op"]
        # what the agent changes: grid2op's DoNothingAgent on the same grid (grid_vec's side
        # only: do-nothing ends where grid2op's does, tests/env/test_grid2op_folders.py)
        idle = play_grid_vec(
            folder, scenario, args.steps, limits, lambda ref: DoNothingAgent(ref.action_space)
        )
        rows.append(
            {
                "scenario": scenario,
                "do_nothing": {"steps": idle.steps, "reward": idle.reward},
                "grid_vec": {
                    k: v for k, v in asdict(ours).items() if k not in ("actions", "rho_max")
                },
                "grid2op": {
                    k: v for k, v in asdict(theirs).items() if k not in ("actions", "rho_max")
                },
                "differing_steps": differing_steps(ours, theirs),
                "max_action_difference": action_difference(ours, theirs),
                "steps_acting": sum(a != theirs.actions[0].__class__() for a in theirs.actions),
                "max_rho_difference": max(
                    (abs(a - b) for a, b in zip(ours.rho_max, theirs.rho_max, strict=False)),
                    default=0.0,
                ),
            }
        )
        print(
            f"scenario {scenario}: grid_vec {ours.steps} steps, reward {ours.reward:.2f}, "
            f"{ours.seconds:.1f} s | grid2op {theirs.steps} steps, reward {theirs.reward:.2f}, "
            f"{theirs.seconds:.1f} s | the agent acted at {rows[-1]['steps_acting']} steps; "
            f"actions differ at {len(rows[-1]['differing_steps'])} (by at most "
            f"{rows[-1]['max_action_difference']:.1e}) "
            f"steps, max |rho diff| {rows[-1]['max_rho_difference']:.2e} | do-nothing "
            f"{idle.steps} steps, reward {idle.reward:.2f}",
            flush=True,
        )
    result = {
        "benchmark": "compare_l2rpn_baseline",
        "agent": "l2rpn_baselines.OptimCVXPY (0.8.0)",
        "folder": args.folder,
        "steps": args.steps,
        "limits_scale": args.limits_scale,
        "rows": rows,
        "load": os.getloadavg(),
    }
    scale = "" if args.limits_scale == 1.0 else f"_limits{args.limits_scale:g}"
    write_result(result, args.out, f"compare_l2rpn_baseline_{args.folder}{scale}.json")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
