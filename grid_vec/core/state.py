"""The mutable state of N envs of one grid, and the physics rules, written once for all.

Every array has a leading env axis (``N`` rows, one per env of a batch; a GridEnv is the
batch of one), the power flows too: one solver batch holds every env's row
(:class:`~grid_vec.grid.solver_batch.SolverBatch`), and nothing a row computes depends on the
other rows, so every float of an env's trajectory depends only on its own seed and actions,
never on how envs are batched.

:func:`solve` and :func:`update_timers` are the rule engine shared by reset, step and
simulate: once an action and the injections of a step are in the state, they solve the
power flows and cascade overflow trips exactly as grid2op's ``Backend.next_grid_state`` and
``BaseEnv._aux_register_env_converged`` do:

* every solve, a connected branch above ``hard_overflow_threshold`` x its limit trips;
* once per step, a connected branch above ``soft_overflow_threshold`` x its limit adds one
  to its protection counter (which holds the consecutive overflowed steps so far), and trips
  when the counter exceeds ``nb_timestep_overflow_allowed``;
* after a trip the power flow is solved again (cascade) until no branch trips;
* then timers move: reconnection/cooldown timers count down, tripped branches get
  ``nb_timestep_reconnection``, acted-on branches / substations get their cooldown;
* on reset (grid2op's reset plays such a step, then zeroes every timer): only hard overflows
  trip, and every counter and timer starts at 0.

Game over: divergence, a load or generator cut off from the slack, a disconnected slack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grid_vec.core.parameters import Parameters
from grid_vec.core.topology import TopologyLayout, unsolvable
from grid_vec.grid import newton_kernel  # compiled from grid_vec/grid/newton_kernel.c
from grid_vec.grid.backend import flow_slices
from grid_vec.grid.model import GridModel
from grid_vec.grid.solver_batch import SolverBatch

# ``any_true(x)``: whether any element of the array ``x`` is nonzero, for every module of the
# core. Compiled (grid/newton_kernel.c): on the small arrays of the step hot path, called some
# sixty times a step, numpy's public np.count_nonzero (a Python wrapper, 0.19 µs) costs three
# times as much and ndarray.any() ten times (0.06 µs here, 2-core Xeon VM, 2026-12-07).
any_true = newton_kernel.any_nonzero


@dataclass
class BatchState:
    """Everything that changes while the episodes of N envs are played."""

    topo: np.ndarray  # (N, n_elem) int8 bus bar of every element end, -1 = disconnected
    last_or: np.ndarray  # (N, n_branch) int8 bus bar to reconnect a branch origin on
    last_ex: np.ndarray  # (N, n_branch) int8
    line_status: np.ndarray  # (N, n_branch) bool
    # every counter and timer of an env in one int64 row (one check tells whether any runs):
    # timestep_overflow, cooldown_line, cooldown_sub, protection_counter, column views into it
    timers: np.ndarray
    timestep_overflow: np.ndarray  # (N, n_branch) consecutive steps above the thermal limit
    cooldown_line: np.ndarray  # (N, n_branch) steps before the status can be changed
    cooldown_sub: np.ndarray  # (N, n_sub)
    protection_counter: np.ndarray  # (N, n_branch) consecutive steps above the soft limit
    # the dispatch rules' (grid_vec.core.rules.dispatch), float32 as grid2op keeps them
    target_dispatch: np.ndarray  # (N, n_gen) MW asked by the agent (cumulative)
    actual_dispatch: np.ndarray  # (N, n_gen) MW really applied
    already_redispatched: np.ndarray  # (N, n_gen) bool: redispatched this episode
    gen_p_redisp: np.ndarray  # (N, n_gen) last setpoints: schedule + actual dispatch
    gen_p_before_curtail: np.ndarray  # (N, n_gen) renewables' schedule before curtailment
    curtail_limit: np.ndarray  # (N, n_gen) ratio of pmax (1: none)
    curtail_limit_prev: np.ndarray  # (N, n_gen) the limits of the step before
    # (N, 3): MW curtailment removed this step (vs the step before), in all, held back
    curtailment_mw: np.ndarray
    dispatching: np.ndarray  # (N,) bool: a dispatch, curtailment or storage is under way
    # the storage rules' (grid_vec.core.rules.storage), float32 as grid2op keeps them
    storage_charge: np.ndarray  # (N, n_storage) MWh
    storage_charge_prev: np.ndarray  # (N, n_storage) MWh at the start of the step
    storage_target: np.ndarray  # (N, n_storage) MW asked by the agent this step
    storage_power: np.ndarray  # (N, n_storage) MW the units take this step (load convention)
    storage_power_prev: np.ndarray  # (N, n_storage) the step before's
    # (N, 2): MW the generators make up for this step (the change of the total), the total
    storage_amount: np.ndarray
    solver: SolverBatch  # the power flows: a row per env
    # results of the last solve (zeros after a failed one), FLOW_FIELDS order laid out by
    # flow_slices(model), and column views into them
    flows: np.ndarray  # (N, n_flows)
    a_or: np.ndarray
    load_p: np.ndarray
    gen_p: np.ndarray
    topo_dirty: np.ndarray  # (N,) bool: topology changed since the backend last received it
    slices: dict[str, slice] | None = None  # where each flow field lies in a flows row
    n: int = 0  # number of envs

    def __reduce__(self) -> tuple:
        # the timers' and flows' column fields are views of them: a copy (pickle, deepcopy)
        # builds them again as views of the copied arrays, not as copies of their own
        rows = {name: getattr(self, name) for name in _ROW_ARRAYS}
        n_sub = self.cooldown_sub.shape[1]
        return _assemble, (rows, self.timers, self.flows, self.solver, self.slices, n_sub)

    def take(self, rows: np.ndarray | list[int]) -> BatchState:
        """An independent state of the given rows (their solver rows copied): look-ahead."""
        rows = np.asarray(rows, dtype=np.intp)
        return _assemble(
            {name: getattr(self, name)[rows] for name in _ROW_ARRAYS},
            self.timers[rows],
            self.flows[rows],
            self.solver.take(rows),
            self.slices,
            self.cooldown_sub.shape[1],
        )

    def restore(self, rows: np.ndarray, initial: BatchState) -> None:
        """Put ``rows`` (sorted env indices) back in place to ``initial``, a one-row state
        whose topology is every element on bus bar 1, already pushed: each array with one
        assignment over all the rows, the solver's rows reset (:meth:`SolverBatch.reset`)
        rather than replaced by copies, so that they solve what copies of ``initial``'s would."""
        sel = selector(rows, self.n)
        for name in ROW_FIELDS:
            getattr(self, name)[sel] = getattr(initial, name)  # its one row, broadcast
        if len(rows):
            self.solver.reset(rows)


