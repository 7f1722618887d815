"""Backend behaviour: argument errors leave the state unchanged, copies, timings, imports."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from grid_helpers import base_topology, random_outage, random_split

from grid_vec.grid import BACKEND_NAMES, PowerFlowDivergedError, make_backend, make_solver
from grid_vec.grid.backend import FLOW_FIELDS, InjectionRows, flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.lightsim import LightSimBackend
from grid_vec.grid.networks import load_network
from grid_vec.grid.solver_batch import BackendLoop


@pytest.fixture(scope="module")
def model():
    return compile_net(load_network("case5"), name="case5")


def _base_injections(model) -> list[np.ndarray]:
    return [model.load_p0.copy(), model.load_q0.copy(), model.gen_p0.copy(), model.gen_v0.copy()]


def _solved(model, name: str):
    backend = make_backend(model, name)
    backend.set_injections(*_base_injections(model))
    assert backend.run_ac()
    return backend


def _assert_same_solution(backend, expected) -> None:
    assert backend.run_ac()
    np.testing.assert_allclose(backend.results().bus_vm_pu, expected.bus_vm_pu, atol=1e-9)
    np.testing.assert_allclose(backend.results().p_or, expected.p_or, atol=1e-6)


def _bad_injections(model):
    """(argument index, bad value, expected message fragment)."""
    nan_gen_p = model.gen_p0.copy()
    nan_gen_p[2] = np.nan
    inf_load_q = model.load_q0.copy()
    inf_load_q[1] = np.inf
    neg_inf_v = model.gen_v0.copy()
    neg_inf_v[4] = -np.inf
    return [
        (0, model.load_p0[:-1], r"load_p must have shape \(3,\)"),
        (2, np.ones((model.n_gen, 1)), r"gen_p must have shape \(5,\)"),
        (2, nan_gen_p, r"gen_p\[2\] is nan"),
        (1, inf_load_q, r"load_q\[1\] is inf"),
        (3, neg_inf_v, r"gen_v\[4\] is -inf"),
    ]


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_bad_injections_raise_and_leave_state_unchanged(model, name: str) -> None:
    backend = _solved(model, name)
    expected = backend.results()
    for position, value, message in _bad_injections(model):
        args = _base_injections(model)
        args[0] = args[0] * 1.5  # a valid change that must not be applied either
        args[position] = value
        with pytest.raises(ValueError, match=message):
            backend.set_injections(*args)
        _assert_same_solution(backend, expected)


@pytest.mark.parametrize("name", BACKEND_NAMES)
@pytest.mark.parametrize(
    ("position", "index", "value", "message"),
    [
        (0, 1, 3, r"load_bus\[1\] is 3"),
        (1, 0, 0, r"gen_bus\[0\] is 0"),
        (3, 4, -2, r"branch_ex_bus\[4\] is -2"),
        (2, 2, 1.5, r"branch_or_bus\[2\] is 1.5"),
    ],
)
def test_bad_bus_values_raise_and_leave_state_unchanged(
    model, name: str, position: int, index: int, value, message: str
) -> None:
    backend = _solved(model, name)
    expected = backend.results()
    topology = [t.astype(float) for t in base_topology(model)]
    topology[2][0] = -1  # a valid change that must not be applied either
    topology[position][index] = value
    with pytest.raises(ValueError, match=message):
        backend.set_topology(*topology)
    _assert_same_solution(backend, expected)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_topology_shape_is_checked(model, name: str) -> None:
    backend = make_backend(model, name)
    topology = base_topology(model)
    topology[1] = topology[1][:-1]
    with pytest.raises(ValueError, match=r"gen_bus must have shape \(5,\)"):
        backend.set_topology(*topology)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_disconnected_elements_report_zero(model, name: str) -> None:
    backend = _solved(model, name)
    topology = base_topology(model)
    topology[0][0] = -1  # load 0
    topology[3][1] = -1  # branch 1, at its extremity: the whole branch goes out
    backend.set_topology(*topology)
    assert backend.run_ac()
    res = backend.results()
    assert res.load_p[0] == 0 and res.load_q[0] == 0
    assert res.p_or[1] == 0 and res.p_ex[1] == 0 and res.a_or[1] == 0
    assert np.all(res.bus_vm_pu[model.n_sub :] == 0)  # no bus bar 2 in use
    # the load came off: the slack produces less
    slack = np.flatnonzero(model.gen_is_slack)[0]
    assert res.gen_p[slack] < model.gen_p0[slack] - 0.5 * model.load_p0[0]


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_results_before_any_power_flow_raise(model, name: str) -> None:
    with pytest.raises(PowerFlowDivergedError):
        make_backend(model, name).results()


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_copy_is_independent(model, name: str) -> None:
    backend = _solved(model, name)
    expected = backend.results()
    clone = backend.copy()
    args = _base_injections(model)
    args[0] = args[0] * 1.2
    clone.set_injections(*args)
    topology = base_topology(model)
    topology[2][0] = -1
    clone.set_topology(*topology)
    assert clone.run_ac()
    assert not np.allclose(clone.results().p_or, expected.p_or)
    _assert_same_solution(backend, expected)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_reset_solves_as_a_new_backend(model, name: str) -> None:
    """After split substations, outages and a divergence, ``reset`` (in place) and the same
    injections give bitwise the flows and voltages of a backend that never solved."""
    backend = _solved(model, name)
    rng = np.random.default_rng(0)
    injections = _base_injections(model)
    for topology in [random_split(model, rng), random_outage(model, rng), random_split(model, rng)]:
        backend.set_topology(*topology)
        assert backend.run_ac()
    backend.set_injections(*[a * 1e3 for a in injections[:3]], injections[3])
    assert not backend.run_ac()
    for scale in (1.0, 1.02):  # a second reset, after a solve on the base topology
        backend.reset()
        with pytest.raises(PowerFlowDivergedError):
            backend.results()  # no solution yet
        new = make_backend(model, name)
        for b in (backend, new):
            b.set_injections(*[a * scale for a in injections[:3]], injections[3])
            assert b.run_ac()
        for field in ("bus_vm_pu", "bus_va_rad", *FLOW_FIELDS):
            ours, expected = getattr(backend.results(), field), getattr(new.results(), field)
            assert np.array_equal(ours, expected), field


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_timings_count_every_stage(model, name: str) -> None:
    backend = _solved(model, name)
    backend.set_topology(*base_topology(model))
    backend.run_ac()
    backend.results()
    timings = backend.timings
    assert timings["n_powerflow"] == 2
    for stage in ("set_injections", "set_topology", "powerflow", "results"):
        assert timings[stage] > 0, stage


def test_make_backend_rejects_unknown_name(model) -> None:
    with pytest.raises(ValueError, match="allowed names: lightsim2grid, pandapower"):
        make_backend(model, "newton")


def test_lightsim_backend_runs_without_pandapower(model, tmp_path) -> None:
    """A worker that only unpickles a GridModel and steps it never imports pandapower."""
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(model))
    script = textwrap.dedent(
        f"""
        import pickle, sys
        from grid_vec.grid.lightsim import LightSimBackend
        model = pickle.loads(open({str(path)!r}, "rb").read())
        backend = LightSimBackend(model)
        backend.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
        assert backend.run_ac()
        print(round(float(backend.results().p_or[0]), 3))
        heavy = sorted(m for m in ("pandapower", "lightsim2grid", "grid2op") if m in sys.modules)
        assert not heavy, heavy
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    backend = _solved(model, "lightsim2grid")
    assert float(done.stdout) == pytest.approx(backend.results().p_or[0], abs=1e-3)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_disconnected_branch_reports_zeros(model, name: str) -> None:
    backend = _solved(model, name)
    load_bus, gen_bus, or_bus, ex_bus = base_topology(model)
    or_bus[1] = -1  # one end off: the whole branch is out of service
    backend.set_topology(load_bus, gen_bus, or_bus, ex_bus)
    assert backend.run_ac()
    res = backend.results()
    for field in ("p_or", "q_or", "v_or", "a_or", "p_ex", "q_ex", "v_ex", "a_ex"):
        assert getattr(res, field)[1] == 0.0, field
        assert getattr(res, field)[0] != 0.0, field


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_trusted_setters_and_read_flows_match_the_public_api(model, name: str) -> None:
    """The environment's hot path (no re-validation, flat results) gives the same numbers."""
    checked, trusted = _solved(model, name), _solved(model, name)
    rng = np.random.default_rng(0)
    injections = [a * (1 + 0.05 * rng.random(a.shape)) for a in _base_injections(model)]
    topology = base_topology(model)
    topology[3][2] = -1  # branch 2 out of service
    checked.set_injections(*injections)
    checked.set_topology(*topology)
    trusted.set_injections_trusted(*injections)
    trusted.set_topology_trusted(*[t.astype(np.int8) for t in topology])
    assert checked.run_ac() and trusted.run_ac()
    res = checked.results()
    flows = np.empty(flow_slices(model)["all"].stop)
    trusted.read_flows(flows)
    for field in FLOW_FIELDS:
        np.testing.assert_allclose(
            flows[flow_slices(model)[field]], getattr(res, field), rtol=1e-7, atol=1e-9
        )
    assert flows[flow_slices(model)["v_ex"]][2] == 0.0


