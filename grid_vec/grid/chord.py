"""Batched chord-Newton power flows for the lightsim2grid rows of a batch that keep their topology.

Why: lightsim2grid solves one grid per call, so a batch of N envs paid N Python round trips
(injections pushed, ``ac_pf``, results read) per step. A row whose topology did not change since
its last converged solve is solved here instead, with every such row of one topology in one
compiled call, and its results computed as arrays.

How (and why each choice):

- **One factorisation per topology, at a point that depends on the topology only.** A
  :class:`TopologyPlan` holds the bus admittance matrix lightsim2grid builds for that topology,
  its PV / PQ / slack buses and the sparse LU of the Newton Jacobian at lightsim2grid's own
  solution of that topology with the grid's base-case injections. Chord iterations reuse that
  LU from each row's own warm start (its previous solution). Nothing a row computes depends on
  the other rows or on the batch size: a GridEnv (the batch of one) plays bitwise what row i of
  a batch of 32 plays.
- **lightsim2grid stays the reference and the fallback.** A row that changed topology or its
  voltage setpoints less than :data:`STEADY_SOLVES` solves ago (a reset counts as a change),
  or whose chord iterations do not converge within :data:`CHORD_MAX_ITER`, is solved by
  lightsim2grid exactly as before (warm start, same tolerance): the divergence decisions are
  lightsim2grid's. A topology whose plan cannot be built (its base case does not
  converge, or a generator's reactive share cannot be read) always falls back.
- **The stopping test is lightsim2grid's**: max |mismatch| < :data:`TOLERANCE` p.u. on the P rows
  of the PV and PQ buses and the Q rows of the PQ buses; results then agree with a
  lightsim2grid solve of the same injections to within that tolerance, not bit for bit.
- **Results as lightsim2grid computes them** (flows, currents, the slack's active power,
  the reactive power of a bus shared among its generators in proportion to their reactive
  ranges: here read off lightsim2grid's reference solve of the plan, as shares of the bus).

- **Rows side by side.** The kernel iterates the rows of one plan 8 at a time, interleaved, so
  that the triangular solves of different rows overlap; each row does only its own arithmetic,
  in the same order whatever its neighbours hold (no fused multiply-add), and a row that has
  stopped takes zero steps, which leave it bitwise as it is. A step turns each voltage by its
  small angle change (a short series, exact to rounding) instead of recomputing it from polar
  form, so no trigonometry is spent per bus and iteration.

The kernel is C (``grid_vec/grid/chord_kernel.c``, built by ``pip install``): a few loops over small
arrays, so no compilation at run time, no disk cache, nothing loaded but one small module; it
is the one implementation of the solve and of its results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from grid_vec._distinct import distinct_rows
from grid_vec.grid import chord_kernel  # compiled from grid_vec/grid/chord_kernel.c

TOLERANCE = 1e-8  # lightsim2grid's stopping test, as LightSimBackend calls it
CHORD_MAX_ITER = 16  # then the row falls back to lightsim2grid's Newton solve
# a row is the chord's once it has solved this many times in a row in its topology (with the
# same voltage setpoints): a topology an agent leaves soon is not worth a plan (building one,
# a lightsim2grid solve and a SuperLU factorisation, costs about as much as 200 batched
# Newton solves of the sandbox, and a chord solve saves 2.7 µs of the Newton's 7.5 µs); at 2,
# random catalog actions on the sandbox spent 7% of their step time building plans their
# rows left before using; 5 measured best of 2, 3 and 5 (x32, sandbox and case118, random and
# do-nothing). The count is the row's own, so the choice never depends on the other rows (a
# plan another row built is only a saving of time)
STEADY_SOLVES = 5
_MIN_SHARED_Q = 1e-3  # MVAr: below it a shared bus' reactive shares cannot be read reliably


@dataclass(frozen=True)
class GridArrays:
    """What every plan of one grid shares: element data read once from lightsim2grid."""

    n_bus: int  # lightsim2grid's buses: 2 bus bars per substation
    sn_mva: float
    bus_vn_kv: np.ndarray  # (n_bus,)
    y11: np.ndarray  # (n_branch,) complex: lines then transformers
    y12: np.ndarray
    y21: np.ndarray
    y22: np.ndarray


@dataclass(frozen=True)
class TopologyPlan:
    """One topology's solver structures, in lightsim2grid's full bus order (bus bar 1 of every
    substation, then bus bar 2; an element off its bus has bus -1)."""

    bus_active: np.ndarray  # (n_bus,) bool: the buses in the power flow
    pvpq: np.ndarray  # int64: the PV then the PQ buses (the angle unknowns)
    pq: np.ndarray  # int64: the PQ buses (the magnitude unknowns)
    slack_bus: int
    gen_q_share: np.ndarray  # (n_gen,): a PV generator's share of its bus' reactive need
    packed: tuple[np.ndarray, np.ndarray, np.ndarray]  # everything, for the kernel (_pack)


def grid_arrays(grid) -> GridArrays:
    """The element data of an ``LSGrid`` that no topology changes: each branch's pi-model
    admittances whatever its status (the grid's bulk getters give zeros for a branch it holds
    disconnected, which another topology connects)."""
    branches = [*grid.get_lines(), *grid.get_trafos()]

    def each(name: str) -> np.ndarray:
        return np.array([getattr(b, name) for b in branches], dtype=np.complex128)

    return GridArrays(
        n_bus=int(grid.total_bus()),
        sn_mva=float(grid.get_sn_mva()),
        bus_vn_kv=np.asarray(grid.get_bus_vn_kv(), dtype=float),
        y11=each("yac_11"),
        y12=each("yac_12"),
        y21=each("yac_21"),
        y22=each("yac_22"),
    )


def build_plan(
    model, solved: tuple[object, np.ndarray] | None, buses: np.ndarray, arrays: GridArrays
) -> TopologyPlan | None:
    """The plan of the topology ``buses`` (model order: loads, generators, branch origins,
    branch extremities, storage units; 1, 2 or -1), from ``solved``: lightsim2grid's solve of
    that topology with the grid's base-case injections, as (its ``LSGrid``, the generators'
    reactive power in model order), or None when it diverged. None when there is no solve or
    a shared bus' reactive shares cannot be read: the topology's rows then always use the
    batched Newton or lightsim2grid."""
    if solved is None:
        return None
    grid, gen_q = solved
    n_sub = model.n_sub
    full = np.asarray(grid.id_ac_solver_to_me(), dtype=np.int64)
    pv = full[np.asarray(grid.get_pv_solver(), dtype=np.int64)]
    pq = full[np.asarray(grid.get_pq_solver(), dtype=np.int64)]
    slack = full[np.asarray(grid.get_slack_ids_solver(), dtype=np.int64)]
    if slack.size != 1:
        return None
    pvpq = np.concatenate([pv, pq])
    ybus = sp.csr_matrix(grid.get_Ybus(), dtype=np.complex128)
    ybus.sort_indices()
    V = np.asarray(grid.get_V(), dtype=np.complex128)
    lu = _factorise(_jacobian(ybus, V, pvpq, pq))
    if lu is None:
        return None

    def bus_of(sub: np.ndarray, bar: np.ndarray) -> np.ndarray:
        return np.where(bar == -1, -1, sub + (bar - 1) * n_sub).astype(np.int64)

    load_bar, gen_bar, or_bar, ex_bar, storage_bar = _split(model, buses)
    off = (or_bar == -1) | (ex_bar == -1)
    or_bus = bus_of(model.branch_or_sub, np.where(off, -1, or_bar))
    ex_bus = bus_of(model.branch_ex_sub, np.where(off, -1, ex_bar))
    load_bus = bus_of(model.load_sub, load_bar)
    gen_bus = bus_of(model.gen_sub, gen_bar)
    storage_bus = bus_of(model.storage_sub, storage_bar)
    slack_gen = np.flatnonzero(model.gen_kind == "slack")
    if slack_gen.size != 1 or gen_bus[slack_gen[0]] != slack[0]:
        return None
    share, fixed = _reactive_shares(model, gen_bus, gen_q)
    if share is None:
        return None
    parts = {
        "indptr": ybus.indptr.astype(np.int64), "indices": ybus.indices.astype(np.int64),
        "data": ybus.data, "pvpq": pvpq, "pq": pq, "lu": lu, "slack_bus": int(slack[0]),
        "slack_gen": int(slack_gen[0]), "bus_active": np.asarray(grid.get_bus_status(), bool),
        "or_bus": or_bus, "ex_bus": ex_bus, "load_bus": load_bus, "gen_bus": gen_bus,
        "storage_bus": storage_bus, "gen_q_share": share, "gen_q_fixed": fixed,
    }  # fmt: skip
    return TopologyPlan(
        bus_active=parts["bus_active"], pvpq=pvpq, pq=pq, slack_bus=int(slack[0]),
        gen_q_share=share, packed=_pack(parts, arrays),
    )  # fmt: skip


def _split(model, buses: np.ndarray) -> tuple[np.ndarray, ...]:
    """Model-order bus bars -> (loads, generators, origins, extremities, storage units)."""
    cuts = np.cumsum([model.n_load, model.n_gen, model.n_branch, model.n_branch])
    return tuple(np.split(np.asarray(buses), cuts))


def _reactive_shares(
    model, gen_bus: np.ndarray, gen_q: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray]:
    """Each PV generator's share of its bus' reactive need, read off a solve (lightsim2grid
    splits it in proportion to the generators' reactive ranges, which it does not expose), and
    the fixed output of the others (static generators: their setpoint)."""
    pv = (model.gen_kind != "sgen") & (gen_bus >= 0)
    share = np.zeros(model.n_gen)
    fixed = np.where((model.gen_kind == "sgen") & (gen_bus >= 0), gen_q, 0.0)
    for bus in np.unique(gen_bus[pv]).tolist():
        on_bus = np.flatnonzero(pv & (gen_bus == bus))
        if on_bus.size == 1:
            share[on_bus] = 1.0
            continue
        total = gen_q[on_bus].sum()
        if abs(total) < _MIN_SHARED_Q:
            return None, fixed
        share[on_bus] = gen_q[on_bus] / total
    return share, fixed


def _jacobian(ybus: sp.csr_matrix, V: np.ndarray, pvpq: np.ndarray, pq: np.ndarray):
    """The polar Newton Jacobian [dP/dVa dP/dVm; dQ/dVa dQ/dVm] on (pvpq, pq), sparse.

    Entry by entry on ``ybus``' pattern (and its diagonal), in one sparse construction: the
    same derivatives as products of sparse matrices would give, at a small part of the cost
    of building those (a plan is built for each topology an agent stays in)."""
    n = ybus.shape[0]
    current = ybus @ V
    unit = V / np.where(np.abs(V) > 0, np.abs(V), 1.0)
    ybus_rows = np.repeat(np.arange(n), np.diff(ybus.indptr))
    # dS_i/dVm_k = V_i conj(Y_ik u_k) (+ conj(I_i) u_i on the diagonal), u = V / |V|;
    # dS_i/dVa_k = -j V_i conj(Y_ik V_k) (+ j V_i conj(I_i) on the diagonal): the entries
    # of ybus' pattern, then the diagonal's terms (duplicates add up in the construction)
    diagonal = np.arange(n)
    rows = np.concatenate([ybus_rows, diagonal])
    cols = np.concatenate([ybus.indices, diagonal])
    d_vm = np.concatenate(
        [V[ybus_rows] * np.conj(ybus.data * unit[ybus.indices]), np.conj(current) * unit]
    )
    d_va = np.concatenate(
        [-1j * V[ybus_rows] * np.conj(ybus.data * V[ybus.indices]), 1j * V * np.conj(current)]
    )
    n_pvpq = pvpq.size
    angle_at = np.full(n, -1)  # a bus' angle unknown (its P row), -1: none
    angle_at[pvpq] = np.arange(n_pvpq)
    magnitude_at = np.full(n, -1)  # a bus' magnitude unknown (its Q row), -1: none
    magnitude_at[pq] = n_pvpq + np.arange(pq.size)
    blocks = (  # (row unknowns, column unknowns, derivative, its part)
        (angle_at, angle_at, d_va.real),
        (angle_at, magnitude_at, d_vm.real),
        (magnitude_at, angle_at, d_va.imag),
        (magnitude_at, magnitude_at, d_vm.imag),
    )
    r_parts, c_parts, v_parts = [], [], []
    for row_at, col_at, values in blocks:
        r, c = row_at[rows], col_at[cols]
        keep = (r >= 0) & (c >= 0)
        r_parts.append(r[keep])
        c_parts.append(c[keep])
        v_parts.append(values[keep])
    size = n_pvpq + pq.size
    return sp.csc_matrix(
        (np.concatenate(v_parts), (np.concatenate(r_parts), np.concatenate(c_parts))),
        shape=(size, size),
    )


def _factorise(jacobian) -> tuple | None:
    """scipy's sparse LU of ``jacobian`` as the CSR arrays the kernel's ``lu_solve`` reads:
    L's strictly lower part (its diagonal is ones), U's strictly upper part, U's diagonal, and
    the row and column permutations."""
    try:
        factors = spla.splu(jacobian)
    except RuntimeError:  # singular
        return None
    lower = _off_diagonal(factors.L.tocsr())
    upper = factors.U.tocsr()
    strict = _off_diagonal(upper)
    as_int = np.int64
    return (
        *lower,
        *strict,
        upper.diagonal().astype(np.float64),
        factors.perm_r.astype(as_int),
        factors.perm_c.astype(as_int),
    )


def _off_diagonal(matrix: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A CSR matrix's entries off its diagonal, as (indptr, indices, data) in int64 and
    float64, each row's in their order."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    keep = matrix.indices != rows
    indptr = np.zeros(matrix.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=matrix.shape[0]), out=indptr[1:])
    return (
        indptr,
        matrix.indices[keep].astype(np.int64),
        matrix.data[keep].astype(np.float64),
    )


_HEADER = 13  # the sizes and indices at the head of a plan's packed integers (see _pack)


def _pack(plan_parts: dict, arrays: GridArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A plan's arrays as three flat arrays (integers, reals, complex) for the kernel: one
    buffer per kind costs the call three argument conversions instead of thirty."""
    p = plan_parts
    lp, li, lx, up, ui, ux, ud, perm_r, perm_c = p["lu"]
    header = [
        arrays.n_bus, p["indices"].size, p["pvpq"].size, p["pq"].size, lx.size, ux.size,
        ud.size, p["or_bus"].size, p["load_bus"].size, p["gen_bus"].size,
        p["storage_bus"].size, p["slack_bus"], p["slack_gen"],
    ]  # fmt: skip
    ints = np.concatenate(
        [
            np.asarray(header, dtype=np.int64),
            p["indptr"],
            p["indices"],
            p["pvpq"],
            p["pq"],
            lp,
            li,
            up,
            ui,
            perm_r,
            perm_c,
            p["bus_active"].astype(np.int64),
            p["or_bus"],
            p["ex_bus"],
            p["load_bus"],
            p["gen_bus"],
            p["storage_bus"],
        ]
    ).astype(np.int64)
    reals = np.concatenate(
        [
            [arrays.sn_mva, TOLERANCE],
            lx,
            ux,
            ud,
            arrays.bus_vn_kv,
            p["gen_q_share"],
            p["gen_q_fixed"],
        ]
    ).astype(np.float64)
    cplx = np.concatenate([p["data"], arrays.y11, arrays.y12, arrays.y21, arrays.y22]).astype(
        np.complex128
    )
    return ints, reals, cplx


def solve_rows(
    plan: TopologyPlan,
    injections: np.ndarray,
    storage_p: np.ndarray,
    V: np.ndarray,
    out: np.ndarray,
    *,
    max_iter: int | None = None,
) -> np.ndarray:
    """Chord-solve rows of ``plan``'s topology, each from its own first guess, and write the
    results of the converged ones.

    Args:
        plan: the rows' topology.
        injections: ``(k, 2 n_load + n_gen)`` float64: load p, load q (MW, MVAr), generator p
            (MW, model order), as lightsim2grid stores them (float32 values).
        storage_p: ``(k, n_storage)`` float64, MW in load convention.
        V: ``(k, n_bus)`` complex first guesses (a row's previous solution), updated in place.
        out: ``(k, n_flows)`` float64, written in :func:`~grid_vec.grid.backend.flow_slices`'
            layout and grid_vec's units (A, kV, MW, MVAr, rad) for the converged rows.
        max_iter: chord iterations before a row gives up (None: :data:`CHORD_MAX_ITER`; 0:
            ``V`` is a solution already, whose results are written whatever its mismatch).

    Returns:
        ``(k,)`` int64: each row's iterations, -1 where it did not converge (its ``V`` row is
        spoilt and its ``out`` row unwritten).
    """
    iters = np.empty(V.shape[0], dtype=np.int64)
    kmax = CHORD_MAX_ITER if max_iter is None else max_iter
    # the kernel reads the arrays' memory as C-contiguous float64 / complex128 / int64
    chord_kernel.solve(*plan.packed, injections, storage_p, V, out, kmax, iters, V.shape[0])
    return iters


_MAX_PLANS = 4096  # topologies kept per grid (a random-action run visits many)
NO_PLAN = -1  # the plan number of a topology the chord cannot solve


class PlanBook:
    """The plans of one grid's topologies, built on demand and shared by all of its rows.

    A plan depends only on its topology (each is built from a fresh solve: the template
    forgets its previous ones), so sharing and evicting plans never changes a row's result.

    Args:
        model: the grid.
        solve_template: ``buses -> (LSGrid, gen_q) | None``: lightsim2grid's fresh solve of a
            topology with the base-case injections (:func:`build_plan`'s ``solved``).
        arrays: the grid's admittances (:func:`grid_arrays`), built when first needed.
    """

    def __init__(
        self,
        model,
        solve_template: Callable[[np.ndarray], tuple[object, np.ndarray] | None],
        arrays: Callable[[], GridArrays],
    ) -> None:
        self._model = model
        self._solve_template = solve_template
        self._build_arrays = arrays
        self._arrays: GridArrays | None = None
        # topology (its bytes) -> (its plan or None, the plan's number)
        self._plans: dict[bytes, tuple[TopologyPlan | None, int]] = {}
        self._made = 0  # plans numbered so far (a number is never given twice)

    @property
    def arrays(self) -> GridArrays:
        if self._arrays is None:
            self._arrays = self._build_arrays()
        return self._arrays

    def plans(self, buses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plans of the rows of ``buses`` (``(k, n_elem)`` int32, model order), looked up
        once per distinct topology among them: an object array (None where a topology has
        no plan) and each plan's number (:data:`NO_PLAN` where it has none), which tells the
        plans apart as long as a row holds its plan."""
        distinct, inverse = distinct_rows(buses)
        found = [self._plan(topology) for topology in distinct]
        objects = np.empty(len(found), dtype=object)
        objects[:] = [plan for plan, _ in found]
        numbers = np.array([number for _, number in found], dtype=np.int64)
        return objects[inverse], numbers[inverse]

    def _plan(self, buses: np.ndarray) -> tuple[TopologyPlan | None, int]:
        """The plan of one topology and its number, built when new."""
        key = buses.tobytes()
        try:
            return self._plans[key]
        except KeyError:
            pass
        if len(self._plans) >= _MAX_PLANS:
            self._plans.pop(next(iter(self._plans)))
        arrays = self.arrays
        plan = build_plan(self._model, self._solve_template(buses), buses, arrays)
        number = NO_PLAN
        if plan is not None:
            number, self._made = self._made, self._made + 1
        self._plans[key] = plan, number
        return plan, number