_ROW_ARRAYS = (
    "topo", "last_or", "last_ex", "line_status", "target_dispatch", "actual_dispatch",
    "already_redispatched", "gen_p_redisp", "gen_p_before_curtail", "curtail_limit",
    "curtail_limit_prev", "curtailment_mw", "dispatching", "topo_dirty", "storage_charge",
    "storage_charge_prev", "storage_target", "storage_power", "storage_power_prev",
    "storage_amount",
)  # fmt: skip


# every array of a row but the column views into timers and flows: what a reset restores
# and a snapshot holds
ROW_FIELDS = (*_ROW_ARRAYS, "timers", "flows")

# the storage units' (N, n_storage) arrays
_STORAGE_ARRAYS = (
    "storage_charge", "storage_charge_prev", "storage_target", "storage_power",
    "storage_power_prev",
)  # fmt: skip


def _assemble(
    arrays: dict[str, np.ndarray],
    timers: np.ndarray,
    flows: np.ndarray,
    solver: SolverBatch,
    slices: dict[str, slice],
    n_sub: int,
) -> BatchState:
    n_b = (timers.shape[1] - n_sub) // 3
    overflow, cooldown_line, cooldown_sub, counter = np.split(
        timers, [n_b, 2 * n_b, 2 * n_b + n_sub], axis=1
    )
    state = BatchState(
        timers=timers,
        timestep_overflow=overflow,
        cooldown_line=cooldown_line,
        cooldown_sub=cooldown_sub,
        protection_counter=counter,
        solver=solver,
        flows=flows,
        a_or=flows[:, slices["a_or"]],
        load_p=flows[:, slices["load_p"]],
        gen_p=flows[:, slices["gen_p"]],
        **arrays,
    )
    state.slices = slices
    state.n = len(solver)
    return state


