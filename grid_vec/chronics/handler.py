"""Which scenario an episode plays and where it stands in it.

The handler owns the scenario order (shuffled by seed, optionally filtered by name), the
pending ``set_id``, fast-forward and episode length limits, and reads the source
``chunk_size`` steps at a time (by default, the source's ``preferred_chunk`` if it has one)
so that a long scenario never has to sit in memory, or be generated, whole.

Beyond the next step's forecast, it serves the forecast of any horizon the source offers
(:meth:`ScenarioHandler.rows_ahead`): a folder's multi-horizon files, or, for a source whose
``forecasts_chain`` is true (the synthetic scenarios), the one-step forecast made ``h - 1``
steps later.

It also serves the line outages the scenario plans (maintenance, hazards: see
:mod:`grid_vec.chronics.outages`), read with the injections, or, for a source whose
``maintenance_plan`` gives one, drawn at each reset from ``(seed, scenario id)`` and laid out
chunk by chunk. ``outages=False`` serves none (grid2op's scenario classes without
maintenance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from grid_vec.chronics.outages import Events, events_of, outage_window
from grid_vec.chronics.scenario import Injections, ScenarioInfo, ScenarioSource

# load_p, load_q, gen_p, gen_v of one step (empty before the first read)
Rows = tuple[np.ndarray, ...]
# the chunk's end while none is read (before a reset, after a pickle): never reached, the
# next read loads the chunk of its step
_UNREAD = 2**62


def _never(scenario_id: int) -> bool:
    """``reads_whole`` of a source that does not say: read what is needed."""
    return False


def _check_limit(arg: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{arg} must be an int or None, got {value!r}")
    if value < 1:
        raise ValueError(f"{arg} must be >= 1 or None, got {value}")
    return int(value)


class EpisodeState(NamedTuple):
    """Where a handler stands: its episode (which scenario, the step, the limits, the
    maintenance drawn for it) and what the next reset plays (scenario order and cursor).

    A named tuple, immutable as a frozen dataclass: a snapshot builds one each time, and a
    frozen dataclass costs about 0.3 µs a field to build.
    """

    scenario_id: int
    step: int  # the current step in the scenario
    steps_played: int
    max_steps: int
    chunk_start: int  # the first step of the chunk read (where the next reads fall)
    explicit: bool  # the maintenance was given to reset
    maintenance: Events | None  # this episode's drawn (or explicit) maintenance
    seed: int | None  # the scenario order's
    cursor: int  # the next reset's position in that order
    pending_id: int | None  # set_id's scenario for the next reset


class ScenarioHandler:
    """Cycles through a source's scenarios and serves one step at a time to the env.

    After ``reset``, ``current()`` is the injections of the initial step; each ``advance()``
    moves one step and returns False (without moving) once the episode cannot go further:
    end of the scenario, ``max_iter`` or the reset's ``max_steps``.
    """

    def __init__(
        self,
        source: ScenarioSource,
        *,
        chunk_size: int | None = None,
        max_iter: int | None = None,
        outages: bool = True,
    ) -> None:
        if not isinstance(source, ScenarioSource):
            raise TypeError(f"source must implement ScenarioSource, got {type(source).__name__}")
        if len(source) < 1:
            raise ValueError("source has no scenario")
        self.source = source
        self.chunk_size = _check_limit("chunk_size", chunk_size)
        self.max_iter = _check_limit("max_iter", max_iter)
        self.max_fast_forward: int | None = None
        self._seed: int | None = None
        self._filter: Callable[[str], bool] | None = None
        self._order = np.arange(len(source))
        self._cursor = 0
        self._pending_id: int | None = None
        self._info: ScenarioInfo | None = None
        self._step = 0
        self._steps_played = 0
        self._max_steps = 0
        self._chunk: Injections | None = None
        self._chunk_start = 0
        self._chunk_stop = _UNREAD  # the step after the chunk's last (advance() reads on)
        # the chunk's (load_p, load_q, gen_p, gen_v), now and forecast: indexed per step
        self._now: Rows = ()
        self._ahead: Rows = ()
        # the chunk's forecasts of horizons 2 to H, (steps, H - 1, n) each; () when none
        self._later: Rows = ()
        # the last read past the chunk for a chained horizon: (first step, its injections)
        self._past_chunk: tuple[int, Injections] | None = None
        self.outages = bool(outages)
        self._drawn: Events | None = None  # this episode's random (or explicit) maintenance
        self._explicit = False  # the episode's maintenance was given to reset
        # the chunk's (maintenance_time, maintenance_duration, hazard_duration); None: none
        self._outages: tuple[np.ndarray | None, ...] | None = None

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_chunk"] = None  # re-read on demand: keeps the pickle small
        state["_chunk_stop"] = _UNREAD
        state["_now"] = state["_ahead"] = state["_later"] = ()
        state["_past_chunk"] = None
        state["_outages"] = None
        return state

    # --- scenario selection ---------------------------------------------------------

    def seed(self, seed: int | None) -> None:
        """Shuffle the scenario order deterministically from ``seed`` (None: natural order)."""
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
        ):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        self._seed = None if seed is None else int(seed)
        self._rebuild_order()

    def set_filter(self, fn: Callable[[str], bool]) -> None:
        """Keep only the scenarios whose name ``fn`` accepts; restarts the cycle."""
        if not callable(fn):
            raise TypeError(f"filter must be callable over scenario names, got {fn!r}")
        kept = [bool(fn(name)) for name in self.source.names]
        if not any(kept):
            raise ValueError(f"filter {fn!r} rejects all {len(kept)} scenarios")
        self._filter = fn
        self._rebuild_order()

    def _rebuild_order(self) -> None:
        n = len(self.source)
        if self._seed is None:
            order = np.arange(n)
        else:
            order = np.random.default_rng(self._seed).permutation(n)
        if self._filter is not None:
            names = self.source.names
            order = np.array([i for i in order if self._filter(names[i])], dtype=np.int64)
        self._order = order
        self._cursor = 0

    @property
    def order(self) -> np.ndarray:
        """Scenario ids in the order successive resets play them (after shuffle and filter)."""
        return self._order.copy()

    def set_id(self, id_or_name: int | str) -> None:
        """The next ``reset`` (only) plays this scenario, given by id or name."""
        self._pending_id = self._resolve(id_or_name)

    def _resolve(self, id_or_name: int | str) -> int:
        if isinstance(id_or_name, str):
            names = self.source.names
            if id_or_name not in names:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                raise ValueError(f"unknown scenario name {id_or_name!r}; known: {shown}")
            return names.index(id_or_name)
        if isinstance(id_or_name, bool) or not isinstance(id_or_name, (int, np.integer)):
            raise TypeError(f"scenario must be an int id or a str name, got {id_or_name!r}")
        self.source.info(int(id_or_name))  # the source validates its own id range
        return int(id_or_name)

    def set_chunk_size(self, n: int | None) -> None:
        """Steps read from the source at a time from the next read on (None: whole scenario)."""
        self.chunk_size = _check_limit("chunk_size", n)

    def set_max_fast_forward(self, n: int | None) -> None:
        """Resets without an explicit ``fast_forward`` skip a random number of steps in
        ``[0, n)`` (grid2op's ``set_ff``: episodes that do not all start at midnight)."""
        self.max_fast_forward = _check_limit("max_fast_forward", n)

    def set_max_iter(self, n: int | None) -> None:
        """Maximum steps per episode, from the next reset on (None: no limit)."""
        self.max_iter = _check_limit("max_iter", n)

    # --- episode --------------------------------------------------------------------

    def reset(
        self,
        *,
        scenario_id: int | str | None = None,
        fast_forward: int | None = None,
        max_steps: int | None = None,
        rng: np.random.Generator | None = None,
        maintenance: np.ndarray | None = None,
    ) -> ScenarioInfo:
        """Start an episode at step ``fast_forward`` of the chosen scenario.

        ``fast_forward=None``: step 0, or with :meth:`set_max_fast_forward` a step drawn from
        ``rng`` in ``[0, max_fast_forward)`` (bounded by the scenario's length).
        ``maintenance``: an explicit ``(steps, n_lines)`` bool schedule (row ``t``: the lines
        in maintenance at step ``t`` of the scenario; steps past its end: none) replacing the
        scenario's own maintenance for this episode.
        """
        if scenario_id is not None:
            sid = self._resolve(scenario_id)
        elif self._pending_id is not None:
            sid = self._pending_id
        else:
            sid = int(self._order[self._cursor])
            self._cursor = (self._cursor + 1) % len(self._order)
        max_steps = _check_limit("max_steps", max_steps)
        info = self.source.info(sid)
        if fast_forward is None:
            fast_forward = 0
            if self.max_fast_forward:
                if rng is None:
                    raise ValueError("a random fast-forward needs an rng")
                fast_forward = int(rng.integers(0, min(self.max_fast_forward, info.length - 1)))
        if (
            isinstance(fast_forward, bool)
            or not isinstance(fast_forward, (int, np.integer))
            or not 0 <= fast_forward <= info.length - 2
        ):
            raise ValueError(
                f"fast_forward must be an int in [0, {info.length - 2}] for scenario "
                f"{info.name!r} of {info.length} steps, got {fast_forward!r}"
            )
        self._pending_id = None
        limits = [info.length - 1 - int(fast_forward)]
        limits += [n for n in (self.max_iter, max_steps) if n is not None]
        self._info = info
        self._step = int(fast_forward)
        self._steps_played = 0
        self._max_steps = min(limits)
        self._explicit = maintenance is not None and self.outages
        if self._explicit:
            self._drawn = events_of(np.asarray(maintenance, dtype=bool)[: info.length])
        else:
            self._drawn = self._draw_maintenance(info)
        self._load_chunk(self._step, at_reset=True)
        return info

    def _draw_maintenance(self, info: ScenarioInfo) -> Events | None:
        """Random maintenance of the episode, deterministic per (seed, scenario id)."""
        plan_of = getattr(self.source, "maintenance_plan", None)
        plan = plan_of(info.id) if self.outages and plan_of is not None else None
        if plan is None:
            return None
        rng = np.random.default_rng([self._seed or 0, info.id])
        n_lines = len(self.source.model.branch_names)
        return plan.draw(rng, info.start, info.step_duration, info.length, n_lines)

    def _load_chunk(self, first: int, *, at_reset: bool = False) -> None:
        assert self._info is not None
        end = self._info.length
        if self.chunk_size is not None:
            end = min(end, first + self.chunk_size)
        elif getattr(self.source, "reads_whole", _never)(self._info.id):
            first = 0  # a folder's scenario, parsed and cached whole: the whole of it, no copy
        else:  # the source's own unit (a synthetic block), read up to its next boundary
            unit = getattr(self.source, "preferred_chunk", None)
            if unit:
                end = min(end, (first // unit + 1) * unit)
            # at a reset, only the source's first chunk (a synthetic block is generated as far
            # as it is read, and an episode may end within a few steps)
            start_with = getattr(self.source, "first_chunk", None) if at_reset else None
            if start_with:
                end = min(end, first + start_with)
        chunk = self._chunk = self.source.read(self._info.id, first, end)
        self._chunk_start = first
        self._chunk_stop = first + len(chunk)
        self._outages = None
        if self.outages:
            time, duration = chunk.maintenance_time, chunk.maintenance_duration
            if self._drawn is not None and (len(self._drawn) or self._explicit):
                n_lines = len(self.source.model.branch_names)
                time, duration, _ = outage_window(self._drawn, None, n_lines, first, end)
            found = (time, duration, chunk.hazard_duration)
            if any(a is not None for a in found):
                self._outages = found
        self._now = (chunk.load_p, chunk.load_q, chunk.gen_p, chunk.gen_v)
        self._ahead = (
            chunk.load_p_forecast, chunk.load_q_forecast, chunk.gen_p_forecast,
            chunk.gen_v_forecast,
        )  # fmt: skip
        later = (chunk.load_p_ahead, chunk.load_q_ahead, chunk.gen_p_ahead, chunk.gen_v_ahead)
        self._later = () if later[0] is None else later
        self._past_chunk = None

    def current(self) -> Injections:
        """Injections of the current step (1-D views) and their forecast of the next step."""
        if self._info is None:
            raise RuntimeError("call reset() before current()")
        if self._chunk is None:
            self._load_chunk(self._step)
        return self._chunk.row(self._step - self._chunk_start)

    def rows(self, *, forecast: bool = False) -> Rows:
        """``(load_p, load_q, gen_p, gen_v)`` of the current step (1-D views), or with
        ``forecast`` their forecast of the next step: :meth:`current` without building an
        :class:`Injections` (the env's step hot path)."""
        if self._chunk is None:
            if self._info is None:
                raise RuntimeError("call reset() before rows()")
            self._load_chunk(self._step)
        t = self._step - self._chunk_start
        load_p, load_q, gen_p, gen_v = self._ahead if forecast else self._now
        return load_p[t], load_q[t], gen_p[t], gen_v[t]

    def packed_row(self) -> np.ndarray:
        """The current step's ``load_p``, ``load_q``, ``gen_p`` and ``gen_v`` side by side,
        one ``(2 * n_load + 2 * n_gen,)`` row: a view when the source packs its injections
        (:meth:`~grid_vec.chronics.scenario.Injections.packed`), else a new array."""
        t, _ = self._span(1)
        block = self._chunk.block  # the four side by side, when the source packs them
        if block is not None:
            return block[t]
        return np.concatenate([a[t] for a in self._now])

    @property
    def forecast_horizons(self) -> int | None:
        """How many steps ahead the scenario forecasts: 1 for one-step forecasts, grid2op's
        ``len(h_forecast)`` for a folder's multi-horizon files, None for a source whose
        forecasts chain (any horizon, up to the scenario's end)."""
        if self._chunk is None:
            self.rows()
        if self._later:
            return 1 + self._later[0].shape[1]
        return None if getattr(self.source, "forecasts_chain", False) else 1

    def rows_ahead(self, horizon: int) -> Rows:
        """``(load_p, load_q, gen_p, gen_v)`` forecast at the current step for ``horizon``
        steps ahead (1-D views; 1: :meth:`rows` with ``forecast``).

        Raises:
            ValueError: a horizon the scenario does not forecast (see
                :attr:`forecast_horizons`), or one past the scenario's end.
        """
        if horizon == 1:
            return self.rows(forecast=True)
        most = self.forecast_horizons
        if not 1 <= horizon <= (most or horizon):
            raise ValueError(
                f"scenario {self.info.name!r} forecasts {most} step(s) ahead, not {horizon}"
            )
        t = self._step - self._chunk_start
        if self._later:
            return tuple(a[t, horizon - 2] for a in self._later)
        # a chained source: the one-step forecast made horizon - 1 steps later
        step = self._step + horizon - 1
        if step >= self.info.length:
            raise ValueError(
                f"scenario {self.info.name!r} of {self.info.length} steps has no forecast "
                f"{horizon} steps ahead of step {self._step}"
            )
        if t + horizon - 1 < len(self._chunk):
            return tuple(a[t + horizon - 1] for a in self._ahead)
        past = self._past_chunk
        if past is None or not past[0] <= step < past[0] + len(past[1]):
            read = self.source.read(self.info.id, step, min(step + 64, self.info.length))
            past = self._past_chunk = (step, read)
        row = past[1].row(step - past[0])
        return row.load_p_forecast, row.load_q_forecast, row.gen_p_forecast, row.gen_v_forecast

    @property
    def has_outages(self) -> bool:
        """Whether the current chunk plans a line outage (maintenance or hazard)."""
        if self._chunk is None and self._info is not None:
            self._load_chunk(self._step)
        return self._outages is not None

    def outage_rows(self) -> tuple[np.ndarray | None, ...] | None:
        """``(maintenance_time, maintenance_duration, hazard_duration)`` of the current step
        (1-D int32 views, None for a kind the scenario does not plan), or None without any."""
        if self._chunk is None:
            self.rows()
        if self._outages is None:
            return None
        t = self._step - self._chunk_start
        return tuple(None if a is None else a[t] for a in self._outages)

    def advance(self) -> bool:
        """Move one step; False (and no move) when the episode has no step left."""
        if self._steps_played >= self._max_steps:  # always so before the first reset
            if self._info is None:
                raise RuntimeError("call reset() before advance()")
            return False
        self._step += 1
        self._steps_played += 1
        if self._step >= self._chunk_stop:
            self._load_chunk(self._step)
        return True

    def seek(self, step: int, steps_played: int) -> None:
        """Stand at ``step`` of the episode, ``steps_played`` steps after its reset, as that
        many :meth:`advance` calls would (a batch keeps its envs' clocks as arrays and moves
        a handler only when it reads from it; the chunks read are the same).

        Raises:
            RuntimeError: no episode yet.
        """
        if self._info is None:
            raise RuntimeError("call reset() before seek()")
        self._step, self._steps_played = int(step), int(steps_played)
        if self._chunk is None or not self._chunk_start <= self._step < self._chunk_stop:
            self._load_chunk(self._step)

    def window(self, count: int) -> tuple[np.ndarray, tuple[np.ndarray | None, ...] | None]:
        """The packed injections (as :meth:`packed_row`'s) of the current step and up to
        ``count - 1`` steps on, as far as the chunk read goes (at least the current step),
        and the same steps of :meth:`outage_rows`'s arrays (None without any)."""
        t, stop = self._span(count)
        block = self._chunk.block  # the four side by side, when the source packs them
        if block is not None:
            packed = block[t:stop]
        else:
            packed = np.concatenate([a[t:stop] for a in self._now], axis=1)
        found = self._outages
        outages = None if found is None else tuple(None if a is None else a[t:stop] for a in found)
        return packed, outages

    def forecast_window(self, count: int) -> np.ndarray:
        """The one-step forecasts made at the current step and up to ``count - 1`` steps on,
        packed as :meth:`window`'s injections (as far as the chunk read goes)."""
        t, stop = self._span(count)
        return np.concatenate([a[t:stop] for a in self._ahead], axis=1)

    def _span(self, count: int) -> tuple[int, int]:
        """The chunk's rows of the current step and up to ``count - 1`` steps on, as far as
        the chunk read goes: ``(first, stop)``."""
        if self._chunk is None:
            self.rows()  # reads the chunk (or raises before the first reset)
        t = self._step - self._chunk_start
        return t, min(t + count, len(self._chunk))

    # --- snapshots ----------------------------------------------------------------------

    def episode_state(self) -> EpisodeState:
        """Where the handler stands (its events are shared: they are never written).

        Raises:
            RuntimeError: no episode yet.
        """
        info = self.info
        return EpisodeState(
            info.id, self._step, self._steps_played, self._max_steps, self._chunk_start,
            self._explicit, self._drawn, self._seed, self._cursor, self._pending_id,
        )  # fmt: skip

    def restore_episode(self, state: EpisodeState) -> None:
        """Stand where ``state`` (an :meth:`episode_state`, of this source's scenarios) says;
        the chunk read is kept when it is the one ``state`` reads from.

        Raises:
            ValueError: a scenario the source does not have, or steps outside it.
        """
        info = self.source.info(state.scenario_id)  # the source checks its own ids
        if not 0 <= state.chunk_start <= state.step < info.length or state.max_steps < 0:
            raise ValueError(
                f"snapshot scenario: step {state.step} (chunk from {state.chunk_start}) is not "
                f"a step of scenario {info.name!r} of {info.length} steps"
            )
        if state.seed != self._seed:
            self.seed(state.seed)
        if not 0 <= state.cursor < len(self._order):
            raise ValueError(
                f"snapshot scenario: cursor {state.cursor} is outside this handler's order "
                f"of {len(self._order)} scenarios"
            )
        kept = (
            self._chunk is not None
            and self._info is not None
            and self._info.id == info.id
            and self._chunk_start == state.chunk_start
            and self._drawn is state.maintenance
            and self._explicit == state.explicit
        )
        self._cursor, self._pending_id = state.cursor, state.pending_id
        self._info = info
        self._step, self._steps_played = state.step, state.steps_played
        self._max_steps = state.max_steps
        self._explicit, self._drawn = state.explicit, state.maintenance
        if not kept:
            self._load_chunk(state.chunk_start)
        if self._step - self._chunk_start >= len(self._chunk):  # a smaller chunk_size here
            self._load_chunk(self._step)

    @property
    def info(self) -> ScenarioInfo:
        if self._info is None:
            raise RuntimeError("no scenario yet: call reset()")
        return self._info

    @property
    def step(self) -> int:
        """Index of the current step in the scenario."""
        return self._step

    @property
    def steps_played(self) -> int:
        return self._steps_played

    @property
    def max_steps(self) -> int:
        """Steps this episode can play after its reset."""
        return self._max_steps
