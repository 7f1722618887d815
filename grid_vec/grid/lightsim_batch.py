"""The default solver of a batch: N rows of one grid whose state is arrays, solved in compiled
calls, with lightsim2grid as the reference and the fallback.

Each row (an env, a look-ahead candidate) is a row of a :class:`SolverRows`. A batch solves:

* the rows that keep their topology and setpoints (steady) with the chord
  (:mod:`grid_vec.grid.chord`: one compiled call per topology, from each row's last solution);
* every other row (a new topology, new setpoints, a reset, a chord that gave up) with the
  batched Newton (:mod:`grid_vec.grid.newton`: lightsim2grid's Newton, all rows in one call);
* the rows the Newton refuses (:data:`newton.REFUSED`) with lightsim2grid's own ``ac_pf``, on
  the row's ``LSGrid``.

So a row's ``LSGrid`` is needed only for those rare rows, N-1 screening (lightsim2grid's
``ContingencyAnalysisCPP``), the chord's plans and pickling: it is brought up to date only when
it is used (topology, setpoints, injections and solver resets deferred), and shared by the rows
taken from one another until one of them changes it (copy on write). Taking candidates,
resetting and solving a batch create no object per row.

The module runs past 600 lines for one reason: the batch's verbs, the deferred lightsim2grid
grid and its results read and write the same rows and the same private lightsim2grid objects;
putting either elsewhere would make the other's internals public.
"""

from __future__ import annotations

from functools import cached_property
from time import perf_counter

import numpy as np

from grid_vec.grid import chord, newton
from grid_vec.grid._lightsim_cpp import lightsim_cpp
from grid_vec.grid.backend import (
    FLOW_FIELDS,
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
    NOT_LOOKED_UP,
    RowTimings,
    SolverRows,
    routes,
)
from grid_vec.grid.model import GridModel
from grid_vec.grid.newton_kernel import any_nonzero  # compiled: see core.state.any_true
from grid_vec.grid.solver_batch import Rows, SolverBatch

MAX_ITER = 10
TOLERANCE = 1e-8

_SET_INJECTIONS, _SET_TOPOLOGY, _RESULTS, _POWERFLOW = (
    COLUMN[key] for key in ("set_injections", "set_topology", "results", "powerflow")
)
_NONE = np.zeros(0)  # the storage setpoints of rows of a grid without storage


def _index(rows: Rows) -> slice | np.ndarray:
    """Sorted distinct row indices as a slice when they are one run (a batch's every row),
    else as an index array: a slice reads and writes views, with no gather."""
    first, last = int(rows[0]), int(rows[-1])
    if last - first + 1 == len(rows):
        return slice(first, last + 1)
    return np.asarray(rows, dtype=np.intp)


def _indices(at: slice | np.ndarray) -> np.ndarray:
    return np.arange(at.start, at.stop) if type(at) is slice else at


