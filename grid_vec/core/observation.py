"""The flat ``float32`` observation of a GridEnv and a named, zero-copy view over it.

Layout (segments in this order; sizes for a grid with ``B`` branches, ``L`` loads, ``G``
generators, ``S`` substations and ``E`` topology-vector entries):

======================== ====== ==============================================================
segment                  size   meaning
======================== ====== ==============================================================
year                     1      calendar year of the current step
month                    1      1..12
day                      1      day of month, 1..31
hour_of_day              1      0..23
minute_of_hour           1      0..59
day_of_week              1      0 = Monday .. 6 = Sunday
step                     1      steps played in this episode
rho                      B      a_or / thermal limit (0 when disconnected)
line_status              B      1 connected, 0 disconnected
p_or, q_or, v_or, a_or   B each origin-side flows: MW, MVAr, kV, A
p_ex, q_ex, v_ex, a_ex   B each extremity-side flows
load_p, load_q, load_v   L each MW, MVAr, kV
gen_p, gen_q, gen_v      G each MW, MVAr, kV
actual_dispatch          G      MW added to the scenario's setpoint by redispatching
topo_vect                E      bus bar of every element end (1, 2, -1), see ``topology.py``
timestep_overflow        B      consecutive steps above the thermal limit
time_before_cooldown_line B     steps before the branch status can be changed
time_before_cooldown_sub S      steps before the substation can be reconfigured
time_next_maintenance    B      steps before the next maintenance (0 while it lasts, -1 = none)
duration_next_maintenance B     steps the next maintenance lasts (while it lasts: the steps
                                left; 0 = none)
======================== ====== ==============================================================

Branches are lines then transformers, as in the pandapower net.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from grid_vec.grid.model import GridModel

TIME_SEGMENTS = ("year", "month", "day", "hour_of_day", "minute_of_hour", "day_of_week", "step")
_NONNEGATIVE = {
    "year",
    "month",
    "day",
    "hour_of_day",
    "minute_of_hour",
    "day_of_week",
    "step",
    "rho",
    "line_status",
    "v_or",
    "a_or",
    "v_ex",
    "a_ex",
    "load_v",
    "gen_v",
    "timestep_overflow",
    "time_before_cooldown_line",
    "time_before_cooldown_sub",
    "duration_next_maintenance",
}


def time_features(
    start: dt.datetime, step_duration: dt.timedelta, first: int, count: int
) -> np.ndarray:
    """``(count, 6)`` float32 rows (year, month, day, hour, minute, weekday with Monday = 0)
    of steps ``first .. first + count - 1`` of a scenario starting at ``start``."""
    seconds = int(step_duration.total_seconds())
    start_s = np.datetime64(start, "s").astype(np.int64)
    return time_features_at(start_s + np.arange(first, first + count) * seconds)


def time_features_at(seconds: np.ndarray) -> np.ndarray:
    """``(len(seconds), 6)`` float32 time features of instants given in seconds since the
    epoch (naive, as the scenarios' calendars), computed at once with numpy's calendar
    arithmetic (cheaper per row than ``datetime`` attributes)."""
    when = np.asarray(seconds, dtype=np.int64).astype("M8[s]")
    days, months = when.astype("M8[D]"), when.astype("M8[M]")
    in_day = (when - days).astype(np.int64)  # seconds since midnight
    out = np.empty((len(when), 6), dtype=np.float32)
    out[:, 0] = when.astype("M8[Y]").astype(np.int64) + 1970
    out[:, 1] = months.astype(np.int64) % 12 + 1
    out[:, 2] = (days - months).astype(np.int64) + 1
    out[:, 3] = in_day // 3600
    out[:, 4] = in_day % 3600 // 60
    out[:, 5] = (days.astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday
    return out


class ObservationLayout:
    """Offsets of every named segment of the flat observation vector."""

    def __init__(self, model: GridModel, n_topo: int) -> None:
        b, n_load, n_gen = model.n_branch, model.n_load, model.n_gen
        sizes: list[tuple[str, int]] = [(name, 1) for name in TIME_SEGMENTS]
        sizes += [("rho", b), ("line_status", b)]
        sizes += [(f"{q}_{side}", b) for side in ("or", "ex") for q in ("p", "q", "v", "a")]
        sizes += [("load_p", n_load), ("load_q", n_load), ("load_v", n_load)]
        sizes += [("gen_p", n_gen), ("gen_q", n_gen), ("gen_v", n_gen)]
        sizes += [("actual_dispatch", n_gen), ("topo_vect", n_topo)]
        sizes += [("timestep_overflow", b), ("time_before_cooldown_line", b)]
        sizes += [("time_before_cooldown_sub", model.n_sub), ("time_next_maintenance", b)]
        sizes += [("duration_next_maintenance", b)]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.slices)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The (low, high) float32 bounds of the observation (the env's ``Box``): non-negative
        segments are bounded below by 0, the rest unbounded."""
        low = np.full(self.size, -np.inf, dtype=np.float32)
        for name in _NONNEGATIVE:
            low[self.slices[name]] = 0.0
        low[self.slices["topo_vect"]] = -1.0
        low[self.slices["time_next_maintenance"]] = -1.0
        high = np.full(self.size, np.inf, dtype=np.float32)
        high[self.slices["line_status"]] = 1.0
        high[self.slices["topo_vect"]] = 2.0
        return low, high


class ObservationView:
    """Attribute access (``view.rho``) to the segments of observations, without copying.

    Works on one observation (shape ``(size,)``) or a batch of them (``(..., size)``, e.g. a
    vector env's batch or a recorded episode): each attribute then has the batch's leading
    axes. Scalar time segments come back as 1-element arrays too, so every attribute is a
    view into the same buffer (writing through it writes the observation).
    """

    __slots__ = ("_array", "_layout")

    def __init__(self, array: np.ndarray, layout: ObservationLayout) -> None:
        if not isinstance(array, np.ndarray) or array.ndim < 1 or array.shape[-1] != layout.size:
            shape = getattr(array, "shape", type(array).__name__)
            raise ValueError(
                f"observation must be an array of shape ({layout.size},) or (..., "
                f"{layout.size}), got {shape}"
            )
        self._array = array
        self._layout = layout

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self._array[..., self._layout.slices[name]]
        except KeyError:
            raise AttributeError(
                f"observation has no segment {name!r}; segments: {', '.join(self._layout.names)}"
            ) from None

    def __dir__(self) -> list[str]:
        return [*self._layout.names, *super().__dir__()]
