"""grid_vec's batched engine side by side with lightsim2grid's batched power flow and C++ env,
resets included, on l2rpn_case14_sandbox (grid2op's bundled folder), case14 and case118.

Subjects, each in microseconds per env-step (median of the repetitions, min..max) and env-steps/s:

* ScenarioSweep t1 / t2: lightsim2grid's ``ScenarioSweepCPP`` (the physical floor) built from
  grid_vec's compiled ``LSGrid``, the grid's own Newton algorithm, ``nb_thread`` 1 and 2. One
  batch = 32 rows (scenarios 0..31 of the env's source, cycled when it has fewer) at one time
  step, successive batches = successive steps: set the injections, compute, read the branch
  flows (p, q both ends), the currents and the bus voltages. Its convergence and its a_or
  against grid_vec's own solve of one row are checked once per grid.
* LightEnv: lightsim2grid's C++ env in this process, on the same grid, time series, limits,
  rules and action catalog (``grid_vec/bench/lightenv.py`` says where its rules differ).
  LightEnv x2: one LightEnv in each of 2 processes, both running at once (both cores).
* GridEnv: one ``grid_vec.make(grid)``.
* batched x32 / x1 / x256: ``grid_vec.make_vec(grid, n, vectorization="batched")``; "not available"
  while ``make_vec`` refuses the keyword.
* GridVecEnv 2x16: ``grid_vec.make_vec(grid, 32, envs_per_worker=16)`` (each worker hosts one
  batch of 16).

grid_vec's envs play the ``flat`` reward (``--reward``; LightEnv and ScenarioSweep compute
none), without the folder's opponent (``l2rpn_case14_sandbox`` has none anyway).
``--reward dataset`` times the folder's own (``RedispReward`` on the sandbox).

Actions: do-nothing, or uniform over GridEnv's catalog (seeded tables, the same for every
subject with the same number of envs); ScenarioSweep plays the injections only. Every episode
that ends is reset inside the timed loop (a vector env's autoreset step, NEXT_STEP, counts as
an env step, as in ``grid-vec bench``); steps/episode is counted over the timed steps. All
sessions of a grid are opened and warmed up first; each repetition then times every (subject,
actions) for ``--seconds`` in turn, starting one further along the list at each repetition,
so machine noise hits all alike.

    python benchmarks/bench_batched.py [--reps 5] [--seconds 2] [--grids case14 ...] [--quick]
        [--reward flat|dataset|<name>]

JSON: OUT/bench_batched.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_float, positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.protocol import describe_machine
from grid_vec.bench.workloads import SANDBOX, action_table, sandbox_path
from grid_vec.grid._lightsim_cpp import lightsim_cpp
from grid_vec.grid.lightsim import MAX_ITER, TOLERANCE, LightSimBackend

GRIDS = (SANDBOX, "case14", "case118")
MODES = ("do-nothing", "random")
ROWS = 32  # envs of the batched engine, rows of a ScenarioSweep batch
MANY = 256  # envs of the larger batch (how far a batch step's fixed cost is amortised)
SWEEP_STEPS = 288  # time steps of the sweep's injections, cycled
SEED = 0


@dataclass
class Cell:
    """One (subject, grid, actions) measurement: ``run(k)`` plays k batch steps and returns
    the env steps done; ``ends()`` counts the episodes ended so far."""

    subject: str
    grid: str
    actions: str
    run: Callable[[int], int] | None = None
    ends: Callable[[], int] = lambda: 0
    timed: Callable[[float], tuple[float, int, int]] | None = None  # times itself instead
    note: str = ""
    k: int = 1
    samples: list[float] = field(default_factory=list)  # µs per env-step
    steps: int = 0
    episodes: int = 0


def timed(cell: Cell, seconds: float) -> tuple[float, int, int]:
    """(elapsed s, env steps, episodes ended) of ``cell.run`` repeated for ``seconds``."""
    if cell.timed is not None:
        return cell.timed(seconds)
    ends0, steps, start = cell.ends(), 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += cell.run(cell.k)
    return elapsed, steps, cell.ends() - ends0


def warm_up(cell: Cell, seconds: float = 0.2, call_s: float = 0.02) -> None:
    """Untimed steps; also sets ``k`` so that one ``run(k)`` lasts about ``call_s``."""
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or calls < 2:
        cell.run(1)
        calls += 1
    cell.k = max(1, round(call_s * calls / elapsed))


# ------------------------------------------------------------------------ ScenarioSweep
def sweep_cells(env: Any, grid: str, log: list[str]) -> list[Cell]:
    """ScenarioSweepCPP on the env's compiled grid, nb_thread 1 and 2, with its injections."""
    cpp, model = lightsim_cpp(), env.model
    backend = LightSimBackend(model)
    source = env._handler.source
    ids = [i % len(source) for i in range(ROWS)]
    steps = min(SWEEP_STEPS, *(source.info(i).length for i in set(ids)))
    blocks = [source.read(i, 0, steps) for i in ids]
    is_sgen = model.gen_kind == "sgen"
    to_pu = 1.0 / model.sub_vn_kv[model.gen_sub]

    def stacked(get: Callable[[Any], np.ndarray]) -> np.ndarray:  # (steps, ROWS, n)
        return np.ascontiguousarray(np.stack([get(b) for b in blocks], axis=1), np.float64)

    setters = [
        ("modify_load_p", stacked(lambda b: b.load_p)),
        ("modify_load_q", stacked(lambda b: b.load_q)),
        ("modify_gen_p", stacked(lambda b: b.gen_p[:, ~is_sgen])),
        ("modify_gen_v", stacked(lambda b: (b.gen_v * to_pu)[:, ~is_sgen])),
    ]
    if is_sgen.any():
        setters.append(("modify_sgen_p", stacked(lambda b: b.gen_p[:, is_sgen])))
    ls_grid = backend.batch.lightsim_grid(0)
    algorithm, cells = ls_grid.get_algo_type(), []
    for threads in (1, 2):
        sweep = cpp.ScenarioSweepCPP(ls_grid)
        sweep.change_algorithm(algorithm)
        sweep.nb_thread = threads
        calls = [(getattr(sweep, name), values) for name, values in setters]
        run = _sweep_runner(sweep, calls, backend.batch.shared.v_init, steps)
        for t in range(steps if threads == 1 else 1):  # every batch of the cycle converges
            run(1)
            if not all(sweep.converged_mask()):
                raise RuntimeError(f"ScenarioSweep on {grid}: a row of step {t} diverged")
        if threads == 1:  # row 5 of the last batch against grid_vec's own solve of it
            b, t, own = blocks[5], steps - 1, LightSimBackend(model)
            own.set_injections(b.load_p[t], b.load_q[t], b.gen_p[t], b.gen_v[t])
            assert own.run_ac(), "grid_vec's solve diverged"
            ref, got = own.results().a_or, 1000.0 * sweep.get_flows()[5]
            log.append(
                f"{grid}: ScenarioSweep {sweep.get_algo_name()}, every row of the {steps} "
                f"batches converged; row 5 (scenario {ids[5]}, step {t}): max |a_or - "
                f"grid_vec's| / max a_or = {np.max(np.abs(got - ref)) / np.max(ref):.1e}"
            )
        cells.append(Cell(f"ScenarioSweep t{threads}", grid, "injections", run))
    return cells