class LightSimGrid:
    """What every row of one model shares: lightsim2grid's compiled grid (its pickled state,
    from which each new ``LSGrid`` is made), the orders between the model's and
    lightsim2grid's, units, the chord's plans and the Newton's layout.

    Args:
        model: the grid, with a ``"lightsim2grid"`` solver state.

    Raises:
        TypeError: ``model`` is not a GridModel.
        ValueError: it has no lightsim2grid solver state.
    """

    def __init__(self, model: GridModel) -> None:
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        state = model.solver_states.get("lightsim2grid")
        if state is None:
            raise ValueError(f"model {model.name!r} has no 'lightsim2grid' solver state")
        self.model = model
        self._grid_state = state["grid"]
        self.v_init = np.asarray(state["v_init"], dtype=complex)
        # lightsim2grid generators are pandapower gens then ext_grids; sgens are separate
        is_sgen = model.gen_kind == "sgen"
        self.ls_gen, self.sgen = np.flatnonzero(~is_sgen), np.flatnonzero(is_sgen)
        self.has_sgen, self.has_storage = bool(self.sgen.size), bool(model.n_storage)
        self.inv_sub_kv = 1.0 / model.sub_vn_kv[model.gen_sub]  # kV -> p.u., every generator
        self.mask_load = np.ones(model.n_load, dtype=bool)
        self.mask_gen = np.ones(self.ls_gen.size, dtype=bool)
        self.mask_sgen = np.ones(self.sgen.size, dtype=bool)
        self.mask_storage = np.ones(model.n_storage, dtype=bool)
        # model order (loads, gens, branch origins, branch extremities, storage units) ->
        # lightsim2grid's topology vector (loads, gens without sgens, line ends 1 and 2, trafo
        # ends 1 and 2, storage units: the positions compile_net gave it)
        n_load, n_gen, n_line = model.n_load, model.n_gen, model.n_line
        origin = n_load + n_gen + np.arange(model.n_branch)
        extremity = origin + model.n_branch
        self.branch_ends = slice(n_load + n_gen, n_load + n_gen + 2 * model.n_branch)
        self.topo_order = np.concatenate(
            [
                np.arange(n_load),
                n_load + self.ls_gen,
                origin[:n_line],
                extremity[:n_line],
                origin[n_line:],
                extremity[n_line:],
                self.branch_ends.stop + np.arange(model.n_storage),
            ]
        )
        # per storage unit, the positions (model order) of the branch ends at its substation,
        # padded to one width (storage_touches marks the real ones): the ends a connected
        # branch may reach the unit by (see LightSimBatch._storage_islands)
        touching = [
            np.flatnonzero(np.concatenate([model.branch_or_sub, model.branch_ex_sub]) == sub)
            + self.branch_ends.start
            for sub in model.storage_sub
        ]
        width = max((len(t) for t in touching), default=0)
        self.storage_touch = np.zeros((model.n_storage, width), dtype=np.intp)
        self.storage_touches = np.zeros((model.n_storage, width), dtype=bool)
        for u, t in enumerate(touching):
            self.storage_touch[u, : len(t)] = t
            self.storage_touches[u, : len(t)] = True
        self.flow_slices = flow_slices(model)
        self.gen_start = self.flow_slices["gen_p"].start
        self.storage_start = self.flow_slices["storage_p"].start
        units = np.ones(self.flow_slices["all"].stop)
        units[self.flow_slices["a_or"]] = 1000.0  # lightsim2grid gives kA
        units[self.flow_slices["a_ex"]] = 1000.0
        units[self.flow_slices["storage_theta"]] = np.pi / 180.0  # it gives degrees
        # as a (1, n) row: numpy multiplies an (N, n) array by a row of as many dimensions
        # several times faster than by a 1-D array when N is 1
        self.units = units[None]
        self.sizes = {
            "n_bus": self.v_init.size, "n_inj": 2 * n_load + n_gen,
            "n_storage": model.n_storage, "n_gen": n_gen,
            "n_elem": n_load + n_gen + 2 * model.n_branch + model.n_storage,
            "n_topo": self.topo_order.size, "n_sgen": self.sgen.size,
        }  # fmt: skip
        self.book = chord.PlanBook(model, self._solve_template, lambda: chord.grid_arrays(
            self.new_grid()))  # fmt: skip
        self._template: LightSimBatch | None = None

    def new_grid(self):
        """A new ``LSGrid`` of the model, as compiled."""
        cpp = lightsim_cpp()
        grid = cpp.LSGrid.__new__(cpp.LSGrid)
        grid.__setstate__(self._grid_state)
        return grid

    @cached_property
    def base_gen_v_pu(self) -> np.ndarray:
        """The voltage setpoints a new grid holds (p.u., model order; 0 for static
        generators, which hold none)."""
        held = np.zeros(self.model.n_gen)
        held[self.ls_gen] = [g.target_vm_pu for g in self.new_grid().get_generators()]
        return held

    @cached_property
    def newton_layout(self) -> newton.UnionLayout:
        """The batched Newton's union layout of the grid (built once, from a new grid: the
        setpoints it starts with)."""
        return newton.build_layout(self.model, self.new_grid(), max_iter=MAX_ITER)

    def _solve_template(self, buses: np.ndarray) -> tuple[object, np.ndarray] | None:
        """lightsim2grid's fresh solve of the topology ``buses`` with the base-case injections
        (a chord plan's source): its grid and the generators' reactive power, or None."""
        if self._template is None:
            self._template = LightSimBatch.fresh_of(self, 1)
        template, model, row = self._template, self.model, [0]
        template.reset(row)
        template.set_topologies(row, buses[None].astype(np.int32))
        block = np.concatenate([model.load_p0, model.load_q0, model.gen_p0, model.gen_v0])
        template.set_injections(row, InjectionRows(block[None], model.n_load, model.n_gen))
        flows = np.empty((1, self.flow_slices["all"].stop))
        if template.solve_by_lightsim(row, flows):
            return None
        return template.rows.grid[0], flows[0, self.flow_slices["gen_q"]]


