"""The reference backend: ``pandapower.runpp`` on the compiled net (slow, the ground truth).

Topology is written into the net's element bus columns (bus bar 2 of substation ``s`` is the
pandapower bus ``s + n_sub``) and ``in_service`` flags. Warm start: while the topology is
unchanged since the last converged power flow, ``runpp`` starts from those results
(``init="results"``); after a topology change or a divergence it starts from pandapower's
default initialisation (``init="auto"``). Either way it converges to the same solution.

Islands: ``runpp`` solves the component holding the slack and silently leaves any other
island unsolved. Like lightsim2grid (which does not converge then), this backend reports such
a power flow as diverged as soon as a bus bar holding a connected element is left unsolved
(an isolated load or generator, a cut-off part of the grid).
"""

from __future__ import annotations

import copy as _copy
import warnings
from time import perf_counter

import numpy as np

from grid_vec.grid._pandapower import import_pandapower
from grid_vec.grid.backend import Backend, PowerFlowDivergedError, PowerFlowResults
from grid_vec.grid.compile import numba_available
from grid_vec.grid.model import GridModel
from grid_vec.grid.model_cache import PandapowerRecompile
from grid_vec.grid.solver_batch import BackendLoop

TOLERANCE_MVA = 1e-8


def solver_batch(model: GridModel, n: int) -> BackendLoop:
    """``n`` new rows of ``model`` solved with pandapower, one backend each (the registry's
    batch of the ``"pandapower"`` backend)."""
    return BackendLoop([PandapowerBackend(model) for _ in range(n)])


