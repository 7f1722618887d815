"""Compile a pandapower net once into a :class:`GridModel` (arrays, names, solver states).

The caller's net is never modified: a copy receives one extra, out-of-service bus per
substation (bus bar 2, same ``vn_kv``), so the pandapower bus ``s`` is bus bar 1 of
substation ``s`` and the pandapower bus ``s + n_sub`` its bus bar 2. Both solver states are
built from that copy.

Names follow the net's ``name`` column when every row of the table has a non-empty one,
otherwise grid2op's pandapower naming (``load_{bus}_{i}``, ``gen_{bus}_{i}``,
``{from}_{to}_{i}``, ``sub_{i}``), so grid2op-format chronics columns map by name.
"""

from __future__ import annotations

import copy
import importlib.util
import warnings

import numpy as np

from grid_vec.grid.model import GridModel

N_BUSBAR = 2


def numba_available() -> bool:
    """Whether numba can be imported: ``pandapower.runpp`` is told, so that it neither tries
    numba in vain nor logs that it is missing."""
    return importlib.util.find_spec("numba") is not None


# how lightsim2grid turns pandapower transformers into its model: with pandapower 2's
# formulas (what grid2op's LightSimBackend does, and what grids written by pandapower 2, as
# grid2op's datasets are, were made for) or with pandapower 3's (what pandapower 3 itself
# solves, and what nets built by pandapower 3 expect)
TRAFO_MODELS = ("pandapower_v2", "pandapower_v3")


def compile_net(
    net,
    *,
    name: str,
    thermal_limits: np.ndarray | None = None,
    trafo_model: str = "pandapower_v3",
) -> GridModel:
    """Compile ``net`` (a ``pandapowerNet``) into a picklable :class:`GridModel`.

    ``thermal_limits`` (amperes, one per branch: lines then transformers) overrides the
    limits derived from ``max_i_ka`` and the transformer ratings. ``trafo_model`` (one of
    :data:`TRAFO_MODELS`) is the transformer conversion of the lightsim2grid model:
    ``"pandapower_v3"`` (the default) agrees with pandapower 3's own power flow, so with the
    ``pandapower`` backend; ``"pandapower_v2"`` is what grid2op's ``LightSimBackend`` builds
    (by default), for grids written by pandapower 2. The two differ on transformers with an
    off-nominal ratio (the 118-bus grids); the ``pandapower`` backend always solves with
    pandapower's own formulas.

    The bus index must be 0..n_bus-1 in any order: bus ``i`` is substation ``i``, as grid2op
    numbers them (its pandapower backend reads substation ids from the bus labels).
    """
    from grid_vec.grid._pandapower import import_pandapower

    pp = import_pandapower()

    if not isinstance(net, pp.pandapowerNet):
        raise TypeError(f"net must be a pandapower.pandapowerNet, got {type(net).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got {name!r}")
    if trafo_model not in TRAFO_MODELS:
        raise ValueError(f"trafo_model must be one of {TRAFO_MODELS}, got {trafo_model!r}")
    _check_supported(net)
    if not net.bus.index.is_monotonic_increasing:
        # a permutation of 0..n-1 (checked above): rows in label order, so that row i is
        # substation i; every other table refers to buses by label, so nothing else moves
        net = copy.deepcopy(net)
        net.bus = net.bus.sort_index()
        if "res_bus" in net and len(net.res_bus):
            net.res_bus = net.res_bus.sort_index()
    n_sub = len(net.bus)
    n_branch = len(net.line) + len(net.trafo)
    limits = (
        _thermal_limits(net) if thermal_limits is None else _check_limits(thermal_limits, n_branch)
    )

    work = copy.deepcopy(net)
    vn_kv = work.bus["vn_kv"].to_numpy(dtype=float)
    pp.create_buses(work, n_sub, vn_kv=vn_kv, index=np.arange(n_sub, 2 * n_sub), in_service=False)
    with warnings.catch_warnings():
        # pandapower 3 warns of every net written before its tap_dependency_table (every
        # grid2op grid.json): the net's taps are read as they are, nothing to act on
        warnings.filterwarnings("ignore", "tap_dependency_table", DeprecationWarning)
        pp.runpp(work, calculate_voltage_angles=True, numba=numba_available())

    gen_bus = np.concatenate(
        [
            work.gen["bus"].to_numpy(int),
            work.sgen["bus"].to_numpy(int),
            work.ext_grid["bus"].to_numpy(int),
        ]
    )
    gen_kind = np.array(
        ["slack" if s else "gen" for s in _gen_slack_flags(work)]
        + ["sgen"] * len(work.sgen)
        + ["slack"] * len(work.ext_grid),
        dtype="<U5",
    )
    gen_p0 = np.concatenate(
        [
            work.gen["p_mw"].to_numpy(float),
            work.sgen["p_mw"].to_numpy(float),
            np.zeros(len(work.ext_grid)),
        ]
    )
    res_p = np.concatenate(
        [
            work.res_gen["p_mw"].to_numpy(float),
            np.zeros(len(work.sgen)),
            work.res_ext_grid["p_mw"].to_numpy(float),
        ]
    )
    gen_p0 = np.where(gen_kind == "slack", res_p, gen_p0)
    gen_vm = np.concatenate(
        [
            work.gen["vm_pu"].to_numpy(float),
            np.ones(len(work.sgen)),
            work.ext_grid["vm_pu"].to_numpy(float),
        ]
    )

    return GridModel(
        name=name,
        sub_names=np.array([f"sub_{i}" for i in range(n_sub)]),
        sub_vn_kv=vn_kv,
        branch_names=net_branch_names(net),
        branch_or_sub=np.concatenate(
            [net.line["from_bus"].to_numpy(int), net.trafo["hv_bus"].to_numpy(int)]
        ),
        branch_ex_sub=np.concatenate(
            [net.line["to_bus"].to_numpy(int), net.trafo["lv_bus"].to_numpy(int)]
        ),
        n_line=len(net.line),
        thermal_limit_a=limits,
        load_names=_names(net.load, "load"),
        load_sub=net.load["bus"].to_numpy(int),
        load_p0=net.load["p_mw"].to_numpy(float),
        load_q0=net.load["q_mvar"].to_numpy(float),
        gen_names=_gen_names(net),
        gen_sub=gen_bus,
        gen_kind=gen_kind,
        gen_p0=gen_p0,
        gen_v0=gen_vm * vn_kv[gen_bus],
        gen_pmin=_limit_column(net, "min_p_mw", -np.inf),
        gen_pmax=_limit_column(net, "max_p_mw", np.inf),
        storage_names=storage_names(net),
        storage_sub=net.storage["bus"].to_numpy(int),
        storage_p0=net.storage["p_mw"].to_numpy(float),
        solver_states={
            "lightsim2grid": {
                "grid": _lightsim_state(work, n_sub, trafo_model),
                "v_init": _base_voltages(work),
            },
            "pandapower": pp.to_json(work),
        },
    )