def _one_row_batch(backend):
    """The one-row batch a backend is solved through: a LightSimBackend's own (its view's
    rows), a pandapower backend in a BackendLoop."""
    return backend.batch if isinstance(backend, LightSimBackend) else BackendLoop([backend])


def _solved_rows(model, name: str, n: int):
    """``n`` rows of ``name``'s batch given the base injections and solved once."""
    batch = make_solver(model, name, n)
    rows = list(range(n))
    packed = [np.concatenate(_base_injections(model)) for _ in rows]
    batch.set_injections(rows, InjectionRows.of_rows(packed, model))
    assert batch.solve(rows, np.zeros((n, flow_slices(model)["all"].stop))) == []
    return batch


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n == "pandapower" else n for n in BACKEND_NAMES],
)
def test_topologies_set_in_one_call_match_one_at_a_time(model, name: str) -> None:
    """A batch's set_topologies (its push) gives each of its rows exactly what a backend's
    set_topology_trusted gives it, and leaves the other rows alone."""
    topologies = [base_topology(model) for _ in range(3)]
    topologies[0][3][2] = -1  # branch 2 out (its extremity)
    topologies[1][2][1] = -1  # branch 1 out (its origin)
    topologies[1][1][np.flatnonzero(model.gen_kind == "sgen")[0]] = -1  # a static generator off
    topologies[2][2][4] = topologies[2][3][4] = -1  # branch 4 out
    singles = [_solved(model, name) for _ in topologies]
    batch = _solved_rows(model, name, len(topologies) + 1)
    for backend, topology in zip(singles, topologies, strict=True):
        backend.set_topology_trusted(*topology)
    # row j of buses goes to batch row rows[j] (sorted, as a batch takes them): the rows get
    # topologies 1, 2 and 0; row 2 is left alone
    rows, order = [0, 1, 3], [1, 2, 0]
    buses = np.concatenate(
        [np.concatenate([*topologies[t], np.ones((model.n_storage,), int)])[None] for t in order]
    ).astype(np.int32)
    batch.set_topologies(rows, buses)
    width = flow_slices(model)["all"].stop
    flows, single_flows = np.zeros((len(batch), width)), np.zeros((1, width))
    assert batch.solve(rows, flows) == []
    for row, t in zip(rows, order, strict=True):
        single = _one_row_batch(singles[t])
        assert single.solve([0], single_flows) == []
        np.testing.assert_array_equal(flows[row], single_flows[0])
        for field in FLOW_FIELDS:
            np.testing.assert_array_equal(
                getattr(batch.results(row), field), getattr(single.results(0), field)
            )
    sgen = np.flatnonzero(model.gen_kind == "sgen")[0]
    assert batch.results(0).gen_p[sgen] == 0.0 != batch.results(1).gen_p[sgen]
    reference = _solved_rows(model, name, 1)  # solved twice on the base topology, as row 2
    assert batch.solve([2], flows) == [] and reference.solve([0], single_flows) == []
    np.testing.assert_array_equal(batch.results(2).p_or, reference.results(0).p_or)


