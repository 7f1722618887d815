"""Power flows of rows in changed topologies, three ways, on l2rpn_case14_sandbox (grid2op's
bundled folder): lightsim2grid one grid per row, lightsim2grid's batch class, and grid_vec's
batched Newton.

Every row starts from the same base state (the grid at step 10 of the env's scenario 0, every
element on bus bar 1, its injections as lightsim2grid stores them: float32 values) with ONE
catalog topology action applied (a branch toggle or a substation configuration, uniform over
GridEnv's catalog less do-nothing). The actions come from seeded tables of ``--rows`` actions,
the same tables for every subject; each call solves the next table. Subjects, in microseconds
per row (median of the repetitions, min..max):

* per row LSGrid: for each row ``grid.copy()`` of the base grid, the action's lightsim2grid
  ``TopoAction.apply_to_gridmodel``, ``ac_pf`` (one power flow per topology, the branch
  flows computed with it; what grid_vec did before its batched Newton).
* ScenarioSweepCPP: lightsim2grid's batch class on the base grid (the grid's Newton algorithm,
  one thread), one ``TopoAction`` per row (``set_topo_actions``), the rows' injections and
  voltage setpoints, ``compute`` and ``compute_flows``.
* grid_vec Newton: ``grid_vec.grid.newton.solve_rows``, all the rows in one compiled call on
  the grid's union layout, from the catalog's topologies as bus-bar vectors in model order
  (GridEnv's own rules applied each catalog action to its initial state once, untimed). The
  union layout is built once (``build_layout``): its time is reported apart, as a one-off.

All start from lightsim2grid's first guess of the base grid (``v_init``), with the same
iteration limit and tolerance. Each repetition times every subject for ``--calls`` calls in
turn, starting one further along the list at each repetition, so that machine noise hits all
alike. Checks (untimed, every table solved once more): the rows each subject converged, the
mean Newton iterations of the sweep and of grid_vec's Newton, the three subjects' verdicts
(converged or not) row by row, and, on the rows all three solved, the voltages of the bus bars
in the power flow (the sweep's and grid_vec's Newton's) and ``a_or`` (grid_vec's Newton's)
against the per-row LSGrid's (relative 1e-6; a_or relative to the largest current / 1000 at
least).

    python benchmarks/bench_topology_solves.py [--reps 5] [--rows 32] [--calls 64] [--quick]

JSON: OUT/bench_topology_solves.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import grid_vec
from grid_vec._argtypes import positive_int
from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.lightenv import catalog_actions
from grid_vec.bench.protocol import describe_machine
from grid_vec.bench.workloads import SANDBOX, sandbox_path
from grid_vec.core.records import ActionBatch
from grid_vec.grid import newton
from grid_vec.grid._lightsim_cpp import lightsim_cpp
from grid_vec.grid.backend import flow_slices
from grid_vec.grid.lightsim import MAX_ITER, TOLERANCE, LightSimBackend

ROWS = 32  # rows per call (one topology action each)
CALLS = 64  # calls per measurement, each on the next table of actions
QUICK_CALLS = 4
SCENARIO, STEP = 0, 10  # the base state's injections: this time step of this scenario
SEED = 0
RTOL = 1e-6  # the check: grid_vec's Newton against the per-row LSGrid
FIELDS = ("load_p", "load_q", "gen_p", "gen_v")  # the injections, as the source gives them
SUBJECTS = ("per row LSGrid", "ScenarioSweepCPP", "grid_vec Newton")


@dataclass
class Bench:
    """What every subject solves (the base grid, the injections, the tables of actions) and
    what each needs, built once."""

    model: Any
    grid: Any  # the base LSGrid: the base state's injections, every element on bus bar 1
    v0: np.ndarray  # (n_bus,) lightsim2grid's first guess
    topo_actions: list  # catalog index -> lightsim2grid TopoAction
    catalog_buses: np.ndarray  # (n_actions, n_elem) int32 bus bars in model order
    tables: np.ndarray  # (calls, rows) catalog indices
    # the rows' injections, float32 values: (rows, 2 n_load + n_gen) for grid_vec's Newton
    injections: np.ndarray
    gen_v_pu: np.ndarray  # (rows, n_gen) the voltage setpoints the grids hold (p.u.)
    storage_p: np.ndarray  # (rows, n_storage)
    sweep: Any  # lightsim2grid's ScenarioSweepCPP on the base grid
    layout: newton.UnionLayout
    layout_seconds: float  # build_layout's time
    catalog_seconds: float  # the catalog's topologies as bus-bar vectors

    @property
    def rows(self) -> int:
        return self.tables.shape[1]


def catalog_topologies(env: Any) -> np.ndarray:
    """Every catalog action of GridEnv ``env`` applied to its initial state by its own rules,
    as ``(n_actions, n_elem)`` int32 bus bars in model order (loads, generators, branch
    origins, branch extremities, storage units on bus bar 1), a branch with an end off having
    both off: what ``push_topology`` hands a backend."""
    batch, model, layout = env._batch, env.model, env.topology
    n_actions = len(env.catalog)
    rows = np.arange(n_actions)
    state = batch._initial.take(np.zeros(n_actions, dtype=np.intp))
    if not (state.topo == 1).all():
        raise RuntimeError("the initial state is not every element on bus bar 1")
    batch._rules.apply(state, rows, ActionBatch(rows.astype(np.int64)))
    n_elem = layout.n_elem + model.n_storage
    buses = np.ones((n_actions, n_elem), dtype=np.int32)
    buses[:, : layout.n_elem] = state.topo[:, layout.pos_model]
    lo = model.n_load + model.n_gen
    ends = buses[:, lo : lo + 2 * model.n_branch].reshape(n_actions, 2, model.n_branch)
    np.copyto(ends, -1, where=(ends == -1).any(axis=1, keepdims=True))
    return buses


def open_bench(rows: int, calls: int) -> Bench:
    """The sandbox's env, its base state, catalog and tables of actions, the sweep and grid_vec's
    union layout."""
    env = grid_vec.make(str(sandbox_path()), reward="flat", opponent=None)
    env.reset(seed=SEED)
    u = env.unwrapped
    model = u._batch.model
    topo_actions = catalog_actions(u)
    start = time.perf_counter()
    buses = catalog_topologies(u)
    catalog_seconds = time.perf_counter() - start
    rng = np.random.default_rng(SEED)
    tables = rng.integers(1, len(topo_actions), (calls, rows), dtype=np.int64)

    block = u._handler.source.read(SCENARIO, STEP, STEP + 1)
    load_p, load_q, gen_p, gen_v = (np.asarray(getattr(block, k)[0]) for k in FIELDS)
    base = LightSimBackend(model)
    base.set_injections(load_p, load_q, gen_p, gen_v)
    base.run_ac()  # a first solve hands the injections to lightsim2grid's grid
    grid = base.batch.lightsim_grid(0)
    v0 = np.asarray(base.batch.shared.v_init, dtype=np.complex128)
    for action in topo_actions:  # apply_to_gridmodel wants actions checked against the grid
        action.check_validity(grid)

    fresh = base.batch.shared.new_grid()  # build_layout reads a new grid of the model
    start = time.perf_counter()
    layout = newton.build_layout(model, fresh, max_iter=MAX_ITER)
    layout_seconds = time.perf_counter() - start
    # the setpoints a grid of the model holds once the base state's reach it (lightsim2grid's
    # rule), and the injections as it stores them: the same for all three subjects
    held = newton.held_setpoints(layout.gen_v_pu, gen_v / model.sub_vn_kv[model.gen_sub])
    injections = np.concatenate([load_p, load_q, gen_p]).astype(np.float32).astype(np.float64)

    sweep = lightsim_cpp().ScenarioSweepCPP(grid)
    sweep.change_algorithm(grid.get_algo_type())
    return Bench(
        model=model, grid=grid, v0=v0, topo_actions=topo_actions, catalog_buses=buses,
        tables=tables, injections=np.tile(injections, (rows, 1)),
        gen_v_pu=np.tile(held, (rows, 1)), storage_p=np.zeros((rows, model.n_storage)),
        sweep=sweep, layout=layout, layout_seconds=layout_seconds,
        catalog_seconds=catalog_seconds,
    )  # fmt: skip


def per_row_lsgrid(bench: Bench) -> Callable[[np.ndarray], list]:
    """Subject 1: ``solve(table)`` copies the base grid, applies the row's action and runs
    ``ac_pf`` per row; returns each row's grid and solution (empty: diverged)."""
    grid, v0, acts = bench.grid, bench.v0, bench.topo_actions

    def solve(table: np.ndarray) -> list:
        solved = []
        for action in table.tolist():
            g = grid.copy()
            acts[action].apply_to_gridmodel(g)
            solved.append((g, g.ac_pf(v0, MAX_ITER, TOLERANCE)))
        return solved

    return solve


