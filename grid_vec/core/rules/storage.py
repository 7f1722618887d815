"""Storage units as grid2op plays them (its ``storageModule``), for the rows of a batch.

Powers are in load convention (``> 0``: the unit absorbs, charging), energies in MWh;
``hours`` is a step's duration in hours.

* **Reset.** Each unit starts at ``init_storage_capacity`` x Emax. grid2op adds one step's
  standing loss, then its reset step withdraws it: the first observation shows the ratio x
  Emax (to float32 rounding), as here.
* **A step.** Only units asked for a finite ``|p| >= 1e-7`` act; the others' power is 0
  (setpoints do not persist). An acting unit's charge moves by ``p x hours x eff``: ``eff``
  the charging efficiency when it absorbs, 1 / the discharging efficiency when it produces
  (1 with ``activate_storage_loss`` off).
* **Bounds.** In an env where a unit acted, a charge above Emax is cut to Emax and below
  Emin raised to Emin, and the power given back accordingly (through the efficiencies when
  losses are on): the grid sees what the unit could really take or give.
* **Balance.** The generators make up for the *change* of the units' total power since the
  step before (``storage_amount[:, 0]``; the total is ``storage_amount[:, 1]``), added to
  what the dispatch rules (:mod:`grid_vec.core.rules.dispatch`) solve for.
* **Losses.** With ``activate_storage_loss``, every step ends by draining each unit's
  standing loss x ``hours`` from its charge (floored at 0, not at Emin), acting or not.
* **Failed redispatch.** When a step's redispatch fails (its action played as do-nothing),
  the charges go back to the step before and the standing loss is drained again; the
  units' power is left as computed (grid2op sends it to the grid all the same).

Arrays are float32 and the arithmetic mirrors grid2op's dtypes, so that the charges agree to
the last bit in the usual cases; every row's numbers depend on that row alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grid_vec.core.parameters import Parameters

_F32 = np.float32
ACTING = 1e-7  # below this |p|, a unit is not asked to act (grid2op's threshold)


# StorageCharac's fields the rules use, in StorageUnits' order
_FIELDS = (
    "emax", "emin", "max_p_prod", "max_p_absorb", "loss", "charging_efficiency",
    "discharging_efficiency",
)  # fmt: skip


# grid2op's tol_poly, shared by the dispatch and the storage rules (MW): a dispatch this far
# off is solved again; a storage power below it counts as none
TOL = np.float32(1e-2)


@dataclass(frozen=True, eq=False)
class StorageUnits:
    """What the storage rules know of each unit (a folder's ``storage_units_charac.csv``),
    float32 as grid2op keeps them."""

    emax: np.ndarray  # (n_storage,) MWh
    emin: np.ndarray  # (n_storage,) MWh
    max_p_prod: np.ndarray  # (n_storage,) MW the unit can give
    max_p_absorb: np.ndarray  # (n_storage,) MW the unit can take
    loss: np.ndarray  # (n_storage,) MW drained from the charge every step
    charging_efficiency: np.ndarray  # (n_storage,)
    discharging_efficiency: np.ndarray  # (n_storage,)

    @classmethod
    def from_charac(cls, charac: Any) -> StorageUnits:
        """From a :class:`~grid_vec.chronics.storage_charac.StorageCharac` (already checked
        and in the grid's storage order)."""
        return cls(*(np.asarray(getattr(charac, name), dtype=_F32) for name in _FIELDS))

    @classmethod
    def none(cls) -> StorageUnits:
        """No unit (a grid without storage)."""
        empty = np.zeros(0, dtype=_F32)
        return cls(*(empty.copy() for _ in range(7)))

    @property
    def n(self) -> int:
        return len(self.emax)


@dataclass(frozen=True)
class StepLength:
    """(k, 1) float32 columns: seconds per step, hours per step and their inverse, computed
    as grid2op computes them (its float32 ``delta_time_seconds / 3600``)."""

    seconds: np.ndarray
    hours: np.ndarray
    inv_hours: np.ndarray

    @classmethod
    def of(cls, seconds: np.ndarray) -> StepLength:
        s = np.asarray(seconds, dtype=_F32).reshape(-1, 1)
        hours = s / _F32(3600.0)
        return cls(s, hours, _F32(1.0) / hours)

    def loss(self, units: StorageUnits) -> np.ndarray:
        """(k, n_storage) MWh each unit loses in a step (grid2op's order of operations)."""
        return units.loss * self.seconds / _F32(3600.0)


def reset_storage(
    state: Any, rows: np.ndarray, units: StorageUnits, params: Parameters, length: StepLength
) -> None:
    """Start the episodes of ``rows``: the initial charge plus one step's loss, then
    grid2op's reset step (no unit asked), which drains that loss; nothing owed."""
    charge = _F32(params.init_storage_capacity) * units.emax
    charge = np.broadcast_to(charge, (len(rows), units.n))
    if params.activate_storage_loss:
        charge = charge + length.loss(units)
    state.storage_charge[rows] = charge
    state.storage_charge_prev[rows] = charge
    for name in ("storage_target", "storage_power", "storage_power_prev", "storage_amount"):
        getattr(state, name)[rows] = 0.0
    compute_storage(state, rows, None, units, params, length)


def compute_storage(
    state: Any,
    rows: np.ndarray,
    asked: np.ndarray | None,
    units: StorageUnits,
    params: Parameters,
    length: StepLength,
) -> None:
    """One step of the units of ``rows``: ``asked`` (k, n_storage) MW (None: no unit asked);
    ``length``: the rows' step lengths. grid2op's reset starts the episode with one such
    step, no unit asked."""
    k = len(rows)
    charge = state.storage_charge[rows]
    state.storage_charge_prev[rows] = charge
    state.storage_power_prev[rows] = state.storage_power[rows]
    power = np.zeros((k, units.n), dtype=_F32)
    acted = np.zeros(k, dtype=bool)
    if asked is not None:
        p = np.asarray(asked).astype(_F32)
        acting = np.isfinite(p) & (np.abs(p) >= ACTING)
        acted = acting.any(axis=1)
        if acted.any():
            p = np.where(acting, p, _F32(0.0))
            eff = np.ones((k, units.n))
            if params.activate_storage_loss:
                eff = np.where(p > 0.0, units.charging_efficiency.astype(np.float64), eff)
                eff = np.where(p < 0.0, 1.0 / units.discharging_efficiency.astype(np.float64), eff)
            moved = (charge + (p * length.hours) * eff).astype(_F32)  # float64 sum, float32 charge
            charge = np.where(acting, moved, charge)
            power = p
        state.storage_target[rows] = np.where(acting, p, _F32(0.0))
    else:
        state.storage_target[rows] = 0.0
    if acted.any():
        _bounds(charge, power, acted, units, params, length.inv_hours)
    amount = state.storage_amount[rows]
    total = np.where(acted, power.sum(axis=1, dtype=_F32), _F32(0.0))
    amount[:, 0] = total - amount[:, 1]
    amount[:, 1] = total
    state.storage_amount[rows] = amount
    state.storage_power[rows] = power
    state.storage_charge[rows] = _drain(charge, units, params, length)


def _bounds(
    charge: np.ndarray,
    power: np.ndarray,
    acted: np.ndarray,
    units: StorageUnits,
    params: Parameters,
    inv_hours: np.ndarray,
) -> None:
    """Keep the charges of the rows that ``acted`` within [Emin, Emax] (in place), giving
    back the power a unit could not take or give."""
    high = acted[:, None] & (charge > units.emax)
    if high.any():
        back = inv_hours * (charge - units.emax)
        if params.activate_storage_loss:
            back = back / units.charging_efficiency
        power -= np.where(high, back, _F32(0.0))
        charge[high] = np.broadcast_to(units.emax, charge.shape)[high]
    low = acted[:, None] & (charge < units.emin)
    if low.any():
        back = inv_hours * (charge - units.emin)
        if params.activate_storage_loss:
            back = back * units.discharging_efficiency
        power -= np.where(low, back, _F32(0.0))
        charge[low] = np.broadcast_to(units.emin, charge.shape)[low]
    floor = acted[:, None] & (charge < units.emin)
    charge[floor] = np.broadcast_to(units.emin, charge.shape)[floor]


def _drain(
    charge: np.ndarray, units: StorageUnits, params: Parameters, length: StepLength
) -> np.ndarray:
    """The charges after a step's standing loss (floored at 0: grid2op does not keep Emin)."""
    if not params.activate_storage_loss:
        return charge
    return np.maximum(charge - length.loss(units), _F32(0.0))


def rollback_storage(
    state: Any, rows: np.ndarray, units: StorageUnits, params: Parameters, length: StepLength
) -> None:
    """The step of ``rows`` failed its redispatch: charges as before the step, less the
    standing loss again; the generators make up for the units' previous total only."""
    state.storage_charge[rows] = _drain(state.storage_charge_prev[rows], units, params, length)
    amount = state.storage_amount[rows]
    amount[:, 0] -= amount[:, 1]
    state.storage_amount[rows] = amount


def limit_storage(
    state: Any, row: int, total: np.float32, units: StorageUnits, hours: np.float32
) -> None:
    """grid2op's ``LIMIT_INFEASIBLE_CURTAILMENT_STORAGE_ACTION``, the storage share: take
    ``total`` MW off the units' power of env ``row`` (in proportion to this step's powers,
    else to the step before's), and off their charges through the efficiencies."""
    power = state.storage_power[row]
    this_step = power.sum()
    if abs(this_step) > TOL and abs(total) <= abs(this_step) + TOL:
        change = power * total / this_step
    else:
        before = state.storage_power_prev[row]
        before_sum = before.sum()
        change = before * total / before_sum if abs(before_sum) > 1e-1 else before.copy()
    power -= change
    # the direction of the resulting power, or of the cancelled action when none is left
    direction = np.where(np.abs(power) <= ACTING, change, power)
    change = np.where(direction < 0.0, change / units.discharging_efficiency, change)
    change = np.where(direction > 0.0, change * units.charging_efficiency, change)
    state.storage_charge[row] -= hours * change
    amount = state.storage_amount[row]
    amount[0] -= total
    amount[1] -= total


def storage_step(
    state: Any,
    rows: np.ndarray,
    asked: np.ndarray | None,
    units: StorageUnits,
    params: Parameters,
    length: StepLength,
    failed: dict[int, str],
) -> None:
    """A step of the units of ``rows`` (:func:`compute_storage`), then the rollback of the
    rows (by position) whose redispatch ``failed``."""
    compute_storage(state, rows, asked, units, params, length)
    if failed:
        at = np.fromiter(failed, dtype=np.intp)
        sub = StepLength(length.seconds[at], length.hours[at], length.inv_hours[at])
        rollback_storage(state, rows[at], units, params, sub)