def test_read_flows_before_any_power_flow_raises(model) -> None:
    with pytest.raises(PowerFlowDivergedError, match="no power flow"):
        make_backend(model).read_flows(np.empty(flow_slices(model)["all"].stop))


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_new_voltage_setpoints_are_applied(model, name: str) -> None:
    """Backends may skip resending unchanged setpoints, never changed ones."""
    backend = _solved(model, name)
    load_p, load_q, gen_p, gen_v = _base_injections(model)
    before = backend.results().gen_v.copy()
    for raised in (gen_v * 1.01, gen_v):
        backend.set_injections_trusted(load_p, load_q, gen_p, raised)
        assert backend.run_ac()
        voltage_controlled = model.gen_kind != "sgen"
        np.testing.assert_allclose(
            backend.results().gen_v[voltage_controlled], raised[voltage_controlled], rtol=1e-6
        )
    np.testing.assert_allclose(backend.results().gen_v, before, rtol=1e-9)


def test_lightsim_read_flows_stay_fresh_across_divergence_topology_and_copies(model) -> None:
    """The lightsim2grid backend reads its results through views fetched once: after a failed
    solve (which reallocates lightsim2grid's vectors), a topology change, a copy or a pickle
    round trip, read_flows must still give the numbers of a backend that never saw them."""
    flows = np.empty(flow_slices(model)["all"].stop)
    expected = np.empty_like(flows)
    injections = _base_injections(model)
    topology = base_topology(model)

    def check(backend) -> None:
        reference = make_backend(model)
        reference.set_injections(*injections)
        reference.set_topology(*topology)
        assert backend.run_ac() and reference.run_ac()
        backend.read_flows(flows)
        reference.read_flows(expected)
        np.testing.assert_allclose(flows, expected, rtol=1e-6, atol=1e-6)

    backend = _solved(model, "lightsim2grid")
    backend.read_flows(flows)
    injections = [a * 1.03 for a in injections]
    backend.set_injections(*injections)
    check(backend)
    huge = [a * 1e3 for a in injections[:3]] + [injections[3]]
    backend.set_injections(*huge)
    assert not backend.run_ac()
    backend.set_injections(*injections)
    check(backend)
    topology[3][2] = -1
    backend.set_topology(*topology)
    check(backend)
    copied = backend.copy()
    injections = [a * 0.97 for a in injections]
    copied.set_injections(*injections)
    check(copied)
    clone = pickle.loads(pickle.dumps(copied))
    check(clone)
    del backend, copied  # the clone reads its own grid
    check(clone)


