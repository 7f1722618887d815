"""Synthetic scenarios: the embedded default, generated from (seed, scenario id), no download.

Loads follow daily and weekly shapes (a per-load mix of residential and commercial profiles)
with smooth and white noise, scaled so that the base net's loads are the mean level. Static
generators (``sgen``) get solar or wind profiles. Dispatchable generators share the load net
of renewables in proportion to their base-case output (or ``pmax`` when the base case has
none), within their limits; the slack's target takes the residual, losses included.
Forecasts are the next step plus a forecast error, with the dispatch re-balanced on them; a
forecast h steps ahead is the one-step forecast made h - 1 steps later.

Each block of ``BLOCK`` steps (a day at 5 minutes) of a scenario draws its white noise from its
own random stream, and a block is generated from its start as far as a read needs (its stream
drawn as far as needed, and on from there at the next read: the same values as drawn at
once). A handler reads ``first_chunk`` steps at a reset, then up to the block's end, so that a
reset costs a few steps, not the whole day, and an episode that ends early never pays for the
rest. The smooth parts
(the scenario level and the interpolation knots of the slow noises) are drawn once per
scenario.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from grid_vec.chronics.scenario import Injections, ScenarioInfo
from grid_vec.grid.model import GridModel

_LOAD_FORECAST_ERROR = 0.01  # relative standard deviation
_RENEWABLE_FORECAST_ERROR = 0.05
BLOCK = 288  # steps of one random stream of white noise, a handler's chunk
PIECE = 32  # steps a handler reads at a reset
# the draws and partial blocks of the scenarios being read, kept between reads (case118: about
# 0.3 MB a scenario, so some 200 scenarios in play before the least recent is drawn again)
MAX_IN_PLAY_BYTES = 64 * 2**20
_LOAD_NOISE_EVERY, _CLOUD_EVERY, _WIND_SLOW_EVERY, _WIND_FAST_EVERY = 12, 24, 72, 12


@dataclass(frozen=True)
class _LoadTraits:
    """Per-load characteristics, fixed for a source (the same in every scenario)."""

    residential: np.ndarray  # (n_load,) weight of the residential profile, rest commercial
    shift_h: np.ndarray  # (n_load,) hours by which the profile is shifted
    amplitude: np.ndarray  # (n_load,) scales the deviation from the mean
    q_ratio: np.ndarray  # (n_load,) q / p
    is_solar: np.ndarray  # (n_gen,) bool, sgen with a solar profile (others are wind)


class SyntheticSource:
    """Deterministic synthetic scenarios for a compiled grid; any id >= 0 is valid.

    ``len()`` is ``n_scenarios``: the number of ids a handler cycles through and shuffles.
    ``preferred_chunk``: a handler without a ``chunk_size`` reads this many steps at a time;
    ``first_chunk``: at a reset, only this many (a block is generated as far as it is read).
    ``forecasts_chain``: the forecast made at step ``t`` of step ``t + h`` is the one-step
    forecast made at ``t + h - 1`` (the next step plus its own error). Its errors are drawn
    independently per step, so a longer horizon is no less accurate than the first: a
    simplification of real forecasts, whose error grows with the horizon.
    """

    preferred_chunk = BLOCK
    first_chunk = PIECE
    forecasts_chain = True

    def __init__(
        self,
        model: GridModel,
        *,
        seed: int = 0,
        length: int = 2016,
        n_scenarios: int = 1024,
        start: dt.datetime = dt.datetime(2019, 1, 7),
        step_minutes: int = 5,
    ) -> None:
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        for arg, value, low in (
            ("seed", seed, 0),
            ("length", length, 2),
            ("n_scenarios", n_scenarios, 1),
            ("step_minutes", step_minutes, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{arg} must be an int, got {value!r}")
            if value < low:
                raise ValueError(f"{arg} must be >= {low}, got {value}")
        if not isinstance(start, dt.datetime):
            raise TypeError(f"start must be a datetime.datetime, got {start!r}")
        self.model = model
        self.seed = int(seed)
        self.length = int(length)
        self.n_scenarios = int(n_scenarios)
        self.start = start
        self.step_minutes = int(step_minutes)
        self._traits = self._make_traits()
        # the scenarios being read (least recently read first): a batch's envs read many
        # scenarios in turn, and a cache of the last one alone drew each scenario's knots
        # again at every read and restarted its block's noise stream (case118, 32 envs,
        # 2,000 do-nothing steps: 352 misses in 355 reads, the knots drawn again ~4% of the
        # run's time)
        self._in_play: OrderedDict[int, _InPlay] = OrderedDict()
        self._in_play_bytes = 0

    def __len__(self) -> int:
        return self.n_scenarios

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_in_play"], state["_in_play_bytes"] = OrderedDict(), 0  # drawn again on demand
        state.pop("_calendar", None)
        return state

    @property
    def names(self) -> list[str]:
        return [self._name(i) for i in range(self.n_scenarios)]

    @staticmethod
    def _name(scenario_id: int) -> str:
        return f"synthetic_{scenario_id:04d}"

    def info(self, scenario_id: int) -> ScenarioInfo:
        scenario_id = self._check_id(scenario_id)
        return ScenarioInfo(
            id=scenario_id,
            name=self._name(scenario_id),
            start=self.start,
            step_duration=dt.timedelta(minutes=self.step_minutes),
            length=self.length,
        )

    def read(self, scenario_id: int, start: int, stop: int) -> Injections:
        """Steps ``[start, stop)`` of the scenario, read-only (each block generated from its
        start as far as a read needs)."""
        scenario_id = self._check_id(scenario_id)
        if not 0 <= start < stop <= self.length:
            raise ValueError(
                f"need 0 <= start < stop <= {self.length} (the scenario length), "
                f"got start={start}, stop={stop}"
            )
        entry = self._entry(scenario_id)
        blocks, noise = entry.blocks, entry.noise
        first, last = start // BLOCK, (stop - 1) // BLOCK
        read = {}
        for b in range(first, last + 1):
            upto = min(stop, (b + 1) * BLOCK) - b * BLOCK  # the block's rows this read needs
            done = blocks.get(b)
            have = 0 if done is None else len(done)
            if have < upto:
                more = self._generate(scenario_id, entry.draws, b, have, upto, noise)
                if done is not None:
                    parts = zip(done.arrays(), more.arrays(), strict=True)
                    more = Injections(*(np.concatenate(pair) for pair in parts))
                blocks[b] = more.packed().read_only()
            read[b] = blocks[b]
            if upto == min(BLOCK, self.length - b * BLOCK):
                # a whole block: reads move on (the reader keeps what it read); read again,
                # it is generated again from its start, its stream drawn again from its seed
                del blocks[b]
                noise.pop(b, None)
        self._keep(scenario_id, entry)
        offset = first * BLOCK
        if first == last:
            return read[first].window(start - offset, stop - offset)
        per_block = (read[b].arrays() for b in range(first, last + 1))
        joined = Injections(*(np.concatenate(parts) for parts in zip(*per_block, strict=True)))
        return joined.packed().read_only().window(start - offset, stop - offset)

    def _entry(self, scenario_id: int) -> _InPlay:
        """The scenario's draws and partial blocks, drawn when it is not in play."""
        entry = self._in_play.pop(scenario_id, None)
        if entry is None:
            entry = _InPlay(self._scenario_draws(scenario_id), {}, {})
        else:
            self._in_play_bytes -= entry.nbytes
        return entry

    def _keep(self, scenario_id: int, entry: _InPlay) -> None:
        """Keep the scenario as the last read, forgetting the least recently read ones
        beyond :data:`MAX_IN_PLAY_BYTES`."""
        entry.nbytes = entry.size()
        self._in_play[scenario_id] = entry
        self._in_play_bytes += entry.nbytes
        while self._in_play_bytes > MAX_IN_PLAY_BYTES and len(self._in_play) > 1:
            _, old = self._in_play.popitem(last=False)
            self._in_play_bytes -= old.nbytes

    def _check_id(self, scenario_id: int) -> int:
        if isinstance(scenario_id, bool) or not isinstance(scenario_id, (int, np.integer)):
            raise TypeError(f"scenario_id must be an int, got {scenario_id!r}")
        if scenario_id < 0:
            raise ValueError(f"scenario_id must be >= 0 (any id is valid), got {scenario_id}")
        return int(scenario_id)

    # --- generation -------------------------------------------------------------------

    def _make_traits(self) -> _LoadTraits:
        m = self.model
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(0,)))
        n = m.n_load
        with np.errstate(divide="ignore", invalid="ignore"):
            q_ratio = np.where(m.load_p0 != 0, m.load_q0 / m.load_p0, 0.0)
        names = np.char.lower(m.gen_names.astype(str))
        is_solar = np.char.find(names, "solar") >= 0
        is_wind = np.char.find(names, "wind") >= 0
        unnamed = (m.gen_kind == "sgen") & ~is_solar & ~is_wind
        is_solar |= unnamed & (np.cumsum(unnamed) % 2 == 1)  # alternate solar / wind
        return _LoadTraits(
            residential=rng.uniform(0.2, 1.0, n),
            shift_h=rng.uniform(-1.0, 1.0, n),
            amplitude=rng.uniform(0.8, 1.2, n),
            q_ratio=q_ratio * rng.uniform(0.9, 1.1, n),
            is_solar=is_solar & (m.gen_kind == "sgen"),
        )

    @cached_property
    def _calendar(self) -> _Calendar:
        return _Calendar.of(self.model, self._traits, self.start, self.length, self.step_minutes)

    def _scenario_draws(self, scenario_id: int) -> _ScenarioDraws:
        """The draws a whole scenario shares: its level and the knots of its slow noises."""
        m, tr = self.model, self._traits
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(2, scenario_id)))
        steps = self.length + 1  # one more step so that the last row has a forecast
        n_solar = int(tr.is_solar.sum())
        n_wind = int((self._calendar.sgen & ~tr.is_solar).sum())
        return _ScenarioDraws(
            level=float(rng.uniform(0.95, 1.05)),
            load_knots=_knots(rng, steps, m.n_load, _LOAD_NOISE_EVERY),
            cloud_knots=_knots(rng, steps, n_solar, _CLOUD_EVERY),
            wind_slow_knots=_knots(rng, steps, n_wind, _WIND_SLOW_EVERY),
            wind_fast_knots=_knots(rng, steps, n_wind, _WIND_FAST_EVERY),
        )

    def _white_noise(
        self, scenario_id: int, block: int, rows: int, noise: dict[int, list]
    ) -> np.ndarray:
        """The first ``rows`` rows of a block's white noise: per step, the load noise, the
        load forecast error and the renewable forecast error (standard normal). A block's
        stream is drawn as far as asked, then on from there (numpy's normals do not depend on
        how the draws are split: the rows are those of one draw of the whole block)."""
        entry = noise.get(block)
        if entry is None:
            width = 2 * self.model.n_load + int(self._calendar.sgen.sum())
            seq = np.random.SeedSequence(self.seed, spawn_key=(3, scenario_id, block))
            entry = noise[block] = [np.random.default_rng(seq), np.empty((0, width))]
        generator, drawn = entry
        if len(drawn) < rows:
            more = generator.standard_normal((rows - len(drawn), drawn.shape[1]))
            entry[1] = drawn = np.concatenate([drawn, more])
        return drawn[:rows]

    def _generate(
        self,
        scenario_id: int,
        draws: _ScenarioDraws,
        block: int,
        first: int,
        stop: int,
        noise: dict[int, list],
    ) -> Injections:
        """Rows ``[first, stop)`` of block ``block`` (bounded by the length). Every row is
        computed from its own step's draws alone, so rows generated apart are those generated
        together."""
        m, tr, cal = self.model, self._traits, self._calendar
        start = block * BLOCK
        lo, hi = start + first, min(start + stop, self.length)
        block_end = min(start + BLOCK, self.length)
        # one more row: the forecast made at the last step reads the next step's noise, the
        # block's next row, or at the block's end the next block's first
        if hi == block_end:
            after = self._white_noise(scenario_id, block + 1, 1, noise)
        else:
            after = self._white_noise(scenario_id, block, hi + 1 - start, noise)[hi - start :]
        rows = self._white_noise(scenario_id, block, hi - start, noise)[lo - start :]
        white = np.concatenate([rows, after])
        n = m.n_load
        load_white, load_error, renewable_error = (
            white[:, :n],
            white[:, n : 2 * n],
            white[:, 2 * n :],
        )
        t = np.arange(lo, hi + 1)

        # loads: the calendar's per-load shape, the scenario level, smooth and white noise
        noise = 0.03 * _interpolate(draws.load_knots, t, _LOAD_NOISE_EVERY) + 0.005 * load_white
        load_p = m.load_p0 * draws.level * cal.load_shape[lo : hi + 1] * (1 + noise)
        load_p_fc = load_p * (1 + _LOAD_FORECAST_ERROR * load_error)

        # renewables
        gen_p = np.zeros((len(t), m.n_gen))
        sgen = cal.sgen
        solar = tr.is_solar
        wind = sgen & ~solar
        if solar.any():
            cloud = 0.75 + 0.25 * _interpolate(draws.cloud_knots, t, _CLOUD_EVERY)
            gen_p[:, solar] = (
                cal.capacity[solar] * cal.sun[lo : hi + 1, None] * np.clip(cloud, 0.1, 1)
            )
        if wind.any():
            w = (
                0.35
                + 0.2 * _interpolate(draws.wind_slow_knots, t, _WIND_SLOW_EVERY)
                + 0.05 * _interpolate(draws.wind_fast_knots, t, _WIND_FAST_EVERY)
            )
            gen_p[:, wind] = cal.capacity[wind] * np.clip(w, 0, 1)
        gen_p_fc = gen_p.copy()
        gen_p_fc[:, sgen] = np.clip(
            gen_p[:, sgen] * (1 + _RENEWABLE_FORECAST_ERROR * renewable_error),
            0,
            cal.capacity[sgen],
        )
        cal.dispatch(load_p, gen_p)
        cal.dispatch(load_p_fc, gen_p_fc)

        no_p = cal.no_p
        load_q = load_p * tr.q_ratio
        load_q[:, no_p] = m.load_q0[no_p]
        load_q_fc = load_p_fc * tr.q_ratio
        load_q_fc[:, no_p] = m.load_q0[no_p]

        gen_v = cal.gen_v[lo:hi]
        arrays = Injections(
            load_p=load_p[:-1],
            load_q=load_q[:-1],
            gen_p=gen_p[:-1],
            gen_v=gen_v,
            load_p_forecast=load_p_fc[1:],
            load_q_forecast=load_q_fc[1:],
            gen_p_forecast=gen_p_fc[1:],
            gen_v_forecast=gen_v,
        )
        return arrays  # packed by read: a batch gathers a step as one row


