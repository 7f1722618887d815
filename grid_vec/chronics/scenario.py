"""What the environment reads from any scenario source (synthetic or grid2op-format folder).

A scenario is a time series at a fixed resolution (5 minutes by default) of every injection,
in :class:`~grid_vec.grid.model.GridModel` element order, plus the forecast of the next step
(and, from folders whose files forecast several steps ahead, the forecasts of the later ones).
The environment only ever sees :class:`ScenarioInfo` and :class:`Injections`, never which
source produced them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields, replace
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class ScenarioInfo:
    """Identity and extent of one scenario."""

    id: int  # index of the scenario in its source (stable, not the shuffled position)
    name: str
    start: dt.datetime
    step_duration: dt.timedelta
    length: int  # number of steps in the scenario


@dataclass(frozen=True)
class Injections:
    """Injections over a window of steps, arrays of shape ``(steps, n_elements)``, float64.

    ``load_p``/``load_q`` in MW/MVAr per load, ``gen_p`` in MW and ``gen_v`` in kV per
    generator (slack included: its ``gen_p`` is a target the slack may deviate from).
    The ``*_forecast`` arrays hold, at row ``t``, the forecast made at step ``t`` of step
    ``t + 1``.

    The line outages the scenario plans (:mod:`grid_vec.chronics.outages`), int32
    ``(steps, n_branch)``, None when it plans none: ``maintenance_time`` (steps before the
    next maintenance, 0 while it lasts, -1: none planned), ``maintenance_duration`` (steps
    it lasts; while it lasts, the steps left) and ``hazard_duration`` (while a hazard lasts,
    the steps left, else 0).

    The forecasts of later steps, float64 ``(steps, H - 1, n_elements)``, None when the source
    forecasts one step ahead only: ``*_ahead[t, j]`` is the forecast made at step ``t`` of
    step ``t + 2 + j`` (horizons 2 to ``H``: grid2op's ``h_forecast`` beyond the first).

    ``block``, float64 ``(steps, 2 * n_load + 2 * n_gen)``: when not None, ``load_p``,
    ``load_q``, ``gen_p`` and ``gen_v`` are its column views, in that order (see
    :meth:`packed`), so that a step's four are one row a batch gathers in one call. It is
    memory layout, not data: :meth:`arrays` leaves it out.
    """

    load_p: np.ndarray
    load_q: np.ndarray
    gen_p: np.ndarray
    gen_v: np.ndarray
    load_p_forecast: np.ndarray
    load_q_forecast: np.ndarray
    gen_p_forecast: np.ndarray
    gen_v_forecast: np.ndarray
    maintenance_time: np.ndarray | None = None
    maintenance_duration: np.ndarray | None = None
    hazard_duration: np.ndarray | None = None
    load_p_ahead: np.ndarray | None = None
    load_q_ahead: np.ndarray | None = None
    gen_p_ahead: np.ndarray | None = None
    gen_v_ahead: np.ndarray | None = None
    block: np.ndarray | None = None

    def __len__(self) -> int:
        return self.load_p.shape[0]

    def window(self, start: int, stop: int) -> Injections:
        """Steps ``[start, stop)`` as views (no copy)."""
        block = None if self.block is None else self.block[start:stop]
        return Injections(
            *(None if a is None else a[start:stop] for a in self._fields()), block=block
        )

    def packed(self) -> Injections:
        """These injections with ``load_p``, ``load_q``, ``gen_p`` and ``gen_v`` copied side by
        side into one ``block`` and replaced by its column views (self when they already
        are). The values are the same; only their layout changes."""
        if self.block is not None:
            return self
        now = [getattr(self, name) for name in NOW_FIELDS]
        block = np.concatenate(now, axis=1)
        edges = np.cumsum([0] + [a.shape[1] for a in now]).tolist()
        bounds = zip(NOW_FIELDS, edges[:-1], edges[1:], strict=True)
        views = {name: block[:, a:b] for name, a, b in bounds}
        return replace(self, **views, block=block)

    def arrays(self) -> list[np.ndarray]:
        """Every array, in field order (the outage fields only when present)."""
        return [a for a in self._fields() if a is not None]

    def _fields(self) -> list[np.ndarray | None]:
        return [getattr(self, name) for name in DATA_FIELDS]  # a reset reads a window

    def read_only(self) -> Injections:
        """Make every array read-only (for injections shared by several envs); returns self."""
        for array in self.arrays():
            array.flags.writeable = False
        if self.block is not None:
            self.block.flags.writeable = False
        return self

    def row(self, t: int) -> Injections:
        """Step ``t`` of the window as 1-D views (no copy)."""
        block = None if self.block is None else self.block[t]
        return Injections(*(None if a is None else a[t] for a in self._fields()), block=block)


# the data fields (``block`` is their layout); the four of a step, in the block's order
DATA_FIELDS = tuple(f.name for f in fields(Injections) if f.name != "block")
NOW_FIELDS = ("load_p", "load_q", "gen_p", "gen_v")

# the float64 injection fields (always there), the optional int32 outage fields, and the
# optional float64 forecasts of later steps (all four or none)
OUTAGE_FIELDS = ("maintenance_time", "maintenance_duration", "hazard_duration")
AHEAD_FIELDS = ("load_p_ahead", "load_q_ahead", "gen_p_ahead", "gen_v_ahead")
INJECTION_FIELDS = tuple(f for f in DATA_FIELDS if f not in OUTAGE_FIELDS + AHEAD_FIELDS)


@runtime_checkable
class ScenarioSource(Protocol):
    """Anything the :class:`~grid_vec.chronics.handler.ScenarioHandler` can read scenarios from.

    Implementations must pickle small (no big arrays held eagerly), so that an env can be
    rebuilt in a worker process.
    """

    def __len__(self) -> int:
        """Number of scenarios the handler cycles through."""
        ...

    @property
    def names(self) -> list[str]:
        """Scenario names, indexed by scenario id."""
        ...

    def info(self, scenario_id: int) -> ScenarioInfo:
        """Identity and extent of a scenario; ValueError for an id the source does not have."""
        ...

    def read(self, scenario_id: int, start: int, stop: int) -> Injections:
        """Steps ``[start, stop)`` of a scenario, with their forecasts."""
        ...
