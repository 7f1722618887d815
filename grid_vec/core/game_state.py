"""The game's state: one record of everything a step of N envs changes, env axis first.

:class:`~grid_vec.core.config.GameConfig` is what never changes (the grid, the rules, the
rewards, the action type); :class:`GameState` is the rest, one row per env:

* ``grid``: the grid's rows (:class:`~grid_vec.core.state.BatchState`: topology, the bus bars
  to reconnect on, every counter, timer and cooldown, the dispatch and storage rules' state,
  the last solve's flows) and, in it, the solver's rows (``grid.solver``);
* ``scenarios``: each env's scenario (:class:`~grid_vec.core.scenario_rows.ScenarioRows`:
  clocks, cursors, the windows of its next steps, outages included);
* ``opponent``: each env's attacks and budget (None without an opponent);
* ``simulates``: the simulates each env spent this step and this episode;
* ``setpoints``: the generators' setpoints of each env's last step;
* ``done`` / ``started``: whether each env's episode is over / was ever reset.

A snapshot is a copy of one row of it (:meth:`GameState.at` gives the row,
:func:`grid_vec.core.snapshot.capture` copies it), a restore puts a row back, and a
look-ahead's candidates are gathered rows (:meth:`GameState.copies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from grid_vec.core.rules.opponent import OpponentBatch
from grid_vec.core.scenario_rows import ScenarioRows
from grid_vec.core.simulate_budget import SimulateBudget
from grid_vec.core.state import ROW_FIELDS, BatchState


@dataclass
class GameState:
    """Everything a step of ``n`` envs changes (see the module docstring)."""

    grid: BatchState
    scenarios: ScenarioRows
    opponent: OpponentBatch | None
    simulates: SimulateBudget
    setpoints: np.ndarray  # (n, n_gen) the generators' setpoints of the last step (MW)
    done: np.ndarray  # (n,) bool: the episode is over (or never started)
    started: np.ndarray  # (n,) bool: reset at least once
    # each row's views into the grid's arrays, made on the row's first snapshot (a snapshot
    # then copies them without indexing every array again): derived, not state
    row_views: dict[int, tuple] = field(default_factory=dict, repr=False)

    @classmethod
    def new(
        cls,
        grid: BatchState,
        scenarios: ScenarioRows,
        opponent: OpponentBatch | None,
        n_gen: int,
    ) -> GameState:
        """The state of ``grid.n`` envs never reset: every episode over, nothing spent."""
        n = grid.n
        return cls(
            grid=grid,
            scenarios=scenarios,
            opponent=opponent,
            simulates=SimulateBudget(n),
            setpoints=np.zeros((n, n_gen)),
            done=np.ones(n, dtype=bool),
            started=np.zeros(n, dtype=bool),
        )

    @property
    def n(self) -> int:
        return self.grid.n

    def __getstate__(self) -> dict:
        # the row views are views of this record's arrays: a copy (pickle, deepcopy) would
        # make them copies of the old ones, so they are made again on the copy's first snapshot
        return {**self.__dict__, "row_views": {}}

    def at(self, row: int) -> GameRow:
        """Env ``row``'s row of the record (what a snapshot copies, a restore writes)."""
        return GameRow(self, row)

    def row_copy(self, row: int) -> dict[str, np.ndarray]:
        """A copy of row ``row`` of every :data:`~grid_vec.core.state.ROW_FIELDS` array of
        the grid, by name (the arrays of no element, as of a grid without storage units, are
        one shared read-only empty array each)."""
        views = self.row_views.get(row)
        if views is None:
            views = self.row_views[row] = _row_views(self.grid, row)
        names, arrays, empty = views
        copied = dict(zip(names, map(_copy, arrays), strict=True))
        if empty:
            copied.update(empty)
        return copied

    def copies(self, rows: np.ndarray) -> CandidateRows:
        """Copies of the rows ``rows`` (repeated as often as candidates need) of what a
        look-ahead's turn writes: the grid's rows and the setpoints (one gather each)."""
        return CandidateRows(self.grid.take(rows), self.setpoints[rows])


class GameRow(NamedTuple):
    """One env's row of a :class:`GameState`."""

    game: GameState
    row: int


class CandidateRows(NamedTuple):
    """The rows a look-ahead plays on: copies of its envs' grid rows and setpoints."""

    grid: BatchState
    setpoints: np.ndarray


_copy = np.ndarray.copy  # the method itself: a map over views without an attribute lookup


def _row_views(grid: BatchState, row: int) -> tuple:
    """``(names, views, empties)``: row ``row`` of each grid array with elements (views: the
    grid's arrays are written in place, never replaced), and a read-only empty array for
    each array of none."""
    names, views, empty = [], [], {}
    for name in ROW_FIELDS:
        view = getattr(grid, name)[row, ...]
        if view.size == 0:
            view = np.empty(view.shape, dtype=view.dtype)
            view.flags.writeable = False
            empty[name] = view
        else:
            names.append(name)
            views.append(view)
    return tuple(names), tuple(views), empty