def _sweep_runner(sweep: Any, calls: list, v_init: np.ndarray, steps: int) -> Callable:
    turn = [0]

    def run(k: int) -> int:
        for _ in range(k):
            t = turn[0] % steps
            for setter, values in calls:
                setter(values[t])
            sweep.compute(v_init, MAX_ITER, TOLERANCE)
            sweep.compute_branch_results()  # p, q at both ends of every branch
            sweep.compute_flows()  # a_or (kA)
            sweep.get_voltages()  # complex bus voltages
            turn[0] += 1
        return k * ROWS

    return run


# ----------------------------------------------------------------------------- LightEnv
def _light_worker(conn: Any, grid: str) -> None:
    """A process of LightEnv x2, with the LightEnv subject's env, scenario and actions:
    answers (mode, seconds) with (elapsed, steps, episodes ended)."""
    from grid_vec.bench.lightenv import LightEnvSession

    session = LightEnvSession(grid_vec.make(grid), SEED)
    cells = {
        m: Cell("LightEnv", grid, m, session.runner(m), lambda: session.episodes) for m in MODES
    }
    for cell in cells.values():
        warm_up(cell)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        conn.send(timed(cells[msg[0]], msg[1]))


def light_cells(grid: str, target: str, closers: list) -> list[Cell]:
    try:
        from grid_vec.bench.lightenv import LightEnvSession
    except ImportError as exc:
        names = ("LightEnv", "LightEnv x2")
        return [Cell(s, grid, m, note=str(exc)) for s in names for m in MODES]
    session = LightEnvSession(grid_vec.make(target), SEED)
    cells = [Cell("LightEnv", grid, m, session.runner(m), lambda: session.episodes) for m in MODES]
    ctx = mp.get_context("spawn")
    pipes = [ctx.Pipe() for _ in range(2)]
    procs = [
        ctx.Process(target=_light_worker, args=(child, target), daemon=True) for _, child in pipes
    ]
    for p in procs:
        p.start()
    conns = [parent for parent, _ in pipes]
    for conn in conns:
        if conn.recv() != "ready":
            raise RuntimeError("a LightEnv worker failed to start")

    def close() -> None:
        for conn in conns:
            conn.send(None)
        for p in procs:
            p.join(10)

    closers.append(close)

    def pair(mode: str) -> Callable[[float], tuple[float, int, int]]:
        def run_both(seconds: float) -> tuple[float, int, int]:
            """Both processes run ``seconds`` at once: the slower one's time, all steps."""
            for conn in conns:
                conn.send((mode, seconds))
            answers = [conn.recv() for conn in conns]
            return tuple(f(a[i] for a in answers) for i, f in enumerate((max, sum, sum)))

        return run_both

    return cells + [Cell("LightEnv x2", grid, m, timed=pair(m)) for m in MODES]


