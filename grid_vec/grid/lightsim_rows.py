"""The rows of a :class:`~grid_vec.grid.lightsim_batch.LightSimBatch`: every per-row piece of
solver state as an array with a row per env (or look-ahead candidate), and the time charged
to them.

Why: a batch step hands every row's injections over and solves its rows in compiled calls
(:mod:`grid_vec.grid.chord`, :mod:`grid_vec.grid.newton`); with the state in arrays, both are
numpy operations over the rows, a look-ahead's candidates are gathered rows (:meth:`take`),
and nothing is an object per row but lightsim2grid's grids (:attr:`SolverRows.grid`, used
only for the rows the compiled solvers leave to it) and the chord's plans.
"""

from __future__ import annotations

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
    "solved_by": (np.int8, ()),  # whose was the last solve: BY_LIGHTSIM, BY_CHORD, BY_NEWTON
    "converged": (np.int8, ()),  # the last solve: -1 none yet, 0 diverged, 1 converged
    "steady": (np.int8, ()),  # converged solves since the topology or setpoints changed (capped)
    "island": (np.bool_, ()),  # a storage unit on a bus bar no branch reaches
    "route": (np.int64, ()),  # who solves the row next: see routes()
    "plan_no": (np.int64, ()),  # its plan's number (PlanBook.plans), or NOT_LOOKED_UP
    "timings": (np.float64, 5),  # TIMINGS' (seconds; the last, a count of power flows)
    # the row's lightsim2grid grid is brought up to date only when it is used: what it holds
    # (its topology in lightsim2grid's order, its static generators' bus bars), what it lacks
    # (the last injections, setpoints, storage setpoints, a solver reset), and whether another
    # row holds the same grid (copy on write)
    "grid_topo": (np.int32, "n_topo"),
    "grid_sgen_bus": (np.int32, "n_sgen"),
    "pending": (np.bool_, ()),
    "gen_v_stale": (np.bool_, ()),
    "storage_pending": (np.bool_, ()),
    "reset_pending": (np.bool_, ()),
    "grid_shared": (np.bool_, ()),
}
# the fields holding an object per row: the chord's plan (or NO_PLAN_YET, or None), the
# lightsim2grid grid, the views into its result vectors (None until read)
_OBJECTS = ("plan", "grid", "views")
TIMINGS = ("set_injections", "set_topology", "results", "powerflow", "n_powerflow")
COLUMN = {key: column for column, key in enumerate(TIMINGS)}  # each one's column in a row
_MAX_CHARGES = 64  # sets of rows whose charged time is kept apart before it is added up
LIGHTSIM, LOOK_UP = 0, 1  # routes: lightsim2grid solves the row; the chord, once its plan is found
# who solved a row last: lightsim2grid (its grid's result vectors hold the results), the
# chord (grid_vec.grid.chord) or the batched Newton (grid_vec.grid.newton): their results are
# computed again from the solution
BY_LIGHTSIM, BY_CHORD, BY_NEWTON = 0, 1, 2
NO_PLAN_YET = object()  # a row's plan, not looked up since its topology changed
NOT_LOOKED_UP = -2  # ... and its plan number (chord.NO_PLAN: looked up, there is none)
_FIRST_PLAN_ROUTE = 2  # the route of the plan numbered 0


def routes(steady: np.ndarray, island: np.ndarray, plan_no: np.ndarray) -> np.ndarray:
    """Who solves each row next, as one integer (a batch groups its rows by it in one
    comparison): :data:`LIGHTSIM` (meaning: not the chord) until it has had
    ``chord.STEADY_SOLVES`` converged solves in its topology, when a storage unit is islanded,
    or when its topology has no plan; :data:`LOOK_UP` when the chord takes it but its plan is
    not looked up yet (:data:`NOT_LOOKED_UP`); else the chord with its plan, the plan's
    number moved past those two. Arrays of rows, or one row's scalars (a restore's): written
    with operators only, which cost a scalar far less than ``np.where``."""
    chorded = (steady >= chord.STEADY_SOLVES) & ~island & (plan_no != chord.NO_PLAN)
    # LIGHTSIM is 0, NOT_LOOKED_UP + _FIRST_PLAN_ROUTE is 0 and LOOK_UP 1: a plan not looked
    # up yet gets 0 + 1, a plan numbered k gets k + 2
    return chorded * (plan_no + _FIRST_PLAN_ROUTE + (plan_no == NOT_LOOKED_UP))


class SolverRows:
    """The solver state of ``n`` rows of one model: an array per field, a row each, and the
    objects of :data:`_OBJECTS` (an object array each).

    Args:
        n: the rows.
        sizes: ``n_bus``, ``n_inj``, ``n_storage``, ``n_gen``, ``n_elem``, ``n_topo``,
            ``n_sgen``.
    """

    def __init__(self, n: int, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        for name, (dtype, size) in _FIELDS.items():
            shape = (n,) if size == () else (n, sizes[size] if isinstance(size, str) else size)
            setattr(self, name, np.zeros(shape, dtype=dtype))
        for name in _OBJECTS:
            setattr(self, name, np.full(n, None, dtype=object))
        # time charged to rows and not yet added to their timings: (rows, column) -> [rows,
        # seconds per row, calls]. A batch call charges the same rows every step: adding up
        # here costs a dict update, adding to the array a numpy operation
        self.charges: dict[tuple, list] = {}

    def __len__(self) -> int:
        return len(self.V)

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

    def take(self, rows: np.ndarray) -> SolverRows:
        """New rows holding copies of ``rows`` (one gather per field; the grids shared: the
        rows taken and their copies all copy theirs before they change it)."""
        self.settle()
        new = SolverRows.__new__(SolverRows)
        new.sizes, new.charges = self.sizes, {}
        for name in (*_FIELDS, "plan", "grid"):
            setattr(new, name, getattr(self, name)[rows])
        new.views = np.full(len(new.V), None, dtype=object)  # views of the grids' own vectors
        self.grid_shared[rows] = True
        new.grid_shared[:] = True
        return new

    def state(self) -> dict[str, np.ndarray]:
        """Every field but the plans and views (copies), as a pickle carries them."""
        self.settle()
        return {name: np.copy(getattr(self, name)) for name in (*_FIELDS, "grid")}

    @classmethod
    def of_state(cls, values: dict[str, np.ndarray], sizes: dict[str, int]) -> SolverRows:
        """The rows :meth:`state` gave; plans not looked up, views not read."""
        rows = cls(len(values["V"]), sizes)
        for name, value in values.items():
            setattr(rows, name, value)
        rows.plan[:], rows.plan_no[:] = NO_PLAN_YET, NOT_LOOKED_UP
        rows.route[:] = routes(rows.steady, rows.island, rows.plan_no)
        return rows


class RowTimings:
    """A row's timings (``Backend.timings``' keys), read from and written to its row of its
    :class:`SolverRows`: ``timings["powerflow"] += dt`` updates the row."""

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
