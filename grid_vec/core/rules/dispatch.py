"""Redispatch and curtailment as grid2op plays them, for the rows of a batch.

grid2op's rules (``BaseEnv.step`` and its ``dispatch`` modules), restated for an env axis:

* **Targets.** A redispatch asked for generator g adds to its *target* dispatch; the first
  time g is redispatched in an episode, its target starts from its actual dispatch. A target
  beyond ``pmax - pmin`` (or below ``pmin - pmax``) cannot be met: the whole action is
  played as do-nothing and the step reports a failed redispatch (the target is given back).
* **Curtailment.** A renewable generator's output is capped at ``limit x pmax``; a limit
  stays until the agent sets another (1 lifts it). The power curtailment removes (or gives
  back, when a limit is lifted) is counted step by step.
* **Actual dispatch.** Each step the dispatchable generators move from the scenario's
  schedule by their *actual* dispatch. When a dispatch is under way, or curtailment changed
  what the generators must make up for, grid2op solves a small quadratic programme: the
  change of actual dispatch closest to the targets (weights inversely proportional to the
  ramps), summing to the power to make up for, within pmin / pmax and the ramps of the
  step. It is solved here the same way (scipy's SLSQP on grid2op's scaled problem, the same
  start point and tolerances; :mod:`grid_vec.core.rules.dispatch_qp` runs SLSQP's compiled
  kernel without scipy's wrapper, to scipy's result bit for bit), so the trajectories agree
  with grid2op's to the solver's precision. No solution is a game over.
* **Storage units.** The change of the units' total power since the step before
  (:mod:`grid_vec.core.rules.storage`, computed before this) adds to what the generators make up
  for: they produce more when the units absorb more.
* ``limit_infeasible_curtailment_storage_action`` shrinks a curtailment and a storage action
  the generators cannot make up for within their ramps, before the programme is solved
  (each its share of the excess).

Generator up / down times are not played (grid2op ignores them by default,
``IGNORE_MIN_UP_DOWN_TIME``).

Every env's numbers depend only on its own row: the arithmetic is per row (float32 where
grid2op keeps float32), the programme is solved for one env at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.dispatch_qp import Programme, solve
from grid_vec.core.rules.storage import TOL, StepLength, StorageUnits, limit_storage
from grid_vec.grid.model import GridModel

EPSILON = np.float32(1e-4)  # grid2op's epsilon_poly: the programme's precision (MW)
ZERO = 1e-7  # below this, a value counts as 0 (grid2op's threshold)
_F32 = np.float32
# columns grid2op also requires of prods_charac.csv before it plays any dispatch
_ALSO_NEEDED = (
    "start_cost", "shut_down_cost", "marginal_cost", "min_up_time", "min_down_time",
)  # fmt: skip


@dataclass(frozen=True, eq=False)
class GeneratorLimits:
    """What the dispatch rules know of each generator (grid2op's ``prods_charac.csv``).

    ``available`` is grid2op's ``redispatching_unit_commitment_availble``: without the
    generators' characteristics there is neither redispatch nor curtailment.
    """

    pmin: np.ndarray  # (n_gen,) float32 MW
    pmax: np.ndarray  # (n_gen,) float32 MW
    ramp_up: np.ndarray  # (n_gen,) float32 MW per step
    ramp_down: np.ndarray  # (n_gen,) float32 MW per step
    redispatchable: np.ndarray  # (n_gen,) bool
    renewable: np.ndarray  # (n_gen,) bool: curtailable
    available: bool = True

    @classmethod
    def of_model(cls, model: GridModel, ramp: np.ndarray) -> GeneratorLimits:
        """An embedded grid's: the net's pmin / pmax, ``ramp`` both ways, its generators
        dispatchable (the slack too, as grid2op's thermal slacks are) and its static
        generators curtailable."""
        ramp32 = np.asarray(ramp, dtype=_F32)
        return cls(
            np.asarray(model.gen_pmin, dtype=_F32),
            np.asarray(model.gen_pmax, dtype=_F32),
            ramp32,
            ramp32.copy(),
            np.asarray(model.gen_kind != "sgen"),
            np.asarray(model.gen_kind == "sgen"),
        )

    @classmethod
    def from_prods_charac(
        cls, columns: dict[str, np.ndarray] | None, model: GridModel, path: Path
    ) -> GeneratorLimits:
        """A dataset folder's, from the columns of its ``prods_charac.csv`` (None: the folder
        has none; without it, or without one of the columns grid2op requires, there is no
        dispatch, as in grid2op). Generators are matched by name; a type
        other than wind and solar is dispatchable, wind and solar are curtailable; an empty
        ramp reads 0.

        Raises:
            FolderFormatError: a missing generator, a value that is not a finite number,
                pmin > pmax, a negative ramp; naming the file, line and column.
        """
        from grid_vec.chronics.untrusted import FolderFormatError, short

        n = model.n_gen
        needed = ("name", "type", "Pmin", "Pmax", "max_ramp_up", "max_ramp_down")
        if columns is None or any(c not in columns for c in (*needed, *_ALSO_NEEDED)):
            zero = np.zeros(n, dtype=_F32)
            no = np.zeros(n, dtype=bool)
            return cls(zero, zero, zero, zero, no, no, available=False)
        line: dict[str, int] = {}
        for i, name in enumerate(columns["name"]):
            if str(name) in line:
                raise FolderFormatError(
                    f"{path}: line {i + 2}, column 'name': {short(str(name))} is repeated"
                )
            line[str(name)] = i
        values = np.zeros((4, n), dtype=_F32)
        kinds = []
        for g, name in enumerate(model.gen_names):
            i = line.get(str(name))
            if i is None:
                raise FolderFormatError(f"{path}: no line for generator {short(str(name))!r}")
            kinds.append(str(columns["type"][i]).strip())
            for row, column in enumerate(needed[2:]):
                cell = columns[column][i]
                if isinstance(cell, str) and cell.strip() == "" and "ramp" in column:
                    continue  # grid2op reads an empty ramp as 0
                try:
                    number = float(cell)
                except ValueError:
                    number = float("nan")
                if not np.isfinite(number) or ("ramp" in column and number < 0):
                    raise FolderFormatError(
                        f"{path}: line {i + 2}, column {column!r}: {short(str(cell))} is not "
                        "a finite number" + (" >= 0" if "ramp" in column else "")
                    )
                values[row, g] = number
        pmin, pmax, up, down = values
        bad = np.flatnonzero(pmin > pmax)
        if bad.size:
            g = int(bad[0])
            raise FolderFormatError(
                f"{path}: line {line[str(model.gen_names[g])] + 2}: Pmin {pmin[g]} > Pmax {pmax[g]}"
            )
        renewable = np.array([k in ("wind", "solar") for k in kinds], dtype=bool)
        return cls(pmin, pmax, up, down, ~renewable, renewable)

    def margins(self, gen_p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """grid2op's ``gen_margin_up`` / ``gen_margin_down`` for (k, n_gen) outputs: how far
        each dispatchable generator can move in one step, 0 for the others."""
        if not self.available:
            zero = np.zeros_like(gen_p, dtype=_F32)
            return zero, zero.copy()
        up = np.minimum(self.pmax - gen_p, self.ramp_up).astype(_F32)
        down = np.minimum(gen_p - self.pmin, self.ramp_down).astype(_F32)
        for margin in (up, down):
            margin[:, self.renewable] = 0.0
            np.maximum(margin, 0.0, out=margin)  # the slack can be beyond its limits
        return up, down


def register_redispatch(
    state: Any,
    rows: np.ndarray,
    redispatch: np.ndarray | None,
    scheduled: np.ndarray | None,
    limits: GeneratorLimits,
    params: Parameters,
) -> dict[int, str]:
    """Add the agent's redispatch (``(k, n_gen)`` MW, None: none asked) to the targets of
    ``rows``; return the rows (by position) whose targets cannot be met, with the reason.
    Their targets are given back; the caller plays their actions as do-nothing.
    ``scheduled``: the step's (k, n_gen) scheduled generation (read only when
    ``allow_dispatch_gen_switch_off`` is False)."""
    if redispatch is None:
        return {}
    asked = redispatch.astype(_F32)
    target = state.target_dispatch[rows]
    actual = state.actual_dispatch[rows]
    already = state.already_redispatched[rows]
    moved = np.abs(asked) > ZERO
    target = np.where(already, target + asked, target)
    first = moved & ~already
    target[first] = actual[first] + asked[first]
    already |= moved
    spread = limits.pmax - limits.pmin
    above, below = target > spread, target < -spread
    off = np.zeros_like(above)
    if not params.allow_dispatch_gen_switch_off and scheduled is not None:
        off = moved & (np.abs(scheduled) <= ZERO)
    failed: dict[int, str] = {}
    for j in np.flatnonzero((above | below | off).any(axis=1)).tolist():
        g = int(np.flatnonzero(above[j] | below[j] | off[j])[0])
        failed[j] = (
            f"generator {g} is scheduled at 0 MW: it cannot be redispatched"
            if off[j, g] and not (above[j, g] or below[j, g])
            else f"redispatch target {float(target[j, g]):.2f} MW of generator {g} is beyond "
            f"pmax - pmin = {float(spread[g]):.2f} MW"
        )
        target[j] -= asked[j]  # grid2op gives the asked amount back
    state.target_dispatch[rows] = target
    state.already_redispatched[rows] = already
    return failed


@dataclass
class DispatchStep:
    """What the dispatch rules give for the rows of a step."""

    gen_p: np.ndarray  # (k, n_gen) MW the generators are set to
    failed: dict[int, str]  # position -> why no dispatch could be found (a game over)


def dispatch_rows(
    state: Any,
    rows: np.ndarray,
    scheduled: np.ndarray,
    curtail: np.ndarray | None,
    limits: GeneratorLimits,
    params: Parameters,
    *,
    first: bool = False,
    storage: StorageUnits | None = None,
    length: StepLength | None = None,
) -> DispatchStep:
    """Curtail, then find each row's actual dispatch, and give the generators' setpoints.

    Args:
        state: the batch's state (its dispatch arrays are updated for ``rows``; the storage
            units' step is already computed).
        rows: the env rows.
        scheduled: (k, n_gen) the scenario's generation of the step (MW).
        curtail: (k, n_gen) new curtailment limits (ratio of pmax; NaN: unchanged), or None.
        limits: the generators' characteristics.
        params: the rules.
        first: the reset's step (grid2op's step 0).
        storage: the storage units (None: the grid has none).
        length: the rows' step lengths (with ``storage``).

    Returns:
        The setpoints and the rows with no feasible dispatch.
    """
    if not limits.available:
        return DispatchStep(scheduled, {})
    new_p = scheduled.astype(_F32)
    renewable = limits.renewable
    before = state.gen_p_before_curtail[rows]
    before[:, renewable] = new_p[:, renewable]
    state.gen_p_before_curtail[rows] = before
    _curtail(state, rows, new_p, curtail, limits)
    new_p_th = scheduled.astype(_F32)
    if params.limit_infeasible_curtailment_storage_action:
        _limit_curtailment(state, rows, new_p, new_p_th, limits, storage, length)
    failed = _solve_dispatch(state, rows, new_p, limits, params, first)
    actual = state.actual_dispatch[rows]
    gen_p = new_p + actual
    state.gen_p_redisp[rows] = gen_p
    # at rest again (nothing dispatched, curtailed or owed): the next steps skip all this
    state.dispatching[rows] = (
        (actual != 0).any(axis=1)
        | (state.target_dispatch[rows] != 0).any(axis=1)
        | (state.curtail_limit[rows] != 1).any(axis=1)
        | (state.curtailment_mw[rows] != 0).any(axis=1)
        | (state.storage_amount[rows] != 0).any(axis=1)
    )
    return DispatchStep(gen_p.astype(np.float64), failed)


def _curtail(
    state: Any,
    rows: np.ndarray,
    new_p: np.ndarray,
    curtail: np.ndarray | None,
    limits: GeneratorLimits,
) -> None:
    """Cap the renewables of ``new_p`` at their limits; count the power removed this step
    (``curtailment_mw[:, 0]``, against the step before: ``[:, 1]``)."""
    limit = state.curtail_limit[rows]
    mw = state.curtailment_mw[rows]
    asked = np.zeros(len(rows), dtype=bool) if curtail is None else ~np.isnan(curtail).all(axis=1)
    active = asked | (np.abs(limit - 1.0) >= ZERO).any(axis=1)
    if active.any():
        state.curtail_limit_prev[rows[active]] = limit[active]
        if curtail is not None:
            given = ~np.isnan(curtail) & limits.renewable
            limit = np.where(given & active[:, None], curtail, limit).astype(_F32)
        capped = np.abs(limit - 1.0) >= ZERO
        cap = np.where(capped, np.minimum(limits.pmax * limit, new_p), new_p).astype(_F32)
        before = state.gen_p_before_curtail[rows]
        for j in np.flatnonzero(active).tolist():  # grid2op's float32 sums, one env each
            c = capped[j]
            total = _F32(cap[j, c].sum() - before[j, c].sum())
            mw[j, 0] = total - mw[j, 1]
            mw[j, 1] = total
        new_p[active] = cap[active]
    idle = ~active
    mw[idle, 0] = -mw[idle, 1]
    mw[idle, 1] = 0.0
    state.curtail_limit[rows] = limit
    state.curtailment_mw[rows] = mw


def _limit_curtailment(
    state: Any,
    rows: np.ndarray,
    new_p: np.ndarray,
    new_p_th: np.ndarray,
    limits: GeneratorLimits,
    storage: StorageUnits | None,
    length: StepLength | None,
) -> None:
    """grid2op's ``LIMIT_INFEASIBLE_CURTAILMENT_STORAGE_ACTION``: give back the part of a
    curtailment and of a storage action the dispatchable generators cannot make up for this
    step (or the part a previous step held back, once they can), each its share."""
    ok = limits.redispatchable
    for j, row in enumerate(rows.tolist()):
        mw = state.curtailment_mw[row]
        amount = state.storage_amount[row]
        total = amount[0] - mw[0]  # storage and curtailment together
        if abs(total) < TOL:
            continue
        redisp = state.gen_p_redisp[row]
        actual = state.actual_dispatch[row]
        normal = (new_p[j] - (redisp - actual))[ok]
        avail_down = np.maximum(limits.pmin[ok] - redisp[ok], -limits.ramp_down[ok]).sum()
        avail_up = np.minimum(limits.pmax[ok] - redisp[ok], limits.ramp_up[ok]).sum()
        move = normal.sum() + amount[0] - mw[0]
        too_much = _F32(0.0)
        if move > avail_up:
            too_much = _clamp(_F32(move - avail_up + TOL), total)
            mw[2] = too_much
        elif move < avail_down:
            too_much = _clamp(_F32(move - avail_down - TOL), total)
            mw[2] = too_much
        elif abs(mw[2]) >= TOL:
            held = min(avail_up - TOL, mw[2])
            mw[2] -= held
            too_much = mw[2]
        if abs(too_much) <= TOL:
            continue
        back = _F32(-mw[0] / total * too_much)  # curtailment's share
        taken = _F32(amount[0] / total * too_much)  # storage's
        if np.sign(back) != np.sign(taken):  # one of them alone can give back
            back = too_much if np.sign(back) == np.sign(too_much) else _F32(0.0)
            taken = too_much if np.sign(taken) == np.sign(too_much) else _F32(0.0)
        if storage is not None and storage.n:
            limit_storage(state, row, _F32(taken), storage, length.hours[j, 0])
        mw[0] += back
        mw[1] += back
        if back > TOL:
            removed = new_p_th[j] - new_p[j]
        else:
            previous = new_p_th[j].copy()
            prev = state.curtail_limit_prev[row]
            capped = np.abs(prev - 1.0) >= ZERO
            previous[capped] = np.minimum(limits.pmax[capped] * prev[capped], previous[capped])
            removed = new_p_th[j] - previous
        share = removed.sum()
        if abs(share) > TOL:
            removed[~limits.renewable] = 0.0
            removed *= back / share
            new_p[j, limits.renewable] += removed[limits.renewable]


def _clamp(too_much: np.float32, total: float) -> np.float32:
    """Curtailment can at most be cancelled, not reversed."""
    if np.sign(too_much) != np.sign(total):
        return _F32(0.0)
    return _F32(total) if abs(too_much) > abs(total) else too_much


def _solve_dispatch(
    state: Any,
    rows: np.ndarray,
    new_p: np.ndarray,
    limits: GeneratorLimits,
    params: Parameters,
    first: bool,
) -> dict[int, str]:
    """Each row's actual dispatch (grid2op's ``_make_redisp``); the rows with none."""
    actual = state.actual_dispatch[rows]
    target = state.target_dispatch[rows]
    if not params.env_does_redispatching:
        state.actual_dispatch[rows] = target
        return {}
    mw = state.curtailment_mw[rows]
    due = (
        (np.abs(actual.sum(axis=1)) >= TOL)
        | (np.abs(actual - target).max(axis=1, initial=0.0) >= TOL)
        | (np.abs(mw[:, 0]) >= TOL)
        | (np.abs(state.storage_amount[rows, 0]) >= TOL)
    )
    failed: dict[int, str] = {}
    if not due.any():
        return failed
    if first:
        state.gen_p_redisp[rows[due]] = new_p[due]
    can_use_all = params.ignore_min_up_down_time and params.allow_dispatch_gen_switch_off
    for j in np.flatnonzero(due).tolist():
        row = int(rows[j])
        # grid2op's sum of the contributions (Python floats): storage, then curtailment
        compensate = 0.0 + float(state.storage_amount[row, 0]) + -float(mw[j, 0])
        result = _programme(
            new_p[j],
            state.actual_dispatch[row],
            state.target_dispatch[row],
            state.already_redispatched[row],
            state.gen_p_redisp[row],
            compensate,
            limits,
            can_use_all,
        )
        if isinstance(result, str):
            failed[j] = result
        else:
            state.actual_dispatch[row] = result
    return failed


def _programme(
    new_p: np.ndarray,
    actual: np.ndarray,
    target: np.ndarray,
    already: np.ndarray,
    gen_p_redisp: np.ndarray,
    compensate: float,
    limits: GeneratorLimits,
    can_use_all: bool,
) -> np.ndarray | str:
    """One env's new actual dispatch, or why there is none."""
    moving = (new_p > 0.0) | (np.abs(actual) >= ZERO) | (target != actual)
    moving &= limits.redispatchable
    incr = new_p - (gen_p_redisp - actual)
    why = _infeasible(moving, incr, gen_p_redisp, compensate, limits)
    if why is not None and can_use_all:
        wider = limits.redispatchable.copy()
        if _infeasible(wider, incr, gen_p_redisp, compensate, limits) is None:
            moving, why = wider, None
    if why is not None:
        return why
    n = int(moving.sum())
    wanted = target[moving] - actual[moving]
    mine = already[moving].copy()
    weights = np.ones(n) * (1.0 / (limits.ramp_up + limits.ramp_down + EPSILON))[moving]
    weights /= weights.sum()
    if not wanted[mine].size:
        mine[:] = True
    scale_x = float(max(np.max(np.abs(actual)), 1.0))
    goal = (wanted[mine] / scale_x).astype(float)
    scale_f = float(np.round(max(0.5 * np.abs(goal).sum() ** 2, 1.0), decimals=4))
    base = new_p[moving] + actual[moving]
    low = np.maximum(limits.pmin[moving] - base, -limits.ramp_down[moving] - incr[moving])
    high = np.minimum(limits.pmax[moving] - base, limits.ramp_up[moving] - incr[moving])
    low, high = low.astype(float), high.astype(float)
    half_eps = 0.5 * EPSILON
    total = np.full(1, float(_F32(compensate)))  # grid2op's float32 constraint
    x0 = np.zeros(n)
    if (np.abs(target) >= ZERO).any() or already.any():
        seeded = (np.abs(target[moving]) >= ZERO) | already[moving]
        x0[seeded] = (target[moving][seeded] - actual[moving][seeded]) / scale_x
        free = np.abs(x0) <= ZERO
        if free.any():
            denom = (1.0 / weights[free]).sum()
            x0[free] = -x0.sum() / (weights[free] * (denom if denom > 1e-2 else 1.0))
    else:
        x0 -= actual[moving] / scale_x
    programme = Programme(
        x0=x0,
        mine=mine,
        weights=weights[mine],
        goal=goal,
        scale_f=scale_f,
        total=total / scale_x,
        low=(low - half_eps) / scale_x,
        high=(high + half_eps) / scale_x,
        precision=max(float(EPSILON) / scale_x, 1e-6),
    )
    res = solve(programme)
    if not res.success:  # grid2op keeps an unconverged point that meets the constraints
        lows = np.concatenate((programme.total, programme.low))
        highs = np.concatenate((programme.total, programme.high))
        values = np.concatenate((np.ones((1, n)), np.eye(n))) @ res.x
        if not ((values - lows >= -TOL).all() and (values - highs <= TOL).all()):
            return f"no dispatch meets the generators' limits and ramps ({res.message})"
    new = actual.copy()
    # added in float64, then stored in float32, as grid2op does: a generator's dispatch
    # brought back to 0 keeps grid2op's rounding residue, which decides whether it takes
    # part in the next step's programme
    new[moving] += res.x * scale_x
    return new


def _infeasible(
    moving: np.ndarray,
    incr: np.ndarray,
    gen_p_redisp: np.ndarray,
    compensate: float,
    limits: GeneratorLimits,
) -> str | None:
    """Why the generators in ``moving`` cannot make up for the step's change, or None."""
    down = np.maximum(limits.pmin[moving] - gen_p_redisp[moving], -limits.ramp_down[moving])
    up = np.minimum(limits.pmax[moving] - gen_p_redisp[moving], limits.ramp_up[moving])
    move = incr[moving].sum() + compensate
    if move > up.sum():
        return (
            f"the generators must rise by {float(move):.2f} MW, their limits and ramps allow "
            f"{float(up.sum()):.2f} MW"
        )
    if move < down.sum():
        return (
            f"the generators must fall by {float(-move):.2f} MW, their limits and ramps allow "
            f"{float(-down.sum()):.2f} MW"
        )
    return None