# ----------------------------------------------------------------------- grid_vec's envs
def stepping_cells(name: str, grid: str, n: int, n_actions: int, step: Callable) -> list[Cell]:
    """``step(actions)`` plays one batch of ``n`` actions, returning the episodes it ended."""
    ended = [0]

    def cell(mode: str) -> Cell:
        rows = itertools.cycle(action_table(n_actions, n, mode, SEED))

        def run(k: int) -> int:
            for _ in range(k):
                ended[0] += step(next(rows))
            return k * n

        return Cell(name, grid, mode, run, lambda: ended[0])

    return [cell(mode) for mode in MODES]


def env_cells(env: Any, grid: str) -> list[Cell]:
    """GridEnv, one env in this process, reset when an episode ends."""

    def step(actions: np.ndarray) -> int:
        _, _, terminated, truncated, _ = env.step(actions[0])
        if terminated or truncated:
            env.reset()
            return 1
        return 0

    env.reset(seed=SEED)
    return stepping_cells("GridEnv", grid, 1, len(env.catalog), step)


def vector_cells(name: str, grid: str, target: str, n: int, closers: list, **kw: Any) -> list[Cell]:
    """A gymnasium VectorEnv of ``n`` envs from ``grid_vec.make_vec`` (autoreset NEXT_STEP), one
    per action mode: do-nothing timed on the envs that random actions left would time the
    random topologies that survive (a batch of 256 keeps dozens for hundreds of steps)."""
    cells = []
    for mode in MODES:
        try:
            envs = grid_vec.make_vec(target, n, **kw)
        except TypeError as exc:  # the keyword refused: no batched engine in this grid_vec
            if "vectorization" not in kw or "vectorization" not in str(exc):
                raise
            return [Cell(name, grid, m, note=str(exc)) for m in MODES]
        closers.append(envs.close)

        def step(actions: np.ndarray, envs: Any = envs) -> int:
            _, _, terminated, truncated, _ = envs.step(actions)
            return int(np.count_nonzero(terminated | truncated))

        envs.reset(seed=SEED)
        n_actions = int(envs.single_action_space.n)
        cells += [c for c in stepping_cells(name, grid, n, n_actions, step) if c.actions == mode]
    return cells