@dataclass
class _InPlay:
    """What a scenario being read keeps between reads: its once-per-scenario draws, each
    block's steps generated so far (from its start) and each block's white noise drawn so
    far (block -> [its generator, the rows drawn]), for the blocks not yet read whole."""

    draws: _ScenarioDraws
    blocks: dict[int, Injections]
    noise: dict[int, list]
    nbytes: int = 0  # :meth:`size` when last kept

    def size(self) -> int:
        """Bytes held in arrays."""
        arrays = [*vars(self.draws).values(), *(rows for _, rows in self.noise.values())]
        arrays += [a for block in self.blocks.values() for a in block.arrays()]
        return sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))


@dataclass(frozen=True)
class _ScenarioDraws:
    """What one scenario draws once: its load level and the knots of its slow noises."""

    level: float
    load_knots: np.ndarray  # (knots, n_load)
    cloud_knots: np.ndarray  # (knots, n_solar)
    wind_slow_knots: np.ndarray  # (knots, n_wind)
    wind_fast_knots: np.ndarray  # (knots, n_wind)


@dataclass(frozen=True)
class _Calendar:
    """What every scenario of a source shares, computed once: the per-load shape over the
    scenario's days and hours, the solar profile, capacities and the dispatch rule."""

    load_shape: np.ndarray  # (steps, n_load), mean 1 over the scenario
    sun: np.ndarray  # (steps,) clear-sky solar profile
    sgen: np.ndarray  # (n_gen,) bool, renewable (static) generators
    capacity: np.ndarray  # (n_gen,) renewable capacity
    no_p: np.ndarray  # (n_load,) bool, loads without active power (their q stays fixed)
    gen_v: np.ndarray  # (length, n_gen) read-only voltage set points
    dispatch: _Dispatch

    @classmethod
    def of(
        cls, m: GridModel, tr: _LoadTraits, start: dt.datetime, length: int, step_minutes: int
    ) -> _Calendar:
        steps = length + 1
        minutes = start.hour * 60 + start.minute + np.arange(steps) * step_minutes
        weekday = (start.weekday() + minutes // 1440) % 7
        hour_of_day = (minutes % 1440) / 60
        # the shape only depends on (minute of day, weekend): computed once per distinct pair
        key = minutes % 1440 + 1440 * (weekday >= 5)
        distinct, where, counts = np.unique(key, return_inverse=True, return_counts=True)
        h = ((distinct[:, None] % 1440) / 60 - tr.shift_h[None, :]) % 24
        weekend = (distinct >= 1440)[:, None]
        residential = 0.75 + 0.2 * _bump(h, 8.0, 1.5) + 0.45 * _bump(h, 19.0, 2.5)
        commercial = 0.7 + 0.5 * _bump(h, 13.0, 3.5)
        residential *= np.where(weekend, 1.03, 1.0)
        commercial *= np.where(weekend, 0.75, 1.0)
        shape = tr.residential * residential + (1 - tr.residential) * commercial
        shape /= counts @ shape / steps  # mean 1 over the scenario
        gen_v = np.broadcast_to(m.gen_v0.astype(np.float64), (length, m.n_gen))
        return cls(
            load_shape=(1 + tr.amplitude * (shape - 1))[where],
            sun=np.clip(np.sin(np.pi * (hour_of_day - 6) / 14), 0, None) ** 1.3,
            sgen=m.gen_kind == "sgen",
            capacity=_capacity(m),
            no_p=m.load_p0 == 0,
            gen_v=gen_v,
            dispatch=_Dispatch.of(m),
        )


def _bump(h: np.ndarray, center: float, width: float) -> np.ndarray:
    """Gaussian bump over hours of the day, wrapping around midnight."""
    d = np.minimum(np.abs(h - center), 24 - np.abs(h - center))
    return np.exp(-0.5 * (d / width) ** 2)


def _knots(rng: np.random.Generator, steps: int, n: int, every: int) -> np.ndarray:
    """Standard-normal values at knots ``every`` steps apart, covering ``steps`` steps."""
    return rng.standard_normal((steps // every + 2, n))


def _interpolate(knots: np.ndarray, t: np.ndarray, every: int) -> np.ndarray:
    """The knots linearly interpolated at steps ``t``: a smooth standard-normal noise."""
    pos = t / every
    i0 = pos.astype(np.int64)
    frac = (pos - i0)[:, None]
    return knots[i0] * (1 - frac) + knots[i0 + 1] * frac


def _capacity(m: GridModel) -> np.ndarray:
    """Renewable capacity: ``pmax`` when finite and positive, else twice the base output."""
    pmax = np.nan_to_num(m.gen_pmax.astype(np.float64), nan=0.0, posinf=0.0)
    return np.where(pmax > 0, pmax, 2 * np.clip(m.gen_p0, 0, None))


@dataclass(frozen=True)
class _Dispatch:
    """Dispatchable generators share the load net of renewables in proportion to their
    base-case output (or ``pmax`` when the base case has none), within their limits; the
    slack takes the residual."""

    sgen: np.ndarray  # (n_gen,) bool
    disp: np.ndarray  # (n_gen,) bool, dispatchable
    loss_factor: float
    share: np.ndarray  # (n_disp,) fraction of the total of each dispatchable generator
    slack: np.ndarray  # (n_disp,) bool
    pmin: np.ndarray  # (n_disp,)
    pmax: np.ndarray  # (n_disp,)
    slack_share: np.ndarray  # (n_slack,) fraction of the residual of each slack

    @classmethod
    def of(cls, m: GridModel) -> _Dispatch:
        sgen = m.gen_kind == "sgen"
        disp = ~sgen
        weights = np.clip(m.gen_p0[disp], 0, None)
        base_net = m.load_p0.sum() - m.gen_p0[sgen].sum()
        if weights.sum() > 0 and base_net > 0:
            loss_factor = float(np.clip(weights.sum() / base_net, 1.0, 1.1))
        else:
            pmax = np.nan_to_num(m.gen_pmax[disp].astype(np.float64), nan=0.0, posinf=0.0)
            weights = np.where(pmax > 0, pmax, 1.0)
            loss_factor = 1.02
        slack = m.gen_kind[disp] == "slack"
        slack_w = weights[slack]
        if slack_w.sum() > 0:
            slack_share = slack_w / slack_w.sum()
        else:
            slack_share = np.full(slack.sum(), 1 / max(slack.sum(), 1))
        return cls(
            sgen=sgen,
            disp=disp,
            loss_factor=loss_factor,
            share=weights / weights.sum() if disp.any() else weights,
            slack=slack,
            pmin=np.nan_to_num(m.gen_pmin[disp].astype(np.float64), nan=-np.inf),
            pmax=np.nan_to_num(m.gen_pmax[disp].astype(np.float64), nan=np.inf),
            slack_share=slack_share,
        )

    def __call__(self, load_p: np.ndarray, gen_p: np.ndarray) -> None:
        """Fill the dispatchable columns of ``gen_p`` (in place) to balance ``load_p``."""
        if not self.disp.any():
            return
        total = (load_p.sum(axis=1) - gen_p[:, self.sgen].sum(axis=1)) * self.loss_factor
        share = total[:, None] * self.share
        slack = self.slack
        clipped = np.where(slack, share, np.clip(share, self.pmin, self.pmax))
        if slack.any():
            residual = total - clipped[:, ~slack].sum(axis=1)
            clipped[:, slack] = residual[:, None] * self.slack_share
        gen_p[:, self.disp] = clipped