def _check_supported(net) -> None:
    """Reject the nets whose slack this layer cannot describe identically for both solvers."""
    if not np.array_equal(np.sort(net.bus.index.to_numpy()), np.arange(len(net.bus))):
        raise ValueError(
            "net.bus index must be 0..n_bus-1, in any order "
            "(see pandapower.toolbox.create_continuous_bus_index)"
        )
    if not net.bus["in_service"].all():
        raise ValueError("net has out-of-service buses; drop them before compiling")
    for table in ("trafo3w", "xward", "ward", "dcline", "impedance", "switch"):
        if table in net and len(net[table]):
            raise ValueError(f"net.{table} is not supported (found {len(net[table])} rows)")
    # lightsim2grid's converter ignores a storage's scaling (pandapower multiplies p and q by
    # it) and refuses parallel units: the two solvers would solve different cases
    for column in ("scaling", "parallel"):
        if column in net.storage:
            values = net.storage[column].to_numpy(float)
            bad = np.flatnonzero(values != 1.0)
            if bad.size:
                raise ValueError(
                    f"net.storage[{column!r}] must be 1 (row {int(bad[0])} has {values[bad[0]]})"
                )
    n_slack_gen = int(_gen_slack_flags(net).sum())
    if n_slack_gen + len(net.ext_grid) != 1:
        raise ValueError(
            f"exactly one slack is supported, found {len(net.ext_grid)} ext_grid and "
            f"{n_slack_gen} gen with slack=True"
        )
    if len(net.ext_grid) and np.isin(net.ext_grid["bus"], net.gen["bus"]).any():
        raise ValueError(
            "a gen on the ext_grid bus is not supported "
            "(the two solvers split the slack between them differently)"
        )


def _gen_slack_flags(net) -> np.ndarray:
    if "slack" not in net.gen:
        return np.zeros(len(net.gen), dtype=bool)
    return net.gen["slack"].fillna(False).to_numpy(bool)


def _thermal_limits(net) -> np.ndarray:
    line = net.line["max_i_ka"].to_numpy(float) * 1000.0 * net.line["parallel"].to_numpy(float)
    trafo = (
        net.trafo["sn_mva"].to_numpy(float)
        / (np.sqrt(3.0) * net.trafo["vn_hv_kv"].to_numpy(float))
        * 1000.0
    )
    return np.concatenate([line, trafo])


