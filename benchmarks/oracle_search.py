"""How far can a topology task's scenarios be survived at all? An oracle search per scenario.

Every agent measured on ``grid_vec/Case14Topology-v0`` loses some scenarios (docs/tasks.md,
"where the scores stop"). Whether those are lost by the grid (no sequence of the task's
actions survives them) or by the agents decides what a better agent can gain. This script
looks for a surviving sequence with the real future at hand, which no agent has: it plays
the env through snapshots (:meth:`GridEnv.snapshot` / :meth:`GridEnv.restore`), so what it
finds is a lower bound on what the task's actions can survive, not an agent's score.

Per scenario: greedy-by-simulate (the lowest simulated max rho over the task's legal
actions, as ``GreedyAgent(rank="max_rho")``) is played, with the task's heuristics, until
its game over at step ``T``. From greedy's decision ``back`` steps before ``T`` (each of
``--backs`` in turn), rollouts are played in which each decision is drawn uniformly among
the legal actions whose simulated max rho is within ``tol`` of the best (each of ``--tols``,
``--tries`` rollouts each); a rollout that reaches ``T + --margin`` (or the scenario's end)
rescues the scenario there, and greedy goes on from that rollout's state until the next
game over, searched the same way. A game over no rollout gets past ends the search: the
scenario's oracle survival is the step of that game over on the path found, whose actions
the result holds (:func:`replay` plays them again in a plain env).

    python benchmarks/oracle_search.py --split validation --scenarios 4,6,17,23,28,29
    python benchmarks/oracle_search.py --split test --out benchmarks/results/tasks

Seeded (``--seed``): the same command finds the same sequences.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import grid_vec
from grid_vec.bench import add_out_argument, write_result
from grid_vec.env.grid_env import GridEnv
from grid_vec.runner.agents import candidate_scores
from grid_vec.runner.evaluate import survival_fraction

DEFAULT_BACKS = (20, 50, 100, 150, 200)
DEFAULT_TOLS = (0.02, 0.05, 0.1, 0.3)


@dataclass
class Decision:
    """A decision point of the path being searched: the step it stands at, the env's state
    there and the info the env gave with it (its action mask)."""

    step: int
    state: Any
    info: dict
    action: int = -1  # the action taken there (-1: none yet)


@dataclass
class ScenarioResult:
    """One scenario's search: greedy's survival; the oracle's (the time steps the path found
    survives, ``full`` where no game over ends it) and the actions that replay that path;
    the game overs the search got past (the step each happened at under the path searched
    from)."""

    scenario: int
    greedy_survival: int
    greedy_full: bool
    oracle_survival: int
    full: bool
    rescued_at: list[int]
    rollouts: int
    seconds: float
    actions: list[int]  # the actions of the path found, one per decision: a replay of it


def ranked(env: GridEnv, info: dict) -> tuple[np.ndarray, np.ndarray]:
    """The legal actions, best first as ``GreedyAgent(rank="max_rho")`` ranks them
    (:func:`~grid_vec.runner.agents.candidate_scores`: a game over or an illegal action
    last, ties to the first), and their simulated max rho."""
    mask = info.get("action_mask")
    candidates = np.arange(env.action_space.n) if mask is None else np.flatnonzero(mask)
    rho = -candidate_scores(env.simulate_candidates(candidates), by_rho=True)
    order = np.argsort(rho, kind="stable")
    return candidates[order], rho[order]


GAME_OVER, ALIVE, ENDED = "game over", "alive", "ended"


def play(
    env: GridEnv,
    start: Decision,
    until: int,
    tol: float,
    rng: np.random.Generator,
) -> tuple[int, str, list[Decision]]:
    """Play from ``start`` (the env in its state) until step ``until`` or the episode's end:
    each decision the best-ranked action (``tol`` 0) or one drawn among those within ``tol``
    of the best. Returns the step reached, how it stands there (:data:`GAME_OVER`,
    :data:`ALIVE` at ``until``, or :data:`ENDED`: the scenario's end, no game over) and the
    decisions met on the way (``start`` first; for :data:`ALIVE`, the state at ``until``
    last)."""
    step, info, path = start.step, start.info, []
    while step < until:
        path.append(Decision(step, env.snapshot(), info))
        candidates, rho = ranked(env, info)
        near = np.flatnonzero(rho <= rho[0] + tol) if tol > 0 else [0]
        action = candidates[near[rng.integers(len(near))]] if len(near) > 1 else candidates[0]
        path[-1].action = int(action)
        _, _, terminated, truncated, info = env.step(action)
        step += 1 + int(info["skipped_steps"])
        if terminated:
            return step, GAME_OVER, path
        if truncated:
            return step, ENDED, path
    path.append(Decision(step, env.snapshot(), info))
    return step, ALIVE, path


def search_scenario(env: GridEnv, scenario: int, args: argparse.Namespace) -> ScenarioResult:
    """Search one scenario (module docstring)."""
    rng = np.random.default_rng([args.seed, scenario])
    began = time.perf_counter()
    env.set_scenario_id(scenario)
    _, info = env.reset(seed=args.seed)
    here = Decision(0, env.snapshot(), info)
    decisions: list[Decision] = []  # the path searched so far, one entry per decision
    greedy, rescued, rollouts = None, [], 0
    while True:
        step, status, path = play(env, here, 10**9, 0.0, rng)  # greedy to the end
        decisions += path
        greedy = greedy or (step, status == ENDED)
        if status == GAME_OVER:
            found, tried = rescue(env, decisions, step, args, rng)
            rollouts += tried
            if found is not None:
                rescued.append(step)
                index, step, status, path = found
                decisions = decisions[:index] + path
        if status != ALIVE:
            return ScenarioResult(
                scenario=scenario,
                greedy_survival=greedy[0],
                greedy_full=greedy[1],
                oracle_survival=step,
                full=status == ENDED,
                rescued_at=rescued,
                rollouts=rollouts,
                seconds=round(time.perf_counter() - began, 1),
                actions=[d.action for d in decisions],
            )
        here = decisions.pop()  # the rollout stopped there, alive: greedy goes on from it


def rescue(
    env: GridEnv,
    decisions: list[Decision],
    failed: int,
    args: argparse.Namespace,
    rng: np.random.Generator,
) -> tuple[tuple[int, int, str, list[Decision]] | None, int]:
    """Rollouts from the decisions ``--backs`` steps before the game over at ``failed``,
    ``--tries`` for each of ``--tols``, until one gets ``--margin`` steps past it (or to the
    scenario's end). Returns ``((index of the decision it started from, step reached, its
    status, its decisions), rollouts played)``, or ``(None, rollouts played)``."""
    tried = 0
    for back in args.backs:
        earlier = [i for i, d in enumerate(decisions) if d.step <= failed - back]
        if not earlier:
            break
        index = earlier[-1]
        start = decisions[index]
        for tol in args.tols:
            for _ in range(args.tries):
                env.restore(start.state)
                tried += 1
                step, status, path = play(env, start, failed + args.margin, tol, rng)
                if status != GAME_OVER:
                    return (index, step, status, path), tried
    return None, tried


def replay(env: GridEnv, scenario: int, seed: int, actions: list[int]) -> tuple[int, bool]:
    """Play ``actions`` (a :class:`ScenarioResult`'s) from a reset of ``scenario`` with
    ``seed``, one per decision. Returns the time steps played and whether a game over ended
    the episode (the path's claim, checked by a plain env).

    Raises:
        ValueError: the actions ran out before the episode ended.
    """
    env.set_scenario_id(scenario)
    env.reset(seed=seed)
    step = 0
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        step += 1 + int(info["skipped_steps"])
        if terminated or truncated:
            return step, bool(terminated)
    raise ValueError(f"{len(actions)} actions played and the episode goes on (step {step})")


def score(ends: list[tuple[int, bool]], length: int) -> float:
    """``grid-vec eval``'s score of ``(time steps survived, survived to the end)`` pairs."""
    steps, full = (np.array(column) for column in zip(*ends, strict=True))
    return 100 * survival_fraction(steps, np.full(len(steps), length), ~full)


def parse_ids(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--split", default="validation", choices=["test", "validation", "train"])
    p.add_argument("--scenarios", type=parse_ids, default=None, help="ids, e.g. 4,6 (all)")
    p.add_argument("--backs", type=parse_ids, default=list(DEFAULT_BACKS))
    p.add_argument(
        "--tols", type=lambda s: [float(x) for x in s.split(",")], default=list(DEFAULT_TOLS)
    )
    p.add_argument("--tries", type=int, default=20, help="rollouts per (back, tol)")
    p.add_argument("--margin", type=int, default=300, help="steps past a game over to reach")
    p.add_argument("--seed", type=int, default=0)
    add_out_argument(p)
    args = p.parse_args()
    env = grid_vec.make(args.task, split=args.split)
    ids = args.scenarios if args.scenarios is not None else range(len(env.unwrapped.source))
    results = []
    length = 0
    for scenario in ids:
        result = search_scenario(env.unwrapped, scenario, args)
        results.append(result)
        length = max(length, env.unwrapped.scenario_info.length - 1)
        print(
            f"scenario {scenario:2d}: greedy {result.greedy_survival:4d}, oracle "
            f"{result.oracle_survival:4d}{' (full)' if result.full else ''}, game overs got "
            f"past {result.rescued_at}, {result.rollouts} rollouts, {result.seconds:.0f} s",
            flush=True,
        )
    doc = {
        "command": "python benchmarks/oracle_search.py " + " ".join(_argv_of(args)),
        "task": args.task,
        "split": args.split,
        "episode_steps": length,
        "greedy_score": score([(r.greedy_survival, r.greedy_full) for r in results], length),
        "oracle_score": score([(r.oracle_survival, r.full) for r in results], length),
        "scenarios": [asdict(r) for r in results],
    }
    print(f"greedy score {doc['greedy_score']:.1f}, oracle score {doc['oracle_score']:.1f}")
    name = f"oracle_{args.task.split('/')[-1].lower()}_{args.split}.json"
    write_result(doc, args.out, name)


def _argv_of(args: argparse.Namespace) -> list[str]:
    out = ["--task", args.task, "--split", args.split]
    if args.scenarios is not None:
        out += ["--scenarios", ",".join(map(str, args.scenarios))]
    return out


if __name__ == "__main__":
    main()
