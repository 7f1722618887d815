"""Choosing which attributes make the flat observation, as grid2op's ``gym_compat`` lets users
choose theirs (``BoxGymObsSpace(attr_to_keep=...)``).

The default observation (:class:`~grid_vec.core.observation.ObservationLayout`) is grid_vec's
fixed set. ``GridEnv(observation_attributes=[...])`` names the attributes to keep, in the
order wanted, among the default ones and these further grid2op attributes:

======================== ====== ==============================================================
attribute                size   meaning (grid2op's)
======================== ====== ==============================================================
target_dispatch          G      MW of redispatch asked for so far, per generator
current_step             1      steps since the scenario's start (fast-forwarded ones too)
max_step                 1      the step the episode cannot go beyond
delta_time               1      minutes per step
timestep_protection_engaged B   consecutive steps a branch has been above its soft limit
theta_or, theta_ex       B each voltage angle at each branch end, degrees (0 when disconnected)
load_theta               L      voltage angle at each load, degrees
gen_theta                G      voltage angle at each generator, degrees
gen_margin_up            G      MW a dispatchable generator can still rise next step (ramp,
                                pmax), 0 for the others
gen_margin_down          G      the same, down (ramp, pmin)
gen_p_before_curtail     G      a renewable generator's MW before curtailment (0 for others)
curtailment              G      MW curtailed / pmax, per renewable generator
curtailment_limit        G      the curtailment limit in force (ratio of pmax, 1: none)
curtailment_limit_effective G   gen_p / pmax where curtailment bites, else the limit
storage_charge           U      MWh in each storage unit
storage_power_target     U      MW the agent asked of each unit this step (> 0 charges)
storage_power            U      MW each unit took this step, within its bounds (> 0 charges)
storage_theta            U      voltage angle at each storage unit, degrees
======================== ====== ==============================================================

The dispatch attributes follow grid2op's formulas (``BaseObservation.update``); on a grid
without the generators' characteristics they read as grid2op's do there (margins 0, limits 1,
``gen_p_before_curtail`` = ``gen_p``).

The batched core builds the default observation, then :class:`ObservationSelection` takes
the chosen columns and computes the further attributes (the angles read from the power flow
only when asked for).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grid_vec.core.observation import ObservationLayout

DISPATCH = (
    "gen_margin_up", "gen_margin_down", "gen_p_before_curtail", "curtailment",
    "curtailment_limit", "curtailment_limit_effective",
)  # fmt: skip
# the further attributes: size from the model
EXTRA_SIZES: dict[str, Callable[[Any], int]] = {
    "target_dispatch": lambda m: m.n_gen,
    "current_step": lambda m: 1,
    "max_step": lambda m: 1,
    "delta_time": lambda m: 1,
    "timestep_protection_engaged": lambda m: m.n_branch,
    "theta_or": lambda m: m.n_branch,
    "theta_ex": lambda m: m.n_branch,
    "load_theta": lambda m: m.n_load,
    "gen_theta": lambda m: m.n_gen,
    **dict.fromkeys(DISPATCH, lambda m: m.n_gen),
    "storage_charge": lambda m: m.n_storage,
    "storage_power_target": lambda m: m.n_storage,
    "storage_power": lambda m: m.n_storage,
    "storage_theta": lambda m: m.n_storage,
}  # fmt: skip
# the storage attributes: the state array each is read from (storage_theta: the flows)
STORAGE_STATE = {
    "storage_charge": "storage_charge",
    "storage_power_target": "storage_target",
    "storage_power": "storage_power",
}
THETAS = ("theta_or", "theta_ex", "load_theta", "gen_theta")


class SelectedLayout(ObservationLayout):
    """The layout of a chosen list of attributes (same interface as the default layout:
    ``slices``, ``size``, ``names``, ``bounds()``)."""

    def __init__(self, default: ObservationLayout, model: Any, attributes: Sequence[str]) -> None:
        self.slices = {}
        start = 0
        for name in attributes:
            if name in default.slices:
                size = default.slices[name].stop - default.slices[name].start
            else:
                size = EXTRA_SIZES[name](model)
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        self._default = default

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        full_low, full_high = self._default.bounds()
        low = np.full(self.size, -np.inf, dtype=np.float32)
        high = np.full(self.size, np.inf, dtype=np.float32)
        for name, where in self.slices.items():
            if name in self._default.slices:
                low[where] = full_low[self._default.slices[name]]
                high[where] = full_high[self._default.slices[name]]
            elif name in (
                "current_step", "max_step", "delta_time", "timestep_protection_engaged",
                "storage_charge",
            ):  # fmt: skip
                low[where] = 0.0
        return low, high


class ObservationSelection:
    """Turns default observations into the chosen attributes' (see the module docstring).

    Args:
        default: the default layout the batched core fills.
        model: the compiled grid.
        attributes: the attributes to keep, in order.

    Raises:
        ValueError: an unknown or repeated attribute, or none.
    """

    def __init__(self, default: ObservationLayout, model: Any, attributes: Sequence[str]) -> None:
        if isinstance(attributes, str) or not len(attributes):
            raise ValueError(
                f"observation_attributes must be a non-empty list of names, got {attributes!r}"
            )
        known = [*default.names, *EXTRA_SIZES]
        for name in attributes:
            if name not in known:
                raise ValueError(
                    f"observation_attributes: unknown attribute {name!r}; known: "
                    + ", ".join(known)
                )
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"observation_attributes: an attribute is repeated in {attributes}")
        self.attributes = tuple(attributes)
        self.layout = SelectedLayout(default, model, self.attributes)
        # default columns: one take from the default observation into their places
        src, dst = [], []
        for name in self.attributes:
            if name in default.slices:
                src.append(np.arange(default.slices[name].start, default.slices[name].stop))
                dst.append(np.arange(self.layout.slices[name].start, self.layout.slices[name].stop))
        self._src = np.concatenate(src) if src else np.zeros(0, dtype=np.intp)
        self._dst = np.concatenate(dst) if dst else np.zeros(0, dtype=np.intp)
        self.extras = [name for name in self.attributes if name not in default.slices]
        self.needs_thetas = any(name in THETAS for name in self.extras)
        self.needs_dispatch = any(name in DISPATCH for name in self.extras)

    def select(self, full: np.ndarray, extras: dict[str, np.ndarray]) -> np.ndarray:
        """``(k, size)`` observations of the chosen attributes from ``(k, default size)``
        default observations and the further attributes' ``(k, n)`` values."""
        out = np.empty((len(full), self.layout.size), dtype=np.float32)
        out[:, self._dst] = full[:, self._src]
        for name in self.extras:
            out[:, self.layout.slices[name]] = extras[name].reshape(len(full), -1)
        return out