class LightSimBatch(SolverBatch):
    """N rows of one grid, solved by the chord, the batched Newton and lightsim2grid.

    Args:
        shared: what the model's rows share.
        rows: the rows.
    """

    def __init__(self, shared: LightSimGrid, rows: SolverRows) -> None:
        self.shared, self.rows, self.model = shared, rows, shared.model

    @classmethod
    def fresh(cls, model: GridModel, n: int) -> LightSimBatch:
        """``n`` new rows of ``model``: every element on bus bar 1, no solution yet.

        Raises:
            TypeError: ``model`` is not a GridModel.
            ValueError: it has no lightsim2grid solver state.
        """
        return cls.fresh_of(LightSimGrid(model), n)

    @classmethod
    def fresh_of(cls, shared: LightSimGrid, n: int) -> LightSimBatch:
        """``n`` new rows sharing ``shared`` (its plans and layout)."""
        rows = SolverRows(n, shared.sizes)
        rows.V[:] = shared.v_init
        rows.buses[:] = rows.grid_topo[:] = rows.grid_sgen_bus[:] = 1
        rows.gen_v_sent[:] = np.nan
        rows.gen_v_pu[:] = shared.base_gen_v_pu
        rows.converged[:] = -1
        rows.plan[:], rows.plan_no[:] = NO_PLAN_YET, NOT_LOOKED_UP
        grid = shared.new_grid()
        for i in range(n):
            rows.grid[i] = grid
        rows.grid_shared[:] = n > 1
        return cls(shared, rows)

    def __len__(self) -> int:
        return len(self.rows)

    # --- injections, setpoints, topologies -------------------------------------------------

    def set_injections(self, rows: Rows, injections: InjectionRows) -> None:
        """:meth:`SolverBatch.set_injections`: one float32 cast for all rows (lightsim2grid's
        storage, numpy's cast: the one its bindings would do) and one comparison of the
        voltage setpoints (their bytes); only rows whose setpoints moved do more."""
        if not len(rows):
            return
        start = perf_counter()
        at = _index(rows)
        self.put_injections(at, injections)
        self.rows.charge(at, _SET_INJECTIONS, (perf_counter() - start) / len(rows))

    def put_injections(self, at: slice | np.ndarray, injections: InjectionRows) -> None:
        """:meth:`set_injections` of the rows ``at`` (:func:`_index`'s), its time not
        counted (the caller counts it)."""
        block = injections.block
        cut = block.shape[1] - injections.n_gen  # loads p and q, generators p | their v
        r = self.rows
        r.inj32[at] = block[:, :cut]
        r.pending[at] = True
        gen_v = block[:, cut:]
        sent = r.gen_v_sent[at]
        if sent.tobytes() != gen_v.tobytes():  # some setpoint moved (rarely): which rows
            moved = (sent.view(np.int64) != np.ascontiguousarray(gen_v).view(np.int64)).any(1)
            self._send_gen_v(_indices(at)[moved], gen_v[moved])

    def _send_gen_v(self, at: np.ndarray, gen_v: np.ndarray) -> None:
        """Give rows ``at`` the voltage setpoints ``gen_v`` (kV, model order): remembered as
        the last sent; held as lightsim2grid holds them (its rule, for the batched Newton);
        sent to the row's grid when it is next used. The chord keeps the PV magnitudes of its
        warm start: such a row is not steady any more."""
        r = self.rows
        r.gen_v_sent[at] = gen_v
        r.gen_v_pu[at] = newton.held_setpoints(r.gen_v_pu[at], gen_v * self.shared.inv_sub_kv)
        r.gen_v_stale[at] = True
        r.steady[at] = 0
        r.route[at] = LIGHTSIM

    def set_storage_p(self, rows: Rows, p_mw: np.ndarray) -> None:
        """:meth:`SolverBatch.set_storage_p` (float32, as lightsim2grid stores it)."""
        if not len(rows) or not self.shared.has_storage:
            return
        start = perf_counter()
        at = _index(rows)
        self.put_storage_p(at, p_mw)
        self.rows.charge(at, _SET_INJECTIONS, (perf_counter() - start) / len(rows))

    def put_storage_p(self, at: slice | np.ndarray, p_mw: np.ndarray) -> None:
        """:meth:`set_storage_p` of the rows ``at``, its time not counted."""
        self.rows.storage_p32[at] = p_mw
        self.rows.storage_pending[at] = True

    def set_topologies(self, rows: Rows, buses: np.ndarray) -> None:
        """:meth:`SolverBatch.set_topologies`: the rows whose topology changed found in one
        comparison and written in one assignment; their next solve is the batched Newton's,
        from the base case (the previous solution can be a poor first guess, and
        lightsim2grid takes the slack's angle from the first guess)."""
        if not len(rows):
            return
        start = perf_counter()
        self.put_topologies(np.asarray(rows, dtype=np.intp), buses)
        self.rows.charge(_index(rows), _SET_TOPOLOGY, (perf_counter() - start) / len(rows))

    def put_topologies(self, at: np.ndarray, buses: np.ndarray) -> None:
        """:meth:`set_topologies` of the rows ``at`` (an index array), its time not counted."""
        shared, r = self.shared, self.rows
        # a branch is in service only when both of its ends are on a bus bar
        ends = buses[:, shared.branch_ends].reshape(len(buses), 2, self.model.n_branch)
        np.copyto(ends, -1, where=(ends == -1).any(axis=1, keepdims=True))
        changed = np.flatnonzero((buses != r.buses[at]).any(axis=1))
        if changed.size:
            idx = at[changed]
            r.buses[idx] = buses[changed]
            r.plan[idx], r.plan_no[idx] = NO_PLAN_YET, NOT_LOOKED_UP
            r.route[idx], r.steady[idx] = LIGHTSIM, 0
            r.V[idx] = shared.v_init
            if shared.has_storage:
                r.island[idx] = self._storage_islands(buses[changed])

    def _storage_islands(self, buses: np.ndarray) -> np.ndarray:
        """Whether each row of ``buses`` has a connected storage unit on a bus bar that no
        connected branch reaches.

        Such a bus bar is an island: lightsim2grid solves it when nothing on it injects
        (a unit at p = 0), but grid2op's LightSimBackend refuses it (its DC initialisation
        fails) and pandapower leaves it unsolved, so such a row is reported as diverged too.
        The branch ends read are those at the units' substations (a branch with one end off
        has both ends at -1 here: :meth:`put_topologies` wrote them so).
        """
        shared = self.shared
        units = buses[:, shared.branch_ends.stop :]  # (k, n_storage)
        ends = buses[:, shared.storage_touch]  # (k, n_storage, width)
        reached = ((ends == units[:, :, None]) & shared.storage_touches).any(axis=2)
        return ((units != -1) & ~reached).any(axis=1)

    # --- solving -----------------------------------------------------------------------------

    def solve(self, rows: Rows, flows: np.ndarray) -> list[int]:
        """:meth:`SolverBatch.solve`: the steady rows by the chord (a call per topology), the
        others by the batched Newton (one call), what it refuses by lightsim2grid. The time
        is shared out evenly."""
        if not len(rows):
            return []
        start = perf_counter()
        r, at = self.rows, _index(rows)
        routes = r.route[at]
        first = routes[0]
        # the usual step: one plan for every row, no grouping
        if first > LOOK_UP and (len(routes) == 1 or not any_nonzero(routes != first)):
            others = self._solve_by_chord(r.plan[_indices(at)[0]], at, flows)
        else:
            others = self._route(_indices(at), flows)
        islands, others = self._split_islands(others)
        refused, failed = self._solve_by_newton(others, flows)
        if refused:
            failed = failed + self.solve_by_lightsim(refused, flows)
        if islands:
            failed = failed + islands
        r.charge(at, _POWERFLOW, (perf_counter() - start) / len(rows))  # and a power flow
        return sorted(failed)

    def _route(self, rows: np.ndarray, flows: np.ndarray) -> list[int]:
        """Chord-solve the rows of ``rows`` that the chord takes, a call per plan (plans
        looked up where a topology is new); return the others, sorted."""
        r = self.rows
        routes = r.route[rows]
        new = routes == LOOK_UP
        if new.any():  # new topologies' plans, looked up once per topology
            at = rows[new]
            r.plan[at], r.plan_no[at] = self.shared.book.plans(r.buses[at])
            self._set_routes(at)
            routes = r.route[rows]
        chorded = routes != LIGHTSIM
        if not chorded.any():  # after topology changes and resets: no row is the chord's
            return rows.tolist()
        others = rows[~chorded].tolist()
        for key in np.unique(routes[chorded]).tolist():
            group = rows[routes == key]
            others += self._solve_by_chord(r.plan[group[0]], group, flows)
        return sorted(others)

    def _solve_by_chord(
        self, plan: chord.TopologyPlan, at: slice | np.ndarray, flows: np.ndarray
    ) -> list[int]:
        """Chord-solve the rows ``at`` (a run of rows, or sorted distinct indices; all in
        ``plan``'s topology and steady), each from its own last solution; write the converged
        rows' flows and solutions; return the others (left as they were: the Newton solves
        them again, from their last solution)."""
        r = self.rows
        run = type(at) is slice
        V = r.V[at].copy() if run else r.V[at]  # not in place: see the return
        # rows in one run (a GridEnv's one row; a batch all in one topology) are written in
        # place: the unconverged ones are solved again (and written) by the Newton
        out = flows[at] if run else np.empty((len(V), flows.shape[1]))
        injections = r.inj32[at].astype(np.float64)
        storage = r.storage_p32[at].astype(np.float64) if self.shared.has_storage else _NONE
        iters = chord.solve_rows(plan, injections, storage, V, out)
        if not run:
            flows[at] = out
        done, failed = at, []
        if any_nonzero(iters < 0):
            ok = iters >= 0
            rows = _indices(at)
            done, failed, V = rows[ok], rows[~ok].tolist(), V[ok]
        r.V[done] = V  # their steady count stays (it counts up to STEADY_SOLVES only)
        r.converged[done] = 1
        r.solved_by[done] = BY_CHORD
        return failed

    def _split_islands(self, rows: list[int]) -> tuple[list[int], list[int]]:
        """Report the rows of ``rows`` with an islanded storage unit as diverged (see
        :meth:`_storage_islands`); return them and the others."""
        if not rows or not self.shared.has_storage:
            return [], rows
        at = np.asarray(rows, dtype=np.intp)
        island = self.rows.island[at]
        if not island.any():
            return [], rows
        islands = at[island]
        self.rows.solved_by[islands] = BY_LIGHTSIM
        self._diverged(islands)
        return islands.tolist(), at[~island].tolist()

    def _solve_by_newton(self, rows: list[int], flows: np.ndarray) -> tuple[list[int], list[int]]:
        """Solve ``rows`` (sorted) in one batched Newton call, each from its own first guess;
        return the rows it leaves to lightsim2grid and the diverged ones."""
        if not rows:
            return [], []
        r = self.rows
        at, run = np.asarray(rows, dtype=np.intp), _index(rows)
        # rows in one run (a look-ahead's candidates, a reset of every row) are solved in
        # place: the kernel writes the solved rows' solutions and flows only
        in_place = type(run) is slice
        V = r.V[run] if in_place else r.V[at]
        out = flows[run] if in_place else np.empty((len(rows), flows.shape[1]))
        storage = r.storage_p32[at].astype(np.float64) if self.shared.has_storage else _NONE
        iters = newton.solve_rows(
            self.shared.newton_layout,
            r.buses[run],
            r.inj32[run].astype(np.float64),
            storage,
            r.gen_v_pu[run],
            V,
            out,
        )
        solved = iters >= 0
        done = at[solved]
        if not in_place:
            flows[done] = out[solved]
            r.V[done] = V[solved]
        r.converged[done] = 1
        r.solved_by[done] = BY_NEWTON
        self._count_steady_solves(done)
        failed = at[iters == newton.DIVERGED]
        self._diverged(failed)
        return at[iters == newton.REFUSED].tolist(), failed.tolist()

    def solve_by_lightsim(self, rows: Rows, flows: np.ndarray) -> list[int]:
        """Solve ``rows`` with lightsim2grid, one warm-started ``ac_pf`` each on the row's own
        grid (a row with an islanded storage unit: diverged); write the converged rows'
        results into their rows of ``flows``; return the diverged rows."""
        islands, todo = self._split_islands(np.asarray(rows).tolist())
        failed, solved = list(islands), []
        r, shared = self.rows, self.shared
        for row in todo:
            grid = self.lightsim_grid(row)
            # ac_pf reads its first guess into a vector of its own and returns a new array
            # (empty when it does not converge)
            V = grid.ac_pf(r.V[row], MAX_ITER, TOLERANCE)
            r.solved_by[row] = BY_LIGHTSIM
            if V.size:
                r.V[row], r.converged[row] = V, 1
                self._count_steady_solves(np.array([row]))
                self._read_grid(row, flows[row])
                solved.append(row)
            else:
                self._diverged(np.array([row]))
                failed.append(row)
        if solved:
            flows[solved] *= shared.units
        return sorted(failed)

    def _count_steady_solves(self, at: np.ndarray) -> None:
        """One more converged solve in their topology for rows ``at`` (counted up to
        ``chord.STEADY_SOLVES`` only, where the chord takes the row: its route is set then)."""
        r = self.rows
        steady = r.steady[at]
        growing = steady < chord.STEADY_SOLVES
        if not growing.any():
            return
        at, steady = at[growing], steady[growing] + 1
        r.steady[at] = steady
        self._set_routes(at[steady == chord.STEADY_SOLVES])

    def _set_routes(self, at: np.ndarray | slice) -> None:
        """Who solves rows ``at`` next, from their steady counts, storage islands and plans."""
        r = self.rows
        r.route[at] = routes(r.steady[at], r.island[at], r.plan_no[at])

    def _diverged(self, at: np.ndarray) -> None:
        """Rows ``at`` diverged: no steady solve, the next from the base case."""
        r = self.rows
        r.V[at] = self.shared.v_init
        r.route[at], r.converged[at], r.steady[at] = LIGHTSIM, 0, 0
        r.views[at] = None  # a failed solve reallocates lightsim2grid's result vectors

    # --- copies and resets -------------------------------------------------------------------

    def take(self, rows: Rows) -> LightSimBatch:
        """:meth:`SolverBatch.take`: one gather per field; the copies share the rows' grids
        until one of them changes its own."""
        return LightSimBatch(self.shared, self.rows.take(np.asarray(rows, dtype=np.intp)))

    def reset(self, rows: Rows) -> None:
        """:meth:`SolverBatch.reset`: lightsim2grid reuses what its last solve built (bus
        labelling, Ybus, the PV / PQ split, the factorisation) where the grid says nothing
        changed, while a new grid starts from scratch: so does a reset row's next solve, from
        the base case (its grid is told with its next use)."""
        if not len(rows):
            return
        start = perf_counter()
        ones = np.ones((len(rows), self.shared.sizes["n_elem"]), np.int32)
        self.put_topologies(np.asarray(rows, dtype=np.intp), ones)
        at = _index(rows)
        self.forget(at)
        self.rows.charge(at, _SET_TOPOLOGY, (perf_counter() - start) / len(rows))

    def forget(self, at: slice | np.ndarray) -> None:
        """Drop the last solutions of the rows ``at`` and whatever lightsim2grid kept of their
        solves: their next power flows are solved as new rows' first ones."""
        r = self.rows
        r.reset_pending[at] = True
        r.V[at] = self.shared.v_init
        r.route[at], r.solved_by[at], r.converged[at], r.steady[at] = LIGHTSIM, BY_LIGHTSIM, -1, 0

    def solver_state(self, row: int) -> np.ndarray:
        """What the next power flow depends on besides the injections and the topology, as
        one float64 array: the first guess (the last solution; the base case after a topology
        change or a divergence) as real then imaginary parts of the bus voltages (p.u.), how
        many steady solves the row has had (which decides whether the chord solves it next),
        and the last voltage setpoints sent (kV; NaN before the first): a setpoint that
        differs from them makes the row unsteady."""
        r = self.rows
        V = r.V[row]
        return np.concatenate([V.real, V.imag, [float(r.steady[row])], r.gen_v_sent[row]])

    def set_solver_state(self, row: int, state: np.ndarray) -> None:
        """Start ``row``'s next power flow as the row :meth:`solver_state` was taken from
        would (its topology set already): its first guess, its steady count, its setpoints.

        Raises:
            ValueError: ``state`` is not one of this model's solver states.
        """
        n_bus, n_gen = self.shared.sizes["n_bus"], self.model.n_gen
        if state.dtype != np.float64 or state.shape != (2 * n_bus + 1 + n_gen,):
            raise ValueError(
                f"solver state must be float64 of shape {(2 * n_bus + 1 + n_gen,)} for "
                f"{self.model.name!r}, got {state.dtype} of shape {state.shape}"
            )
        steady = state[2 * n_bus]
        if not (np.isfinite(steady) and steady >= 0 and steady == int(steady)):
            raise ValueError(f"solver state's steady solve count must be a count, got {steady}")
        r, at = self.rows, np.array([row])
        r.V[row] = state[:n_bus] + 1j * state[n_bus : 2 * n_bus]
        gen_v = state[2 * n_bus + 1 :]
        if np.isnan(gen_v).all():
            r.gen_v_sent[row] = np.nan
        else:
            self._send_gen_v(at, gen_v[None])
        r.steady[row] = min(int(steady), chord.STEADY_SOLVES)  # no more is told apart
        r.route[row] = routes(r.steady[row], r.island[row], r.plan_no[row])

    # --- results -------------------------------------------------------------------------------

    def results(self, row: int) -> PowerFlowResults:
        """:meth:`SolverBatch.results`: the flows read from lightsim2grid's grid after its
        solve, computed again from the solution after the chord's or the Newton's."""
        self._check_converged(row)
        start = perf_counter()
        r = self.rows
        flows = np.empty(self.shared.flow_slices["all"].stop)
        self._fill_flows(row, flows)
        solved_by = r.solved_by[row]
        if solved_by == BY_CHORD:
            V = r.V[row] * r.plan[row].bus_active
        elif solved_by == BY_NEWTON:
            V = r.V[row].copy()  # zero at the bus bars out of the power flow already
        else:
            V = r.V[row] * np.asarray(self.lightsim_grid(row).get_bus_status(), dtype=bool)
        slices = self.shared.flow_slices
        results = PowerFlowResults(
            np.abs(V), np.arctan2(V.imag, V.real), *(flows[slices[name]] for name in FLOW_FIELDS)
        )
        r.charge(slice(row, row + 1), _RESULTS, perf_counter() - start)
        return results

    def read_flows(self, row: int, out: np.ndarray) -> None:
        """``row``'s last converged results into ``out`` (:func:`flow_slices`' layout).

        Raises:
            PowerFlowDivergedError: the last power flow diverged, or none was run.
        """
        if self.rows.converged[row] != 1:
            self._check_converged(row)  # raises
        start = perf_counter()
        self._fill_flows(row, out)
        self.rows.charge(slice(row, row + 1), _RESULTS, perf_counter() - start)

    def _check_converged(self, row: int) -> None:
        code = self.rows.converged[row]
        if code < 0:
            raise PowerFlowDivergedError("no power flow was run yet")
        if code == 0:
            raise PowerFlowDivergedError(f"the last AC power flow on {self.model.name!r} diverged")

    def _fill_flows(self, row: int, out: np.ndarray) -> None:
        """``row``'s flows into ``out`` (FLOW_FIELDS order, grid_vec's units): read from
        lightsim2grid's result vectors after its solve, computed again from the solution
        after the chord's or the Newton's."""
        r = self.rows
        solved_by = r.solved_by[row]
        if solved_by == BY_LIGHTSIM:
            self._read_grid(row, out)
            out *= self.shared.units[0]  # x * 1.0 == x bitwise for every float
            return
        computed, V, at = out[None], r.V[row][None].copy(), slice(row, row + 1)
        injections = r.inj32[at].astype(np.float64)
        storage = r.storage_p32[at].astype(np.float64)
        if solved_by == BY_CHORD:
            chord.solve_rows(r.plan[row], injections, storage, V, computed, max_iter=0)
        else:
            newton.solve_rows(
                self.shared.newton_layout, r.buses[at], injections, storage, r.gen_v_pu[at], V,
                computed, solve=False,
            )  # fmt: skip

    def _read_grid(self, row: int, out: np.ndarray) -> None:
        """``row``'s flows from its grid's result vectors into ``out``, in lightsim2grid's
        units (the caller converts)."""
        shared, r = self.shared, self.rows
        views = r.views[row]
        if views is None:
            views = r.views[row] = _ResultViews.of(r.grid[row], shared.has_storage)
        if not shared.has_sgen:
            np.concatenate(views.all, out=out)
            return
        np.concatenate(views.branches_loads, out=out[: shared.gen_start])
        gens = out[shared.gen_start : shared.storage_start].reshape(3, -1)
        gens[:, shared.ls_gen] = views.gens
        gens[:, shared.sgen] = views.sgens
        if shared.has_storage:
            np.concatenate(views.storages, out=out[shared.storage_start :])

    def timings(self, row: int) -> RowTimings:
        return RowTimings(self.rows, row)

    # --- lightsim2grid's grid of a row ---------------------------------------------------------

    def lightsim_grid(self, row: int):
        """``row``'s lightsim2grid ``LSGrid``, its own (a shared one is copied first), holding
        the row's topology, setpoints, injections and solver state (what was deferred is
        sent now): for the rows lightsim2grid solves, N-1 screening, pickling and tools."""
        shared, r = self.shared, self.rows
        if r.grid_shared[row]:
            r.grid[row] = r.grid[row].copy()
            r.grid_shared[row] = False
            r.views[row] = None
        grid = r.grid[row]
        buses = r.buses[row]
        topo = buses[shared.topo_order]
        changed = topo != r.grid_topo[row]
        if changed.any():
            # the result vectors are sized by element, not by bus: update_topo keeps them (and
            # the views into them), only a failed solve does not
            grid.update_topo(changed, topo)
            r.grid_topo[row] = topo
        if shared.has_sgen:  # static generators are outside update_topo: the few that changed
            self._sync_sgen_buses(row, grid, buses[self.model.n_load + shared.sgen])
        if r.gen_v_stale[row]:
            # the setpoints the row holds (lightsim2grid's own rule applied when they were
            # sent): the grid takes each that differs from its own
            held = r.gen_v_pu[row]
            grid.update_gens_v(shared.mask_gen, held[shared.ls_gen])
            r.gen_v_stale[row] = False
        if r.pending[row]:
            inj32, n_load = r.inj32[row], self.model.n_load
            grid.update_loads_p(shared.mask_load, inj32[:n_load])
            grid.update_loads_q(shared.mask_load, inj32[n_load : 2 * n_load])
            gen_p32 = inj32[2 * n_load :]
            if shared.has_sgen:
                grid.update_sgens_p(shared.mask_sgen, gen_p32[shared.sgen])
                grid.update_gens_p(shared.mask_gen, gen_p32[shared.ls_gen])
            else:
                grid.update_gens_p(shared.mask_gen, gen_p32)
            r.pending[row] = False
        if r.storage_pending[row]:
            grid.update_storages_p(shared.mask_storage, r.storage_p32[row])
            r.storage_pending[row] = False
        if r.reset_pending[row]:
            grid.tell_solver_need_reset()
            r.reset_pending[row] = False
        return grid

    def _sync_sgen_buses(self, row: int, grid, buses: np.ndarray) -> None:
        held = self.rows.grid_sgen_bus[row]
        changed = np.flatnonzero(buses != held)
        n_sub = self.model.n_sub
        for i in changed.tolist():
            sub = int(self.model.gen_sub[self.shared.sgen[i]])
            if buses[i] == -1:
                grid.deactivate_sgen(i)
            else:
                if held[i] == -1:
                    grid.reactivate_sgen(i)
                grid.change_bus_sgen(i, sub + (int(buses[i]) - 1) * n_sub)
        if changed.size:
            held[:] = buses
            self.rows.views[row] = None

    def outage_currents(
        self,
        rows: Rows,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        """:meth:`SolverBatch.outage_currents` as rows of one solve: each (row, branch) a
        copy of the row with that branch out, all solved together (the batched Newton; what it
        refuses by lightsim2grid), each from its row's solution, as lightsim2grid's
        ``ContingencyAnalysis`` starts them (an outage only takes bus bars out of the power
        flow: the solution is a first guess for every one left). The bus bar arrays are
        already the rows' own."""
        rows = np.asarray(rows, dtype=np.intp)
        branches = np.asarray(branches, dtype=np.int64)
        n_rows, m, n_branch = len(rows), len(branches), self.model.n_branch
        if not n_rows or not m:
            return np.full((n_rows, m, n_branch), np.nan)
        k = n_rows * m
        trial = self.take(np.repeat(rows, m))
        cases, start = np.arange(k), self.model.n_load + self.model.n_gen
        buses = trial.rows.buses.copy()
        out = np.tile(branches, n_rows)
        buses[cases, start + out] = buses[cases, start + n_branch + out] = -1
        first_guess = trial.rows.V.copy()
        trial.put_topologies(cases, buses)
        trial.rows.V[:] = first_guess
        flows = np.zeros((k, self.shared.flow_slices["all"].stop))
        failed = trial.solve(cases, flows)
        currents = flows[:, self.shared.flow_slices["a_or"]]
        currents[failed] = np.nan
        return currents.reshape(n_rows, m, n_branch)

    # --- pickling --------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        for row in range(len(self)):
            self.lightsim_grid(row)  # each row's grid, its own and complete
        return {"model": self.model, "rows": self.rows.state()}

    def __setstate__(self, state: dict) -> None:
        self.shared = LightSimGrid(state["model"])  # the plans: built again as needed
        self.model = self.shared.model
        self.rows = SolverRows.of_state(state["rows"], self.shared.sizes)
        routes = self.rows.route
        routes[routes > LOOK_UP] = LOOK_UP  # the plans are looked up again


class _ResultViews:
    """lightsim2grid's result getters return read-only views of its own result vectors, which
    it overwrites in place at each converged solve, also after a topology change: fetched
    once, they are read with no getter call per step. A failed solve reallocates those
    vectors, so a row drops its views then, and when its grid is copied."""

    __slots__ = ("all", "branches_loads", "gens", "sgens", "storages")

    def __init__(self, branches_loads: tuple, gens: tuple, sgens: tuple, storages: tuple) -> None:
        self.branches_loads = branches_loads  # FLOW_FIELDS order up to load_v
        self.gens = gens  # gen_p, gen_q, gen_v of lightsim2grid's generators
        self.sgens = sgens  # the same for static generators
        self.storages = storages  # storage p, q, v, theta (degrees); () without storage
        # the flows' order when there is no sgen
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
