"""The per-row solver state of the LightSimBackends of a batch, as arrays with a row per backend.

Why: a batch step hands every row's injections to its backend and solves the rows that keep
their topology in one compiled call (:mod:`grid_vec.grid.chord`). With that state held by
each backend object, both took a Python loop over the rows (an attribute read or write per
row and field); held here, they are numpy operations over the rows.

A backend reads and writes its row through properties (``LightSimBackend._V`` and the
others), so its one-row methods are unchanged; a new backend, a copy or an unpickled one has
rows of its own (one row). :func:`rows_of` gathers the backends of a list given to a batch
method into one :class:`SolverRows` the first time, then finds it again by the list's
identity (held weakly when the list is a batch's ``Backends``, so that dropping a batch frees
its backends at once: no cycle). A backend gathered into another list leaves its old rows,
which are then no longer any list's (the next batch call on that list gathers it again), so a
row is only ever read where its backend wrote it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from grid_vec.grid import chord

# the fields of a row: name -> (dtype, its shape after the row axis: a size name or ())
_FIELDS = {
    "V": (np.complex128, "n_bus"),  # the warm start (the last solution)
    "buses": (np.int32, "n_elem"),  # bus bars in model order (a branch off: both ends -1)
    "inj32": (np.float32, "n_inj"),  # loads p, loads q, generators p, as lightsim2grid keeps them
    "storage_p32": (np.float32, "n_storage"),
    "gen_v_sent": (np.float64, "n_gen"),  # the last voltage setpoints sent (kV; NaN: none)
    "gen_v_pu": (np.float64, "n_gen"),  # the setpoints lightsim2grid's grid holds (p.u.)
    "pending": (np.bool_, ()),  # lightsim2grid's grid lacks the last injections
    "solved_by": (np.int8, ()),  # whose was the last solve: BY_LIGHTSIM, BY_CHORD, BY_NEWTON
    "converged": (np.int8, ()),  # the last solve: -1 none yet, 0 diverged, 1 converged
    "route": (np.int64, ()),  # who solves the row next: see route()
    "timings": (np.float64, 5),  # TIMINGS' (seconds; the last, a count of power flows)
}
TIMINGS = ("set_injections", "set_topology", "results", "powerflow", "n_powerflow")
COLUMN = {key: column for column, key in enumerate(TIMINGS)}  # each one's column in a row
_MAX_CHARGES = 64  # sets of rows whose charged time is kept apart before it is added up
LIGHTSIM, LOOK_UP = 0, 1  # routes: lightsim2grid solves the row; the chord, once its plan is found
# who solved a row last: lightsim2grid (its grid's result vectors hold the results), the
# chord (grid_vec.grid.chord) or the batched Newton (grid_vec.grid.newton): their results are
# computed again from the solution
BY_LIGHTSIM, BY_CHORD, BY_NEWTON = 0, 1, 2
NO_PLAN_YET = object()  # a row's plan, not looked up since its topology changed


def route(steady: int, island: bool, plan: Any) -> int:
    """Who solves a row next, as one integer (a batch groups its rows by it in one
    comparison): :data:`LIGHTSIM` until it has had ``chord.STEADY_SOLVES`` converged solves in
    its topology, when a storage unit is islanded, or when its topology has no plan;
    :data:`LOOK_UP` when the chord takes it but its plan is not looked up yet
    (:data:`NO_PLAN_YET`); else the chord with its plan, the plan object's id (the row holds
    the plan: the id stays its own)."""
    if steady < chord.STEADY_SOLVES or island or plan is None:
        return LIGHTSIM
    return LOOK_UP if plan is NO_PLAN_YET else id(plan)


class SolverRows:
    """The solver state of ``n`` backends of one model: an array per field, a row each, and
    their plans (an object per row).

    Args:
        n: the rows.
        sizes: ``n_bus``, ``n_inj``, ``n_storage``, ``n_gen``, ``n_elem``.
    """

    def __init__(self, n: int, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        for name, (dtype, size) in _FIELDS.items():
            shape = (n,) if size == () else (n, sizes[size] if isinstance(size, str) else size)
            setattr(self, name, np.zeros(shape, dtype=dtype))
        self.plan = np.empty(n, dtype=object)
        # the list whose backends these rows are: weakly where it can be (a batch's Backends)
        self.members: Callable[[], list | None] = _nobody
        # time charged to rows and not yet added to their timings: (rows, column) -> [rows,
        # seconds per row, calls]. A batch call charges the same rows every step: adding up
        # here costs a dict update, adding to the array a numpy operation
        self.charges: dict[tuple, list] = {}

    def charge(self, at: slice | np.ndarray, column: int, seconds: float) -> None:
        """Add ``seconds`` to column ``column`` of the timings of the rows ``at`` (a run of
        rows or an index array) and, for the power flow's column, one power flow."""
        key = (at.start, at.stop, column) if type(at) is slice else (at.tobytes(), column)
        entry = self.charges.get(key)
        if entry is None:
            if len(self.charges) >= _MAX_CHARGES:  # many different sets of rows: add them now
                self.settle()
            self.charges[key] = [at, seconds, 1]
        else:
            entry[1] += seconds
            entry[2] += 1

    def settle(self) -> None:
        """Add the time charged so far to the timings (before they are read or copied)."""
        for (*_, column), (at, seconds, calls) in self.charges.items():
            self.timings[at, column] += seconds
            if TIMINGS[column] == "powerflow":
                self.timings[at, column + 1] += calls
        self.charges.clear()

    def copy_row(self, i: int, into: SolverRows, j: int) -> None:
        """Row ``i`` into row ``j`` of ``into`` (rows of the same model)."""
        self.settle()
        for name in (*_FIELDS, "plan"):
            getattr(into, name)[j] = getattr(self, name)[i]

    def take(self, rows: list[int]) -> SolverRows:
        """New rows holding copies of ``rows`` (one gather per field), held by no list."""
        self.settle()
        new = SolverRows.__new__(SolverRows)
        new.sizes, new.charges, new.members = self.sizes, {}, _nobody
        for name in (*_FIELDS, "plan"):
            setattr(new, name, getattr(self, name)[rows])
        return new

    def gathered(self, backends: list) -> None:
        """Record that backend ``i`` of ``backends`` has row ``i`` here (every row)."""
        try:  # no reference from the rows back to their list: no cycle through the backends
            self.members = weakref.ref(backends)
        except TypeError:  # a plain list (a caller's own): held, a cycle the collector breaks
            self.members = lambda: backends

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as plain values (copies), as a pickle carries it."""
        self.settle()
        return {name: np.copy(getattr(self, name)[i]) for name in _FIELDS}

    @classmethod
    def of_row(cls, values: dict[str, Any], sizes: dict[str, int]) -> SolverRows:
        """One row holding ``values`` (:meth:`row`'s), plan not looked up (set by the caller)."""
        rows = cls(1, sizes)
        for name, value in values.items():
            getattr(rows, name)[0] = value
        return rows


def rows_of(backends: list) -> SolverRows:
    """The rows of every backend of ``backends`` (all LightSimBackends of one model), as one
    :class:`SolverRows` in which backend ``i`` has row ``i``: gathered the first time this
    list is given, then found by its identity."""
    rows = backends[0]._rows
    if rows.members() is backends:
        return rows
    shared = SolverRows(len(backends), rows.sizes)
    for j, backend in enumerate(backends):
        old = backend._rows
        old.copy_row(backend._i, shared, j)
        old.members = _nobody  # its list no longer holds every one of its rows
        backend._rows, backend._i = shared, j
    shared.gathered(backends)
    return shared


def _nobody() -> None:
    """The list of rows that no list holds whole."""
    return None


def row_field(name: str, cast: type | None = None) -> property:
    """A backend's property reading and writing its row of field ``name`` of its
    :class:`SolverRows` (``backend._rows``, row ``backend._i``): an array field as a view of
    the row, a flag as ``cast`` of it."""

    def get(backend: Any) -> Any:
        value = getattr(backend._rows, name)[backend._i]
        return value if cast is None else cast(value)

    def put(backend: Any, value: Any) -> None:
        getattr(backend._rows, name)[backend._i] = value

    return property(get, put)


class RowTimings:
    """A backend's timings (``Backend.timings``' keys), read from and written to its row of
    its :class:`SolverRows`: ``timings["powerflow"] += dt`` updates the row."""

    __slots__ = ("_i", "_rows")

    def __init__(self, rows: SolverRows, i: int) -> None:
        self._rows, self._i = rows, i

    def __getitem__(self, key: str) -> float:
        if self._rows.charges:
            self._rows.settle()
        value = float(self._rows.timings[self._i, COLUMN[key]])
        return int(value) if key == "n_powerflow" else value

    def __setitem__(self, key: str, value: float) -> None:
        if self._rows.charges:
            self._rows.settle()
        self._rows.timings[self._i, COLUMN[key]] = value

    def keys(self) -> tuple[str, ...]:
        return TIMINGS

    def __iter__(self):
        return iter(TIMINGS)

    def __len__(self) -> int:
        return len(TIMINGS)

    def items(self) -> list[tuple[str, float]]:
        return [(key, self[key]) for key in TIMINGS]
