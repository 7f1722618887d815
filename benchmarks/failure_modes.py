"""Which of do-nothing's losses can topology actions reach at all? The overflow that starts
each loss, and whether its corridor cuts the grid in two.

Per scenario of a topology task's split that do-nothing (with the task's heuristics) loses:
the branch most loaded at the last decision before the first branch trips (the overflow that
starts the end), its corridor (the branches joining the same two substations), the game-over
reason, whether taking the corridor out splits the substation graph of the reference
topology, and what the task's whole catalog of topology actions could do at the last decision
before that trip where every branch was still below its limit: the lowest maximum rho any of
its legal actions reaches in the simulated next step, and how many keep every branch below 1.

A corridor that cuts the grid carries the net injection of the side it feeds, less that side's
losses: no change of bus bars that keeps every element connected moves that active flow
elsewhere, so a topology action can delay such a loss only through voltages (the current of a
given power moves with them by a few per cent), not avoid it.

    python benchmarks/failure_modes.py --task grid_vec/Case118Topology-v0 --split test
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

import grid_vec
from grid_vec.bench import add_out_argument, write_result
from grid_vec.core.topology import components
from grid_vec.env.grid_env import GridEnv
from grid_vec.grid.model import GridModel


@dataclass
class Loss:
    """One scenario do-nothing loses: where its end starts."""

    scenario: int
    survival: int
    first_trip_step: int
    branch: str  # the most loaded branch at the last decision before the first trip
    rho: float  # its load there
    corridor: list[str]  # the branches joining the same two substations, it among them
    cuts_grid: bool  # taking the corridor out splits the grid
    island: list[str]  # the substations cut off with it (the smaller side), if it cuts
    game_over_reason: str
    decision_step: int  # the last decision before the first trip with every rho below 1
    do_nothing_max_rho: float  # do-nothing's simulated next step there
    catalog_best_max_rho: float  # the lowest any legal catalog action reaches there
    catalog_safe: int  # the legal catalog actions keeping every branch below rho 1 there
    catalog_legal: int


def corridor(model: GridModel, branch: int) -> np.ndarray:
    """The branches joining the same two substations as ``branch`` (``branch`` included)."""
    origin, extremity = np.asarray(model.branch_or_sub), np.asarray(model.branch_ex_sub)
    a, b = origin[branch], extremity[branch]
    same = ((origin == a) & (extremity == b)) | ((origin == b) & (extremity == a))
    return np.flatnonzero(same)


def island_without(model: GridModel, branches: np.ndarray) -> np.ndarray:
    """The substations cut off from the rest when ``branches`` are taken out of the
    reference topology (one bus per substation): the smaller side, empty if none is."""
    keep = np.ones(model.n_branch, dtype=bool)
    keep[branches] = False
    origin, extremity = np.asarray(model.branch_or_sub), np.asarray(model.branch_ex_sub)
    label = components(model.n_sub, origin[keep], extremity[keep])
    return np.flatnonzero(label != np.argmax(np.bincount(label)))


def catalog_at(catalog_env: GridEnv, scenario: int, seed: int, step: int) -> np.ndarray:
    """Every legal action of the whole catalog simulated at do-nothing's decision at time
    step ``step`` of ``scenario`` (one its play stops at): their simulated maximum rho
    (``inf`` for a game over), do-nothing's first."""
    catalog_env.set_scenario_id(scenario)
    _, info = catalog_env.reset(seed=seed)
    played = 0
    while played < step:
        _, _, _, _, info = catalog_env.step(0)
        played += 1 + int(info["skipped_steps"])
    legal = np.flatnonzero(info["action_mask"])
    legal = np.concatenate([[0], legal[legal != 0]])
    found = catalog_env.simulate_candidates(legal)
    return np.where(found.terminated | found.illegal, np.inf, found.max_rho)