def initial_state(model: GridModel, layout: TopologyLayout, solver: SolverBatch) -> BatchState:
    """Every element on bus bar 1, every timer at 0, no dispatch, for ``len(solver)`` envs."""
    n, n_b, n_g, n_s = len(solver), model.n_branch, model.n_gen, model.n_storage
    slices = flow_slices(model)
    arrays = {
        "topo": np.ones((n, layout.n_elem), dtype=np.int8),
        "last_or": np.ones((n, n_b), dtype=np.int8),
        "last_ex": np.ones((n, n_b), dtype=np.int8),
        "line_status": np.ones((n, n_b), dtype=bool),
        "target_dispatch": np.zeros((n, n_g), dtype=np.float32),
        "actual_dispatch": np.zeros((n, n_g), dtype=np.float32),
        "already_redispatched": np.zeros((n, n_g), dtype=bool),
        "gen_p_redisp": np.zeros((n, n_g), dtype=np.float32),
        "gen_p_before_curtail": np.zeros((n, n_g), dtype=np.float32),
        "curtail_limit": np.ones((n, n_g), dtype=np.float32),
        "curtail_limit_prev": np.ones((n, n_g), dtype=np.float32),
        "curtailment_mw": np.zeros((n, 3), dtype=np.float32),
        "dispatching": np.zeros(n, dtype=bool),
        "topo_dirty": np.ones(n, dtype=bool),
        **{name: np.zeros((n, n_s), dtype=np.float32) for name in _STORAGE_ARRAYS},
        "storage_amount": np.zeros((n, 2), dtype=np.float32),
    }
    timers = np.zeros((n, 3 * n_b + model.n_sub), dtype=np.int64)
    flows = np.zeros((n, slices["all"].stop))
    return _assemble(arrays, timers, flows, solver, slices, model.n_sub)


def disconnect(state: BatchState, layout: TopologyLayout, branches: np.ndarray) -> None:
    """Disconnect the branches of an ``(N, n_branch)`` mask, remembering their bus bars."""
    off = branches & state.line_status
    if not any_true(off):
        return
    rows, idx = np.nonzero(off)
    topo = state.topo
    state.last_or[rows, idx] = topo[rows, layout.pos_or[idx]]
    state.last_ex[rows, idx] = topo[rows, layout.pos_ex[idx]]
    topo[rows, layout.pos_or[idx]] = -1
    topo[rows, layout.pos_ex[idx]] = -1
    state.line_status[rows, idx] = False
    state.topo_dirty[rows] = True


def reconnect(
    state: BatchState, layout: TopologyLayout, rows: np.ndarray, branches: np.ndarray
) -> None:
    """Reconnect one branch per given row on the bus bars it had before."""
    state.topo[rows, layout.pos_or[branches]] = state.last_or[rows, branches]
    state.topo[rows, layout.pos_ex[branches]] = state.last_ex[rows, branches]
    state.line_status[rows, branches] = True
    state.topo_dirty[rows] = True


@dataclass(frozen=True)
class OverflowLimits:
    """Current limits in amperes per branch, computed once per (parameters, thermal limits),
    as (1, n_branch) rows: numpy compares an (N, n_branch) array with a row of the same number
    of dimensions several times faster than with a 1-D array, when N is 1."""

    thermal: np.ndarray  # the branch's thermal limit
    soft: np.ndarray  # above it, the branch counts an overflowed step
    hard: np.ndarray  # above it, the branch trips at once

    @classmethod
    def of(cls, params: Parameters, thermal_limit: np.ndarray) -> OverflowLimits:
        row = thermal_limit[None]
        return cls(row, params.soft_overflow_threshold * row, params.hard_overflow_threshold * row)


@dataclass
class StepOutcome:
    """What happened in the physics of one step, for every env of a batch."""

    game_over: list[str | None]  # per env: the reason, or None
    ended: np.ndarray  # (N,) bool: game over
    tripped: np.ndarray  # (N, n_branch) bool, branches tripped by the protections
    overflow: np.ndarray  # (N,) bool: a branch may be above its soft limit (False: none is)
    # rows (batch indices) not solved: no feasible dispatch (their game_over says why)
    no_dispatch: tuple[int, ...] = ()


