"""The default backend: lightsim2grid's compiled ``LSGrid``, driven through its bulk setters.

Only the compiled extension is imported (never ``lightsim2grid`` itself nor pandapower), so
worker processes stay small. Each power flow starts from the previous solution (warm start) while
the topology is unchanged (so the set of bus bars in the solution is the same). After a topology
change or a divergence the next power flow starts from the base case of the compiled net (which
also carries the slack's reference angle).

The module runs past 600 lines for one reason: the many-row paths of a batch
(``solve_rows``, ``set_injections_rows``, ``set_topologies_trusted``) and the one-row methods
read and write the same state (each backend's row of its ``SolverRows``:
:mod:`grid_vec.grid.lightsim_rows`, which holds the state itself) and the same private
lightsim2grid objects; putting either kind elsewhere would make the other's internals public.
"""

from __future__ import annotations

from functools import partial
from time import perf_counter

import numpy as np

from grid_vec.grid import chord, newton
from grid_vec.grid._lightsim_cpp import lightsim_cpp
from grid_vec.grid.backend import (
    FLOW_FIELDS,
    Backend,
    Backends,
    InjectionRows,
    PowerFlowDivergedError,
    PowerFlowResults,
    flow_slices,
)
from grid_vec.grid.lightsim_rows import (
    BY_CHORD,
    BY_LIGHTSIM,
    BY_NEWTON,
    COLUMN,
    LIGHTSIM,
    LOOK_UP,
    NO_PLAN_YET,
    RowTimings,
    SolverRows,
    route,
    row_field,
    rows_of,
)
from grid_vec.grid.model import GridModel

MAX_ITER = 10
TOLERANCE = 1e-8

# np.concatenate without its __array_function__ dispatch (a Python call that copies the tuple
# of inputs into a list): the backend only ever passes plain ndarrays. Same C function, same
# result; falls back to the public name where numpy has no ``_implementation``.
_concatenate = getattr(np.concatenate, "_implementation", np.concatenate)


def _sizes(model: GridModel, n_bus: int) -> dict[str, int]:
    """The row sizes of a model's :class:`SolverRows`."""
    return {
        "n_bus": n_bus, "n_inj": 2 * model.n_load + model.n_gen,
        "n_storage": model.n_storage, "n_gen": model.n_gen,
        "n_elem": model.n_load + model.n_gen + 2 * model.n_branch + model.n_storage,
    }  # fmt: skip


def _index(rows: list[int] | np.ndarray) -> slice | np.ndarray:
    """Sorted distinct row indices as a slice when they are one run (a batch's every row),
    else as an index array: a slice reads and writes views, with no gather."""
    first, last = int(rows[0]), int(rows[-1])
    if last - first + 1 == len(rows):
        return slice(first, last + 1)
    return np.asarray(rows, dtype=np.intp)


_SET_INJECTIONS, _POWERFLOW = (COLUMN[key] for key in ("set_injections", "powerflow"))


_NONE = np.zeros(0)  # the storage setpoints of rows of a grid without storage


_NO_SOLUTION = np.empty(0, dtype=complex)  # what ac_pf returns when it does not converge