class PandapowerBackend(Backend):
    """AC power flow with ``pandapower.runpp`` on the net stored in ``model``."""

    def __init__(self, model: GridModel) -> None:
        pandapower = import_pandapower()

        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        state = model.solver_states.get("pandapower")
        if state is None:
            raise ValueError(f"model {model.name!r} has no 'pandapower' solver state")
        if isinstance(state, PandapowerRecompile):  # a model from the disk cache
            state = state.state(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.net = pandapower.from_json_string(state)
        self.model = model
        n_gen, n_sgen = len(self.net.gen), len(self.net.sgen)
        self._gen = slice(0, n_gen)
        self._sgen = slice(n_gen, n_gen + n_sgen)
        self._ext = slice(n_gen + n_sgen, model.n_gen)
        self._converged: bool | None = None
        # bus bars holding a connected element: each must be solved, else it is an island
        self._used_bus = np.zeros(2 * model.n_sub, dtype=bool)
        for subs in (
            model.load_sub,
            model.gen_sub,
            model.branch_or_sub,
            model.branch_ex_sub,
            model.storage_sub,
        ):
            self._used_bus[subs] = True
        self._warm = False
        self._results: PowerFlowResults | None = None
        self.timings = self._new_timings()

    def _apply_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        net, model = self.net, self.model
        vm_pu = gen_v / model.sub_vn_kv[model.gen_sub]
        net.load["p_mw"] = load_p
        net.load["q_mvar"] = load_q
        net.gen["p_mw"] = gen_p[self._gen]
        net.gen["vm_pu"] = vm_pu[self._gen]
        net.sgen["p_mw"] = gen_p[self._sgen]
        net.ext_grid["vm_pu"] = vm_pu[self._ext]

    def _apply_storage_p(self, p_mw: np.ndarray) -> None:
        self.net.storage["p_mw"] = p_mw

    def _apply_topology(self, buses: np.ndarray) -> None:
        net, model = self.net, self.model
        load_bus, gen_bus, branch_or_bus, branch_ex_bus, storage_bus = np.split(
            buses, np.cumsum([model.n_load, model.n_gen, model.n_branch, model.n_branch])
        )
        n_sub, n_line = model.n_sub, model.n_line
        used = np.zeros(2 * n_sub, dtype=bool)

        def place(subs: np.ndarray, buses: np.ndarray) -> np.ndarray:
            """pandapower bus of each element (bus bar 1 when disconnected)."""
            pp_bus = subs + (np.maximum(buses, 1) - 1) * n_sub
            used[pp_bus[buses != -1]] = True
            return pp_bus

        branch_on = (branch_or_bus != -1) & (branch_ex_bus != -1)
        or_bus = place(model.branch_or_sub, np.where(branch_on, branch_or_bus, -1))
        ex_bus = place(model.branch_ex_sub, np.where(branch_on, branch_ex_bus, -1))
        load_pp = place(model.load_sub, load_bus)
        gen_pp = place(model.gen_sub, gen_bus)
        # a storage unit's bus bar is in the power flow whatever its setpoint (as in
        # lightsim2grid): a unit alone on a bus bar makes an island, reported as diverged
        storage_pp = place(model.storage_sub, storage_bus)

        net.line["from_bus"], net.line["to_bus"] = or_bus[:n_line], ex_bus[:n_line]
        net.line["in_service"] = branch_on[:n_line]
        net.trafo["hv_bus"], net.trafo["lv_bus"] = or_bus[n_line:], ex_bus[n_line:]
        net.trafo["in_service"] = branch_on[n_line:]
        net.load["bus"], net.load["in_service"] = load_pp, load_bus != -1
        net.storage["bus"], net.storage["in_service"] = storage_pp, storage_bus != -1
        for table, part in (
            (net.gen, self._gen),
            (net.sgen, self._sgen),
            (net.ext_grid, self._ext),
        ):
            table["bus"] = gen_pp[part]
            table["in_service"] = gen_bus[part] != -1
        self._used_bus = used.copy()
        used[:n_sub] = True  # bus bar 1 keeps the shunts and stays in the net
        net.bus["in_service"] = used
        self._warm = False

    def run_ac(self) -> bool:
        import pandapower

        start = perf_counter()
        init = "results" if self._warm else "auto"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pandapower.runpp(
                    self.net,
                    init=init,
                    calculate_voltage_angles=True,
                    tolerance_mva=TOLERANCE_MVA,
                    numba=numba_available(),
                )
            vm = self.net.res_bus["vm_pu"].to_numpy(float)
            self._converged = not np.isnan(vm[self._used_bus]).any()
        except pandapower.LoadflowNotConverged:
            self._converged = False
        self._warm = self._converged
        self._results = None
        self.timings["powerflow"] += perf_counter() - start
        self.timings["n_powerflow"] += 1
        return self._converged

    def results(self) -> PowerFlowResults:
        if self._converged is None:
            raise PowerFlowDivergedError("no power flow was run yet")
        if not self._converged:
            raise PowerFlowDivergedError(f"the last AC power flow on {self.model.name!r} diverged")
        if self._results is not None:
            return self._results
        start = perf_counter()
        net = self.net
        bus_vm = _values(net.res_bus, "vm_pu")
        bus_kv = bus_vm * net.bus["vn_kv"].to_numpy(float)
        bus_va = np.deg2rad(_values(net.res_bus, "va_degree"))
        line, trafo = net.res_line, net.res_trafo
        load_v = bus_kv[net.load["bus"].to_numpy(int)] * net.load["in_service"].to_numpy(bool)
        gen_bus = np.concatenate(
            [table["bus"].to_numpy(int) for table in (net.gen, net.sgen, net.ext_grid)]
        )
        gen_on = np.concatenate(
            [table["in_service"].to_numpy(bool) for table in (net.gen, net.sgen, net.ext_grid)]
        )
        res_gen = (net.res_gen, net.res_sgen, net.res_ext_grid)
        line_kv_or = net.bus["vn_kv"].to_numpy(float)[net.line["from_bus"].to_numpy(int)]
        line_kv_ex = net.bus["vn_kv"].to_numpy(float)[net.line["to_bus"].to_numpy(int)]
        # pandapower reports the bus voltages at the ends of an out-of-service branch: the
        # contract says a disconnected branch reports zeros
        branch_on = np.concatenate(
            [net.line["in_service"].to_numpy(bool), net.trafo["in_service"].to_numpy(bool)]
        )
        self._results = PowerFlowResults(
            bus_vm_pu=bus_vm,
            bus_va_rad=bus_va,
            p_or=_branch(line, "p_from_mw", trafo, "p_hv_mw"),
            q_or=_branch(line, "q_from_mvar", trafo, "q_hv_mvar"),
            v_or=np.concatenate(
                [
                    _values(line, "vm_from_pu") * line_kv_or,
                    _values(trafo, "vm_hv_pu") * net.trafo["vn_hv_kv"].to_numpy(float),
                ]
            )
            * branch_on,
            a_or=_branch(line, "i_from_ka", trafo, "i_hv_ka") * 1000.0,
            p_ex=_branch(line, "p_to_mw", trafo, "p_lv_mw"),
            q_ex=_branch(line, "q_to_mvar", trafo, "q_lv_mvar"),
            v_ex=np.concatenate(
                [
                    _values(line, "vm_to_pu") * line_kv_ex,
                    _values(trafo, "vm_lv_pu") * net.trafo["vn_lv_kv"].to_numpy(float),
                ]
            )
            * branch_on,
            a_ex=_branch(line, "i_to_ka", trafo, "i_lv_ka") * 1000.0,
            load_p=_values(net.res_load, "p_mw"),
            load_q=_values(net.res_load, "q_mvar"),
            load_v=load_v,
            gen_p=np.concatenate([_values(t, "p_mw") for t in res_gen]),
            gen_q=np.concatenate([_values(t, "q_mvar") for t in res_gen]),
            gen_v=bus_kv[gen_bus] * gen_on,
            **self._storage_results(bus_kv, bus_va),
        )
        self.timings["results"] += perf_counter() - start
        return self._results

    def _storage_results(self, bus_kv: np.ndarray, bus_va: np.ndarray) -> dict[str, np.ndarray]:
        """storage_p/q/v/theta: the solved injections, zeros for a disconnected unit."""
        net = self.net
        bus = net.storage["bus"].to_numpy(int)
        on = net.storage["in_service"].to_numpy(bool)
        return {
            "storage_p": np.where(on, _values(net.res_storage, "p_mw"), 0.0),
            "storage_q": np.where(on, _values(net.res_storage, "q_mvar"), 0.0),
            "storage_v": np.where(on, bus_kv[bus], 0.0),
            "storage_theta": np.where(on, bus_va[bus], 0.0),
        }

    def _forget_solves(self) -> None:
        self._warm = False  # the next runpp initialises as a new backend's first one
        self._converged = None
        self._results = None

    def solver_state(self) -> np.ndarray:
        """What ``runpp`` starts from: whether it starts from the last results
        (``init="results"``), then their bus voltages (vm_pu, then va_degree), float64."""
        res = self.net.res_bus
        vm = res["vm_pu"].to_numpy(float) if len(res) else np.zeros(len(self.net.bus))
        va = res["va_degree"].to_numpy(float) if len(res) else np.zeros(len(self.net.bus))
        return np.concatenate(([float(self._warm)], vm, va))

    def set_solver_state(self, state: np.ndarray) -> None:
        """Start the next ``runpp`` from ``state`` (a :meth:`solver_state`): the results it
        initialises from written back into ``res_bus``."""
        n_bus = len(self.net.bus)
        if state.dtype != np.float64 or state.shape != (1 + 2 * n_bus,):
            raise ValueError(
                f"solver state must be float64 of shape ({1 + 2 * n_bus},) for "
                f"{self.model.name!r}, got {state.dtype} of shape {state.shape}"
            )
        self._warm = bool(state[0])
        if self._warm:
            res = self.net.res_bus
            if len(res) != n_bus:  # a backend that never solved: its results table is empty
                res = self.net.res_bus = self.net.bus[[]].copy()  # the bus index, no column
            res["vm_pu"] = state[1 : 1 + n_bus]
            res["va_degree"] = state[1 + n_bus :]

    def copy(self) -> PandapowerBackend:
        """An independent backend (deep copy of the net and of every array)."""
        new = _copy.copy(self)
        new.net = _copy.deepcopy(self.net)
        new.timings = dict(self.timings)
        return new


def _values(table, column: str) -> np.ndarray:
    """A result column as float64, with pandapower's NaN (out of service) reported as 0."""
    return np.nan_to_num(table[column].to_numpy(float))


def _branch(line, line_column: str, trafo, trafo_column: str) -> np.ndarray:
    return np.concatenate([_values(line, line_column), _values(trafo, trafo_column)])
