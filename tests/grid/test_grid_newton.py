"""The batched Newton solve on the union layout (grid_vec/grid/newton.py) against lightsim2grid.

Every row is held to lightsim2grid's own ``ac_pf`` of the same grid, injections, topology and
first guess: the same verdict (converged or diverged), the same iteration count (but for a
row in a hundred whose mismatch lands within a hair of the tolerance) and voltages within
1e-8 p.u. (measured: ~1e-14 at the same count, the two run the same Newton in another LU
order), over random topologies (outages and bus-bar splits of several substations at once).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from grid_helpers import is_connected, perturbed_injections

import grid_vec
from grid_vec.grid import newton
from grid_vec.grid.backend import flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.lightsim import MAX_ITER, LightSimBackend
from grid_vec.grid.networks import load_network

V_ATOL = 1e-8  # p.u.
FLOWS_RTOL = 1e-7  # of each field's largest value (A, kV, MW, MVAr, rad)
ROWS = {"case14": 600, "case118": 150, "l2rpn_case14_sandbox": 600, "educ_case14_storage": 400}


def _model(name: str):
    if name.startswith("case"):
        return compile_net(load_network(name), name=name)
    pytest.importorskip("grid2op", reason="the folder comes with the grid2op extra")
    env = grid_vec.make(name)
    model = env.unwrapped.model
    env.close()
    return model


@pytest.fixture(scope="module", params=list(ROWS))
def model(request):
    return _model(request.param)


def _random_topology(model, rng) -> list[np.ndarray]:
    """Up to three substations split at random and up to two branches out (either end), kept
    connected (a topology grid_vec's rules let through to the solver)."""
    subs = [model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub]
    while True:
        topology = [np.ones(len(s), dtype=int) for s in subs]
        for sub in rng.choice(model.n_sub, size=int(rng.integers(0, 4)), replace=False):
            for kind, where in zip(topology, subs, strict=True):
                members = np.flatnonzero(where == sub)
                kind[members[rng.random(members.size) < 0.5]] = 2
        for branch in rng.choice(model.n_branch, size=int(rng.integers(0, 3)), replace=False):
            topology[2 + int(rng.integers(2))][branch] = -1
        if is_connected(model, topology):
            return topology


def _model_order(model, topology: list[np.ndarray]) -> np.ndarray:
    """The kernel's bus bars: model order, storage units on bus bar 1, a branch with one end
    off entirely off (as the backend hands it over)."""
    buses = np.concatenate([*topology, np.ones(model.n_storage, dtype=int)]).astype(np.int32)
    start = model.n_load + model.n_gen
    ends = buses[start : start + 2 * model.n_branch].reshape(2, -1)
    ends[:, (ends == -1).any(axis=0)] = -1
    return buses


def _cases(model, n: int, seed: int):
    """``n`` random rows, solved by lightsim2grid: (bus bars, injections, setpoints p.u.,
    storage, lightsim2grid's V (zero off the power flow; None when diverged), its flows, its
    iterations)."""
    rng = np.random.default_rng(seed)
    base = LightSimBackend(model)
    n_flows = flow_slices(model)["all"].stop
    held = newton.build_layout(model, base.batch.shared.new_grid(), max_iter=MAX_ITER).gen_v_pu
    rows = []
    for _ in range(n):
        topology = _random_topology(model, rng)
        inj = perturbed_injections(model, rng)
        # one setpoint per substation (generators holding one bus bar's voltage share it), not
        # float32-exact (lightsim2grid stores float32) and some moved by less than it notices
        first = np.unique(model.gen_sub, return_index=True)[1]
        vm = (inj[3] / model.sub_vn_kv[model.gen_sub])[first]
        vm = vm * (1 + rng.choice([0.0, 3e-8, 1e-6], size=vm.size))
        inj[3] = vm[np.searchsorted(model.gen_sub[first], model.gen_sub)]
        inj[3] = inj[3] * model.sub_vn_kv[model.gen_sub]
        storage = rng.uniform(-1.0, 1.0, model.n_storage).astype(np.float32).astype(float)
        backend = base.copy()
        backend.set_topology(*topology)
        backend.set_injections(*inj)
        backend.set_storage_p(storage)
        converged = backend.run_ac()
        flows = np.zeros(n_flows)
        grid = backend.batch.rows.grid[0]  # the row's own, synced by run_ac
        if converged:
            backend.read_flows(flows)
            bus_active = np.asarray(grid.get_bus_status(), dtype=bool)
        rows.append(
            (
                _model_order(model, topology),
                np.concatenate(inj[:3]).astype(np.float32).astype(float),
                newton.held_setpoints(held, inj[3] / model.sub_vn_kv[model.gen_sub]),
                storage,
                backend.batch.rows.V[0] * bus_active if converged else None,
                flows,
                grid.get_solver().get_nb_iter(),
            )
        )
    return rows, base


def _solve(model, base, rows):
    layout = newton.build_layout(model, base.batch.shared.new_grid(), max_iter=MAX_ITER)
    buses, inj, gen_v, storage = (np.stack([row[k] for row in rows]) for k in range(4))
    V = np.tile(base.batch.shared.v_init, (len(rows), 1))
    out = np.zeros((len(rows), flow_slices(model)["all"].stop))
    return newton.solve_rows(layout, buses, inj, storage, gen_v, V, out), V, out, layout


def test_newton_rows_equal_lightsim_solves_verdicts_iterations_and_voltages(model) -> None:
    rows, base = _cases(model, ROWS[model.name], seed=1)
    iters, V, out, _ = _solve(model, base, rows)
    apart = 0
    for k, row in enumerate(rows):
        ref_V, ref_flows, ref_iters = row[4], row[5], row[6]
        if iters[k] == newton.REFUSED:  # here: a bus bar with a shunt or a storage unit alone
            assert ref_V is None, f"row {k}: refused, but lightsim2grid solves it"
            continue
        assert (iters[k] >= 0) == (ref_V is not None), f"row {k}: verdicts differ"
        if ref_V is None:
            continue
        # lightsim2grid's own mismatch arithmetic differs in the last bits: a row whose
        # mismatch lands within a hair of the tolerance may stop one iteration apart
        assert abs(iters[k] - ref_iters) <= 1, f"row {k}"
        apart += iters[k] != ref_iters
        np.testing.assert_allclose(V[k], ref_V, rtol=0, atol=V_ATOL, err_msg=f"row {k}")
        for field, at in flow_slices(model).items():
            if field == "all" or at.stop == at.start:
                continue
            scale = max(np.abs(ref_flows[at]).max(), 1.0)
            np.testing.assert_allclose(
                out[k, at], ref_flows[at], rtol=0, atol=FLOWS_RTOL * scale, err_msg=field
            )
    assert apart <= len(rows) // 100, f"{apart} rows stop at another iteration"


def test_a_newton_row_is_bitwise_the_same_alone_and_in_a_batch() -> None:
    model = _model("case14")
    rows, base = _cases(model, 24, seed=2)
    _, V_all, out_all, _ = _solve(model, base, rows)
    for k in (0, 7, 23):
        _, V_one, out_one, _ = _solve(model, base, rows[k : k + 1])
        assert V_one[0].tobytes() == V_all[k].tobytes()
        assert out_one[0].tobytes() == out_all[k].tobytes()


def test_rows_shared_out_among_threads_are_bitwise_those_of_one_call(monkeypatch) -> None:
    """A call of many rows (a look-ahead's candidates) is split among threads: every row's
    iterations, solution and flows are bitwise those of one single-threaded call."""
    model = _model("case14")
    rows, base = _cases(model, 40, seed=5)
    rows = rows * 4  # 160 rows of case14's 28 bus bars: past PARALLEL_WORK
    assert len(rows) * 28 >= newton.PARALLEL_WORK
    monkeypatch.setattr(newton, "_THREADS", 1)
    one = _solve(model, base, rows)[:3]
    calls = []
    kernel = newton._kernel
    monkeypatch.setattr(newton, "_THREADS", 3)
    monkeypatch.setattr(newton, "_pool", None)
    monkeypatch.setattr(newton, "_kernel", lambda *a: (calls.append(len(a[1])), kernel(*a)))
    threaded = _solve(model, base, rows)[:3]
    assert sorted(calls) == [53, 53, 54]  # three runs of rows, one per thread
    for a, b in zip(one, threaded, strict=True):
        assert a.tobytes() == b.tobytes()


def _solve_in_child(model, base, rows, conn) -> None:
    conn.send(_solve(model, base, rows)[0].tolist())


def test_a_forked_child_solves_large_calls_after_the_parent_started_its_threads(
    monkeypatch,
) -> None:
    """A process forked after this one's thread pool started (a GridVecEnv worker, a
    benchmark's side-by-side batch) has a copy of the pool without its threads: a call large
    enough to be split must start the child's own pool, not wait for ever on the copy."""
    import multiprocessing as mp

    model = _model("case14")
    rows, base = _cases(model, 40, seed=5)
    rows = rows * 4  # past PARALLEL_WORK
    monkeypatch.setattr(newton, "_THREADS", 2)
    monkeypatch.setattr(newton, "_pool", None)
    want = _solve(model, base, rows)[0].tolist()
    assert newton._pool is not None  # the parent's pool runs
    parent, child = mp.get_context("fork").Pipe()
    process = mp.get_context("fork").Process(
        target=_solve_in_child, args=(model, base, rows, child), daemon=True
    )
    process.start()
    try:
        assert parent.poll(60), "the forked child's solve never returned"
        assert parent.recv() == want
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0


def test_newton_refuses_an_island_the_slack_does_not_reach_and_a_lost_slack() -> None:
    model = _model("case14")
    rows, base = _cases(model, 1, seed=3)
    buses, inj, gen_v, storage, *_ = rows[0]
    start = model.n_load + model.n_gen
    island = buses.copy()
    island[:] = np.where(np.arange(island.size) < start, island, 1)  # base branches
    # one branch alone on bus bar 2 at both of its ends: an island of two bus bars
    island[start] = island[start + model.n_branch] = 2
    slack_off = buses.copy()
    slack_off[model.n_load + int(np.flatnonzero(model.gen_kind == "slack")[0])] = -1
    layout = newton.build_layout(model, base.batch.shared.new_grid(), max_iter=MAX_ITER)
    V = np.tile(base.batch.shared.v_init, (2, 1))
    before = V.copy()
    out = np.zeros((2, flow_slices(model)["all"].stop))
    iters = newton.solve_rows(
        layout, np.stack([island, slack_off]), np.stack([inj] * 2), np.stack([storage] * 2),
        np.stack([gen_v] * 2), V, out,
    )  # fmt: skip
    assert iters.tolist() == [newton.REFUSED, newton.REFUSED]
    assert np.array_equal(V, before)  # left as they were


def test_newton_refuses_two_voltage_regulating_generators_on_one_bus_bar() -> None:
    model = _model("case118")
    pv = np.flatnonzero(model.gen_kind != "sgen")
    rows, base = _cases(model, 1, seed=4)
    buses, inj, gen_v, storage, *_ = rows[0]
    # the first two PV generators: move the second onto the first's substation's bus bar 1 is
    # not a topology change grid2op allows, so build a row where both sit on one bus bar by
    # giving the layout's second generator the first one's substation
    first, second = pv[0], pv[1]
    gen_sub = model.gen_sub.copy()
    gen_sub[second] = gen_sub[first]
    shared = model.__class__(**{**model.__dict__, "gen_sub": gen_sub})
    layout = newton.build_layout(shared, base.batch.shared.new_grid(), max_iter=MAX_ITER)
    V = base.batch.shared.v_init[None].copy()
    out = np.zeros((1, flow_slices(model)["all"].stop))
    iters = newton.solve_rows(layout, buses[None], inj[None], storage[None], gen_v[None], V, out)
    assert iters.tolist() == [newton.REFUSED]


def test_a_layout_is_the_same_built_from_a_grid_that_holds_branches_out() -> None:
    model = _model("case14")
    fresh = LightSimBackend(model)
    played = LightSimBackend(model)
    topology = [np.ones(len(s), dtype=int) for s in (model.load_sub, model.gen_sub)]
    outs = np.ones(model.n_branch, dtype=int)
    outs[[1, 2]] = -1
    played.set_topology(*topology, outs, np.ones(model.n_branch, dtype=int))
    held = played.batch.lightsim_grid(0)  # the deferred topology sent: branches 1 and 2 out
    assert not any(held.get_lines()[i].connected_global for i in (1, 2))
    a = newton.build_layout(model, fresh.batch.shared.new_grid(), max_iter=MAX_ITER)
    b = newton.build_layout(model, held, max_iter=MAX_ITER)
    for x, y in zip(a.packed, b.packed, strict=True):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize(
    ("value", "expected"), [("1", "1"), ("abc", "positive integer"), ("0", "positive integer")]
)
def test_solver_threads_come_from_the_environment_or_a_named_error(value, expected) -> None:
    """``GRID_VEC_SOLVER_THREADS`` sets the threads of large calls (at most the CPUs); a value
    that is not a positive integer is refused, naming the variable."""
    code = "from grid_vec.grid import newton; print(newton._THREADS)"
    env = {**os.environ, "GRID_VEC_SOLVER_THREADS": value}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if expected.isdigit():
        assert done.returncode == 0 and done.stdout.strip() == expected
    else:
        assert done.returncode != 0
        assert f"GRID_VEC_SOLVER_THREADS must be a {expected}, got {value!r}" in done.stderr
