"""Storage units in the grid layer: compiled, set, placed and reported by both backends.

On grid2op's three folders with storage units: with setpoints 0 lightsim2grid's power flow is
grid2op + LightSimBackend's on the same injections, with nonzero setpoints it is grid2op's
backend given the same storage setpoints, and the pandapower backend agrees with the
lightsim2grid one (setpoints, a unit moved to bus bar 2, a unit disconnected).
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from grid_helpers import base_topology

from grid_vec.chronics import load_folder
from grid_vec.grid import make_backend
from grid_vec.grid.backend import FLOW_FIELDS, flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

STORAGE_FOLDERS = ["educ_case14_storage", "l2rpn_wcci_2022_dev", "l2rpn_idf_2023"]
GRID2OP_A_RTOL = 1e-4  # relative, against grid2op's LightSimBackend
BACKENDS_A_RTOL = 1e-3  # relative, lightsim2grid against pandapower
P_ATOL = 1e-3  # MW / MVAr
V_ATOL = 1e-3  # kV
THETA_ATOL = 1e-5  # rad


def _grid2op_data() -> Path:
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    pytest.importorskip("lightsim2grid")
    return Path(grid2op.__file__).parent / "data"


def _setpoints(n_storage: int) -> np.ndarray:
    """+5 MW (charging) on the first unit, -5 MW (discharging) on the second."""
    p = np.zeros(n_storage)
    p[:2] = [5.0, -5.0]
    return p


def _relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1.0)))


@pytest.fixture(scope="module")
def storage_models():
    """name -> (folder, model as grid2op's LightSimBackend builds it, model for pandapower 3)."""
    data = _grid2op_data()
    models = {}
    for name in STORAGE_FOLDERS:
        folder = load_folder(data / name)
        models[name] = tuple(
            compile_net(
                folder.net, name=name, thermal_limits=folder.thermal_limits, trafo_model=trafo
            )
            for trafo in ("pandapower_v2", "pandapower_v3")
        )
    return models


def test_grid_without_storage_reports_empty_storage_fields() -> None:
    model = compile_net(load_network("case14"), name="case14")
    assert model.n_storage == 0 and model.storage_names.shape == (0,)
    slices = flow_slices(model)
    # the storage fields come last and are empty: every other field keeps its place
    assert FLOW_FIELDS[-4:] == ("storage_p", "storage_q", "storage_v", "storage_theta")
    assert slices["storage_p"] == slice(slices["gen_v"].stop, slices["gen_v"].stop)
    assert slices["all"].stop == 8 * model.n_branch + 3 * model.n_load + 3 * model.n_gen
    for name in ("lightsim2grid", "pandapower"):
        backend = make_backend(model, name)
        backend.set_storage_p(np.zeros(0))
        backend.set_topology(*base_topology(model), storage_bus=np.zeros(0, dtype=int))
        assert backend.run_ac()
        res = backend.results()
        for field in ("storage_p", "storage_q", "storage_v", "storage_theta"):
            assert getattr(res, field).shape == (0,), (name, field)


@pytest.mark.grid2op
@pytest.mark.parametrize("name", STORAGE_FOLDERS)
def test_storage_grid_solves_as_grid2op_lightsim_backend(storage_models, name) -> None:
    """First step of the first scenario: the same power flow as grid2op's, with the storage
    units idle, then with setpoints given to grid2op's backend and ours alike."""
    import grid2op
    from lightsim2grid import LightSimBackend

    model = storage_models[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = grid2op.make(str(_grid2op_data() / name), backend=LightSimBackend(), test=True)
        obs = env.reset(seed=0, options={"time serie id": 0})
    try:
        assert list(model.storage_names) == list(env.name_storage)
        np.testing.assert_array_equal(model.storage_sub, env.storage_to_subid)
        ours = make_backend(model)
        # the observation's float32 injections: both solvers see exactly the same case
        ours.set_injections(*(np.asarray(x, dtype=float) for x in (
            obs.load_p, obs.load_q, obs.gen_p, obs.gen_v)))  # fmt: skip
        assert ours.run_ac()
        res = ours.results()
        assert _relative(res.a_or, obs.a_or) <= GRID2OP_A_RTOL
        np.testing.assert_array_equal(res.storage_p, 0.0)
        np.testing.assert_allclose(res.storage_v, env.backend.storages_info()[2], atol=V_ATOL)

        theirs = env.backend.copy()
        p = _setpoints(model.n_storage)
        action = env.action_space({"set_storage": [(i, float(p[i])) for i in range(2)]})
        backend_action = env._backend_action_class()
        backend_action += action
        theirs.apply_action(backend_action)
        converged, error = theirs.runpf()
        assert converged, error
        ours.set_storage_p(p)
        assert ours.run_ac()
        res = ours.results()
        storage_p, storage_q, storage_v = theirs.storages_info()
        assert _relative(res.a_or, theirs.get_line_flow()) <= GRID2OP_A_RTOL
        np.testing.assert_allclose(res.storage_p, storage_p, atol=P_ATOL)
        np.testing.assert_allclose(res.storage_q, storage_q, atol=P_ATOL)
        np.testing.assert_allclose(res.storage_v, storage_v, atol=V_ATOL)
        # grid2op's LightSimBackend gives degrees, grid_vec radians
        np.testing.assert_allclose(
            res.storage_theta, np.deg2rad(theirs.storage_theta), atol=THETA_ATOL
        )
    finally:
        env.close()


def _both(model):
    return make_backend(model, "lightsim2grid"), make_backend(model, "pandapower")


def _assert_agree(fast, ref, context: str) -> None:
    a, b = fast.results(), ref.results()
    assert _relative(a.a_or, b.a_or) <= BACKENDS_A_RTOL, context
    for field, atol in (
        ("storage_p", P_ATOL),
        ("storage_q", P_ATOL),
        ("storage_v", V_ATOL),
        ("storage_theta", THETA_ATOL),
        ("gen_p", P_ATOL),
    ):
        np.testing.assert_allclose(
            getattr(a, field), getattr(b, field), atol=atol, err_msg=f"{field} {context}"
        )


def _storage_topology(model, storage_bus: np.ndarray, branch_to_two: tuple[int, int] | None):
    """Base topology with the storage bus bars given, and optionally one branch end (branch
    index, 0 = origin / 1 = extremity) on bus bar 2."""
    topology = base_topology(model)
    if branch_to_two is not None:
        branch, end = branch_to_two
        topology[2 + end][branch] = 2
    return [*topology, storage_bus]


@pytest.mark.grid2op
@pytest.mark.parametrize("name", STORAGE_FOLDERS)
def test_backends_agree_on_storage_setpoints_and_bus_bars(storage_models, name) -> None:
    model = storage_models[name][1]
    fast, ref = _both(model)
    p = _setpoints(model.n_storage)
    ones = np.ones(model.n_storage, dtype=int)
    for backend in (fast, ref):
        backend.set_storage_p(p)
        assert backend.run_ac()
    _assert_agree(fast, ref, f"{name} setpoints")
    np.testing.assert_allclose(fast.results().storage_p, p, atol=P_ATOL)

    # unit 0 on bus bar 2 with one branch of its substation: a solved bus bar of its own
    sub = int(model.storage_sub[0])
    ends = [(int(b), 0) for b in np.flatnonzero(model.branch_or_sub == sub)]
    ends += [(int(b), 1) for b in np.flatnonzero(model.branch_ex_sub == sub)]
    assert len(ends) >= 2  # bus bar 1 keeps the others
    storage_bus = ones.copy()
    storage_bus[0] = 2
    topology = _storage_topology(model, storage_bus, ends[0])
    for backend in (fast, ref):
        backend.set_topology(*topology)
        assert backend.run_ac()
    _assert_agree(fast, ref, f"{name} unit 0 on bus bar 2")
    res = fast.results()
    assert res.bus_vm_pu[sub + model.n_sub] > 0  # bus bar 2 is in the power flow
    assert res.storage_theta[0] == pytest.approx(res.bus_va_rad[sub + model.n_sub], abs=1e-9)

    # unit 1 disconnected: it reports zeros, its setpoint comes back with it
    storage_bus = ones.copy()
    storage_bus[1] = -1
    for backend in (fast, ref):
        backend.set_topology(*_storage_topology(model, storage_bus, None))
        assert backend.run_ac()
    _assert_agree(fast, ref, f"{name} unit 1 disconnected")
    res = fast.results()
    for field in ("storage_p", "storage_q", "storage_v", "storage_theta"):
        assert getattr(res, field)[1] == 0.0, field
    for backend in (fast, ref):
        backend.set_topology(*base_topology(model))  # storage_bus left out: bus bar 1
        assert backend.run_ac()
        np.testing.assert_allclose(backend.results().storage_p, p, atol=P_ATOL)

    # a unit alone on bus bar 2 is an island, even at p = 0: neither solver converges
    storage_bus = ones.copy()
    storage_bus[1] = 2
    for backend in (fast, ref):
        backend.set_storage_p(np.zeros(model.n_storage))
        backend.set_topology(*_storage_topology(model, storage_bus, None))
        assert not backend.run_ac()


def test_net_storage_is_compiled_with_its_setpoint() -> None:
    """A pandapower net's own storage unit: named, placed and solved with the net's p."""
    import pandapower as pp

    net = load_network("case14")
    pp.create_storage(net, bus=4, p_mw=3.0, max_e_mwh=10.0)
    model = compile_net(net, name="case14_storage")
    assert list(model.storage_names) == ["storage_4_0"]
    np.testing.assert_array_equal(model.storage_sub, [4])
    np.testing.assert_array_equal(model.storage_p0, [3.0])
    fast, ref = _both(model)
    for backend in (fast, ref):
        assert backend.run_ac()
        assert backend.results().storage_p[0] == pytest.approx(3.0)
    _assert_agree(fast, ref, "case14 + storage, base case")
    # the flat layout of read_flows carries the same storage values as results()
    flows = np.empty(flow_slices(model)["all"].stop)
    fast.read_flows(flows)
    for field in ("storage_p", "storage_v", "storage_theta"):
        np.testing.assert_array_equal(
            flows[flow_slices(model)[field]], getattr(fast.results(), field)
        )

    pp.create_storage(net, bus=5, p_mw=1.0, max_e_mwh=10.0, scaling=0.5)
    with pytest.raises(ValueError, match=r"net\.storage\['scaling'\] must be 1"):
        compile_net(net, name="scaled")


def test_storage_setters_validate_and_copies_are_independent() -> None:
    import pandapower as pp

    net = load_network("case14")
    pp.create_storage(net, bus=4, p_mw=0.0, max_e_mwh=10.0)
    pp.create_storage(net, bus=9, p_mw=0.0, max_e_mwh=10.0)
    model = compile_net(net, name="case14_two_storages")
    for name in ("lightsim2grid", "pandapower"):
        backend = make_backend(model, name)
        with pytest.raises(ValueError, match=r"storage_p must have shape \(2,\)"):
            backend.set_storage_p(np.zeros(3))
        with pytest.raises(ValueError, match=r"storage_p\[1\] is nan"):
            backend.set_storage_p([0.0, np.nan])
        with pytest.raises(ValueError, match=r"storage_bus\[0\] is 3"):
            backend.set_topology(*base_topology(model), storage_bus=[3, 1])
        with pytest.raises(ValueError, match=r"storage_bus must have shape \(2,\)"):
            backend.set_topology(*base_topology(model), storage_bus=[1])
        backend.set_storage_p([2.0, -1.0])
        twin = backend.copy()
        twin.set_storage_p([0.0, 0.0])
        for b in (backend, twin):
            assert b.run_ac()
        np.testing.assert_allclose(backend.results().storage_p, [2.0, -1.0], atol=P_ATOL)
        np.testing.assert_allclose(twin.results().storage_p, [0.0, 0.0], atol=P_ATOL)
        # pickled to a worker: the setpoints travel with it
        shipped = pickle.loads(pickle.dumps(backend))
        assert shipped.run_ac()
        np.testing.assert_allclose(shipped.results().storage_p, [2.0, -1.0], atol=P_ATOL)
        # the trusted setters take the same arrays
        backend.set_storage_p_trusted(np.array([1.0, 1.0]))
        backend.set_topology_trusted(
            *base_topology(model), storage_bus=np.array([1, -1], dtype=np.int32)
        )
        assert backend.run_ac()
        np.testing.assert_allclose(backend.results().storage_p, [1.0, 0.0], atol=P_ATOL)


def test_storage_islands_are_the_connected_units_no_connected_branch_end_reaches(
    storage_models,
) -> None:
    """The batch's island test (one gather over the branch ends at the units' substations)
    against its definition, unit by unit, on random topologies (a branch with one end off has
    both ends off, as put_topologies writes them)."""
    from grid_vec.grid import make_solver

    rng = np.random.default_rng(3)
    for name in STORAGE_FOLDERS:
        model = storage_models[name][0]
        solver = make_solver(model, "lightsim2grid", 1)
        n_load, n_gen, b = model.n_load, model.n_gen, model.n_branch
        bars = np.array([1, 1, 1, 2, 2, -1], dtype=np.int32)
        buses = rng.choice(bars, (300, n_load + n_gen + 2 * b + model.n_storage))
        ends = buses[:, n_load + n_gen : n_load + n_gen + 2 * b].reshape(300, 2, b)
        np.copyto(ends, -1, where=(ends == -1).any(axis=1, keepdims=True))
        want = np.zeros(300, dtype=bool)
        for r in range(300):
            for u, sub in enumerate(model.storage_sub):
                bar = buses[r, n_load + n_gen + 2 * b + u]
                reached = any(
                    ends[r, side, k] == bar
                    for side, subs in enumerate((model.branch_or_sub, model.branch_ex_sub))
                    for k in np.flatnonzero(subs == sub)
                )
                want[r] |= bar != -1 and not reached
        np.testing.assert_array_equal(solver._storage_islands(buses), want, err_msg=name)
        assert 0 < want.sum() < 300, name  # both outcomes exercised