def play_do_nothing(
    env: GridEnv, scenario: int, seed: int, catalog_env: GridEnv | None = None
) -> Loss | None:
    """Play ``scenario`` with do-nothing; where it is lost, where the loss starts (None if
    the scenario is survived). ``catalog_env`` (the task's env over the whole catalog, with
    its action masks) simulates every legal action at the last decision before the first trip
    where every rho was below 1; without it those fields are NaN / -1."""
    model, rho_at = env.model, env.obs_layout.slices["rho"]
    env.set_scenario_id(scenario)
    obs, _ = env.reset(seed=seed)
    step, first_trip, before, below_one, decided_at = 0, None, None, 0, 0
    while True:
        last_rho = np.asarray(obs)[rho_at]
        if last_rho.max() < 1.0:
            below_one = step
        obs, _, terminated, truncated, info = env.step(0)
        step += 1 + int(info["skipped_steps"])
        if first_trip is None and np.any(info["tripped_branches"]):
            first_trip, before, decided_at = step, last_rho, below_one
        if truncated or (terminated and first_trip is None):
            return None  # survived (or ended without an overflow: not this script's case)
        if terminated:
            break
    branch = int(np.argmax(before))
    lane = corridor(model, branch)
    island = island_without(model, lane)
    simulated = (
        np.full(1, np.nan)
        if catalog_env is None
        else catalog_at(catalog_env, scenario, seed, decided_at)
    )
    return Loss(
        scenario=scenario,
        survival=step,
        first_trip_step=first_trip,
        branch=str(model.branch_names[branch]),
        rho=round(float(before[branch]), 3),
        corridor=[str(model.branch_names[b]) for b in lane],
        cuts_grid=bool(island.size),
        island=[str(model.sub_names[s]) for s in island],
        game_over_reason=str(info["game_over_reason"]),
        decision_step=decided_at,
        do_nothing_max_rho=round(float(simulated[0]), 3),
        catalog_best_max_rho=round(float(simulated.min()), 3),
        catalog_safe=int((simulated < 1.0).sum()) if catalog_env is not None else -1,
        catalog_legal=len(simulated) if catalog_env is not None else -1,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case118Topology-v0")
    p.add_argument("--split", default="test", choices=["test", "validation", "train"])
    p.add_argument("--seed", type=int, default=0)
    add_out_argument(p)
    args = p.parse_args()
    env = grid_vec.make(args.task, split=args.split).unwrapped
    catalog = grid_vec.make(args.task, split=args.split, action_subset=None).unwrapped
    n = len(env.source)
    losses = [loss for s in range(n) if (loss := play_do_nothing(env, s, args.seed, catalog))]
    for loss in losses:
        where = f"cuts off {', '.join(loss.island)}" if loss.cuts_grid else "meshed"
        print(
            f"scenario {loss.scenario:2d}: lost at {loss.survival:4d}, first trip at "
            f"{loss.first_trip_step:4d}; {loss.branch} at rho {loss.rho:.3f}, corridor "
            f"{'+'.join(loss.corridor)} {where}; {loss.game_over_reason}; at the decision of "
            f"step {loss.decision_step}, simulated max rho: do-nothing "
            f"{loss.do_nothing_max_rho:.3f}, best of the catalog "
            f"{loss.catalog_best_max_rho:.3f} ({loss.catalog_safe} of {loss.catalog_legal} "
            "legal actions below 1)"
        )
    cutting = sum(loss.cuts_grid for loss in losses)
    print(
        f"{len(losses)} of {n} scenarios lost by do-nothing; {cutting} start at a corridor "
        f"that cuts the grid; overloads starting the end: "
        f"{dict(Counter(loss.branch for loss in losses).most_common())}; the catalog's best "
        f"simulated max rho at the last decision below 1: median "
        f"{np.median([loss.catalog_best_max_rho for loss in losses]):.3f}"
    )
    doc = {
        "command": f"python benchmarks/failure_modes.py --task {args.task} --split {args.split}",
        "task": args.task,
        "split": args.split,
        "scenarios": n,
        "lost": len(losses),
        "cutting_the_grid": cutting,
        "catalog_size": len(catalog.catalog),
        "losses": [asdict(loss) for loss in losses],
    }
    name = f"failure_modes_{args.task.split('/')[-1].lower()}_{args.split}.json"
    write_result(doc, args.out, name)


if __name__ == "__main__":
    main()