# -------------------------------------------------------------------------------- run
def bench_grid(
    grid: str, target: str, reps: int, seconds: float, log: list[str], env_kw: dict[str, Any]
) -> list[Cell]:
    closers: list[Callable[[], None]] = []
    try:
        env = grid_vec.make(target, **env_kw)
        cells = sweep_cells(env, grid, log)
        cells += light_cells(grid, target, closers)
        cells += env_cells(env, grid)
        batched = {"vectorization": "batched", **env_kw}
        cells += vector_cells(BATCHED, grid, target, ROWS, closers, **batched)
        cells += vector_cells("batched x1", grid, target, 1, closers, **batched)
        cells += vector_cells(BATCHED_MANY, grid, target, MANY, closers, **batched)
        workers = {"envs_per_worker": ROWS // 2, **env_kw}
        cells += vector_cells(GRIDVEC, grid, target, ROWS, closers, **workers)
        for cell in cells:
            if cell.run is not None:
                warm_up(cell)
        live = [c for c in cells if c.run is not None or c.timed is not None]
        for rep in range(reps):
            shift = rep % len(live)
            for cell in live[shift:] + live[:shift]:
                elapsed, steps, ends = timed(cell, seconds)
                cell.samples.append(1e6 * elapsed / steps)
                cell.steps += steps
                cell.episodes += ends
            print(f"  {grid}: repetition {rep + 1}/{reps} done", flush=True)
        return cells
    finally:
        for close in reversed(closers):
            close()


def row(cell: Cell) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": cell.subject, "grid": cell.grid, "actions": cell.actions}
    if not cell.samples:
        return {**out, "available": False, "note": cell.note}
    med, per_ep = statistics.median(cell.samples), cell.episodes and cell.steps / cell.episodes
    return {**out, "available": True, "us_per_env_step": med, "min": min(cell.samples),
            "max": max(cell.samples), "samples_us": cell.samples, "env_steps_per_s": 1e6 / med,
            "env_steps_timed": cell.steps, "episodes_ended": cell.episodes,
            "steps_per_episode": per_ep or None, "note": cell.note}  # fmt: skip


BATCHED, GRIDVEC = f"batched x{ROWS}", f"GridVecEnv 2x{ROWS // 2}"
BATCHED_MANY = f"batched x{MANY}"
RATIOS = (  # (numerator, denominator, what): cost per env-step, same grid and actions
    (BATCHED, "ScenarioSweep t1", "batched engine over the physical floor, 1 thread"),
    (BATCHED, "ScenarioSweep t2", "batched engine over the physical floor, 2 threads"),
    (BATCHED, "LightEnv", "batched engine vs LightEnv, one core each"),
    (BATCHED_MANY, BATCHED, f"a batch of {MANY} vs one of {ROWS}: the fixed cost amortised"),
    (GRIDVEC, "LightEnv x2", "2-worker GridVecEnv vs 2 LightEnv processes, both cores"),
    (GRIDVEC, "LightEnv", "2-worker GridVecEnv (2 cores) vs LightEnv (1 core)"),
)


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cost = {(r["subject"], r["grid"], r["actions"]): r.get("us_per_env_step") for r in rows}
    out = []
    for grid in dict.fromkeys(r["grid"] for r in rows):
        for num, den, what in RATIOS:
            for mode in MODES:
                den_mode = "injections" if den.startswith("ScenarioSweep") else mode
                a, b = cost.get((num, grid, mode)), cost.get((den, grid, den_mode))
                out.append(
                    {"grid": grid, "actions": mode, "numerator": num, "denominator": den,
                     "what": what, "cost_ratio": None if a is None or b is None else a / b}
                )  # fmt: skip
    return out


def format_table(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]]) -> str:
    head = f"{'subject':<17} {'grid':<21} {'actions':<11} {'µs/env-step (min..max)':>27}"
    head += f" {'steps/s':>10} {'steps/ep':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        start = f"{r['subject']:<17} {r['grid']:<21} {r['actions']:<11}"
        if not r["available"]:
            lines.append(f"{start} not available: {r['note'][:70]}")
            continue
        spread = f"{r['us_per_env_step']:.2f} ({r['min']:.2f}..{r['max']:.2f})"
        per_ep = "-" if r["steps_per_episode"] is None else f"{r['steps_per_episode']:.1f}"
        lines.append(f"{start} {spread:>27} {r['env_steps_per_s']:>10,.0f} {per_ep:>9}")
    lines += [
        "",
        "cost ratios (µs per env-step of the first over the second; > 1: the first costs more)",
    ]
    for q in ratio_rows:
        value = "n/a (not available)" if q["cost_ratio"] is None else f"{q['cost_ratio']:.2f}"
        lines.append(
            f"  {q['grid']:<21} {q['actions']:<11} {q['numerator']} / {q['denominator']}: {value}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=positive_int, help="repetitions (default 5, quick 1)")
    parser.add_argument(
        "--seconds", type=positive_float, help="per measurement (default 2, quick 0.25)"
    )
    parser.add_argument("--grids", nargs="+", choices=GRIDS, default=list(GRIDS))
    parser.add_argument("--quick", action="store_true", help="1 repetition of 0.25 s (a check)")
    parser.add_argument(
        "--reward", default="flat", help="grid_vec's reward (default flat; dataset: the folder's)"
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 5)
    seconds = args.seconds or (0.25 if args.quick else 2.0)
    log: list[str] = []
    rows = []
    for grid in args.grids:
        try:  # the sandbox folder is grid2op's package data
            target = str(sandbox_path()) if grid == SANDBOX else grid
        except ImportError as exc:
            log.append(f"{grid}: skipped ({exc})")
            continue
        print(f"{grid}: opening every subject", flush=True)
        env_kw: dict[str, Any] = {} if args.reward == "dataset" else {"reward": args.reward}
        if grid == SANDBOX:
            env_kw["opponent"] = None
        rows += [row(c) for c in bench_grid(grid, target, reps, seconds, log, env_kw)]
    ratio_rows = ratios(rows)
    print()
    print(format_table(rows, ratio_rows))
    for line in log:
        print(line)
    command = ["python", "benchmarks/bench_batched.py", *(sys.argv[1:] if argv is None else argv)]
    doc = {"command": " ".join(command), "machine": describe_machine().as_dict(), "reps": reps,
           "seconds": seconds, "reward": args.reward, "rows": rows, "ratios": ratio_rows,
           "checks": log}  # fmt: skip
    write_result(doc, args.out, "bench_batched.json")
    return doc


if __name__ == "__main__":
    main()
