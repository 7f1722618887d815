"""Batched Newton power flows of rows in any topology, on the grid's union layout.

Why: a row whose topology changed (an agent's action, a reset, a look-ahead candidate) was
solved by its own lightsim2grid grid, one ``ac_pf`` and one symbolic analysis of a new sparsity
pattern each, with a Python round trip per row. Here every such row of a batch is solved in
one compiled call (``grid_vec/grid/newton_kernel.c``), with no object per row.

How (and why each choice):

- **The union layout.** Every bus bar of every substation has a slot (lightsim2grid's full
  bus order: bus bar ``k`` of substation ``s`` is bus ``s + (k - 1) n_sub``), and the bus
  admittance matrix one sparsity pattern holding every entry any topology can fill (each
  branch end on any bus bar of its substation). A row's topology only decides the values.
- **One symbolic analysis per grid.** The Newton Jacobian has an angle and a magnitude unknown
  per bus bar, on the pattern the admittances give; its elimination order (minimum degree on
  the substations, a substation's unknowns side by side) and the LU fill of that order are
  found once, here. A row leaves out what it does not solve for (a bus bar out of the power
  flow, the slack, a PV bus' magnitude) as unit rows and columns, so each factorisation is
  that of the row's own reduced Jacobian, numerically, in the fixed order, skipping the zero
  multipliers the unit columns give.
- **lightsim2grid's Newton, row by row.** The same unknowns, first guess (the row's warm start,
  PV and slack magnitudes at their setpoints), stopping test (max |mismatch| < ``tol`` p.u.),
  iteration limit and results: iterates equal lightsim2grid's up to rounding (the LU order
  differs), so voltages agree to far below the tolerance and the divergence verdicts agree.
  Nothing a row computes depends on the other rows.
- **Generators holding one bus bar's voltage** share its reactive need in proportion to
  their reactive ranges (lightsim2grid's rule when they have no sharing keys).
- **What it leaves to lightsim2grid** (the row's iteration count is :data:`REFUSED`): such
  generators with different setpoints (lightsim2grid refuses them) or no range, the slack
  off, a bus bar in the power flow that the slack does not reach (lightsim2grid keeps a bus
  bar holding only a shunt in the power flow, where its Jacobian is singular: it diverges),
  a pivot below :data:`PIVOT_FLOOR` of its row in the fixed order.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from grid_vec.grid import newton_kernel  # compiled from grid_vec/grid/newton_kernel.c
from grid_vec.grid.chord import TOLERANCE, grid_arrays
from grid_vec.grid.model import GridModel

REFUSED, DIVERGED = -2, -1  # a row's iteration count when the kernel did not solve it
# lightsim2grid keeps a voltage setpoint that moves by no more than this (p.u.)
SETPOINT_TOLERANCE = 1e-7
PIVOT_FLOOR = 1e-12  # relative to its row's largest entry: below it, lightsim2grid solves
# A call of at least this much work, rows x bus bars (a look-ahead's candidates: 128 rows of
# the 14-bus grids' 28 bus bars, 16 of a 118-bus grid's; a step's topology changes are a few
# rows), is shared out among threads, one run of rows each: the kernel releases the GIL and a
# row's arithmetic never reads another row, so the split changes no bit of any result
PARALLEL_WORK = 128 * 28


def _threads_from_env() -> int:
    """The threads a large call may use: ``GRID_VEC_SOLVER_THREADS`` (default 2), at most the
    CPUs this process may run on (1: every call in the calling thread).

    Raises:
        ValueError: the variable is not a positive integer.
    """
    text = os.environ.get("GRID_VEC_SOLVER_THREADS", "2")
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise ValueError(f"GRID_VEC_SOLVER_THREADS must be a positive integer, got {text!r}")
    return min(int(text), len(os.sched_getaffinity(0)))


_THREADS = _threads_from_env()
_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads were not copied, so a job handed to its
    copy would never run (the child would wait on it for ever); the child starts its own."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


@dataclass(frozen=True)
class UnionLayout:
    """One grid's union layout: what every row of every topology shares, packed for the
    kernel (:func:`build_layout`)."""

    n_bus: int  # bus bars: n_busbar * n_sub
    n_elem: int  # model order: loads, generators, branch origins, extremities, storage units
    n_flows: int
    nnz_factors: int  # the Jacobian's LU entries (filled pattern), per row
    gen_v_pu: np.ndarray  # (n_gen,) the voltage setpoints the grid starts with (p.u.)
    packed: tuple[np.ndarray, np.ndarray, np.ndarray]


def build_layout(model: GridModel, grid, *, max_iter: int) -> UnionLayout:
    """The union layout of ``model``, whose lightsim2grid grid is ``grid`` (an ``LSGrid``, for
    its branch admittances, shunts, bus voltages, reactive ranges and setpoints, the voltage
    setpoints it starts with: give a new grid of the model; it is not changed).

    Args:
        model: the grid.
        grid: an ``LSGrid`` of ``model``.
        max_iter: Newton iterations before a row diverges (lightsim2grid's ``max_iter``).

    Returns:
        The layout.
    """
    arrays = grid_arrays(grid)
    n_sub, n_bus = model.n_sub, arrays.n_bus
    n_bar = n_bus // n_sub
    bars = np.arange(n_bar)
    # the admittance pattern: every diagonal, and each branch's ends on any pair of bus bars
    a = (model.branch_or_sub[:, None] + bars[None] * n_sub).repeat(n_bar, axis=1).ravel()
    b = np.tile(model.branch_ex_sub[:, None] + bars[None] * n_sub, (1, n_bar)).ravel()
    rows = np.concatenate([np.arange(n_bus), a, b])
    cols = np.concatenate([np.arange(n_bus), b, a])
    key = np.unique(rows * n_bus + cols)
    y_rows, y_cols = key // n_bus, key % n_bus
    y_indptr = np.zeros(n_bus + 1, dtype=np.int64)
    np.cumsum(np.bincount(y_rows, minlength=n_bus), out=y_indptr[1:])
    y_diag = np.searchsorted(key, np.arange(n_bus) * (n_bus + 1))
    # the Jacobian's unknowns: bus i's angle 2 i, its magnitude 2 i + 1, ordered substation by
    # substation (minimum degree), a substation's bus bars side by side
    order = _minimum_degree(n_sub, model.branch_or_sub, model.branch_ex_sub)
    unknowns = np.array(
        [2 * (s + k * n_sub) + u for s in order for k in range(n_bar) for u in (0, 1)]
    )
    perm = np.empty(2 * n_bus, dtype=np.int64)  # an unknown's position in the order
    perm[unknowns] = np.arange(2 * n_bus)
    pattern = [set() for _ in range(2 * n_bus)]
    for i, j in zip(y_rows.tolist(), y_cols.tolist(), strict=True):
        for u in (2 * i, 2 * i + 1):
            for v in (2 * j, 2 * j + 1):
                pattern[perm[u]].add(int(perm[v]))
    filled = _fill(pattern)
    j_indptr = np.zeros(2 * n_bus + 1, dtype=np.int64)
    np.cumsum([len(row) for row in filled], out=j_indptr[1:])
    j_indices = np.concatenate([np.array(row, dtype=np.int64) for row in filled])
    j_key = np.repeat(np.arange(2 * n_bus), np.diff(j_indptr)) * (2 * n_bus) + j_indices
    j_diag = np.searchsorted(j_key, np.arange(2 * n_bus) * (2 * n_bus + 1))

    def at(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.searchsorted(j_key, perm[u] * (2 * n_bus) + perm[v])

    y_to_j = np.stack(
        [
            at(2 * y_rows, 2 * y_cols),
            at(2 * y_rows, 2 * y_cols + 1),
            at(2 * y_rows + 1, 2 * y_cols),
            at(2 * y_rows + 1, 2 * y_cols + 1),
        ],
        axis=1,
    ).ravel()
    shunt = np.zeros(n_bus, dtype=np.complex128)
    has_shunt = np.zeros(n_bus, dtype=np.int64)  # grid_vec never moves a shunt
    for unit in grid.get_shunts():  # a shunt's (p + j q) drawn at 1 p.u.: Y = (p - j q) / sn
        if unit.connected:
            shunt[unit.bus_id] += (unit.target_p_mw - 1j * unit.target_q_mvar) / arrays.sn_mva
            has_shunt[unit.bus_id] = 1
    is_sgen = model.gen_kind == "sgen"
    q_fixed = np.zeros(model.n_gen)
    q_fixed[is_sgen] = [unit.target_q_mvar for unit in grid.get_static_generators()]
    q_range = np.zeros(model.n_gen)  # what shares a bus' reactive need among its PV generators
    q_range[~is_sgen] = [unit.max_q_mvar - unit.min_q_mvar for unit in grid.get_generators()]
    gen_v_pu = np.zeros(model.n_gen)
    gen_v_pu[~is_sgen] = [unit.target_vm_pu for unit in grid.get_generators()]
    slack = np.flatnonzero(model.gen_kind == "slack")
    n_elem = model.n_load + model.n_gen + 2 * model.n_branch + model.n_storage
    header = [
        n_sub, n_bus, model.n_branch, model.n_load, model.n_gen, model.n_storage, key.size,
        2 * n_bus, j_indices.size, int(slack[0]) if slack.size == 1 else -1, max_iter, n_elem,
    ]  # fmt: skip
    ints = np.concatenate(
        [
            header,
            y_indptr,
            y_cols,
            y_diag,
            model.branch_or_sub,
            model.branch_ex_sub,
            model.load_sub,
            model.gen_sub,
            model.storage_sub,
            (~is_sgen).astype(np.int64),
            has_shunt,
            perm,
            unknowns,  # the unknown at each position of the order (perm's inverse)
            j_indptr,
            j_indices,
            j_diag,
            y_to_j,
        ]
    ).astype(np.int64)
    # lightsim2grid's stopping test reads the mismatch in MW (measured: its iteration counts
    # agree with max |mismatch| < tol / sn_mva p.u., not with tol p.u.)
    tol_pu = TOLERANCE / arrays.sn_mva
    reals = np.concatenate(
        [[arrays.sn_mva, tol_pu, PIVOT_FLOOR], arrays.bus_vn_kv, q_fixed, q_range]
    ).astype(np.float64)
    cplx = np.concatenate([arrays.y11, arrays.y12, arrays.y21, arrays.y22, shunt])
    n_flows = 8 * model.n_branch + 3 * model.n_load + 3 * model.n_gen + 4 * model.n_storage
    return UnionLayout(
        n_bus=n_bus, n_elem=n_elem, n_flows=n_flows, nnz_factors=int(j_indices.size),
        gen_v_pu=gen_v_pu, packed=(ints, reals, cplx.astype(np.complex128)),
    )  # fmt: skip


def _minimum_degree(n: int, a: np.ndarray, b: np.ndarray) -> list[int]:
    """An elimination order of the ``n`` nodes of the graph with edges ``a[i]-b[i]``: the node
    of least degree first, its neighbours then joined (ties: the smallest node)."""
    neighbours = [set() for _ in range(n)]
    for i, j in zip(a.tolist(), b.tolist(), strict=True):
        if i != j:
            neighbours[i].add(j)
            neighbours[j].add(i)
    left, order = set(range(n)), []
    while left:
        node = min(left, key=lambda k: (len(neighbours[k]), k))
        order.append(node)
        left.remove(node)
        near = neighbours[node]
        for k in near:
            neighbours[k] |= near
            neighbours[k].discard(k)
            neighbours[k].discard(node)
    return order


def _fill(pattern: list[set[int]]) -> list[list[int]]:
    """The pattern of the LU factors of a matrix of structurally symmetric ``pattern`` (row
    sets, diagonal included) eliminated in index order, each row's columns sorted."""
    rows = [set(row) for row in pattern]
    for k in range(len(rows)):
        later = sorted(j for j in rows[k] if j > k)
        for i in later:  # eliminating k joins every later neighbour of k to the others
            rows[i].update(later)
    return [sorted(row) for row in rows]


def held_setpoints(held: np.ndarray, sent: np.ndarray) -> np.ndarray:
    """The voltage setpoints (p.u.) a grid holds after ``sent`` reach it when it held ``held``:
    lightsim2grid stores a setpoint as float32, and leaves one that moves by
    :data:`SETPOINT_TOLERANCE` or less as it was; the kernel must solve what it would."""
    stored = sent.astype(np.float32).astype(np.float64)
    return np.where(np.abs(held - stored) > SETPOINT_TOLERANCE, stored, held)


def solve_rows(
    layout: UnionLayout,
    buses: np.ndarray,
    injections: np.ndarray,
    storage_p: np.ndarray,
    gen_v_pu: np.ndarray,
    V: np.ndarray,
    out: np.ndarray,
    *,
    solve: bool = True,
) -> np.ndarray:
    """Newton-solve rows, each in its own topology, from its own first guess; write the
    solved rows' solutions and results.

    Args:
        layout: the grid's union layout.
        buses: ``(k, n_elem)`` int32 bus bars (1, 2… or -1) in model order: loads, generators,
            branch origins, branch extremities, storage units. A branch is in service when
            both of its ends are on a bus bar.
        injections: ``(k, 2 n_load + n_gen)`` float64: load p, load q, generator p (MW, MVAr),
            as lightsim2grid stores them (float32 values).
        storage_p: ``(k, n_storage)`` float64, MW in load convention.
        gen_v_pu: ``(k, n_gen)`` float64 voltage setpoints, p.u. of the generator's bus.
        V: ``(k, n_bus)`` complex first guesses; a solved row's solution is written back (zero
            at the bus bars out of the power flow).
        out: ``(k, n_flows)`` float64, written in :func:`~grid_vec.grid.backend.flow_slices`'
            layout and grid_vec's units for the solved rows.
        solve: False when ``V`` holds the rows' solutions already (this function's): only
            their results are written (every row's iteration count is then 0).

    Returns:
        ``(k,)`` int64: each row's iterations, :data:`DIVERGED`, or :data:`REFUSED` (a row
        for lightsim2grid); ``V`` and ``out`` rows of those are left as they were.
    """
    iters = np.empty(V.shape[0], dtype=np.int64)
    k = V.shape[0]
    if k * layout.n_bus < PARALLEL_WORK or _THREADS == 1 or not solve:
        _kernel(layout, buses, injections, storage_p, gen_v_pu, V, out, iters, solve)
        return iters
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(_THREADS - 1, thread_name_prefix="grid_vec-newton")
    cuts = np.linspace(0, k, _THREADS + 1).astype(int).tolist()
    parts = (buses, injections, storage_p, gen_v_pu, V, out, iters)
    runs = list(itertools.pairwise(cuts))
    # the calling thread solves the last run itself while the pool's threads solve the others
    jobs = [
        _pool.submit(_kernel, layout, *(part[a:b] for part in parts), solve) for a, b in runs[:-1]
    ]
    a, b = runs[-1]
    _kernel(layout, *(part[a:b] for part in parts), solve)
    for job in jobs:
        job.result()
    return iters


def _kernel(layout, buses, injections, storage_p, gen_v_pu, V, out, iters, solve) -> None:
    """One kernel call on rows held in C-contiguous arrays (runs of rows of them too)."""
    newton_kernel.solve(
        *layout.packed, buses, injections, storage_p, gen_v_pu, V, out, iters, V.shape[0], solve
    )
