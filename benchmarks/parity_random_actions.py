"""grid_vec beside grid2op + LightSimBackend under seeded random topology actions: how often
do both end an episode at the same step?

On ``l2rpn_case14_sandbox`` (``--folder``: another bundled folder, its maintenance files on
both sides, its opponent off on both since attacks are random), 200 runs: 100 with the
folder's rules as grid2op's ``make`` reads them (the sandbox: no cooldown) and 100 with
cooldowns of 3 steps on lines and substations. A run plays one scenario (run % the number of
scenarios) from its start; at each step, with probability ``--act`` (0.3; 0.05 gives longer
episodes), a catalog action drawn uniformly (branch toggles — on disconnected branches too —
and substation configurations; the illegal ones
are refused alike on both sides), else do-nothing; the same action on both sides (a toggle is
``change_line_status``, a configuration ``set_bus`` on the whole substation). With
``--set-bus``, grid_vec plays the general topology action (``action_type="set_bus"``) and the
action drawn is a random ``set_bus`` / ``set_line_status`` pair
(``grid_vec.bench.workloads.random_set_bus``: substations reconfigured, branch ends taken off
and put back, statuses set, ambiguous mixes), the same dict on both sides. A run stops when
either side ends it, or after ``--steps`` steps. Reported: runs whose end step (or survival)
agrees, and for the others the first step where legality, ambiguity, line status or rho
(1e-3) differ.

    python benchmarks/parity_random_actions.py [--runs 100] [--steps 576] [--act 0.3]
        [--folder l2rpn_case14_sandbox] [--set-bus]

Needs the ``grid2op`` extra. JSON: OUT/parity_random_actions_<folder>_act<p>.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env
from grid_vec.bench.workloads import random_set_bus


def pair(folder: Path, cooldown: int | None, action_type: str = "discrete"):
    ours = grid_vec.make(folder, reward="flat", opponent=None, action_type=action_type)
    if cooldown is not None:
        ours.set_parameters(
            dataclasses.replace(
                ours.parameters,
                nb_timestep_cooldown_line=cooldown,
                nb_timestep_cooldown_sub=cooldown,
            )
        )
    theirs = grid2op_env(folder, opponent=False)
    if cooldown is not None:
        p = theirs.parameters
        p.NB_TIMESTEP_COOLDOWN_LINE = p.NB_TIMESTEP_COOLDOWN_SUB = cooldown
        theirs.change_parameters(p)
    theirs.set_thermal_limit(ours.thermal_limit)
    return ours, theirs


def draw(ours, rng: np.random.Generator, act: float, obs: np.ndarray) -> tuple[object, dict]:
    """One step's action: ours, and grid2op's dict of it (do-nothing with probability 1 -
    ``act``)."""
    acting = rng.random() < act
    if ours.action_type != "set_bus":
        action = int(rng.integers(len(ours.catalog))) if acting else 0
        return action, ours.catalog.grid2op_action(action)
    n_branch = ours.model.n_branch
    if acting:
        action = random_set_bus(ours.topology, n_branch, ours.view(obs).line_status, rng)
    else:
        action = {"set_bus": np.zeros(ours.topology.n_elem, np.int64),
                  "set_line_status": np.zeros(n_branch, np.int64)}  # fmt: skip
    return action, dict(action)


def run_once(ours, theirs, seed: int, steps: int, act: float) -> dict:
    scenario = seed % len(ours.scenario_order)
    theirs.set_id(scenario)
    theirs.reset()
    obs, _ = ours.reset(options={"scenario_id": scenario})
    rng = np.random.default_rng(seed)
    first_diff = None
    for t in range(1, steps + 1):
        action, g_action = draw(ours, rng, act, obs)
        g_obs, _, g_done, g_info = theirs.step(theirs.action_space(g_action))
        obs, _, term, trunc, info = ours.step(action)
        if term or trunc or g_done:
            end = t if (term or trunc) else None
            g_end = t if g_done else None
            return {"seed": seed, "end": end, "grid2op_end": g_end, "first_difference": first_diff}
        view = ours.view(obs)
        if first_diff is None and (
            info["is_illegal"] != g_info["is_illegal"]
            or info["is_ambiguous"] != g_info["is_ambiguous"]
            or not np.array_equal(view.line_status.astype(bool), g_obs.line_status)
            or float(np.abs(view.rho - g_obs.rho).max()) > 1e-3
        ):
            first_diff = {"step": t, "action": ours.describe_action(action)}
    return {"seed": seed, "end": None, "grid2op_end": None, "first_difference": first_diff}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=100, help="runs per rule set")
    parser.add_argument("--steps", type=positive_int, default=576, help="most steps per run")
    parser.add_argument("--act", type=float, default=0.3, help="probability of acting per step")
    parser.add_argument("--folder", default="l2rpn_case14_sandbox", help="a bundled folder")
    parser.add_argument(
        "--set-bus", action="store_true", help="random set_bus actions (action_type set_bus)"
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = bundled_folder(args.folder)
    start = time.perf_counter()
    groups = {}
    for cooldown in (None, 3):
        ours, theirs = pair(folder, cooldown, "set_bus" if args.set_bus else "discrete")
        runs = [run_once(ours, theirs, seed, args.steps, args.act) for seed in range(args.runs)]
        same = [r for r in runs if r["end"] == r["grid2op_end"]]
        name = "folder's rules" if cooldown is None else f"cooldowns {cooldown}"
        groups[name] = {
            "runs": len(runs),
            "same_end": len(same),
            "differing_values": sum(r["first_difference"] is not None for r in runs),
            "mean_end": float(np.mean([r["end"] or args.steps for r in runs])),
            "divergent": [r for r in runs if r["end"] != r["grid2op_end"]],
        }
        g = groups[name]
        print(
            f"{name}: same end step in {g['same_end']}/{g['runs']} runs "
            f"(mean end step {g['mean_end']:.1f}); runs with any differing value: "
            f"{g['differing_values']}"
        )
        for r in g["divergent"]:
            print(f"  seed {r['seed']}: ours {r['end']}, grid2op {r['grid2op_end']}, first "
                  f"difference {r['first_difference']}")  # fmt: skip
    total = sum(g["same_end"] for g in groups.values())
    count = sum(g["runs"] for g in groups.values())
    print(f"same end step in {total}/{count} runs ({100 * total / count:.1f}%), "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    command = ["python", "benchmarks/parity_random_actions.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "folder": args.folder, "groups": groups,
           "same_end": total, "runs": count}  # fmt: skip
    kind = "_set_bus" if args.set_bus else ""
    write_result(doc, args.out, f"parity_random_actions_{args.folder}{kind}_act{args.act}.json")
    return doc


if __name__ == "__main__":
    main()
