"""Calibrate the thermal limits of the embedded grids so do-nothing is a real control problem.

Method: play do-nothing without overflow disconnection over reference scenarios and record
each branch's peak current; limits are ``scale x peak`` per branch (floored at a fraction
of the largest peak so that lightly used branches are not the ones that trip). ``scale`` is
chosen by bisection so that, with grid2op's rules, do-nothing survives a median fraction of
the week inside the target band over the evaluation scenarios (different ids). The limits
printed at the end are pasted into ``grid_vec/env/embedded.py``.

    python benchmarks/calibrate.py case14            # search + evaluate
    python benchmarks/calibrate.py case14 --check    # evaluate the limits in embedded.py
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

from grid_vec.bench import add_out_argument, write_result
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.parameters import Parameters
from grid_vec.env.embedded import EMBEDDED, do_nothing_survival, embedded_model
from grid_vec.env.grid_env import GridEnv

REFERENCE_IDS = range(100, 120)
EVAL_IDS = range(20)
TARGET = (0.35, 0.65)  # aim inside the 20-80% band, with margin


def peaks(model, ids) -> np.ndarray:
    """Per-branch peak current over do-nothing runs without any disconnection."""
    env = GridEnv(
        model,
        SyntheticSource(model, seed=EMBEDDED[model.name].scenario_seed),
        parameters=Parameters(no_overflow_disconnection=True),
    )
    peak = np.zeros(model.n_branch)
    for sid in ids:
        obs, _ = env.reset(options={"scenario_id": sid})
        while True:
            peak = np.maximum(peak, env.view(obs).a_or)
            obs, _, term, trunc, _ = env.step(0)
            if term or trunc:
                break
    return peak


def evaluate(model, limits, ids) -> tuple[list[float], Counter]:
    """Fraction of the scenario survived by do-nothing, per scenario; game-over reasons."""
    env = GridEnv(
        model,
        SyntheticSource(model, seed=EMBEDDED[model.name].scenario_seed),
        thermal_limits=limits,
    )
    runs = do_nothing_survival(env, ids)
    reasons = Counter(
        f"{'overflow cascade' if r.tripped else 'other'}: {r.game_over_reason.split()[0]}"
        for r in runs
        if r.game_over_reason is not None
    )
    return [r.fraction for r in runs], reasons


def limits_for(peak: np.ndarray, scale: float, floor: float) -> np.ndarray:
    return np.maximum(peak, floor * peak.max()) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", choices=sorted(EMBEDDED))
    parser.add_argument("--check", action="store_true", help="only evaluate embedded limits")
    parser.add_argument("--floor", type=float, default=0.3)
    add_out_argument(parser)
    args = parser.parse_args()
    model = embedded_model(args.grid)
    t0 = time.perf_counter()
    if args.check:
        limits = model.thermal_limit_a
    else:
        peak = peaks(embedded_model(args.grid, calibrated=False), REFERENCE_IDS)
        lo, hi = 0.6, 1.2
        for _ in range(12):
            scale = 0.5 * (lo + hi)
            limits = limits_for(peak, scale, args.floor)
            median = float(np.median(evaluate(model, limits, EVAL_IDS)[0]))
            print(f"scale {scale:.4f}: median survival {median:.3f}")
            if TARGET[0] <= median <= TARGET[1]:
                break
            if median < TARGET[0]:
                lo = scale
            else:
                hi = scale
    fractions, reasons = evaluate(model, limits, EVAL_IDS)
    summary = {
        "grid": args.grid,
        "scenarios": list(EVAL_IDS),
        "survival_fraction": [round(f, 4) for f in fractions],
        "median_survival": float(np.median(fractions)),
        "survived_whole_week": int(sum(f == 1.0 for f in fractions)),
        "game_over_reasons": dict(reasons),
        "thermal_limits_a": [round(float(x), 1) for x in limits],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary, indent=1))
    write_result(summary, args.out, f"calibrate_{args.grid}.json")


if __name__ == "__main__":
    main()