def scenario_sweep(bench: Bench) -> Callable[[np.ndarray], Any]:
    """Subject 2: ``solve(table)`` runs the sweep on one ``TopoAction`` per row, the rows'
    injections and setpoints; returns the sweep."""
    model, sweep, v0, acts = bench.model, bench.sweep, bench.v0, bench.topo_actions
    n_load, is_gen = model.n_load, model.gen_kind != "sgen"
    inj = bench.injections
    load_p = np.ascontiguousarray(inj[:, :n_load])
    load_q = np.ascontiguousarray(inj[:, n_load : 2 * n_load])
    gen_p = np.ascontiguousarray(inj[:, 2 * n_load :][:, is_gen])
    gen_v = np.ascontiguousarray(bench.gen_v_pu[:, is_gen])

    def solve(table: np.ndarray) -> Any:
        sweep.set_topo_actions([acts[a] for a in table.tolist()])
        sweep.modify_load_p(load_p)
        sweep.modify_load_q(load_q)
        sweep.modify_gen_p(gen_p)
        sweep.modify_gen_v(gen_v)
        sweep.compute(v0, MAX_ITER, TOLERANCE)
        sweep.compute_flows()
        return sweep

    return solve


def grid_vec_newton(bench: Bench) -> Callable[[np.ndarray], tuple]:
    """Subject 3: ``solve(table)`` gathers the rows' bus bars from the catalog's topologies
    and solves all the rows in one ``solve_rows`` call; returns (iterations, V, flows)."""
    layout, catalog = bench.layout, bench.catalog_buses
    inj, storage_p, gen_v_pu = bench.injections, bench.storage_p, bench.gen_v_pu
    first = np.tile(bench.v0, (bench.rows, 1))
    V = first.copy()
    out = np.zeros((bench.rows, layout.n_flows))

    def solve(table: np.ndarray) -> tuple:
        V[:] = first  # written in place
        iters = newton.solve_rows(layout, catalog[table], inj, storage_p, gen_v_pu, V, out)
        return iters, V, out

    return solve


