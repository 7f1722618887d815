"""Candidate evaluations per second: every catalog action of a state simulated one step
ahead, side by side with grid2op's ``obs.simulate`` on the same state and the same actions.

Subjects, on ``l2rpn_case14_sandbox`` (``--folder``), maintenance and opponent off on every
side, each env three do-nothing steps into scenario 0:

* grid2op obs.simulate: grid2op + LightSimBackend, ``obs.simulate(action)`` for each catalog
  action (as grid2op dicts, ``ActionCatalog.grid2op_action``);
* GridEnv simulate: ``env.unwrapped.simulate(a)`` for each catalog action, one call each;
* GridEnv simulate_candidates: ``env.unwrapped.simulate_candidates(all actions)``, one call;
* batched xN simulate_candidates: ``make_vec(folder, N, vectorization="batched")``, all
  actions of all N envs in one call (N = ``--batch``, 8);
* case118 simulate_candidates: the embedded case118 GridEnv, its whole catalog (grid2op has
  no case118 folder with the same grid here);
* GridEnv snapshot / restore (reported in µs per call): ``env.unwrapped.snapshot()`` of the
  searched state, and ``restore`` of that snapshot (the search's other primitive);
* horizons, on ``l2rpn_idf_2023`` (12 forecasts per step): ``--chains`` seeded random
  sequences of ``--horizon`` catalog actions, as grid2op's ``obs.simulate`` chained on each
  simulated observation and as one ``simulate_candidates(sequences, horizon=H)``; reported in
  simulated steps per second, against grid2op's chained simulate.

Each repetition times every subject for ``--seconds`` in turn, starting one further along
the list each time; reported: the median of the repetitions (min..max) in candidates/s.
``max_simulate_per_step`` is unlimited on every side (grid2op's and grid_vec's default).

    python benchmarks/bench_lookahead.py [--folder l2rpn_case14_sandbox] [--reps 3]
        [--seconds 3] [--batch 8] [--horizon 4] [--chains 32]

Needs the ``grid2op`` extra (the folder and ``obs.simulate``). JSON:
OUT/bench_lookahead.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.grid2op_reference import bundled_folder, grid2op_env
from grid_vec.bench.protocol import describe_machine

_STEPS_IN = 3  # do-nothing steps before the state searched from


def _started(env):
    env.reset(seed=0, options={"scenario_id": 0})
    for _ in range(_STEPS_IN):
        env.step(0)
    return env


def grid_vec_subjects(where, batch: int) -> dict[str, Callable[[], int]]:
    kwargs = {"opponent": None, "maintenance": False}
    env = _started(grid_vec.make(where, **kwargs)).unwrapped
    everything = np.arange(env.action_space.n)

    def one_by_one() -> int:
        for a in everything.tolist():
            env.simulate(a)
        return len(everything)

    def candidates() -> int:
        env.simulate_candidates(everything)
        return len(everything)

    vec = grid_vec.make_vec(where, batch, vectorization="batched", **kwargs)
    vec.reset(seed=0, options={"scenario_id": 0})
    for _ in range(_STEPS_IN):
        vec.step(np.zeros(batch, dtype=np.int64))
    tiled = np.tile(everything, (batch, 1))

    def batched() -> int:
        vec.simulate_candidates(tiled)
        return tiled.size

    return {
        "GridEnv simulate": one_by_one,
        "GridEnv simulate_candidates": candidates,
        f"batched x{batch} simulate_candidates": batched,
    }


def snapshot_subjects(where) -> dict[str, Callable[[], int]]:
    env = _started(grid_vec.make(where, opponent=None, maintenance=False)).unwrapped
    snap = env.snapshot()

    def take() -> int:
        env.snapshot()
        return 1

    def put() -> int:
        env.restore(snap)
        return 1

    return {"GridEnv snapshot": take, "GridEnv restore": put}


_PER_CALL = ("GridEnv snapshot", "GridEnv restore")  # reported in µs per call


def case118_subject() -> Callable[[], int]:
    env = _started(grid_vec.make("case118")).unwrapped
    everything = np.arange(env.action_space.n)

    def run() -> int:
        env.simulate_candidates(everything)
        return len(everything)

    return run


def grid2op_subject(folder: Path) -> Callable[[], int]:
    ours = grid_vec.make(folder, opponent=None, maintenance=False).unwrapped
    env = grid2op_env(folder, maintenance=False, opponent=False)
    env.set_id(0)
    obs = env.reset()
    for _ in range(_STEPS_IN):
        obs, *_ = env.step(env.action_space())
    actions = [env.action_space(ours.catalog.grid2op_action(i)) for i in range(len(ours.catalog))]

    def run(env=env) -> int:  # the env kept alive: its observations' simulator is its own
        for action in actions:
            obs.simulate(action)
        return len(actions)

    return run


_MULTI_HORIZON = "l2rpn_idf_2023"
_CHAINED = "idf_2023 grid2op chained obs.simulate"  # the base of the horizon rows


def horizon_subjects(horizon: int, chains: int) -> dict[str, Callable[[], int]]:
    """Chains of ``horizon`` steps from the same state, on both sides (simulated steps)."""
    folder = bundled_folder(_MULTI_HORIZON)
    ours = _started(grid_vec.make(folder, opponent=None, maintenance=False)).unwrapped
    every = [5 * (h + 1) for h in range(12)]
    env = grid2op_env(
        folder, maintenance=False, opponent=False, data_feeding_kwargs={"h_forecast": every}
    )
    env.set_id(0)
    obs = env.reset()
    for _ in range(_STEPS_IN):
        obs, *_ = env.step(env.action_space())
    sequences = np.random.default_rng(0).integers(len(ours.catalog), size=(chains, horizon))
    sequences[:, 1:] = 0  # an action, then do-nothing: the usual "is it still safe later"
    theirs = [[env.action_space(ours.catalog.grid2op_action(int(a))) for a in s] for s in sequences]

    def chained(env=env) -> int:  # the env kept alive: its observations' simulator is its own
        steps = 0
        for sequence in theirs:
            simulated = obs
            for action in sequence:
                simulated, _, done, _ = simulated.simulate(action)
                steps += 1
                if done:
                    break
        return steps

    def candidates() -> int:
        return int(ours.simulate_candidates(sequences, horizon=horizon).played.sum())

    return {_CHAINED: chained, f"idf_2023 simulate_candidates horizon={horizon}": candidates}


def timed(run: Callable[[], int], seconds: float) -> tuple[float, int]:
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += run()
    return elapsed, done


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="l2rpn_case14_sandbox", help="a bundled folder")
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--seconds", type=positive_float, default=3.0)
    parser.add_argument("--batch", type=positive_int, default=8)
    parser.add_argument("--horizon", type=positive_int, default=4, help="steps of a chain")
    parser.add_argument("--chains", type=positive_int, default=32, help="chains per call")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    where = bundled_folder(args.folder)
    subjects: dict[str, Callable[[], int]] = {"grid2op obs.simulate": grid2op_subject(where)}
    subjects.update(grid_vec_subjects(where, args.batch))
    subjects["case118 simulate_candidates"] = case118_subject()
    subjects.update(snapshot_subjects(where))
    subjects.update(horizon_subjects(args.horizon, args.chains))
    for run in subjects.values():  # warm-up
        timed(run, min(1.0, args.seconds))
    rates: dict[str, list[float]] = {name: [] for name in subjects}
    names = list(subjects)
    for rep in range(args.reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            elapsed, done = timed(subjects[name], args.seconds)
            rates[name].append(done / elapsed)
    rows = {}
    for name, values in rates.items():
        base_name = _CHAINED if name.startswith("idf_2023") else names[0]
        base = statistics.median(rates[base_name])
        median = statistics.median(values)
        rows[name] = {"per_s": median, "min": min(values), "max": max(values)}
        if name in _PER_CALL:
            print(
                f"{name:36s} {1e6 / median:9.1f} µs per call "
                f"({1e6 / max(values):.1f}..{1e6 / min(values):.1f})"
            )
            continue
        unit = "steps/s" if base_name == _CHAINED else "candidates/s"
        print(
            f"{name:36s} {median:9.0f} {unit} ({min(values):.0f}..{max(values):.0f}), "
            f"{median / base:5.1f}x {base_name}"
        )
    command = ["python", "benchmarks/bench_lookahead.py", *(argv or sys.argv[1:])]
    doc = {"command": " ".join(command), "machine": describe_machine().as_dict(),
           "folder": args.folder, "results": rows}  # fmt: skip
    write_result(doc, args.out, "bench_lookahead.json")
    return doc


if __name__ == "__main__":
    main()