def _check_limits(thermal_limits, n_branch: int) -> np.ndarray:
    limits = np.asarray(thermal_limits, dtype=float)
    if limits.shape != (n_branch,):
        raise ValueError(
            f"thermal_limits must have shape ({n_branch},) (one per branch), got {limits.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(limits) | (limits <= 0))
    if bad.size:
        raise ValueError(
            f"thermal_limits must be finite and > 0; "
            f"bad branch index {int(bad[0])}: {limits[bad[0]]}"
        )
    return limits.copy()


def _has_names(table) -> bool:
    if "name" not in table:
        return False
    names = table["name"]
    return not (names.isna().any() or (names.astype(str).str.len() == 0).any())


def _names(table, prefix: str) -> np.ndarray:
    if _has_names(table):
        return table["name"].astype(str).to_numpy()
    return np.array(
        [f"{prefix}_{bus}_{i}" for i, bus in enumerate(table["bus"].to_numpy(int))], dtype=str
    )


def storage_names(net) -> np.ndarray:
    """The storage units' names :func:`compile_net` gives (``net.storage``'s ``name`` column,
    else grid2op's ``storage_{bus}_{i}``), in ``net.storage`` order."""
    return _names(net.storage, "storage")


def _gen_names(net) -> np.ndarray:
    """gen, sgen, ext_grid; an ext_grid is named like the generator grid2op adds for it."""
    n_gen = len(net.gen)
    ext = (
        net.ext_grid["name"].astype(str).to_numpy()
        if _has_names(net.ext_grid)
        else [f"gen_{bus}_{n_gen + i}" for i, bus in enumerate(net.ext_grid["bus"].to_numpy(int))]
    )
    return np.concatenate(
        [_names(net.gen, "gen"), _names(net.sgen, "sgen"), np.asarray(ext, dtype=str)]
    )


def net_branch_names(net) -> np.ndarray:
    """The names of a net's branches, lines then transformers, as ``compile_net`` names them."""
    n_line = len(net.line)
    if _has_names(net.line):
        lines = net.line["name"].astype(str).tolist()
    else:
        lines = [
            f"{f}_{t}_{i}"
            for i, (f, t) in enumerate(zip(net.line["from_bus"], net.line["to_bus"], strict=True))
        ]
    if _has_names(net.trafo):
        trafos = net.trafo["name"].astype(str).tolist()
    else:
        pairs = [
            sorted((str(h), str(lv)))
            for h, lv in zip(net.trafo["hv_bus"], net.trafo["lv_bus"], strict=True)
        ]
        trafos = [f"{a}_{b}_{n_line + i}" for i, (a, b) in enumerate(pairs)]
    return np.array(lines + trafos, dtype=str)


def _limit_column(net, column: str, default: float) -> np.ndarray:
    parts = []
    for table in (net.gen, net.sgen, net.ext_grid):
        values = table[column].to_numpy(float) if column in table else np.full(len(table), np.nan)
        parts.append(np.where(np.isnan(values), default, values))
    return np.concatenate(parts)


def _base_voltages(work) -> np.ndarray:
    """Complex bus voltages (p.u.) of the base case for both bus bars: the solver's first guess.

    It also carries the slack's reference angle, which lightsim2grid takes from its first guess.
    """
    n_sub = len(work.bus) // N_BUSBAR
    res = work.res_bus.iloc[:n_sub]
    v = res["vm_pu"].to_numpy(float) * np.exp(1j * np.deg2rad(res["va_degree"].to_numpy(float)))
    return np.concatenate([v, v])


def _lightsim_state(work, n_sub: int, trafo_model: str) -> tuple:
    """Build the lightsim2grid model of the modified net and return its ``__getstate__()``."""
    from grid_vec.grid._pandapower import import_pandapower

    # lightsim2grid imports grid2op too: the same warning to keep quiet
    init_from_pandapower = import_pandapower("lightsim2grid.network").init_from_pandapower

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = init_from_pandapower(
            work, n_sub=n_sub, n_busbar_per_sub=N_BUSBAR, pp_orig_file=trafo_model
        )
    # positions in lightsim2grid's topology vector, for the bulk update_topo setter:
    # loads, generators (gen then ext_grid), line origins, line extremities, trafo hv, trafo lv,
    # then storage units (last, so that a grid without storage keeps the same positions)
    n_load, n_gen = len(work.load), len(work.gen) + len(work.ext_grid)
    n_line, n_trafo, n_storage = len(work.line), len(work.trafo), len(work.storage)
    start = np.cumsum([0, n_load, n_gen, n_line, n_line, n_trafo, n_trafo, n_storage])
    model.set_load_pos_topo_vect(np.arange(start[0], start[1]))
    model.set_gen_pos_topo_vect(np.arange(start[1], start[2]))
    model.set_line_pos1_topo_vect(np.arange(start[2], start[3]))
    model.set_line_pos2_topo_vect(np.arange(start[3], start[4]))
    model.set_trafo_pos1_topo_vect(np.arange(start[4], start[5]))
    model.set_trafo_pos2_topo_vect(np.arange(start[5], start[6]))
    model.set_storage_pos_topo_vect(np.arange(start[6], start[7]))
    return model.__getstate__()
