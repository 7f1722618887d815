"""grid_vec beside grid2op + LightSimBackend under seeded random continuous actions
(redispatch, curtailment, storage, all of them, all of them with topology actions): the
same dispatch, the same generation, the same storage charges, the same end step?

On ``l2rpn_case14_sandbox`` (``--folder``: another bundled folder with ``prods_charac.csv``,
e.g. ``educ_case14_storage`` or ``l2rpn_wcci_2022_dev`` with storage units), maintenance and
opponent off on both sides, ``--runs`` runs per action type (``storage`` only on a folder
with storage units; there ``continuous`` holds all three). A run plays one scenario (run %
the number of scenarios) from its start; at each step, with probability ``--act``, a new
action drawn uniformly from ``--scale`` x the action space (redispatch within the ramps;
curtailment limits in ``[1 - scale, 1]``; storage within ``[-max_p_prod, max_p_absorb]``),
else the last one again with no redispatch (so the curtailment limits hold and the units
keep charging or discharging, as an agent that keeps them would send). The same action on
both sides (``ContinuousLayout.grid2op_action``: grid2op's ``redispatch``, ``curtail`` and
``set_storage`` on every generator and unit of the box). ``combined`` adds, with probability
``--act``, a catalog action drawn uniformly (the same on both sides, as
``ActionCatalog.grid2op_action`` says it), else do-nothing; ``set_bus_continuous`` likewise
a random general topology action (``grid_vec.bench.workloads.random_set_bus``; both sides
given ``GridEnv.grid2op_action`` of the whole action). A run stops when either side ends it,
or after ``--steps`` steps.

Reported per action type: runs whose end step agrees, and over every step both played the
largest |difference| of ``actual_dispatch``, ``gen_p`` (MW), ``storage_charge`` (MWh),
``storage_power`` (MW) and ``line_status``, and the failed-redispatch, illegal and ambiguous
flags that differ.

    python benchmarks/parity_continuous.py [--runs 100] [--steps 288] [--act 0.2]
        [--scale 0.5] [--folder l2rpn_case14_sandbox]
        [--types redispatch curtailment storage continuous]

Needs the ``grid2op`` extra. JSON: OUT/parity_continuous_<folder>.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env
from grid_vec.bench.workloads import random_set_bus

TYPES = ("redispatch", "curtailment", "storage", "continuous", "combined", "set_bus_continuous")
COMPARED = ("actual_dispatch", "gen_p", "storage_charge", "storage_power", "line_status")


def pair(folder: Path, action_type: str):
    """grid_vec and grid2op + LightSimBackend on ``folder``, maintenance and opponent off."""
    from grid2op.Action import PlayableAction

    ours = grid_vec.make(
        folder,
        reward="flat",
        opponent=None,
        maintenance=False,
        action_type=action_type,
        observation_attributes=COMPARED,
    )
    theirs = grid2op_env(folder, maintenance=False, opponent=False, action_class=PlayableAction)
    theirs.set_thermal_limit(ours.thermal_limit)
    return ours, theirs


def draw(env, rng: np.random.Generator, scale: float) -> np.ndarray:
    """An action drawn uniformly from ``scale`` x the box (limits in [1 - scale, 1])."""
    layout = env.unwrapped._batch.continuous
    n_r, n_c = len(layout.redispatch_gens), len(layout.curtail_gens)
    low, high = layout.low.astype(np.float64), layout.high.astype(np.float64)
    low *= scale
    high *= scale
    low[n_r : n_r + n_c] = 1.0 - scale
    high[n_r : n_r + n_c] = 1.0
    return rng.uniform(low, high).astype(np.float32)


def run_once(ours, theirs, seed: int, steps: int, act: float, scale: float) -> dict:
    scenario = seed % len(ours.scenario_order)
    theirs.set_id(scenario)
    theirs.reset()
    ours.reset(options={"scenario_id": scenario})
    rng = np.random.default_rng(seed)
    layout = ours.unwrapped._batch.continuous
    n_r = len(layout.redispatch_gens)
    keep = draw(ours, rng, 0.0)  # no redispatch, limits at 1
    line_status = np.ones(ours.model.n_branch, dtype=bool)
    worst = dict.fromkeys(COMPARED, 0.0)
    flags = 0
    for t in range(1, steps + 1):
        action = draw(ours, rng, scale) if rng.random() < act else keep.copy()
        keep = action.copy()
        keep[:n_r] = 0.0
        theirs_action = layout.grid2op_action(action)
        if ours.action_type == "combined":
            index = int(rng.integers(len(ours.catalog))) if rng.random() < act else 0
            theirs_action.update(ours.catalog.grid2op_action(index))
            action = {"topology": index, "continuous": action}
        elif ours.action_type == "set_bus_continuous":
            action = {**_set_bus(ours, rng, act, line_status), "continuous": action}
            theirs_action = ours.grid2op_action(action)
        g_obs, _, g_done, g_info = theirs.step(theirs.action_space(theirs_action))
        obs, _, term, trunc, info = ours.step(action)
        flags += bool(g_info["failed_redispatching"]) != ("failed_redispatch_reason" in info)
        flags += bool(g_info["is_illegal"]) != info["is_illegal"]
        flags += bool(g_info["is_ambiguous"]) != info["is_ambiguous"]
        if term or trunc or g_done:
            return {
                "seed": seed,
                "end": t if (term or trunc) else None,
                "grid2op_end": t if g_done else None,
                "worst": worst,
                "flag_differences": flags,
                "game_over_reason": info.get("game_over_reason"),
            }
        view = ours.view(obs)
        line_status = view.line_status > 0.5
        for name in worst:
            diff = float(np.abs(getattr(view, name) - getattr(g_obs, name)).max(initial=0.0))
            worst[name] = max(worst[name], diff)
    return {"seed": seed, "end": None, "grid2op_end": None, "worst": worst,
            "flag_differences": flags, "game_over_reason": None}  # fmt: skip


def _set_bus(ours, rng: np.random.Generator, act: float, line_status: np.ndarray) -> dict:
    """A random general topology action (with probability ``act``), else one asking
    nothing."""
    if rng.random() < act:
        return random_set_bus(ours.topology, ours.model.n_branch, line_status, rng)
    return {
        "set_bus": np.zeros(ours.topology.n_elem, dtype=np.int64),
        "set_line_status": np.zeros(ours.model.n_branch, dtype=np.int64),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive_int, default=100, help="runs per action type")
    parser.add_argument("--steps", type=positive_int, default=288, help="most steps per run")
    parser.add_argument("--act", type=float, default=0.2, help="probability of a new action")
    parser.add_argument("--scale", type=float, default=0.5, help="share of the box drawn from")
    parser.add_argument("--folder", default="l2rpn_case14_sandbox", help="a bundled folder")
    parser.add_argument("--types", nargs="+", choices=TYPES, help="default: those the folder has")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = bundled_folder(args.folder)
    start = time.perf_counter()
    groups = {}
    types = args.types
    if types is None:  # storage only on a folder with storage units
        has_storage = (folder / "storage_units_charac.csv").exists()
        types = [t for t in TYPES if t != "storage" or has_storage]
    for action_type in types:
        ours, theirs = pair(folder, action_type)
        runs = [
            run_once(ours, theirs, seed, args.steps, args.act, args.scale)
            for seed in range(args.runs)
        ]
        same = [r for r in runs if r["end"] == r["grid2op_end"]]
        groups[action_type] = g = {
            "runs": len(runs),
            "same_end": len(same),
            "mean_end": float(np.mean([r["end"] or args.steps for r in runs])),
            "max_actual_dispatch_diff_mw": max(r["worst"]["actual_dispatch"] for r in runs),
            "max_gen_p_diff_mw": max(r["worst"]["gen_p"] for r in runs),
            "max_storage_charge_diff_mwh": max(r["worst"]["storage_charge"] for r in runs),
            "max_storage_power_diff_mw": max(r["worst"]["storage_power"] for r in runs),
            "failed_redispatch_flag_differences": sum(r["flag_differences"] for r in runs),
            "divergent": [r for r in runs if r["end"] != r["grid2op_end"]],
        }
        print(
            f"{action_type}: same end step in {g['same_end']}/{g['runs']} runs (mean end "
            f"{g['mean_end']:.1f}); max |diff| actual_dispatch "
            f"{g['max_actual_dispatch_diff_mw']:.2e} MW, gen_p {g['max_gen_p_diff_mw']:.2e} MW, "
            f"storage_charge {g['max_storage_charge_diff_mwh']:.2e} MWh, storage_power "
            f"{g['max_storage_power_diff_mw']:.2e} MW; failed-redispatch / illegal flags "
            f"differing: {g['failed_redispatch_flag_differences']}"
        )
        for r in g["divergent"]:
            print(f"  seed {r['seed']}: ours {r['end']}, grid2op {r['grid2op_end']} "
                  f"({r['game_over_reason']})")  # fmt: skip
    print(f"{time.perf_counter() - start:.0f} s")
    command = ["python", "benchmarks/parity_continuous.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "folder": args.folder, "groups": groups}
    write_result(doc, args.out, f"parity_continuous_{args.folder}.json")
    return doc


if __name__ == "__main__":
    main()