def test_lightsim_views_kept_across_topology_changes_read_every_new_solve() -> None:
    """The lightsim2grid backend keeps its result views across topology changes and resets
    (its result vectors are sized by element; update_topo and a solver reset keep them):
    after each of many bus splits and outages on case14, resets and a failed solve in
    between, read_flows gives what a new backend solving that topology gives."""
    from grid_helpers import perturbed_injections

    model = compile_net(load_network("case14"), name="case14")
    rng = np.random.default_rng(3)
    backend = _solved(model, "lightsim2grid")
    flows = np.empty(flow_slices(model)["all"].stop)
    expected = np.empty_like(flows)
    backend.read_flows(flows)
    views, kept = backend.batch.rows.views[0], 0
    for k in range(24):
        topology = random_split(model, rng) if k % 3 else random_outage(model, rng)
        injections = perturbed_injections(model, rng)
        if k == 12:  # a failed solve reallocates the vectors: the views are fetched again
            backend.set_injections(*[a * 1e3 for a in injections[:3]], injections[3])
            assert not backend.run_ac()
            views = None
        if k % 5 == 4:  # a reset in place (a new episode) keeps them too
            backend.reset()
        backend.set_topology(*topology)
        backend.set_injections(*injections)
        reference = make_backend(model)
        reference.set_topology(*topology)
        reference.set_injections(*injections)
        assert backend.run_ac() and reference.run_ac(), k
        backend.read_flows(flows)
        if views is not None:
            assert backend.batch.rows.views[0] is views, k  # kept: what this test is about
            kept += 1
        views = backend.batch.rows.views[0]
        assert views is not None
        reference.read_flows(expected)
        np.testing.assert_allclose(flows, expected, rtol=1e-6, atol=1e-6, err_msg=str(k))
    assert kept == 23


