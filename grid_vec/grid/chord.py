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
- **Results as lightsim2grid computes them** (flows, currents in kA, the slack's active power,
  the reactive power of a bus shared among its generators in proportion to their reactive
  ranges: here read off lightsim2grid's reference solve of the plan, as shares of the bus).

The compiled kernel (:func:`_chord_rows`) is numba, cached on disk in grid_vec's cache
directory (first-run compile cost: see the README); it is the one implementation of the solve.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def _numba_cache_dir() -> Path:
    # numba caches next to the module by default: inside the installed package, which a
    # command must never write into. grid_vec's cache directory instead.
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grid_vec" / "numba"


os.environ.setdefault("NUMBA_CACHE_DIR", str(_numba_cache_dir()))

from numba import njit  # noqa: E402  (after NUMBA_CACHE_DIR is set)

TOLERANCE = 1e-8  # lightsim2grid's stopping test, as LightSimBackend calls it
CHORD_MAX_ITER = 16  # then the row falls back to lightsim2grid's Newton solve
# a row is the chord's once it has solved this many times in a row in its topology (with the
# same voltage setpoints): a topology an agent leaves at once is not worth a plan (building
# one costs a few solves); the count is the row's own, so the choice never depends on the
# other rows (a plan another row built is only a saving of time)
STEADY_SOLVES = 2
_MIN_SHARED_Q = 1e-3  # MVAr: below it a shared bus' reactive shares cannot be read reliably


@njit(cache=True)
def _mismatch(indptr, indices, data, V, S, pvpq, pq, current, F) -> float:
    """F = [P(pvpq); Q(pq)] of V conj(Y V) - S; returns max |F|."""
    for i in range(V.shape[0]):
        acc = 0j
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * V[indices[p]]
        current[i] = acc
    a = pvpq.shape[0]
    worst = 0.0
    for r in range(a):
        i = pvpq[r]
        s = V[i] * np.conj(current[i]) - S[i]
        F[r] = s.real
        worst = max(worst, abs(s.real))
    for r in range(pq.shape[0]):
        i = pq[r]
        s = V[i] * np.conj(current[i]) - S[i]
        F[a + r] = s.imag
        worst = max(worst, abs(s.imag))
    return worst


@njit(cache=True)
def _lu_solve(Lp, Li, Lx, Up, Ui, Ux, Ud, perm_r, perm_c, b, y) -> None:
    """b <- A^-1 b for Pr A Pc = L U (scipy's splu factors as CSR rows; L unit lower)."""
    m = b.shape[0]
    for i in range(m):
        y[perm_r[i]] = b[i]
    for i in range(m):
        acc = y[i]
        for p in range(Lp[i], Lp[i + 1]):
            acc -= Lx[p] * y[Li[p]]
        y[i] = acc
    for i in range(m - 1, -1, -1):
        acc = y[i]
        for p in range(Up[i], Up[i + 1]):
            acc -= Ux[p] * y[Ui[p]]
        y[i] = acc / Ud[i]
    for i in range(m):
        b[i] = y[perm_c[i]]


@njit(cache=True)
def _chord_one(indptr, indices, data, pvpq, pq, Lp, Li, Lx, Up, Ui, Ux, Ud, perm_r, perm_c,
               S, v, tol, kmax, current, F, y, Va, Vm) -> int:  # fmt: skip
    """Chord iterations for one row (v updated in place) with one LU: the iterations taken,
    -1 when it did not converge within ``kmax`` (v is then spoilt)."""
    a = pvpq.shape[0]
    for i in range(v.shape[0]):
        Va[i] = np.angle(v[i])
        Vm[i] = np.abs(v[i])
    for it in range(kmax + 1):
        if _mismatch(indptr, indices, data, v, S, pvpq, pq, current, F) < tol:
            return it
        if it == kmax:
            return -1
        _lu_solve(Lp, Li, Lx, Up, Ui, Ux, Ud, perm_r, perm_c, F, y)
        for k in range(a):
            Va[pvpq[k]] -= F[k]
        for k in range(pq.shape[0]):
            Vm[pq[k]] -= F[a + k]
        for k in range(a):
            i = pvpq[k]
            v[i] = Vm[i] * np.exp(1j * Va[i])
    return -1


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
    """The element data of an ``LSGrid`` that no topology changes."""
    lines, trafos = grid.get_lines(), grid.get_trafos()

    def both(getter: str) -> np.ndarray:
        return np.concatenate(
            [np.asarray(getattr(lines, getter)()), np.asarray(getattr(trafos, getter)())]
        ).astype(np.complex128)

    return GridArrays(
        n_bus=int(grid.total_bus()),
        sn_mva=float(grid.get_sn_mva()),
        bus_vn_kv=np.asarray(grid.get_bus_vn_kv(), dtype=float),
        y11=both("get_yac_eff_11"),
        y12=both("get_yac_eff_12"),
        y21=both("get_yac_eff_21"),
        y22=both("get_yac_eff_22"),
    )


def build_plan(
    backend, buses: np.ndarray, arrays: GridArrays, reference: tuple | None = None
) -> TopologyPlan | None:
    """The plan of the topology ``buses`` (model order: loads, generators, branch origins,
    branch extremities, storage units; 1, 2 or -1), from a lightsim2grid solve of that topology
    with the grid's base-case injections on ``backend`` (a fresh backend of the model, which
    this call changes). None when that solve diverges or a shared bus' reactive shares cannot
    be read: the topology's rows then always use lightsim2grid."""
    model = backend.model
    backend.set_topology_trusted(*_split(model, buses))
    if reference is None:
        reference = (model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
    backend.set_injections_trusted(*reference)
    if not backend.run_ac():
        return None
    grid = backend._grid
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
    res = backend.results()
    share, fixed = _reactive_shares(model, gen_bus, res.gen_q)
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
    """The polar Newton Jacobian [dP/dVa dP/dVm; dQ/dVa dQ/dVm] on (pvpq, pq), sparse."""
    current = ybus @ V
    diag_v = sp.diags(V)
    unit = V / np.where(np.abs(V) > 0, np.abs(V), 1.0)
    ds_dvm = diag_v @ np.conj(ybus @ sp.diags(unit)) + sp.diags(np.conj(current) * unit)
    ds_dva = 1j * diag_v @ np.conj(sp.diags(current) - ybus @ diag_v)
    ds_dva, ds_dvm = ds_dva.tocsr(), ds_dvm.tocsr()
    return sp.vstack(
        [
            sp.hstack([ds_dva[pvpq][:, pvpq].real, ds_dvm[pvpq][:, pq].real]),
            sp.hstack([ds_dva[pq][:, pvpq].imag, ds_dvm[pq][:, pq].imag]),
        ],
        format="csc",
    )


def _factorise(jacobian) -> tuple | None:
    """scipy's sparse LU of ``jacobian`` as the CSR arrays :func:`_lu_solve` reads."""
    try:
        factors = spla.splu(jacobian)
    except RuntimeError:  # singular
        return None
    lower = sp.tril(sp.csr_matrix(factors.L), -1, format="csr")
    upper = sp.csr_matrix(factors.U)
    strict = sp.triu(upper, 1, format="csr")
    as_int = np.int64
    return (
        lower.indptr.astype(as_int),
        lower.indices.astype(as_int),
        lower.data.astype(np.float64),
        strict.indptr.astype(as_int),
        strict.indices.astype(as_int),
        strict.data.astype(np.float64),
        upper.diagonal().astype(np.float64),
        factors.perm_r.astype(as_int),
        factors.perm_c.astype(as_int),
    )


_HEADER = 13  # the sizes and indices at the head of a plan's packed integers (see _pack)


def _pack(plan_parts: dict, arrays: GridArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A plan's arrays as three flat arrays (integers, reals, complex) for the kernel: numba
    unboxes each argument of a call on its own, so three arguments cost a fraction of thirty."""
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
    _solve_packed(*plan.packed, injections, storage_p, V, out, kmax, iters)
    return iters


@njit(cache=True)
def _solve_packed(ints, reals, cplx, injections, storage_p, V, out, kmax, iters) -> None:
    n_bus, nnz, a, npq, nlx, nux, m, nb, nl, ng, ns, slack_bus, slack_gen = ints[:_HEADER]
    o = _HEADER
    indptr = ints[o : o + n_bus + 1]
    o += n_bus + 1
    indices = ints[o : o + nnz]
    o += nnz
    pvpq = ints[o : o + a]
    o += a
    pq = ints[o : o + npq]
    o += npq
    Lp = ints[o : o + m + 1]
    o += m + 1
    Li = ints[o : o + nlx]
    o += nlx
    Up = ints[o : o + m + 1]
    o += m + 1
    Ui = ints[o : o + nux]
    o += nux
    perm_r = ints[o : o + m]
    o += m
    perm_c = ints[o : o + m]
    o += m
    bus_active = ints[o : o + n_bus]
    o += n_bus
    or_bus = ints[o : o + nb]
    o += nb
    ex_bus = ints[o : o + nb]
    o += nb
    load_bus = ints[o : o + nl]
    o += nl
    gen_bus = ints[o : o + ng]
    o += ng
    storage_bus = ints[o : o + ns]
    sn, tol = reals[0], reals[1]
    o = 2
    Lx = reals[o : o + nlx]
    o += nlx
    Ux = reals[o : o + nux]
    o += nux
    Ud = reals[o : o + m]
    o += m
    vn = reals[o : o + n_bus]
    o += n_bus
    q_share = reals[o : o + ng]
    o += ng
    q_fixed = reals[o : o + ng]
    data = cplx[:nnz]
    y11 = cplx[nnz : nnz + nb]
    y12 = cplx[nnz + nb : nnz + 2 * nb]
    y21 = cplx[nnz + 2 * nb : nnz + 3 * nb]
    y22 = cplx[nnz + 3 * nb : nnz + 4 * nb]

    S = np.empty(n_bus, dtype=np.complex128)
    current = np.empty(n_bus, dtype=np.complex128)
    F = np.empty(m)
    y = np.empty(m)
    Va = np.empty(n_bus)
    Vm = np.empty(n_bus)
    inv_sn = 1.0 / sn
    for r in range(V.shape[0]):
        inj = injections[r]
        # bus injections, p.u.: generation minus consumption (a PV generator's reactive power
        # is a result; a static generator's is its fixed setpoint)
        S[:] = 0.0
        for j in range(nl):
            if load_bus[j] >= 0:
                S[load_bus[j]] -= (inj[j] + 1j * inj[nl + j]) * inv_sn
        for j in range(ng):
            if gen_bus[j] >= 0:
                S[gen_bus[j]] += (inj[2 * nl + j] + 1j * q_fixed[j]) * inv_sn
        for j in range(ns):
            if storage_bus[j] >= 0:
                S[storage_bus[j]] -= storage_p[r, j] * inv_sn
        v = V[r]
        it = _chord_one(indptr, indices, data, pvpq, pq, Lp, Li, Lx, Up, Ui, Ux, Ud, perm_r,
                        perm_c, S, v, tol, kmax, current, F, y, Va, Vm)  # fmt: skip
        if it < 0 and kmax > 0:
            iters[r] = -1
            continue
        iters[r] = max(it, 0)
        _row_flows(indptr, indices, data, bus_active, or_bus, ex_bus, y11, y12, y21, y22, vn,
                   load_bus, gen_bus, storage_bus, slack_bus, slack_gen, q_share, q_fixed,
                   inj, storage_p[r], S, v, sn, nl, current, out[r])  # fmt: skip


@njit(cache=True)
def _row_flows(
    indptr, indices, data, bus_active, or_bus, ex_bus, y11, y12, y21, y22, vn,
    load_bus, gen_bus, storage_bus, slack_bus, slack_gen, q_share, q_fixed,
    inj, storage_p, S, V, sn, nl, need, o,
) -> None:  # fmt: skip
    """One solved row's results into ``o`` (FLOW_FIELDS order)."""
    nb, ng, ns = or_bus.shape[0], gen_bus.shape[0], storage_bus.shape[0]
    n_bus = V.shape[0]
    sqrt3 = np.sqrt(3.0)
    for i in range(n_bus):
        if not bus_active[i]:
            V[i] = 0.0  # a bus out of the power flow reports no voltage
    for i in range(n_bus):
        acc = 0j
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * V[indices[p]]
        # what the bus still needs from its PV generators (Q) or the slack (P), MW / MVAr
        need[i] = (V[i] * np.conj(acc) - S[i]) * sn
    for side in range(2):  # branches: p, q, v, a of the origins, then of the extremities
        base = 4 * nb * side
        for j in range(nb):
            if side == 0:
                here, there = or_bus[j], ex_bus[j]
            else:
                here, there = ex_bus[j], or_bus[j]
            if here < 0:
                o[base + j] = 0.0
                o[base + nb + j] = 0.0
                o[base + 2 * nb + j] = 0.0
                o[base + 3 * nb + j] = 0.0
                continue
            if side == 0:
                current = y11[j] * V[here] + y12[j] * V[there]
            else:
                current = y22[j] * V[here] + y21[j] * V[there]
            s = V[here] * np.conj(current) * sn
            v_kv = np.abs(V[here]) * vn[here]
            o[base + j] = s.real
            o[base + nb + j] = s.imag
            o[base + 2 * nb + j] = v_kv
            o[base + 3 * nb + j] = np.abs(s) / (sqrt3 * v_kv) * 1000.0 if v_kv > 0 else 0.0
    k = 8 * nb
    for j in range(nl):
        b = load_bus[j]
        on = b >= 0
        o[k + j] = inj[j] if on else 0.0
        o[k + nl + j] = inj[nl + j] if on else 0.0
        o[k + 2 * nl + j] = np.abs(V[b]) * vn[b] if on else 0.0
    k += 3 * nl
    for j in range(ng):
        b = gen_bus[j]
        if b < 0:
            o[k + j] = 0.0
            o[k + ng + j] = 0.0
            o[k + 2 * ng + j] = 0.0
            continue
        p = inj[2 * nl + j]
        if j == slack_gen:
            p += need[slack_bus].real
        o[k + j] = p
        o[k + ng + j] = need[b].imag * q_share[j] + q_fixed[j]
        o[k + 2 * ng + j] = np.abs(V[b]) * vn[b]
    k += 3 * ng
    for j in range(ns):
        b = storage_bus[j]
        on = b >= 0
        o[k + j] = storage_p[j] if on else 0.0
        o[k + ns + j] = 0.0
        o[k + 2 * ns + j] = np.abs(V[b]) * vn[b] if on else 0.0
        o[k + 3 * ns + j] = np.angle(V[b]) if on else 0.0


_MAX_PLANS = 4096  # topologies kept per grid (a random-action run visits many)


class PlanBook:
    """The plans of one grid's topologies, built on demand and shared by all of its backends.

    A plan depends only on its topology (each is built from a fresh solve: the template
    forgets its previous ones), so sharing and evicting plans never changes a row's result.
    """

    def __init__(self, new_backend) -> None:
        self._new_backend = new_backend  # () -> a fresh backend of the grid
        self._template = None
        self._arrays: GridArrays | None = None
        self._plans: dict[bytes, TopologyPlan | None] = {}

    @property
    def arrays(self) -> GridArrays:
        if self._arrays is None:
            self._arrays = grid_arrays(self._template_backend()._grid)
        return self._arrays

    def _template_backend(self):
        if self._template is None:
            self._template = self._new_backend()
        return self._template

    def plan(self, buses: np.ndarray) -> TopologyPlan | None:
        """The plan of ``buses`` (model order, int32), or None when it has none."""
        key = buses.tobytes()
        try:
            return self._plans[key]
        except KeyError:
            pass
        if len(self._plans) >= _MAX_PLANS:
            self._plans.pop(next(iter(self._plans)))
        template = self._template_backend()
        arrays = self.arrays
        template.reset()
        plan = build_plan(template, buses, arrays)
        self._plans[key] = plan
        return plan
