"""The mutable state of one grid (topology, timers, dispatch, backend) and the physics rules.

:func:`solve` and :func:`update_timers` are the rule engine shared by ``GridEnv.reset``,
``GridEnv.step`` and ``GridEnv.simulate``: once an action and the injections of a step are
in the state, they solve the power flow and cascade overflow trips exactly as grid2op's
``Backend.next_grid_state`` and ``BaseEnv._aux_register_env_converged`` do:

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

import copy
from dataclasses import dataclass

import numpy as np

from grid_vec.env.parameters import Parameters
from grid_vec.env.topology import TopologyLayout, isolated_elements
from grid_vec.grid.backend import Backend, flow_slices
from grid_vec.grid.model import GridModel


@dataclass
class GridState:
    """Everything that changes while an episode is played (copied for look-ahead)."""

    topo: np.ndarray  # (n_elem,) int8 bus bar of every element end, -1 = disconnected
    last_or: np.ndarray  # (n_branch,) int8 bus bar to reconnect a branch origin on
    last_ex: np.ndarray  # (n_branch,) int8
    line_status: np.ndarray  # (n_branch,) bool
    # every counter and timer, one int64 buffer (one check tells whether any is running):
    # timestep_overflow, cooldown_line, cooldown_sub, protection_counter, views into it
    timers: np.ndarray
    timestep_overflow: np.ndarray  # (n_branch,) consecutive steps above the thermal limit
    cooldown_line: np.ndarray  # (n_branch,) steps before the status can be changed
    cooldown_sub: np.ndarray  # (n_sub,)
    protection_counter: np.ndarray  # (n_branch,) consecutive steps above the soft limit
    target_dispatch: np.ndarray  # (n_gen,) MW asked by the agent (cumulative)
    actual_dispatch: np.ndarray  # (n_gen,) MW really applied
    backend: Backend
    # results of the last solve (zeros after a failed one), FLOW_FIELDS order, laid out by
    # slices (flow_slices(model))
    slices: dict[str, slice]
    flows: np.ndarray
    a_or: np.ndarray  # views into flows
    load_p: np.ndarray
    gen_p: np.ndarray
    topo_dirty: bool = True  # topology changed since the backend last received it

    def copy(self) -> GridState:
        """An independent copy (the backend too) for look-ahead."""
        new = copy.copy(self)
        new.flows, new.a_or, new.load_p, new.gen_p = _flow_views(self.flows.copy(), self.slices)
        new.timers, *timer_views = _timer_views(self.timers.copy(), len(self.cooldown_sub))
        new.timestep_overflow, new.cooldown_line, new.cooldown_sub, new.protection_counter = (
            timer_views
        )
        for name in (
            "topo",
            "last_or",
            "last_ex",
            "line_status",
            "target_dispatch",
            "actual_dispatch",
        ):
            setattr(new, name, getattr(self, name).copy())
        new.backend = self.backend.copy()
        return new


def _timer_views(timers: np.ndarray, n_sub: int) -> tuple[np.ndarray, ...]:
    """The buffer, then its timestep_overflow, cooldown_line, cooldown_sub and
    protection_counter views."""
    n_b = (len(timers) - n_sub) // 3
    return timers, *np.split(timers, [n_b, 2 * n_b, 2 * n_b + n_sub])


def _flow_views(flows: np.ndarray, slices: dict[str, slice]) -> tuple[np.ndarray, ...]:
    return flows, flows[slices["a_or"]], flows[slices["load_p"]], flows[slices["gen_p"]]


def fresh_state(model: GridModel, layout: TopologyLayout, backend: Backend) -> GridState:
    """Every element on bus bar 1, every timer at 0, no dispatch."""
    n_b = model.n_branch
    slices = flow_slices(model)
    flows, a_or, load_p, gen_p = _flow_views(np.zeros(slices["all"].stop), slices)
    timers, overflow, cooldown_line, cooldown_sub, counter = _timer_views(
        np.zeros(3 * n_b + model.n_sub, dtype=np.int64), model.n_sub
    )
    return GridState(
        topo=np.ones(layout.n_elem, dtype=np.int8),
        last_or=np.ones(n_b, dtype=np.int8),
        last_ex=np.ones(n_b, dtype=np.int8),
        line_status=np.ones(n_b, dtype=bool),
        timers=timers,
        timestep_overflow=overflow,
        cooldown_line=cooldown_line,
        cooldown_sub=cooldown_sub,
        protection_counter=counter,
        target_dispatch=np.zeros(model.n_gen),
        actual_dispatch=np.zeros(model.n_gen),
        backend=backend,
        slices=slices,
        flows=flows,
        a_or=a_or,
        load_p=load_p,
        gen_p=gen_p,
    )


def disconnect(state: GridState, layout: TopologyLayout, branches: np.ndarray) -> None:
    """Disconnect branches (mask or indices), remembering their bus bars."""
    was_on = state.line_status[branches]
    idx = np.atleast_1d(np.arange(len(state.line_status))[branches])[np.atleast_1d(was_on)]
    if len(idx) == 0:
        return
    state.last_or[idx] = state.topo[layout.pos_or[idx]]
    state.last_ex[idx] = state.topo[layout.pos_ex[idx]]
    state.topo[layout.pos_or[idx]] = -1
    state.topo[layout.pos_ex[idx]] = -1
    state.line_status[idx] = False
    state.topo_dirty = True


def reconnect(state: GridState, layout: TopologyLayout, branch: int) -> None:
    """Reconnect one branch on the bus bars it had before."""
    state.topo[layout.pos_or[branch]] = state.last_or[branch]
    state.topo[layout.pos_ex[branch]] = state.last_ex[branch]
    state.line_status[branch] = True
    state.topo_dirty = True


# np.count_nonzero is a direct C call: several times cheaper than ndarray.any() on the small
# arrays of the step hot path.
_any = np.count_nonzero


@dataclass(frozen=True)
class OverflowLimits:
    """Current limits in amperes per branch, computed once per (parameters, thermal limits)."""

    thermal: np.ndarray  # the branch's thermal limit
    soft: np.ndarray  # above it, the branch counts an overflowed step
    hard: np.ndarray  # above it, the branch trips at once

    @classmethod
    def of(cls, params: Parameters, thermal_limit: np.ndarray) -> OverflowLimits:
        return cls(
            thermal_limit,
            params.soft_overflow_threshold * thermal_limit,
            params.hard_overflow_threshold * thermal_limit,
        )


@dataclass
class StepOutcome:
    """What happened in the physics of one step."""

    game_over: str | None  # reason, or None
    tripped: np.ndarray | None  # (n_branch,) bool, branches tripped by the protections; None: none
    overflow: bool = True  # a branch may be above its soft limit (False: none is, for sure)


def solve(
    state: GridState,
    model: GridModel,
    layout: TopologyLayout,
    params: Parameters,
    limits: OverflowLimits,
    *,
    count_soft: bool = True,
) -> StepOutcome:
    """Solve the power flow with the current injections and topology, then cascade trips.

    ``count_soft=False`` (on reset, as grid2op's reset step): only hard overflows trip.
    """
    tripped = None
    counter = increased = None
    backend = state.backend
    a_or = state.a_or
    while True:
        reason = push_topology(state, model, layout) if state.topo_dirty else None
        if reason is None and not backend.run_ac():
            reason = "power flow diverged"
        if reason is not None:
            state.flows[:] = 0.0  # no results
            return StepOutcome(reason, tripped)
        backend.read_flows(state.flows)
        if params.no_overflow_disconnection:
            return StepOutcome(None, None)
        soft = a_or > limits.soft  # hard >= soft: no soft overflow, no trip (fast path)
        if not _any(soft):
            return StepOutcome(None, tripped, overflow=False)
        if counter is None:
            counter = state.protection_counter.copy()
            increased = np.zeros(model.n_branch, dtype=bool)
        status = state.line_status
        to_trip = (a_or > limits.hard) & status
        if count_soft:
            soft &= status & ~increased
            counter[soft] += 1
            increased |= soft
            to_trip |= (counter > params.nb_timestep_overflow_allowed) & status
        if not _any(to_trip):
            return StepOutcome(None, tripped)
        tripped = to_trip if tripped is None else tripped | to_trip
        disconnect(state, layout, to_trip)


def push_topology(state: GridState, model: GridModel, layout: TopologyLayout) -> str | None:
    """Send the changed topology to the backend, or say why the grid cannot be solved."""
    load_iso, gen_iso, slack_off = isolated_elements(model, layout, state.topo)
    if slack_off:
        return "slack disconnected"
    if load_iso.any():
        return f"load {model.load_names[np.argmax(load_iso)]} isolated"
    if gen_iso.any():
        return f"generator {model.gen_names[np.argmax(gen_iso)]} isolated"
    topo = state.topo
    # the env built this topology itself (values 1, 2 or -1 only): no re-validation
    state.backend.set_topology_trusted(
        topo[layout.pos_load], topo[layout.pos_gen], topo[layout.pos_or], topo[layout.pos_ex]
    )
    state.topo_dirty = False
    return None


def update_timers(
    state: GridState,
    params: Parameters,
    limits: OverflowLimits,
    outcome: StepOutcome,
    acted_line: int,
    acted_sub: int,
) -> None:
    """Move the overflow counters and the reconnection / cooldown timers after a solve."""
    running = _any(state.timers)
    # a_or <= soft limit everywhere with soft = 1: no counter can start (the usual step)
    if running or outcome.overflow or params.soft_overflow_threshold != 1.0:
        a_or = state.a_or
        engaged = a_or > limits.soft
        over = engaged if params.soft_overflow_threshold == 1.0 else a_or > limits.thermal
        if running:
            cd = state.cooldown_line
            cd[cd > 0] -= 1
            cs = state.cooldown_sub
            cs[cs > 0] -= 1
            state.protection_counter += 1
            state.protection_counter *= engaged
            state.timestep_overflow += 1
            state.timestep_overflow *= over
        else:  # nothing was running: only the overflowed branches start counting
            state.protection_counter[:] = engaged
            state.timestep_overflow[:] = over
    tripped = outcome.tripped
    if tripped is not None:
        state.cooldown_line[tripped] = params.nb_timestep_reconnection
    if acted_line >= 0 and params.nb_timestep_cooldown_line > 0:
        cd = state.cooldown_line
        cd[acted_line] = max(cd[acted_line], params.nb_timestep_cooldown_line)
    if acted_sub >= 0 and params.nb_timestep_cooldown_sub > 0:
        state.cooldown_sub[acted_sub] = params.nb_timestep_cooldown_sub