def _assert_same_row_solution(batch, row: int, expected) -> None:
    """:func:`_assert_same_solution` of a batch's row, solved by lightsim2grid (``run_ac``)."""
    flows = np.zeros((len(batch), flow_slices(batch.model)["all"].stop))
    assert batch.solve_by_lightsim([row], flows) == []
    np.testing.assert_allclose(batch.results(row).bus_vm_pu, expected.bus_vm_pu, atol=1e-9)
    np.testing.assert_allclose(batch.results(row).p_or, expected.p_or, atol=1e-6)


def test_a_lightsim_copy_shares_its_grid_until_one_of_them_changes_it(model) -> None:
    backend = _solved(model, "lightsim2grid")
    expected = backend.results()
    copies = backend.batch.take([0, 0])  # a row taken twice: a look-ahead's candidates
    original = backend.batch.rows.grid[0]
    assert all(grid is original for grid in copies.rows.grid)  # no LSGrid copied yet
    # a copy solved by lightsim2grid (run_ac) takes a grid of its own, its original keeps its
    topology = base_topology(model)
    topology[2][0] = -1
    buses = np.concatenate([*topology, np.ones(model.n_storage, int)]).astype(np.int32)
    copies.set_topologies([0], buses[None])
    flows = np.zeros((2, flow_slices(model)["all"].stop))
    assert copies.solve_by_lightsim([0], flows) == []
    assert copies.rows.grid[0] is not original
    assert copies.rows.grid[1] is original
    assert not np.allclose(copies.results(0).p_or, expected.p_or)
    _assert_same_solution(backend, expected)
    _assert_same_row_solution(copies, 1, expected)
    # and the original solving again leaves the copy that still shares with it as it was
    args = _base_injections(model)
    args[0] = args[0] * 1.1
    backend.set_injections(*args)
    assert backend.run_ac()
    _assert_same_row_solution(copies, 1, expected)


def test_a_lightsim_grid_receives_a_deferred_topology_and_setpoints_when_it_is_used(model) -> None:
    """Topology, voltage setpoints and storage setpoints reach lightsim2grid's grid only when
    it is used; the grid then solves what a grid given them at once solves."""
    eager, lazy = _solved(model, "lightsim2grid"), _solved(model, "lightsim2grid")
    topology = base_topology(model)
    topology[2][3] = -1
    args = _base_injections(model)
    args[3] = args[3] * 1.01
    for backend in (eager, lazy):
        backend.set_topology(*topology)
        backend.set_injections(*args)
    rows = lazy.batch.rows
    held = rows.buses[0][lazy.batch.shared.topo_order]
    assert (held != rows.grid_topo[0]).any() and rows.gen_v_stale[0]  # not sent yet
    eager.batch.lightsim_grid(0)  # sent now
    assert eager.run_ac() and lazy.run_ac()
    assert np.array_equal(rows.grid_topo[0], held) and not rows.gen_v_stale[0]
    for field in FLOW_FIELDS:
        np.testing.assert_array_equal(
            getattr(lazy.results(), field), getattr(eager.results(), field)
        )


def test_a_copy_screening_outages_leaves_the_grid_it_shared_as_it_was(model) -> None:
    """N-1 screening on a copy sends the copy's injections to a grid of its own, never to the
    grid it shares with its original (whose next solve would read them)."""
    backend = _solved(model, "lightsim2grid")
    expected = backend.results()
    copy = LightSimBackend.of_batch(backend.batch.take([0]))
    assert copy.batch.rows.grid[0] is backend.batch.rows.grid[0]  # shared until then
    args = _base_injections(model)
    args[0] = args[0] * 1.3
    copy.set_injections(*args)
    copy.outage_currents(np.array([0, 1]), *base_topology(model))
    assert backend.run_ac()
    _assert_same_solution(backend, expected)