class LightSimBackend(Backend):
    """AC power flow with lightsim2grid on the state compiled in ``model``."""

    def __init__(self, model: GridModel) -> None:
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        state = model.solver_states.get("lightsim2grid")
        if state is None:
            raise ValueError(f"model {model.name!r} has no 'lightsim2grid' solver state")
        cpp = lightsim_cpp()
        self.model = model
        self._grid = cpp.LSGrid.__new__(cpp.LSGrid)
        self._grid.__setstate__(state["grid"])
        self._v_init = np.asarray(state["v_init"], dtype=complex)
        kind = model.gen_kind
        # lightsim2grid generators are pandapower gens then ext_grids; sgens are separate
        self._is_sgen = kind == "sgen"
        self._ls_gen = np.flatnonzero(~self._is_sgen)
        self._sgen = np.flatnonzero(self._is_sgen)
        self._inv_sub_kv = 1.0 / model.sub_vn_kv[model.gen_sub]  # kV -> p.u., every generator
        self._mask_load = np.ones(model.n_load, dtype=bool)
        self._mask_gen = np.ones(self._ls_gen.size, dtype=bool)
        self._mask_sgen = np.ones(self._sgen.size, dtype=bool)
        self._has_sgen = bool(self._sgen.size)
        # the state a batch step reads and writes per row (lightsim_rows): this backend's row
        # of a SolverRows, its own until a batch method gathers it with its batch's. There:
        # lightsim2grid stores injections as float32: loads p, loads q and generators p are
        # cast together into a row (numpy's float64 -> float32 cast, the one its bindings would
        # do), then handed over as float32 views, which its bindings take without a copy; the
        # last gen_v (kV, float64) given to the grid, NaNs before the first, compared by its
        # bytes (one row or many), so every path sees the same changes
        self._rows = SolverRows(1, _sizes(model, self._v_init.size))
        self._i = 0
        self._rows.gen_v_sent[0] = np.nan
        self._rows.gen_v_pu[0, self._ls_gen] = [g.target_vm_pu for g in self._grid.get_generators()]
        self._steady, self._island = 0, False
        n_topo = model.n_load + self._ls_gen.size + 2 * model.n_branch + model.n_storage
        self._has_storage = bool(model.n_storage)
        self._mask_storage = np.ones(model.n_storage, dtype=bool)
        self._sgen_bus = np.ones(self._sgen.size, dtype=np.int32)
        self._n_sub = model.n_sub
        self._V = self._v_init
        # model order (loads, gens, branch origins, branch extremities, storage units) ->
        # lightsim2grid's topology vector (loads, gens without sgens, line ends 1 and 2, trafo
        # ends 1 and 2, storage units: the positions compile_net gave it)
        n_load, n_gen, n_line = model.n_load, model.n_gen, model.n_line
        origin = n_load + n_gen + np.arange(model.n_branch)
        extremity = origin + model.n_branch
        self._branch_ends = slice(n_load + n_gen, n_load + n_gen + 2 * model.n_branch)
        self._topo_order = np.concatenate(
            [
                np.arange(n_load),
                n_load + self._ls_gen,
                origin[:n_line],
                extremity[:n_line],
                origin[n_line:],
                extremity[n_line:],
                self._branch_ends.stop + np.arange(model.n_storage),
            ]
        )
        self._flow_slices = flow_slices(model)
        self._gen_start = self._flow_slices["gen_p"].start
        self._storage_start = self._flow_slices["storage_p"].start
        self._units = np.ones(self._flow_slices["all"].stop)  # read_flows' layout
        self._units[self._flow_slices["a_or"]] = 1000.0  # lightsim2grid gives kA
        self._units[self._flow_slices["a_ex"]] = 1000.0
        self._units[self._flow_slices["storage_theta"]] = np.pi / 180.0  # it gives degrees
        # the same as a (1, n) row: numpy multiplies an (N, n) array by a row of as many
        # dimensions several times faster than by a 1-D array when N is 1
        self._units_row = self._units[None]
        self._converged = None
        self._views: _ResultViews | None = None
        # lightsim2grid's grid is brought up to date only when it is used (it solves a row the
        # batched Newton refuses, is pickled, screens contingencies, or its results are read):
        # the topology it holds (lightsim2grid's order), setpoints and a solver reset still to
        # send; and it is shared with copies until one of them changes it (a look-ahead's
        # candidates solved by the batched Newton never copy it)
        self._grid_topo = np.ones(n_topo, dtype=np.int32)
        self._gen_v_stale = self._storage_pending = False
        self._solver_reset_pending = False
        self._grid_shared = False
        # the batched chord solve (grid_vec.grid.chord): the plans of this grid's topologies,
        # shared with this backend's copies (a batch's envs); this backend's bus bars in model
        # order (the plan's key) and its plan; how many converged solves in a row it has had
        # since its topology or voltage setpoints last changed (or it diverged, or was reset):
        # the chord takes over from chord.STEADY_SOLVES on; whether lightsim2grid's grid
        # still lacks the last injections; whether the last solve was the chord's (then
        # lightsim2grid's result vectors are not this backend's results)
        self._book = chord.PlanBook(partial(LightSimBackend, model))
        self._rows.buses[0] = 1
        self._plan = NO_PLAN_YET

    # --- this backend's row of its SolverRows (see lightsim_rows), read and written in place:
    # arrays as views of the row, flags as Python values
    _V = row_field("V")  # the warm start
    _buses = row_field("buses")  # model order
    _inj32 = row_field("inj32")
    _storage_p32 = row_field("storage_p32")
    _inj_pending = row_field("pending", bool)
    _solved_by = row_field("solved_by", int)

    @property
    def _gen_v_sent(self) -> bytes:
        return self._rows.gen_v_sent[self._i].tobytes()

    # what decides the route but is read row by row only: plain attributes (_steady: converged
    # solves in a row in this topology and setpoints, counted up to chord.STEADY_SOLVES only;
    # _island: a storage unit on a bus bar no branch reaches)
    @property
    def _steady_solves(self) -> int:
        return self._steady

    @_steady_solves.setter
    def _steady_solves(self, value: int) -> None:
        self._steady = min(int(value), chord.STEADY_SOLVES)  # no more is told apart
        self._set_route()

    @property
    def _storage_island(self) -> bool:
        return self._island

    @_storage_island.setter
    def _storage_island(self, value: bool) -> None:
        self._island = bool(value)
        self._set_route()

    @property
    def _converged(self) -> bool | None:
        code = self._rows.converged[self._i]
        return None if code < 0 else bool(code)

    @_converged.setter
    def _converged(self, value: bool | None) -> None:
        self._rows.converged[self._i] = -1 if value is None else int(value)

    @property
    def _plan(self) -> chord.TopologyPlan | object | None:
        return self._rows.plan[self._i]

    @_plan.setter
    def _plan(self, plan: chord.TopologyPlan | object | None) -> None:
        self._rows.plan[self._i] = plan
        self._set_route()

    def _count_steady_solve(self) -> None:
        """One more converged solve in this topology (counted up to chord.STEADY_SOLVES only,
        where the chord takes the row: its route is set then, not at every solve)."""
        if self._steady < chord.STEADY_SOLVES:
            self._steady += 1
            if self._steady == chord.STEADY_SOLVES:
                self._set_route()

    def _set_route(self) -> None:
        """Who solves this row next, from its steady count, storage island and plan."""
        rows, i = self._rows, self._i
        rows.route[i] = route(self._steady, self._island, rows.plan[i])

    @property
    def timings(self) -> RowTimings:  # type: ignore[override]
        return RowTimings(self._rows, self._i)

    def _apply_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        # float32, as lightsim2grid stores them (numpy's cast, the one its bindings would do);
        # handed to lightsim2grid only when it solves this backend (the chord solve reads them
        # from here)
        _concatenate((load_p, load_q, gen_p), 0, self._inj32, casting="same_kind")
        self._inj_pending = True
        self._check_gen_v(gen_v)

    def _check_gen_v(self, gen_v: np.ndarray) -> None:
        """Send the voltage setpoints ``gen_v`` when they differ from the last sent: they
        rarely change from one step to the next (grid2op datasets often keep them constant),
        and comparing the bytes is cheaper than sending them again."""
        if gen_v.tobytes() != self._gen_v_sent:
            self._send_gen_v(gen_v)

    def _send_gen_v(self, gen_v: np.ndarray) -> None:
        """Give lightsim2grid's grid the voltage setpoints ``gen_v`` (kV, model order), and
        remember them (their bytes) as the last sent."""
        gen_v_pu = gen_v * self._inv_sub_kv
        self._gen_v_stale = True  # the grid receives them when it is next used
        self._rows.gen_v_sent[self._i] = gen_v
        held = self._rows.gen_v_pu[self._i]  # lightsim2grid's rule, for the batched Newton
        held[:] = newton.held_setpoints(held, gen_v_pu)
        self._steady_solves = 0  # the chord keeps the PV magnitudes of its warm start

    @classmethod
    def set_injections_rows(
        cls, backends: list, rows: list[int], injections: InjectionRows
    ) -> None:
        """:meth:`Backend.set_injections_rows` with the float32 cast and the comparison of
        the voltage setpoints (their bytes, as :meth:`set_injections_trusted` compares them)
        done for all the rows at once, into the rows of their :class:`SolverRows`: nothing is
        done per row but sending the setpoints that changed. The time is shared out evenly."""
        if not rows:
            return
        start = perf_counter()
        block = injections.block
        cut = block.shape[1] - injections.n_gen  # loads p and q, generators p | their v
        shared, at = rows_of(backends), _index(rows)
        shared.inj32[at] = block[:, :cut]  # the same float32 cast
        shared.pending[at] = True
        gen_v = block[:, cut:]
        sent = shared.gen_v_sent[at]
        if sent.tobytes() != gen_v.tobytes():  # some setpoint moved (rarely): which rows
            moved = (sent.view(np.int64) != np.ascontiguousarray(gen_v).view(np.int64)).any(1)
            for j in np.flatnonzero(moved).tolist():
                backends[rows[j]]._send_gen_v(gen_v[j])
        shared.charge(at, _SET_INJECTIONS, (perf_counter() - start) / len(rows))

    def _push_injections(self) -> None:
        """Hand the last injections to lightsim2grid's grid (before it solves or is copied)."""
        shared, i = self._rows, self._i
        if not shared.pending[i]:
            return
        grid, inj32, n_load = self._grid, shared.inj32[i], self.model.n_load
        grid.update_loads_p(self._mask_load, inj32[:n_load])
        grid.update_loads_q(self._mask_load, inj32[n_load : 2 * n_load])
        gen_p32 = inj32[2 * n_load :]
        if self._has_sgen:
            grid.update_sgens_p(self._mask_sgen, gen_p32[self._sgen])
            grid.update_gens_p(self._mask_gen, gen_p32[self._ls_gen])
        else:
            grid.update_gens_p(self._mask_gen, gen_p32)
        shared.pending[i] = False

    def _apply_storage_p(self, p_mw: np.ndarray) -> None:
        if not self._has_storage:
            return
        # float32, as lightsim2grid stores it (the same cast its bindings would do)
        self._storage_p32[:] = p_mw
        self._storage_pending = True  # the grid receives it when it is next used

    def _apply_topology(self, buses: np.ndarray) -> None:
        self._apply_topologies([self], self._rows, np.array([self._i]), buses[None])

    @classmethod
    def set_topologies_trusted(
        cls, backends: list[Backend], rows: list[int], buses: np.ndarray
    ) -> None:
        """:meth:`Backend.set_topologies_trusted` with the work done for all rows at once, on
        their :class:`SolverRows`. The batch's time is shared out evenly."""
        if not rows:
            return
        start = perf_counter()
        shared = rows_of(backends)
        cls._apply_topologies([backends[row] for row in rows], shared, np.asarray(rows), buses)
        cls.share_time(backends, rows, "set_topology", perf_counter() - start)

    @classmethod
    def share_time(cls, backends: list, rows: list[int], key: str, seconds: float) -> None:
        """:meth:`Backend.share_time`, charged to the rows of their :class:`SolverRows` (one
        backend on its own row: a one-backend list given by its own methods is no batch)."""
        column, each = COLUMN[key], seconds / len(rows)
        if len(rows) == 1:
            backend = backends[rows[0]]
            backend._rows.charge(slice(backend._i, backend._i + 1), column, each)
        else:
            rows_of(backends).charge(_index(rows), column, each)

    @staticmethod
    def _apply_topologies(
        backends: list[LightSimBackend], shared: SolverRows, at: np.ndarray, buses: np.ndarray
    ) -> None:
        """Write checked topologies: row ``i`` of ``buses`` (a new int32 array, written into)
        to ``backends[i]``, whose row of ``shared`` is ``at[i]``; all of one model."""
        if not backends:
            return
        first = backends[0]
        # a branch is in service only when both of its ends are on a bus bar
        ends = buses[:, first._branch_ends].reshape(len(buses), 2, first.model.n_branch)
        np.copyto(ends, -1, where=(ends == -1).any(axis=1, keepdims=True))
        changed = np.flatnonzero((buses != shared.buses[at]).any(axis=1))
        if not changed.size:
            return
        rows = at[changed]
        # lightsim2grid's grid receives the topology when it is next used (_synced_grid); no
        # plan looked up, no steady solve: the batched Newton solves it next; and a new
        # topology starts again from the base case: the previous solution can be a poor first
        # guess, and lightsim2grid takes the slack's angle from the first guess
        shared.buses[rows] = buses[changed]
        shared.plan[rows], shared.route[rows] = NO_PLAN_YET, LIGHTSIM
        shared.V[rows] = first._v_init
        sgens = first.model.n_load + first._sgen
        for j in changed.tolist():
            backend = backends[j]
            backend._steady = 0
            if backend._has_sgen:  # static generators are outside update_topo
                backend._set_sgen_buses(buses[j, sgens])
            if backend._has_storage:
                backend._storage_island = backend._storage_off_branches(buses[j])

    def _storage_off_branches(self, buses: np.ndarray) -> bool:
        """Whether a connected storage unit is on a bus bar that no connected branch reaches.

        Such a bus bar is an island: lightsim2grid solves it when nothing on it injects
        (a unit at p = 0), but grid2op's LightSimBackend refuses it (its DC initialisation
        fails) and pandapower leaves it unsolved, so this backend reports it as diverged too.
        """
        model, n_sub = self.model, self.model.n_sub
        ends = buses[self._branch_ends].reshape(2, model.n_branch)
        subs = np.stack([model.branch_or_sub, model.branch_ex_sub])
        reached = (subs + (ends - 1) * n_sub)[ends != -1]
        units = buses[self._branch_ends.stop :]
        on = units != -1
        return not np.isin((model.storage_sub + (units - 1) * n_sub)[on], reached).all()

    def _set_sgen_buses(self, buses: np.ndarray) -> bool:
        """Static generators are outside ``update_topo``: set the (few) that changed."""
        changed = np.flatnonzero(buses != self._sgen_bus)
        if changed.size:
            self._own_grid()
        for i in changed:
            sub = int(self.model.gen_sub[self._sgen[i]])
            if buses[i] == -1:
                self._grid.deactivate_sgen(int(i))
            else:
                if self._sgen_bus[i] == -1:
                    self._grid.reactivate_sgen(int(i))
                self._grid.change_bus_sgen(int(i), sub + (int(buses[i]) - 1) * self._n_sub)
        self._sgen_bus = buses
        if changed.size:
            self._views = None
        return bool(changed.size)

    @classmethod
    def solve_rows(cls, backends: list, rows: list[int], flows: np.ndarray) -> list[int]:
        """:meth:`Backend.solve_rows` with the rows that keep their topology solved together
        by :mod:`grid_vec.grid.chord` (one compiled call per topology, results as arrays), and
        the others (a new topology or voltage setpoints, a reset, a chord that did not
        converge) by lightsim2grid, one ``ac_pf`` each, as :meth:`run_ac`. The batch's time is
        shared out evenly."""
        if not rows:
            return []
        start = perf_counter()
        shared, at = rows_of(backends), _index(rows)
        routes = shared.route[at]
        first = routes[0]
        # the usual step: one plan for every row, no grouping
        if first > LOOK_UP and (len(routes) == 1 or (routes == first).all()):
            by_lightsim = cls._solve_by_chord(shared, shared.plan[rows[0]], at, flows)
        else:
            by_lightsim = cls._route(backends, shared, np.asarray(rows, dtype=np.intp), flows)
        refused, failed = cls._solve_by_newton(backends, shared, by_lightsim, flows)
        if refused:
            failed = sorted(failed + cls._solve_by_lightsim(backends, refused, flows))
        shared.charge(at, _POWERFLOW, (perf_counter() - start) / len(rows))  # and a flow
        return failed

    @classmethod
    def _route(
        cls, backends: list, shared: SolverRows, rows: np.ndarray, flows: np.ndarray
    ) -> list[int]:
        """Chord-solve the rows of ``rows`` that the chord takes, a call per plan (plans
        looked up where a topology is new); return the others, sorted, for lightsim2grid."""
        routes = shared.route[rows]
        new = routes == LOOK_UP
        if new.any():
            for row in rows[new].tolist():  # a new topology's plan
                backend = backends[row]
                backend._plan = backend._book.plan(backend._buses)
            routes = shared.route[rows]
        chorded = routes != LIGHTSIM
        if not chorded.any():  # after topology changes and resets: every row lightsim2grid's
            return rows.tolist()
        by_lightsim = rows[~chorded].tolist()
        for key in np.unique(routes[chorded]).tolist():
            group = rows[routes == key]
            by_lightsim += cls._solve_by_chord(shared, shared.plan[group[0]], group, flows)
        return sorted(by_lightsim)

    @staticmethod
    def _solve_by_chord(
        shared: SolverRows, plan: chord.TopologyPlan, at: slice | np.ndarray, flows: np.ndarray
    ) -> list[int]:
        """Chord-solve the rows ``at`` (a run of rows, or sorted distinct indices; all in
        ``plan``'s topology and steady: their route is the plan), each from its own last
        solution; write the converged rows' flows and solutions; return the others (left as
        they were: lightsim2grid solves them again, from their last solution)."""
        run = type(at) is slice
        V = shared.V[at].copy() if run else shared.V[at]  # not in place: see the return
        # rows in one run (a GridEnv's one row; a batch all in one topology) are written in
        # place: the unconverged ones are solved again (and written) by lightsim2grid
        out = flows[at] if run else np.empty((len(V), flows.shape[1]))
        injections = shared.inj32[at].astype(np.float64)
        storage = shared.storage_p32[at].astype(np.float64) if shared.sizes["n_storage"] else _NONE
        iters = chord.solve_rows(plan, injections, storage, V, out)
        if not run:
            flows[at] = out
        done, failed = at, []
        if iters.min() < 0:
            ok = iters >= 0
            rows = np.arange(at.start, at.stop) if run else at
            done, failed, V = rows[ok], rows[~ok].tolist(), V[ok]
        shared.V[done] = V  # their steady count stays (it counts up to STEADY_SOLVES only)
        shared.converged[done] = 1
        shared.solved_by[done] = BY_CHORD
        return failed

    def _row_injections(self) -> tuple[np.ndarray, np.ndarray]:
        """This backend's injections as the chord reads them, a row: (loads p and q,
        generators p) as lightsim2grid stores them, and storage setpoints."""
        at = slice(self._i, self._i + 1)
        return (
            self._rows.inj32[at].astype(np.float64),
            self._rows.storage_p32[at].astype(np.float64),
        )

    def _newton_layout(self) -> newton.UnionLayout:
        """The grid's union layout, built once for this backend and its copies."""
        # from a new grid of the model: the setpoints it starts with (the book's template has
        # played other topologies and setpoints)
        return self._book.per_grid(
            "newton",
            lambda: newton.build_layout(self.model, type(self)(self.model)._grid,
                                        max_iter=MAX_ITER),
        )  # fmt: skip

    @staticmethod
    def _solve_by_newton(
        backends: list, shared: SolverRows, rows: list[int], flows: np.ndarray
    ) -> tuple[list[int], list[int]]:
        """Solve ``rows`` (sorted; a new topology, setpoints or a reset each) in one batched
        Newton call (:mod:`grid_vec.grid.newton`: lightsim2grid's Newton, each row from its
        own first guess); return the rows it leaves to lightsim2grid and the diverged ones."""
        if not rows:
            return [], []
        first = backends[rows[0]]
        at = np.asarray(rows, dtype=np.intp)
        V = shared.V[at]
        out = np.empty((len(rows), flows.shape[1]))
        storage = shared.storage_p32[at].astype(np.float64) if first._has_storage else _NONE
        iters = newton.solve_rows(
            first._newton_layout(),
            shared.buses[at],
            shared.inj32[at].astype(np.float64),
            storage,
            shared.gen_v_pu[at],
            V,
            out,
        )
        solved = iters >= 0
        done = at[solved]
        flows[done] = out[solved]
        shared.V[done] = V[solved]
        shared.converged[done] = 1
        shared.solved_by[done] = BY_NEWTON
        for row in done.tolist():
            backends[row]._count_steady_solve()
        failed = at[iters == newton.DIVERGED].tolist()
        for row in failed:
            backends[row]._diverged()
        return at[iters == newton.REFUSED].tolist(), failed

    @staticmethod
    def _solve_by_lightsim(backends: list, rows: list[int], flows: np.ndarray) -> list[int]:
        """One warm-started ``ac_pf`` per row (see :meth:`run_ac`); returns the diverged rows."""
        failed = []
        for row in rows:
            backend = backends[row]
            grid = backend._synced_grid()
            shared, i = backend._rows, backend._i
            V = grid.ac_pf(shared.V[i], MAX_ITER, TOLERANCE)  # see run_ac
            shared.solved_by[i] = BY_LIGHTSIM
            if V.size:
                shared.V[i], shared.converged[i] = V, 1
                backend._count_steady_solve()
                views = backend._views
                if views is None:
                    views = backend._views = _ResultViews.of(grid, backend._has_storage)
                if backend._has_sgen:
                    backend._fill_flows(flows[row], scale=False)
                else:
                    _concatenate(views.all, 0, flows[row])
            else:
                backend._diverged()
                failed.append(row)
        if rows:
            units = backends[rows[0]]._units_row
            solved = [row for row in rows if row not in failed] if failed else rows
            flows[solved] *= units
        return failed

    def run_ac(self) -> bool:
        start = perf_counter()
        # ac_pf reads its first guess into a vector of its own and returns a new array (checked
        # for converged and diverged solves): self._V needs no copy
        V = (
            _NO_SOLUTION
            if self._storage_island
            else self._synced_grid().ac_pf(self._V, MAX_ITER, TOLERANCE)
        )
        converged = self._converged = V.size > 0
        if converged:
            self._V = V
            self._steady_solves += 1
        else:
            self._diverged()
        self._solved_by = BY_LIGHTSIM
        timings = self.timings
        timings["powerflow"] += perf_counter() - start
        timings["n_powerflow"] += 1
        return converged

    def _diverged(self) -> None:
        shared, i = self._rows, self._i  # no steady solve: lightsim2grid's next, from the base case
        shared.V[i] = self._v_init
        shared.route[i], shared.converged[i], self._steady = LIGHTSIM, 0, 0
        self._views = None  # a failed solve reallocates lightsim2grid's result vectors

    @property
    def _bus_active(self) -> np.ndarray:
        """Which bus bars are in the power flow (the others report zero voltage)."""
        return np.asarray(self._synced_grid().get_bus_status(), dtype=bool)

    def _own_grid(self) -> None:
        """A grid of this backend's own before it is changed (a copy shares its original's)."""
        if self._grid_shared:
            self._grid = self._grid.copy()
            self._grid_shared = False
            self._views = None

    def _synced_grid(self):
        """lightsim2grid's grid, this backend's own, holding its topology, setpoints,
        injections and solver state (what was deferred is sent now)."""
        self._own_grid()
        grid = self._grid
        topo = self._buses[self._topo_order]
        changed = topo != self._grid_topo
        if changed.any():
            # the result vectors are sized by element, not by bus: update_topo keeps them (and
            # the views into them; tests/grid checks it), only a failed solve does not
            grid.update_topo(changed, topo)
            self._grid_topo = topo
        if self._gen_v_stale:
            # the setpoints the rows hold (lightsim2grid's own rule applied when they were
            # sent): the grid takes each that differs from its own
            held = self._rows.gen_v_pu[self._i]
            grid.update_gens_v(self._mask_gen, held[self._ls_gen] if self._has_sgen else held)
            self._gen_v_stale = False
        self._push_injections()
        if self._storage_pending:
            grid.update_storages_p(self._mask_storage, self._storage_p32)
            self._storage_pending = False
        if self._solver_reset_pending:
            grid.tell_solver_need_reset()
            self._solver_reset_pending = False
        return grid

    def results(self) -> PowerFlowResults:
        self._check_converged()
        start = perf_counter()
        flows = np.empty(self._flow_slices["all"].stop)
        self._fill_flows(flows)
        by_chord = self._solved_by == BY_CHORD
        V = self._V * (self._plan.bus_active if by_chord else self._bus_active)
        results = PowerFlowResults(
            np.abs(V),
            np.arctan2(V.imag, V.real),
            *(flows[self._flow_slices[name]] for name in FLOW_FIELDS),
        )
        self.timings["results"] += perf_counter() - start
        return results

    def read_flows(self, out: np.ndarray) -> None:
        if not self._converged:
            self._check_converged()  # raises
        start = perf_counter()
        self._fill_flows(out)
        self.timings["results"] += perf_counter() - start

    def _check_converged(self) -> None:
        if self._converged is None:
            raise PowerFlowDivergedError("no power flow was run yet")
        if not self._converged:
            raise PowerFlowDivergedError(f"the last AC power flow on {self.model.name!r} diverged")

    def _fill_flows(self, out: np.ndarray, *, scale: bool = True) -> None:
        """One ``concatenate`` of lightsim2grid's result views into ``out`` (FLOW_FIELDS order),
        in grid_vec's units (``scale=False``: lightsim2grid's, the caller converts); after a
        chord solve, its results computed again from the solution."""
        solved_by = self._solved_by
        if solved_by != BY_LIGHTSIM:  # the chord's or Newton's solution: results computed again
            computed, V = out[None], self._V[None].copy()
            if solved_by == BY_CHORD:
                chord.solve_rows(self._plan, *self._row_injections(), V, computed, max_iter=0)
            else:
                gen_v = self._rows.gen_v_pu[self._i : self._i + 1]
                inj, storage = self._row_injections()
                layout = self._newton_layout()
                newton.solve_rows(
                    layout, self._buses[None], inj, storage, gen_v, V, computed, solve=False
                )
            if not scale:
                out /= self._units
            return
        views = self._views
        if views is None:
            views = self._views = _ResultViews.of(self._grid, self._has_storage)
        if self._has_sgen:
            _concatenate(views.branches_loads, 0, out[: self._gen_start])
            gens = out[self._gen_start : self._storage_start].reshape(3, -1)
            gens[:, self._ls_gen] = views.gens
            gens[:, self._sgen] = views.sgens
            if self._has_storage:
                _concatenate(views.storages, 0, out[self._storage_start :])
        else:
            _concatenate(views.all, 0, out)
        # kA -> A: one multiply of the whole row is cheaper than slicing out the currents
        # (x * 1.0 == x bitwise for every float)
        if scale:
            out *= self._units

    def __getstate__(self) -> dict:
        self._synced_grid()  # the grid pickled is this backend's, complete
        state = self.__dict__.copy()
        state["_views"] = None  # views into this process' LSGrid: never carried over
        # its row only (maybe one of a batch's SolverRows); the plan: looked up again
        state["_rows"], state["_i"] = self._rows.row(self._i), 0
        del state["_book"]  # the plans: built again on the other side, as they are needed
        return state

    def __setstate__(self, state: dict) -> None:
        row = state.pop("_rows")
        self.__dict__.update(state)
        self._rows = SolverRows.of_row(row, _sizes(self.model, self._v_init.size))
        self._grid_shared = False
        self._plan = NO_PLAN_YET
        self._book = chord.PlanBook(partial(LightSimBackend, self.model))

    def outage_currents(
        self,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        """:meth:`Backend.outage_currents` in one lightsim2grid ``ContingencyAnalysisCPP``
        call on a copy of the grid (its solver state stays this backend's), each outage
        solved from the current solution; the topology arrays are already the grid's."""
        cpp = lightsim_cpp()
        branches = np.asarray(branches, dtype=np.int64)
        out = np.full((len(branches), self.model.n_branch), np.nan)
        if not len(branches):
            return out
        analysis = cpp.ContingencyAnalysisCPP(self._synced_grid().copy(), False)
        for branch in np.unique(branches).tolist():
            analysis.add_n1(branch)
        analysis.compute(self._V.copy(), MAX_ITER, TOLERANCE)
        analysis.compute_flows()
        flows = 1000.0 * np.asarray(analysis.get_flows())  # kA
        converged = np.asarray(analysis.converged_mask(), dtype=bool)
        # its rows follow its own order of the contingencies: row of each branch
        row_of = {int(c[0]): r for r, c in enumerate(analysis.my_defaults())}
        for j, branch in enumerate(branches.tolist()):
            r = row_of.get(branch)
            if r is not None and converged[r]:
                out[j] = flows[r]
        return out

    def _forget_solves(self) -> None:
        # lightsim2grid reuses what its last solve built (bus labelling, Ybus, the PV / PQ
        # split, the factorisation) where the grid says nothing changed, while a new LSGrid
        # starts from scratch: so does this one's next solve, from the base case
        # (tell_solver_need_reset: prevent_cache_reuse's old name, which every supported
        # version has)
        self._solver_reset_pending = True  # sent with the grid's next use
        shared, i = self._rows, self._i  # no solve yet, lightsim2grid's next, from the base case
        shared.V[i] = self._v_init
        shared.route[i], shared.solved_by[i], shared.converged[i] = LIGHTSIM, BY_LIGHTSIM, -1
        self._steady = 0
        # the views are kept: lightsim2grid's result vectors outlive a solver reset (only a
        # failed solve reallocates them, and it dropped the views then)

    def solver_state(self) -> np.ndarray:
        """What the next power flow depends on besides the injections and the topology, as
        one float64 array: the first guess (the last solution; the base case after a topology
        change or a divergence) as real then imaginary parts of the bus voltages (p.u.), how
        many steady solves the row has had (which decides whether the chord or lightsim2grid
        solves it next), and the last voltage setpoints sent (kV; NaN before the first): a
        setpoint that differs from them sends the row back to lightsim2grid."""
        sent = np.frombuffer(self._gen_v_sent, dtype=np.float64)
        return np.concatenate([self._V.real, self._V.imag, [self._steady_solves], sent])

    def set_solver_state(self, state: np.ndarray) -> None:
        """Start the next power flow as the backend :meth:`solver_state` was taken from would
        (the topology set already): its first guess, its steady count, its setpoints."""
        n_bus, n_gen = self._v_init.size, self.model.n_gen
        if state.dtype != np.float64 or state.shape != (2 * n_bus + 1 + n_gen,):
            raise ValueError(
                f"solver state must be float64 of shape {(2 * n_bus + 1 + n_gen,)} for "
                f"{self.model.name!r}, got {state.dtype} of shape {state.shape}"
            )
        steady = state[2 * n_bus]
        if not (np.isfinite(steady) and steady >= 0 and steady == int(steady)):
            raise ValueError(f"solver state's steady solve count must be a count, got {steady}")
        self._V = state[:n_bus] + 1j * state[n_bus : 2 * n_bus]
        gen_v = state[2 * n_bus + 1 :]
        if np.isnan(gen_v).all():
            self._rows.gen_v_sent[self._i] = np.nan
        else:
            self._send_gen_v(gen_v)
        self._steady_solves = int(steady)

    def copy(self) -> LightSimBackend:
        """An independent backend: the ``LSGrid`` is deep-copied in C++, arrays are copied."""
        # the attributes taken over directly (copy.copy would go through __getstate__ and
        # __setstate__, which build a plan book this copy does not use: a look-ahead pays it
        # per candidate); the copy shares the plans
        new = self._copy_grid()
        new._rows, new._i = self._rows.take([self._i]), 0  # a copy of its row
        return new

    def _copy_grid(self) -> LightSimBackend:
        """A copy of everything but the row (the caller gives it one), sharing this backend's
        grid until either changes it (copy on write: :meth:`_own_grid`)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        self._grid_shared = new._grid_shared = True
        new._views = None
        new._sgen_bus = self._sgen_bus.copy()
        return new

    @classmethod
    def copy_rows(cls, backends: list, rows: list[int]) -> Backends:
        """:meth:`Backend.copy_rows` with the copies' rows taken from the backends' in one
        gather per field (what is per row: the ``LSGrid`` copy), already gathered as the
        returned list's."""
        copies = Backends(backends[row]._copy_grid() for row in rows)
        if copies:
            shared = rows_of(backends).take(rows)
            for j, new in enumerate(copies):
                new._rows, new._i = shared, j
            shared.gathered(copies)
        return copies


class _ResultViews:
    """lightsim2grid's result getters return read-only views of its own result vectors, which
    it overwrites in place at each converged solve, also after a topology change: fetched
    once, they are read with no getter call per step. A failed solve reallocates those
    vectors, so the backend drops its views then, as well as on copy and pickling."""

    __slots__ = ("all", "branches_loads", "gens", "sgens", "storages")

    def __init__(self, branches_loads: tuple, gens: tuple, sgens: tuple, storages: tuple) -> None:
        self.branches_loads = branches_loads  # FLOW_FIELDS order up to load_v
        self.gens = gens  # gen_p, gen_q, gen_v of lightsim2grid's generators
        self.sgens = sgens  # the same for static generators
        self.storages = storages  # storage p, q, v, theta (degrees); () without storage
        # read_flows' order when there is no sgen (a grid without storage concatenates no
        # empty arrays: its hot path is unchanged)
        self.all = branches_loads + gens + storages

    @classmethod
    def of(cls, grid, has_storage: bool) -> _ResultViews:
        p1, q1, v1, a1 = grid.get_line_res1()
        p2, q2, v2, a2 = grid.get_line_res2()
        tp1, tq1, tv1, ta1 = grid.get_trafo_res1()
        tp2, tq2, tv2, ta2 = grid.get_trafo_res2()
        lp, lq, lv = grid.get_loads_res()
        return cls(
            (p1, tp1, q1, tq1, v1, tv1, a1, ta1, p2, tp2, q2, tq2, v2, tv2, a2, ta2, lp, lq, lv),
            tuple(grid.get_gen_res()),
            tuple(grid.get_sgens_res()),
            tuple(grid.get_storages_res_full()) if has_storage else (),
        )