def time_subjects(
    subjects: dict[str, Callable], tables: np.ndarray, reps: int
) -> dict[str, list[float]]:
    """Microseconds per row of each subject, one sample per repetition: every table solved
    once; the subjects take turns, starting one further along at each repetition."""
    names = list(subjects)
    samples: dict[str, list[float]] = {name: [] for name in names}
    rows = tables.size
    for name in names:  # warm up
        subjects[name](tables[0])
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            solve = subjects[name]
            start = time.perf_counter()
            for table in tables:
                solve(table)
            samples[name].append(1e6 * (time.perf_counter() - start) / rows)
    return samples


def check(bench: Bench, subjects: dict[str, Callable]) -> dict[str, Any]:
    """The untimed checks, on every table: converged rows, mean Newton iterations, the
    subjects' verdicts row by row, and the voltages (both subjects) and ``a_or`` (grid_vec's
    Newton) of the rows all solved against the per-row LSGrid's."""
    model = bench.model
    converged = dict.fromkeys(SUBJECTS, 0)
    iters_sweep: list[np.ndarray] = []
    iters_newton: list[np.ndarray] = []
    refused = 0
    verdicts_agree = 0
    worst_v = worst_a = worst_sweep = 0.0
    diverged: set[int] = set()
    refused_actions: set[int] = set()
    compared = 0
    a_or = flow_slices(model)["a_or"]
    elem_sub = np.concatenate(
        [model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub, model.storage_sub]
    )
    for table in bench.tables:
        per_row = subjects[SUBJECTS[0]](table)
        ok1 = np.array([len(V) > 0 for _, V in per_row])
        sweep = subjects[SUBJECTS[1]](table)
        ok2 = np.asarray(sweep.converged_mask(), dtype=bool)
        iters_sweep.append(np.asarray(sweep.get_row_nb_iter())[ok2])
        iters, V3, out = subjects[SUBJECTS[2]](table)
        ok3 = iters >= 0
        refused += int((iters == newton.REFUSED).sum())
        refused_actions.update(table[iters == newton.REFUSED].tolist())
        iters_newton.append(iters[ok3])
        for name, ok in zip(SUBJECTS, (ok1, ok2, ok3), strict=True):
            converged[name] += int(ok.sum())
        verdicts_agree += int(((ok1 == ok2) & (ok1 == ok3)).sum())
        diverged.update(table[~(ok1 & ok2 & ok3)].tolist())
        buses = bench.catalog_buses[table]
        V2 = np.asarray(sweep.get_voltages())
        for r in np.flatnonzero(ok1 & ok2 & ok3).tolist():
            g, V1 = per_row[r]
            # the bus bars in the power flow: those an element is on (lightsim2grid leaves
            # its first guess at the others, grid_vec's Newton zero)
            on = np.unique((elem_sub + (buses[r] - 1) * model.n_sub)[buses[r] > 0])
            worst_v = max(worst_v, float(np.max(np.abs(V3[r][on] - V1[on]) / np.abs(V1[on]))))
            gap = np.abs(V2[r][on] - V1[on]) / np.abs(V1[on])
            worst_sweep = max(worst_sweep, float(np.max(gap)))
            a1 = 1000.0 * np.concatenate([g.get_line_res1()[3], g.get_trafo_res1()[3]])
            a3 = out[r, a_or]
            scale = np.maximum(np.abs(a1), 1e-3 * np.abs(a1).max())
            worst_a = max(worst_a, float(np.max(np.abs(a3 - a1) / scale)))
            compared += 1
    n = bench.tables.size
    return {
        "rows_solved": n,
        "converged": converged,
        "refused_by_newton": refused,
        "refused_actions": sorted(refused_actions),
        "verdicts_agree": verdicts_agree,
        "mean_iterations": {
            SUBJECTS[1]: float(np.concatenate(iters_sweep).mean()),
            SUBJECTS[2]: float(np.concatenate(iters_newton).mean()),
        },
        "compared_rows": compared,
        "max_rel_diff_V": worst_v,
        "max_rel_diff_a_or": worst_a,
        "max_rel_diff_V_sweep": worst_sweep,
        "agree": bool(compared and max(worst_v, worst_a, worst_sweep) <= RTOL),
        "not_converged_actions": sorted(diverged),
    }