def selector(rows: np.ndarray, n: int) -> slice | np.ndarray:
    """How to index the rows of a batch of ``n``: a slice (views, cheap) when ``rows`` (sorted,
    unique) are all of them, else the indices."""
    return slice(None) if len(rows) == n else rows


def solve(
    state: BatchState,
    model: GridModel,
    layout: TopologyLayout,
    params: Parameters,
    limits: OverflowLimits,
    rows: np.ndarray,
    *,
    count_soft: bool = True,
    failed: dict[int, str] | None = None,
) -> StepOutcome:
    """Solve the power flows of ``rows`` (sorted env indices) with their current injections
    and topologies, then cascade trips, all rows together.

    ``count_soft=False`` (on reset, as grid2op's reset step): only hard overflows trip.
    Rows not given are left alone (their outcome: no game over, no trip, no overflow).
    ``failed``: rows already over (no feasible dispatch), with the reason: not solved.
    """
    n = state.n
    game_over: list[str | None] = [None] * n
    # the outcome's flags, columns of one array (one allocation per step)
    flags = np.zeros((n, 2 + model.n_branch), dtype=bool)
    ended, overflow, tripped = flags[:, 0], flags[:, 1], flags[:, 2:]
    counter = increased = None
    a_or, status = state.a_or, state.line_status
    todo = np.asarray(rows, dtype=np.intp)
    if failed:
        for row, reason in failed.items():
            game_over[row] = reason
            ended[row] = True
            state.flows[row] = 0.0
        todo = todo[~np.isin(todo, list(failed))]
    while len(todo):
        todo = _run_power_flows(state, model, layout, todo, game_over, ended)
        if params.no_overflow_disconnection:
            overflow[todo] = True  # nothing trips, but the overflow timers count
            break
        sub_a = a_or[selector(todo, n)]
        soft = sub_a > limits.soft
        if not any_true(soft):  # hard >= soft: no soft overflow, no trip (the usual step)
            break
        engaged = soft.any(axis=1)
        todo, soft, sub_a = todo[engaged], soft[engaged], sub_a[engaged]
        overflow[todo] = True
        if counter is None:
            counter = state.protection_counter.copy()
            increased = np.zeros((n, model.n_branch), dtype=bool)
        sub_status = status[todo]
        to_trip = (sub_a > limits.hard) & sub_status
        if count_soft:
            soft &= sub_status & ~increased[todo]
            counter[todo] += soft
            increased[todo] |= soft
            to_trip |= (counter[todo] > params.nb_timestep_overflow_allowed) & sub_status
        trips = to_trip.any(axis=1)
        todo, to_trip = todo[trips], to_trip[trips]
        if not len(todo):
            break
        tripped[todo] |= to_trip
        mask = np.zeros((n, model.n_branch), dtype=bool)
        mask[todo] = to_trip
        disconnect(state, layout, mask)
    return StepOutcome(game_over, ended, tripped, overflow, tuple(failed or ()))


def _run_power_flows(
    state: BatchState,
    model: GridModel,
    layout: TopologyLayout,
    rows: np.ndarray,
    game_over: list[str | None],
    ended: np.ndarray,
) -> np.ndarray:
    """One power flow per row (pushing changed topologies first); returns the rows that
    converged, writes the reason of the others into ``game_over`` and zeroes their flows."""
    flows = state.flows
    todo = rows.tolist()
    reasons: dict[int, str] = {}
    if any_true(state.topo_dirty):  # rarely: a changed topology somewhere in the batch
        reasons = push_topology(state, model, layout, rows[state.topo_dirty[rows]])
        if reasons:
            todo = [row for row in todo if row not in reasons]
    if todo:
        for row in state.solver.solve(todo, flows):
            reasons[row] = "power flow diverged"
    if not reasons:
        return rows
    failed = np.zeros(state.n, dtype=bool)  # a mask over the batch: np.isin sorts
    for row, reason in reasons.items():
        flows[row] = 0.0  # no results
        game_over[row] = reason
        ended[row] = True
        failed[row] = True
    return rows[~failed[rows]]