def extra_values(
    selection: ObservationSelection,
    grid: Any,
    state: Any,
    rows: np.ndarray,
    steps: np.ndarray,
    played: np.ndarray,
    time_rows: np.ndarray,
    scenarios: Any,
) -> dict[str, np.ndarray]:
    """The further attributes ``selection`` asks for, ``(k, n)`` per name, for ``rows`` of
    ``state`` (a ``BatchState``) after a step. ``grid``: what the state is of (its
    ``model``, ``topology`` and ``dispatch_limits``: an
    :class:`~grid_vec.core.observer.Observer`); ``steps`` and ``played``: each row's step in
    its scenario and steps played; ``time_rows``: the rows of ``scenarios`` (a
    ``ScenarioRows``) the clocks are read from (a look-ahead's state has rows of its own)."""
    out: dict[str, np.ndarray] = {}
    names = selection.extras
    if "target_dispatch" in names:
        out["target_dispatch"] = state.target_dispatch[rows]
    if "timestep_protection_engaged" in names:
        out["timestep_protection_engaged"] = state.protection_counter[rows]
    if "current_step" in names:
        out["current_step"] = np.asarray(steps)
    if "max_step" in names:
        # the episode's last step, counted from the scenario's start as current_step is
        out["max_step"] = np.asarray(steps) - np.asarray(played) + scenarios.max_steps[time_rows]
    if "delta_time" in names:
        out["delta_time"] = scenarios.step_seconds[time_rows] / 60
    if selection.needs_thetas:
        out.update(_thetas(grid, state, rows))
    if selection.needs_dispatch:
        out.update(_dispatch(grid.dispatch_limits, state, rows))
    for name, array in STORAGE_STATE.items():
        if name in names:
            out[name] = getattr(state, array)[rows]
    if "storage_theta" in names:  # radians in the flows (0 when not solved)
        out["storage_theta"] = np.degrees(state.flows[rows, state.slices["storage_theta"]])
    return out