def format_report(
    bench: Bench, samples: dict[str, list[float]], checks: dict[str, Any], load: float
) -> str:
    """The table of timings and the checks, as printed."""
    lines = [
        f"{SANDBOX}: {bench.rows} rows per call, {len(bench.tables)} calls per measurement, "
        f"{len(next(iter(samples.values())))} repetitions; load {load:.2f}",
        f"  {'subject':<20} {'µs/row':>9}  {'min..max':<19} {'converged':>11}  {'mean iters':>10}",
    ]
    n = checks["rows_solved"]
    for name, values in samples.items():
        iters = checks["mean_iterations"].get(name)
        spread = f"{min(values):.2f}..{max(values):.2f}"
        ok = f"{checks['converged'][name]}/{n}"
        lines.append(
            f"  {name:<20} {statistics.median(values):9.2f}  "
            f"{spread:<19} {ok:>11}  "
            f"{'-' if iters is None else f'{iters:.2f}':>10}"
        )
    lines += [
        f"grid_vec Newton one-off: build_layout {1e3 * bench.layout_seconds:.1f} ms "
        f"(nnz of the factors {bench.layout.nnz_factors}); catalog as bus-bar vectors "
        f"{1e3 * bench.catalog_seconds:.1f} ms ({len(bench.catalog_buses)} actions)",
        f"rows refused by grid_vec Newton: {checks['refused_by_newton']} (catalog actions "
        f"{checks['refused_actions']}); verdicts (converged or not) agreeing across the three "
        f"subjects: {checks['verdicts_agree']}/{n}; catalog actions some subject did not "
        f"converge: {checks['not_converged_actions']}",
        f"check ({checks['compared_rows']} rows solved by all): max "
        f"relative difference to per row LSGrid: grid_vec Newton V "
        f"{checks['max_rel_diff_V']:.1e}, a_or {checks['max_rel_diff_a_or']:.1e}; "
        f"ScenarioSweepCPP V {checks['max_rel_diff_V_sweep']:.1e} -> "
        + ("agree" if checks["agree"] else f"DISAGREE (tolerance {RTOL:g})"),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=positive_int, help="repetitions (default 5, quick 1)")
    parser.add_argument("--rows", type=positive_int, default=ROWS, help="rows per call")
    parser.add_argument(
        "--calls", type=positive_int, help=f"calls per measurement (default {CALLS}, quick 4)"
    )
    parser.add_argument("--quick", action="store_true", help="1 repetition of 4 calls (a check)")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 5)
    calls = args.calls or (QUICK_CALLS if args.quick else CALLS)
    with warnings.catch_warnings():  # grid2op's folder warns about what grid_vec ignores
        warnings.simplefilter("ignore")
        bench = open_bench(args.rows, calls)
    subjects = {
        SUBJECTS[0]: per_row_lsgrid(bench),
        SUBJECTS[1]: scenario_sweep(bench),
        SUBJECTS[2]: grid_vec_newton(bench),
    }
    checks = check(bench, subjects)
    samples = time_subjects(subjects, bench.tables, reps)
    load = os.getloadavg()[0]
    print(format_report(bench, samples, checks, load))
    command = [
        "python",
        "benchmarks/bench_topology_solves.py",
        *(sys.argv[1:] if argv is None else argv),
    ]
    doc = {
        "command": " ".join(command),
        "machine": describe_machine().as_dict(),
        "grid": SANDBOX,
        "rows": bench.rows,
        "calls": calls,
        "reps": reps,
        "load": load,
        "us_per_row": {
            name: {"median": statistics.median(v), "min": min(v), "max": max(v), "samples": v}
            for name, v in samples.items()
        },
        "layout_seconds": bench.layout_seconds,
        "catalog_seconds": bench.catalog_seconds,
        "checks": checks,
    }
    write_result(doc, args.out, "bench_topology_solves.json")
    return doc


if __name__ == "__main__":
    main()
