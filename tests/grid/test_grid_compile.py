"""compile_net: element orders, names, limits, the caller's net, and grid2op-format names."""

from __future__ import annotations

import bz2
import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pandapower as pp
import pytest
from grid_helpers import assert_results_close, base_topology

from grid_vec.grid import make_backend
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import NETWORK_NAMES, load_network


@pytest.fixture(scope="module")
def case14():
    return compile_net(load_network("case14"), name="case14")


def test_case14_layout(case14) -> None:
    net = load_network("case14")
    assert case14.name == "case14"
    assert (case14.n_sub, case14.n_line, case14.n_trafo) == (14, 15, 5)
    assert case14.sub_names[3] == "sub_3"
    np.testing.assert_array_equal(case14.branch_or_sub[15:], net.trafo["hv_bus"])
    np.testing.assert_array_equal(case14.branch_ex_sub[:15], net.line["to_bus"])
    assert list(case14.gen_kind) == ["gen"] * 4 + ["slack"]
    assert case14.load_names[0] == "load_1_0"
    assert case14.branch_names[0] == "0_1_0"
    assert case14.branch_names[15] == "3_6_15"  # trafo: sorted bus ids, global index
    # grid2op names the generator it adds for an ext_grid after the pandapower gens
    assert list(case14.gen_names) == ["gen_1_0", "gen_2_1", "gen_5_2", "gen_7_3", "gen_0_4"]


# pandapower 3 warns of every net written before its tap_dependency_table (case14's too)
@pytest.mark.filterwarnings("ignore:tap_dependency_table:DeprecationWarning")
def test_base_case_injections(case14) -> None:
    net = load_network("case14")
    pp.runpp(net, calculate_voltage_angles=True)
    assert case14.gen_p0[-1] == pytest.approx(net.res_ext_grid["p_mw"].iloc[0])
    np.testing.assert_allclose(case14.gen_p0[:4], net.gen["p_mw"])
    vn_kv = net.bus["vn_kv"].to_numpy()
    np.testing.assert_allclose(case14.gen_v0[:4], net.gen["vm_pu"] * vn_kv[net.gen["bus"]])
    np.testing.assert_allclose(case14.load_q0, net.load["q_mvar"])


def test_thermal_limits_from_ratings(case14) -> None:
    net = load_network("case14")
    line = net.line["max_i_ka"].to_numpy() * 1000.0 * net.line["parallel"].to_numpy()
    trafo = net.trafo["sn_mva"] / (np.sqrt(3) * net.trafo["vn_hv_kv"]) * 1000.0
    np.testing.assert_allclose(case14.thermal_limit_a, np.concatenate([line, trafo]))


def test_thermal_limits_override_is_validated() -> None:
    net = load_network("case5")
    limits = np.arange(1.0, 7.0)
    model = compile_net(net, name="c5", thermal_limits=limits)
    np.testing.assert_array_equal(model.thermal_limit_a, limits)
    for bad, message in [
        (np.ones(5), r"thermal_limits must have shape \(6,\)"),
        (np.array([1, 2, np.nan, 4, 5, 6.0]), "bad branch index 2"),
        (np.array([1, 2, 3, 4, 0, 6.0]), "bad branch index 4"),
    ]:
        with pytest.raises(ValueError, match=message):
            compile_net(net, name="c5", thermal_limits=bad)


def test_caller_net_is_not_modified() -> None:
    net = load_network("case5")
    before = {table: net[table].copy() for table in ("bus", "line", "load", "gen", "ext_grid")}
    compile_net(net, name="c5")
    for table, frame in before.items():
        assert net[table].equals(frame), table
    assert "res_bus" not in net or net.res_bus.empty


def test_model_pickles_small(case14) -> None:
    assert len(pickle.dumps(case14.solver_states["lightsim2grid"])) < 10_000
    # the pandapower JSON dominates; still far below what a worker start costs
    assert len(pickle.dumps(case14)) < 150_000


def test_named_elements_keep_their_names() -> None:
    net = load_network("case5")
    net.load["name"] = ["a", "b", "c"]
    net.gen["name"] = ["g0", None, "g2"]  # one missing: the convention is used for all
    model = compile_net(net, name="c5")
    assert list(model.load_names) == ["a", "b", "c"]
    assert list(model.gen_names[:3]) == ["gen_0_0", "gen_2_1", "gen_4_2"]
    assert model.gen_names[3] == "sgen_0_0"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda net: pp.create_ext_grid(net, 1), "exactly one slack"),
        (lambda net: net.bus.drop(index=2, inplace=True), "index must be 0..n_bus-1"),
    ],
)
def test_unsupported_nets_are_rejected(change, message: str) -> None:
    net = load_network("case5")
    change(net)
    with pytest.raises(ValueError, match=message):
        compile_net(net, name="c5")


def test_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="pandapowerNet"):
        compile_net({"bus": []}, name="x")
    with pytest.raises(ValueError, match="name must be a non-empty str"):
        compile_net(load_network("case5"), name="")
    with pytest.raises(ValueError, match="allowed names: " + ", ".join(NETWORK_NAMES)):
        load_network("case9")


def _sandbox() -> Path | None:
    spec = importlib.util.find_spec("grid2op")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "data" / "l2rpn_case14_sandbox"
    return folder if folder.is_dir() else None


def _csv_columns(path: Path) -> set[str]:
    with bz2.open(path, "rt") as f:
        return set(f.readline().strip().split(";"))


@pytest.mark.grid2op
@pytest.mark.skipif(_sandbox() is None, reason="needs the grid2op extra (its l2rpn_case14_sandbox)")
def test_grid2op_sandbox_names_match_its_chronics() -> None:
    """The sandbox's slack is a gen with slack=True (no ext_grid); names match the CSVs."""
    folder = _sandbox()
    net = pp.from_json(str(folder / "grid.json"))
    model = compile_net(net, name="l2rpn_case14_sandbox")
    chronics = sorted((folder / "chronics").iterdir())[0]
    assert set(model.load_names) == _csv_columns(chronics / "load_p.csv.bz2")
    assert set(model.gen_names) == _csv_columns(chronics / "prod_p.csv.bz2")
    assert list(model.gen_kind) == ["gen"] * 5 + ["slack"]
    fast, ref = make_backend(model), make_backend(model, "pandapower")
    for backend in (fast, ref):
        backend.set_topology(*base_topology(model))
        backend.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
        assert backend.run_ac()
    assert_results_close(fast.results(), ref.results(), "l2rpn_case14_sandbox")