def push_topology(
    state: BatchState, model: GridModel, layout: TopologyLayout, rows: np.ndarray
) -> dict[int, str]:
    """Send the changed topologies of ``rows`` to the solver, checked all at once.

    Args:
        state: the batch.
        model: its grid.
        layout: ``model``'s layout.
        rows: the envs whose topology changed (``int`` array).

    Returns:
        ``{row: reason}`` for the rows whose topology cannot be solved (a slack off, an
        isolated load or generator): their solver rows are left alone, still marked dirty.
    """
    topos = state.topo[rows]
    reasons = unsolvable(model, layout, topos)
    failed = {row: reason for row, reason in zip(rows.tolist(), reasons, strict=True) if reason}
    solvable = np.array([reason is None for reason in reasons], dtype=bool)
    pushed = rows[solvable]
    if len(pushed):
        # every element in the model's order, then the storage units on bus bar 1; the env
        # built these topologies itself (values 1, 2 or -1 only): no re-validation
        buses = np.ones((len(pushed), layout.n_elem + model.n_storage), dtype=np.int32)
        buses[:, : layout.n_elem] = topos[solvable][:, layout.pos_model]
        state.solver.set_topologies(pushed, buses)
        state.topo_dirty[pushed] = False
    return failed


@dataclass(frozen=True)
class Acted:
    """What the agents' topology actions of a step acted on: their cooldowns start. Masks over
    the whole batch, True only in the rows played; None where no env acted on such a thing."""

    branches: np.ndarray | None = None  # (N, n_branch) bool: a status set or changed
    substations: np.ndarray | None = None  # (N, n_sub) bool: a bus bar set or changed


NOTHING_ACTED = Acted()


def update_timers(
    state: BatchState,
    params: Parameters,
    limits: OverflowLimits,
    outcome: StepOutcome,
    rows: np.ndarray,
    acted: Acted = NOTHING_ACTED,
) -> None:
    """Move the overflow counters and the reconnection / cooldown timers of ``rows`` after a
    solve; the branches and substations ``acted`` on (their rows among ``rows``) get their
    cooldowns."""
    if not len(rows):
        return
    sel = selector(rows, state.n)
    soft_is_thermal = params.soft_overflow_threshold == 1.0
    branches, substations = acted.branches, acted.substations
    if (
        soft_is_thermal
        and branches is None
        and substations is None
        and not any_true(state.timers[sel])
        and not any_true(outcome.overflow)
        and not any_true(outcome.tripped)
    ):
        return  # nothing runs, nothing starts: the usual step
    moving = rows
    if soft_is_thermal:
        # a_or <= soft limit everywhere with soft = 1 and no timer running: nothing to move
        running = state.timers[sel].any(axis=1) | outcome.overflow[sel]
        moving = rows if running.all() else rows[running]
    if len(moving):
        msel = selector(moving, state.n)
        a_or = state.a_or[msel]
        engaged = a_or > limits.soft
        over = engaged if soft_is_thermal else a_or > limits.thermal
        cd = state.cooldown_line[msel]
        state.cooldown_line[msel] = cd - (cd > 0)
        cs = state.cooldown_sub[msel]
        state.cooldown_sub[msel] = cs - (cs > 0)
        state.protection_counter[msel] = (state.protection_counter[msel] + 1) * engaged
        state.timestep_overflow[msel] = (state.timestep_overflow[msel] + 1) * over
    tripped = outcome.tripped[sel]
    if any_true(tripped):
        cd = state.cooldown_line[sel]
        cd[tripped] = params.nb_timestep_reconnection
        state.cooldown_line[sel] = cd
    if branches is not None and params.nb_timestep_cooldown_line > 0:
        done = branches[sel]
        if any_true(done):
            cd = state.cooldown_line[sel]
            cd[done] = np.maximum(cd[done], params.nb_timestep_cooldown_line)
            state.cooldown_line[sel] = cd
    if substations is not None and params.nb_timestep_cooldown_sub > 0:
        done = substations[sel]
        if any_true(done):
            cs = state.cooldown_sub[sel]
            cs[done] = params.nb_timestep_cooldown_sub
            state.cooldown_sub[sel] = cs
