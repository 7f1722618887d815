"""The scenarios in play, one row per env, as arrays with a cursor per env.

Each env's scenario handler (:mod:`grid_vec.chronics.handler`) reads its scenario from the
source in chunks (bounded, untrusted input stays in :mod:`grid_vec.chronics`). This module
copies a *window* of each env's next steps — its injections, its planned outages and the
time features of its clock — into arrays shared by the batch, env ``i``'s window at rows
``i * WINDOW`` on. A step then moves every env's clocks and cursor with one addition and
reads the injections, outages and time features of all its envs with one gather each: no
Python per env. An env's window is refilled (a copy from its handler's chunk) at a reset,
at a restore, and when its cursor reaches the window's end; until the first env can reach
the end of its window or its ``max_steps``, a step needs no check at all
(:meth:`ScenarioRows.calm_steps`).

A handler stands still between refills: :meth:`ScenarioRows.handler` moves it to its env's
clock before it is read (snapshots, multi-step forecasts).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.scenario import ScenarioSource
from grid_vec.core.observation import time_features_at
from grid_vec.core.rules.outages import OutageRows
from grid_vec.core.rules.storage import StepLength
from grid_vec.core.state import any_true, selector
from grid_vec.grid.backend import InjectionRows
from grid_vec.grid.model import GridModel

WINDOW = 64  # steps of an env's scenario copied at a time
# ... but only this many at a reset: under random actions an episode lasts a few steps, and
# a window filled for nothing cost a reset more than its power flow's Python
FIRST_WINDOW = 16
CALM_NONE = 2**62  # no env running: no step is due for a check


class ScenarioRows:
    """The scenarios of a batch's ``n`` envs: their handlers, clocks and windows.

    Args:
        model: the compiled grid.
        sources: one scenario source per env (the same object may be given for all).
        chunk_size: steps a handler reads at a time (None: the source's own unit).
        max_iter: the most steps of an episode (None: no limit).
        maintenance: whether the scenarios' planned outages are played.
    """

    def __init__(
        self,
        model: GridModel,
        sources: Sequence[ScenarioSource],
        *,
        chunk_size: int | None,
        max_iter: int | None,
        maintenance: bool,
    ) -> None:
        n = self.n = len(sources)
        self.model = model
        self.maintenance = bool(maintenance)
        self.handlers = [
            ScenarioHandler(s, chunk_size=chunk_size, max_iter=max_iter, outages=maintenance)
            for s in sources
        ]
        # the batch's one source when every env has the same (the usual case), else None
        self._one_source = sources[0] if all(s is sources[0] for s in sources) else None
        # each env's step in its scenario, steps played this episode, steps ever played and
        # its cursor (the window row of its current step), as columns of one array: a step
        # moves them all with one addition
        self.clock = np.zeros((n, 4), dtype=np.int64)
        self.step_index, self.played, self.steps, self.cursor = self.clock.T
        self.max_steps = np.zeros(n, dtype=np.int64)  # steps each env may play
        self.step_seconds = np.zeros(n)  # each env's scenario's step duration
        # each env's scenario's start (seconds since the epoch) and step, whole seconds
        self._calendar = np.zeros((n, 2), dtype=np.int64)
        m = 2 * (model.n_load + model.n_gen)
        self._injections = np.zeros((n * WINDOW, m))  # packed as a handler's packed_row
        self._times = np.zeros((n * WINDOW, 6), dtype=np.float32)
        # (maintenance time, duration, hazard) per branch; allocated once an env plans some
        self._outages: np.ndarray | None = None
        self.planned = np.zeros(n, dtype=bool)  # per env: its episode plays outages
        # past each env's last window row read from its scenario, and of time features
        self._window_end = np.arange(n) * WINDOW
        self._times_end = np.arange(n) * WINDOW
        # the one-step forecasts of the windows' steps, copied for an env the first time a
        # look-ahead asks during its window (a step never reads them)
        self._forecasts: np.ndarray | None = None
        self._forecasts_read = np.zeros(n, dtype=bool)

    def __setstate__(self, state: dict) -> None:
        # the clock's columns are views of it: a copy (pickle, deepcopy) makes them again as
        # views of the copied clock, not as arrays of their own
        self.__dict__.update(state)
        self.step_index, self.played, self.steps, self.cursor = self.clock.T

    # --- episodes -----------------------------------------------------------------------

    def reset(
        self,
        rows: np.ndarray,
        rngs: Sequence[np.random.Generator],
        seeds: Sequence[int | None],
        options: Sequence[dict[str, Any]],
        schedules: Sequence[np.ndarray | None],
    ) -> None:
        """Start a new episode of each of ``rows`` (checked reset options: ``scenario_id``,
        ``fast_forward``, ``max_steps``; ``schedules``: explicit maintenance or None), each
        handler reset with its env's seed (None: keep its order) and RNG.

        Raises:
            ValueError, TypeError: an option the scenario cannot play.
        """
        with contextlib.ExitStack() as instant:
            # a source that checks its files at each read checks them once for these resets
            for source in {id(s): s for s in self._sources(rows)}.values():
                one_instant = getattr(source, "one_instant", None)
                if one_instant is not None:
                    instant.enter_context(one_instant())
            for row, rng, seed, opts, schedule in zip(
                rows.tolist(), rngs, seeds, options, schedules, strict=True
            ):
                handler = self.handlers[row]
                if seed is not None:
                    handler.seed(seed)
                handler.reset(
                    scenario_id=opts.get("scenario_id"),
                    fast_forward=opts.get("fast_forward"),
                    max_steps=opts.get("max_steps"),
                    rng=rng,
                    maintenance=schedule,
                )
        self.follow(rows)

    def _sources(self, rows: np.ndarray) -> list[ScenarioSource]:
        """The sources of ``rows``' handlers (one object when the batch shares one)."""
        if self._one_source is not None:
            return [self._one_source]
        return [self.handlers[row].source for row in rows.tolist()]

    def follow(self, rows: np.ndarray) -> None:
        """The clocks and windows of ``rows`` (each handler just reset or restored) set to
        their scenarios' places."""
        handlers = self.handlers
        for row in rows.tolist():
            handler = handlers[row]
            info = handler.info
            seconds = info.step_duration.total_seconds()
            self.step_index[row], self.played[row] = handler.step, handler.steps_played
            self.max_steps[row], self.step_seconds[row] = handler.max_steps, seconds
            self._calendar[row] = _epoch_seconds(info.start), int(seconds)
            self.planned[row] = self.maintenance and handler.has_outages
        self._fill(rows, FIRST_WINDOW)

    def handler(self, row: int) -> ScenarioHandler:
        """Env ``row``'s handler, moved to the env's clock (read it, do not advance it)."""
        handler = self.handlers[row]
        handler.seek(int(self.step_index[row]), int(self.played[row]))
        return handler

    # --- a step -------------------------------------------------------------------------

    def advance(self, rows: np.ndarray) -> None:
        """Move the clocks and cursors of ``rows`` one step on (no check: see
        :meth:`refill_due`)."""
        sel = selector(rows, self.n)
        if type(sel) is slice:  # every row: in place, no copy back
            np.add(self.clock, 1, out=self.clock)
        else:
            self.clock[sel] += 1

    def refill_due(self, rows: np.ndarray) -> None:
        """Refill the windows of those of ``rows`` whose cursor has passed their end."""
        sel = selector(rows, self.n)
        late = np.greater_equal(self.cursor[sel], self._window_end[sel])
        if any_true(late):
            self._fill(rows[late])

    def injections(self, rows: np.ndarray) -> InjectionRows:
        """The injections of the current step of ``rows`` (one gather; windows not due)."""
        block = self._injections.take(self.cursor[selector(rows, self.n)], axis=0)
        return InjectionRows(block, self.model.n_load, self.model.n_gen)

    def forecasts(self, rows: np.ndarray) -> InjectionRows:
        """The forecast made at the current step of each of ``rows`` (distinct) of its next
        step (one gather; an env's window of forecasts is copied from its handler the first
        time a look-ahead asks for it)."""
        unread = rows[~self._forecasts_read[rows]]
        if len(unread):
            self._fill_forecasts(unread)
        assert self._forecasts is not None
        block = self._forecasts.take(self.cursor[rows], axis=0)
        return InjectionRows(block, self.model.n_load, self.model.n_gen)

    def outages(self, rows: np.ndarray) -> OutageRows | None:
        """The outages of the current step of ``rows`` (one gather), None when none of them
        plays any."""
        if not any_true(self.planned) or not any_true(self.planned[rows]):
            return None
        assert self._outages is not None  # filled for every env once one plans outages
        found = self._outages.take(self.cursor[selector(rows, self.n)], axis=0)
        time, duration, hazard = found.astype(np.int64).transpose(1, 0, 2)
        return OutageRows(time, duration, hazard)

    def times(self, rows: np.ndarray, ahead: int = 0) -> np.ndarray:
        """(k, 6) time features of each row's current step (``ahead``: of the step that many
        steps on, fewer than a window's)."""
        sel = selector(rows, self.n)
        pos = self.cursor[sel] + ahead if ahead else self.cursor[sel]
        late = np.greater_equal(pos, self._times_end[sel])
        if any_true(late):  # a window is used up: the next starts at the env's current step
            self._fill(rows[late])
            pos = self.cursor[sel] + ahead
        return self._times.take(pos, axis=0)  # take: cheaper than fancy indexing

    def step_length(self, rows: np.ndarray) -> StepLength:
        """The step lengths of ``rows`` (their scenarios')."""
        return StepLength.of(self.step_seconds[rows])

    def calm_steps(self, rows: np.ndarray) -> int:
        """How many steps the given (running) rows surely play before one reaches its
        max_steps or the end of its window, so that a step needs no check."""
        if not len(rows):
            return CALM_NONE
        left_played = self.max_steps[rows] - self.played[rows]
        left_window = self._window_end[rows] - self.cursor[rows]
        return int(min(left_played.min(), left_window.min())) - 1

    # --- windows ------------------------------------------------------------------------

    def _fill(self, rows: np.ndarray, count: int = WINDOW) -> None:
        """Copy ``count`` (at least 2, at most ``WINDOW``) steps of each row's scenario from
        its current step into its window (fewer injections where its handler's chunk ends
        sooner); the time features in one computation for all the rows (numpy's calendar
        arithmetic costs mostly per call)."""
        start_s, step_s = self._calendar[rows].T
        steps = self.step_index[rows, None] + np.arange(count)
        seconds = start_s[:, None] + steps * step_s[:, None]  # as time_features counts them
        blocks = self._times.reshape(self.n, WINDOW, 6)  # a view: env i's window is [i]
        blocks[rows, :count] = time_features_at(seconds.ravel()).reshape(len(rows), count, 6)
        base = rows * WINDOW
        self.cursor[rows] = base
        self._times_end[rows] = base + count
        self._forecasts_read[rows] = False
        if self._outages is None and any_true(self.planned[rows]):
            self._outages = np.empty((self.n * WINDOW, 3, self.model.n_branch), dtype=np.int32)
            self._outages[:] = _NONE_PLANNED[:, None]
        handlers = self.handlers
        for row, first in zip(rows.tolist(), base.tolist(), strict=True):
            handler = handlers[row]
            handler.seek(int(self.step_index[row]), int(self.played[row]))
            packed, outages = handler.window(count)
            stop = first + len(packed)
            self._injections[first:stop] = packed
            self._window_end[row] = stop
            if self._outages is not None:
                window = self._outages[first:stop]
                window[:] = _NONE_PLANNED[:, None]
                if outages is not None and self.planned[row]:
                    for kind, values in enumerate(outages):
                        if values is not None:
                            window[:, kind] = values

    def _fill_forecasts(self, rows: np.ndarray) -> None:
        """Copy the one-step forecasts of the windows of ``rows`` from their handlers."""
        if self._forecasts is None:
            self._forecasts = np.zeros_like(self._injections)
        for row in rows.tolist():
            first, stop = row * WINDOW, int(self._window_end[row])
            back = int(self.cursor[row]) - first  # steps played since the window was filled
            handler = self.handlers[row]
            handler.seek(int(self.step_index[row]) - back, int(self.played[row]) - back)
            self._forecasts[first:stop] = handler.forecast_window(stop - first)
        self._forecasts_read[rows] = True


# (maintenance time, duration, hazard) of a branch with nothing planned
_NONE_PLANNED = np.array([-1, 0, 0], dtype=np.int32)


@functools.lru_cache(maxsize=4096)
def _epoch_seconds(start: Any) -> int:
    """A scenario's (naive) start as seconds since the epoch, as ``time_features`` counts
    them (numpy's conversion, cached: a reset pays it per env)."""
    return int(np.datetime64(start, "s").astype(np.int64))