def _dispatch(limits: Any, state: Any, rows: np.ndarray) -> dict[str, np.ndarray]:
    """grid2op's dispatch attributes of ``rows`` after their step."""
    gen_p = state.gen_p[rows].astype(np.float32)
    up, down = limits.margins(gen_p)
    if not limits.available:
        ones = np.ones_like(gen_p)
        return {
            "gen_margin_up": up, "gen_margin_down": down, "gen_p_before_curtail": gen_p,
            "curtailment": np.zeros_like(gen_p), "curtailment_limit": ones,
            "curtailment_limit_effective": ones,
        }  # fmt: skip
    renewable = limits.renewable
    limit = np.minimum(state.curtail_limit[rows], 1.0)
    # an uncapped renewable produces its schedule: the stored value is only kept (and only
    # up to date) for the capped ones, the dispatch code skipping envs at rest
    capped = np.abs(state.curtail_limit[rows] - 1.0) >= 1e-7
    before = np.where(renewable, np.where(capped, state.gen_p_before_curtail[rows], gen_p), 0.0)
    before = before.astype(np.float32)
    pmax = np.where(limits.pmax > 0, limits.pmax, 1.0)
    curtailment = np.where(renewable, (before - gen_p) / pmax, 0.0)
    acted = renewable & (before != gen_p)
    effective = np.where(acted, gen_p / pmax, np.where(renewable, limit, 1.0))
    return {
        "gen_margin_up": up,
        "gen_margin_down": down,
        "gen_p_before_curtail": before,
        "curtailment": curtailment.astype(np.float32),
        "curtailment_limit": limit,
        "curtailment_limit_effective": effective.astype(np.float32),
    }


def _thetas(grid: Any, state: Any, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Voltage angles in degrees at every element of ``rows`` (0 where disconnected, and
    everywhere in a row whose last power flow did not converge)."""
    from grid_vec.grid.backend import PowerFlowDivergedError

    model, layout = grid.model, grid.topology
    k = len(rows)
    angles = np.zeros((k, 2 * model.n_sub))
    for j, row in enumerate(np.asarray(rows).tolist()):
        with contextlib.suppress(PowerFlowDivergedError):  # a game over: zeros
            angles[j] = np.degrees(state.solver.results(row).bus_va_rad)
    topo = state.topo[rows]

    def at(positions: np.ndarray, subs: np.ndarray) -> np.ndarray:
        bars = topo[:, positions]
        bus = subs + (np.maximum(bars, 1) - 1) * model.n_sub
        return np.where(
            bars > 0, np.take_along_axis(angles, np.broadcast_to(bus, bars.shape), 1), 0.0
        )

    return {
        "theta_or": at(layout.pos_or, model.branch_or_sub),
        "theta_ex": at(layout.pos_ex, model.branch_ex_sub),
        "load_theta": at(layout.pos_load, model.load_sub),
        "gen_theta": at(layout.pos_gen, model.gen_sub),
    }
