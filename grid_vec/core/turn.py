"""The turn of the game, written once: what one step of some envs does, phase by phase, in
grid2op's order, as functions of the game's rules, the state and the actions.
:class:`~grid_vec.core.batch.GridBatch` plays it for ``step`` on its own state and for
``simulate`` on a copy of one env's state; what differs between the two is data, a
:class:`TurnInputs` record (the injections of the next step or their forecast, the opponent or
none, the clock moved on or one step ahead), never a mode tested inside a phase. A rule
changed here changes both.

The turn reads the game's unchanging part from a :class:`TurnRules` record (the grid, the
parameters, the limits, the rewards, the action rules and the
:class:`~grid_vec.core.observer.Observer`) and writes only the state it is given: nothing
calls back into the batch. :func:`play` is the outline; each phase is one function:

1. :func:`legality`: illegal or ambiguous actions become do-nothing (flagged);
2. :func:`redispatch`: the agent's redispatch into the targets;
3. :func:`storage`: the storage units' step (rolled back where the redispatch failed);
4. :func:`undo_failed`: an action whose redispatch failed is played as do-nothing;
5. :func:`opponent`: the opponent chooses its attack (from the state the step starts from);
6. :func:`apply`: the agent's topology actions;
7. :func:`outages`: the scenario's maintenance and hazards (the environment's action), then
   the attack;
8. :func:`inject`: the step's injections, after curtailment and dispatch;
9. :func:`solve`: power flows and cascades;
10. :func:`timers`: overflow counters and cooldowns;
11. :func:`ends`: which episodes end (game over, or the given truncation);
12. :func:`observe`: the observations;
13. :func:`reward`: the rewards, then the step's record (:class:`StepBatch`).

Reset uses :func:`inject` too (the first state's injections).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import NamedTuple

import numpy as np

from grid_vec.core.contingency import OutageFlows
from grid_vec.core.observer import Observer
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import ActionBatch, StepBatch
from grid_vec.core.rewards.base import RewardContext, RewardFn, RewardInputs, batch_rewards
from grid_vec.core.rules import outages as outages_
from grid_vec.core.rules.actions import ActionRules, Legality, neutralise
from grid_vec.core.rules.dispatch import GeneratorLimits, dispatch_rows, register_redispatch
from grid_vec.core.rules.opponent import OpponentBatch
from grid_vec.core.rules.storage import StepLength, StorageUnits, storage_step
from grid_vec.core.scenario_rows import ScenarioRows
from grid_vec.core.state import (
    Acted,
    BatchState,
    OverflowLimits,
    StepOutcome,
    any_true,
    disconnect,
    selector,
    update_timers,
)
from grid_vec.core.state import solve as solve_state
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.backend import InjectionRows
from grid_vec.grid.model import GridModel

_NO_ATTACK = np.full(256, -1, dtype=np.int64)
_NO_ATTACK.flags.writeable = False


@dataclass(slots=True, eq=False)  # not frozen: built every step, a frozen one costs more
class TurnInputs:
    """What a turn is played on besides the state and the actions: the one place where a
    step and a look-ahead differ (never written once built).

    For ``step`` the scenarios and clocks have moved to the step played; for ``simulate`` they
    are one step behind (``ahead`` 1), the injections are the forecast, nobody attacks, the
    setpoints written go to a throwaway array and nothing is truncated.
    """

    clock_rows: np.ndarray  # the rows of scenarios whose clocks the state's rows follow
    scenarios: ScenarioRows  # the batch's scenarios in play (their clocks)
    injections: InjectionRows  # each row's injections of the step played
    outages: outages_.OutageRows | None  # the step's maintenance and hazards (None: none)
    # (rows of the state, n_gen) each state row's generator setpoints of its last step: read
    # to wake a row at rest, written with the step's (the batch's own array for a step)
    setpoints: np.ndarray
    length: StepLength | None  # the rows' step lengths (None: no storage unit)
    opponent: OpponentBatch | None  # who attacks (None: nobody)
    times: np.ndarray  # (k, 6) time features of the step played
    played: np.ndarray  # (k,) steps played this episode, this one included
    max_steps: np.ndarray  # (k,) steps each episode may play
    truncated: np.ndarray  # (k,) the episode reaches its max_steps (before game overs)
    ahead: int = 0  # steps from the rows' clocks to the step played
    # whether the outcome carries each row's legal actions (a step's and a simulate's info
    # shows them; a search over thousands of candidates reads none: a (k, n_catalog) mask)
    action_masks: bool = True


@dataclass(frozen=True)
class TurnRules:
    """What a turn is played by: the game's part that no step changes (gymnax's
    ``EnvParams``). :class:`~grid_vec.core.batch.GridBatch` builds it, and builds it again
    when its parameters change."""

    model: GridModel
    topology: TopologyLayout
    parameters: Parameters
    limits: OverflowLimits
    storage: StorageUnits | None  # None: no storage unit, nothing of their rules runs
    dispatch_limits: GeneratorLimits
    actions: ActionRules  # the legality and effect of the catalog actions
    observer: Observer  # the observations and legal-action masks
    reward_fn: RewardFn
    other_rewards: dict[str, RewardFn]
    reward_context: RewardContext


class Played(NamedTuple):
    """A turn's step, and when (``perf_counter``) its action phases and its physics ended."""

    step: StepBatch
    actions_end: float
    physics_end: float


def play(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    action: ActionBatch,
    inputs: TurnInputs,
) -> Played:
    """Play one turn of ``rows`` (indices of ``state``).

    Args:
        rules: the game's rules.
        state: the state played on (the batch's, or a look-ahead copy); written.
        rows: the envs played, sorted.
        action: their actions (catalog indices).
        inputs: the rest of what the turn is played on.

    Returns:
        The step of each row, and the times its phases ended (the batch's timings).
    """
    # the phases that have nothing to do on a step are not called (no redispatch asked, no
    # storage unit, nothing failed, no opponent): most steps are such steps
    legal, played = legality(rules, state, rows, action)
    failed = {} if played.redispatch is None else redispatch(rules, state, rows, played, inputs)
    if rules.storage is not None:
        storage(rules, state, rows, played, inputs, failed)
    if failed:
        played = undo_failed(played, failed)
    if inputs.opponent is None:
        attacks, attack = _no_attack(len(rows)), None
    else:
        attacks, attack = opponent(rules, state, rows, inputs)
    actions_end = perf_counter()
    acted = apply(rules, state, rows, played)
    outages(rules, state, rows, inputs, attack)
    dead = inject(
        rules, state, rows, inputs.injections, played.curtail, inputs.setpoints, inputs.length
    )
    outcome = solve(rules, state, rows, dead)
    timers(rules, state, rows, outcome, acted, inputs)
    if outcome.no_dispatch:  # grid2op flags these as failed redispatches too
        failed = {**failed, **_positions(rows, outcome.no_dispatch, outcome.game_over)}
    physics_end = perf_counter()
    terminated, truncated = ends(state, rows, outcome, inputs)
    obs, rho = observe(rules, state, rows, inputs)
    step = reward(
        rules, state, rows, obs, rho, outcome, terminated, truncated, action, legal, attacks,
        inputs, failed,
    )  # fmt: skip
    return Played(step, actions_end, physics_end)


# --- the phases, in grid2op's order -------------------------------------------------------


def legality(
    rules: TurnRules, state: BatchState, rows: np.ndarray, action: ActionBatch
) -> tuple[Legality, ActionBatch]:
    """Check the actions with the current timers; illegal or ambiguous ones become
    do-nothing. Returns the verdict and the actions played."""
    legal = rules.actions.legalise_action(state, rows, action, rules.parameters)
    return legal, neutralise(action, legal)


def redispatch(
    rules: TurnRules, state: BatchState, rows: np.ndarray, action: ActionBatch, inputs: TurnInputs
) -> dict[int, str]:
    """The agent's redispatch into the targets (after the scenarios moved to the step); the
    rows (by position) whose redispatch fails, and why."""
    if action.redispatch is None:
        return {}
    _wake(state, rows, inputs.setpoints)
    scheduled = None
    if not rules.parameters.allow_dispatch_gen_switch_off:
        scheduled = inputs.injections.gen_p
    return register_redispatch(
        state, rows, action.redispatch, scheduled, rules.dispatch_limits, rules.parameters
    )


def storage(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    action: ActionBatch,
    inputs: TurnInputs,
    failed: dict[int, str],
) -> None:
    """The storage units' step, before the failed redispatches: they roll it back."""
    if rules.storage is not None:
        storage_step(
            state, rows, action.storage, rules.storage, rules.parameters, inputs.length, failed
        )


def undo_failed(action: ActionBatch, failed: dict[int, str]) -> ActionBatch:
    """Grid2op plays an action whose redispatch failed as do-nothing (its topology part; the
    targets were given back)."""
    if not failed:
        return action
    undone = np.zeros(len(action.topology), dtype=bool)
    undone[np.array(list(failed))] = True
    return action.without_topology(undone)


def opponent(
    rules: TurnRules, state: BatchState, rows: np.ndarray, inputs: TurnInputs
) -> tuple[np.ndarray, np.ndarray | None]:
    """The opponent's choice from the state the step starts from: (k,) the branch newly
    attacked per row (-1: none), and the (N, n_branch) branches under attack this step
    (None: none), which go out after the agent's action (:func:`outages`)."""
    if inputs.opponent is None:
        return _no_attack(len(rows)), None
    attacks, under, remaining = inputs.opponent.step(
        rows, state.line_status, state.a_or, rules.observer.inv_limit[0]
    )
    hit = under >= 0
    attack = None
    if hit.any():
        r, b = rows[hit], under[hit]
        attack = np.zeros_like(state.line_status)
        attack[r, b] = True
        state.cooldown_line[r, b] = np.maximum(state.cooldown_line[r, b], remaining[hit])
    return attacks, attack


def apply(rules: TurnRules, state: BatchState, rows: np.ndarray, action: ActionBatch) -> Acted:
    """The agent's legal topology actions."""
    return rules.actions.apply(state, rows, action)


def outages(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    inputs: TurnInputs,
    attack: np.ndarray | None,
) -> None:
    """The step's maintenance and hazards (the environment's action, after the agent's),
    then the opponent's attack."""
    if inputs.outages is not None:
        outages_.take_out(state, rules.topology, rows, inputs.outages)
    if attack is not None:
        disconnect(state, rules.topology, attack)


def inject(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    injections: InjectionRows,
    curtail: np.ndarray | None,
    setpoints: np.ndarray,
    length: StepLength | None,
    *,
    first: bool = False,
) -> dict[int, str]:
    """Give each row's backend its step's (load_p, load_q, gen_p, gen_v), the generators'
    after curtailment and dispatch (:mod:`grid_vec.core.rules.dispatch`) where one is under
    way, and record the setpoints in ``setpoints``; return the rows (indices of ``state``)
    with no feasible dispatch, and why. ``first``: reset's."""
    dead: dict[int, str] = {}
    if curtail is not None and np.isnan(curtail).all():
        # every limit left as it is (grid2op's -1, an agent that does not curtail): no
        # curtailment asked, as grid2op's action without one; the rows at rest stay so
        curtail = None
    if rules.storage is not None:
        owing = (state.storage_amount[rows] != 0).any(axis=1)
        if owing.any():  # the units move the balance: the generators dispatch
            _wake(state, rows[owing], setpoints)
    if curtail is not None or any_true(state.dispatching[selector(rows, state.n)]):
        _wake(state, rows, setpoints)
        step = dispatch_rows(
            state, rows, injections.gen_p, curtail, rules.dispatch_limits, rules.parameters,
            first=first, storage=rules.storage, length=length,
        )  # fmt: skip
        injections = injections.with_gen_p(step.gen_p)
        dead = {int(rows[j]): f"redispatch infeasible: {why}" for j, why in step.failed.items()}
    if rules.storage is not None:  # after the dispatch rules, which may limit the units
        # 0 for a unit not acting: no persistence
        state.solver.set_storage_p(rows, state.storage_power[rows].astype(np.float64))
    # the scenario sources hand out finite float64 rows of the model's sizes (the folder
    # source checks its files as it reads them): no re-validation on the hot path
    if len(rows):
        state.solver.set_injections(rows, injections)
    setpoints[selector(rows, state.n)] = injections.gen_p
    return dead


def solve(
    rules: TurnRules, state: BatchState, rows: np.ndarray, dead: dict[int, str]
) -> StepOutcome:
    """Power flows and cascades (the rows with no feasible dispatch are game overs)."""
    return solve_state(
        state, rules.model, rules.topology, rules.parameters, rules.limits, rows, failed=dead
    )


def timers(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    outcome: StepOutcome,
    acted: Acted,
    inputs: TurnInputs,
) -> None:
    """Overflow counters and cooldowns of the rows still playing; a line in maintenance or
    hit by a hazard cannot change status while it lasts."""
    ended = outcome.ended  # False outside rows
    alive = rows[~ended[rows]] if any_true(ended) else rows
    update_timers(state, rules.parameters, rules.limits, outcome, alive, acted)
    if inputs.outages is not None:
        outages_.hold_cooldowns(state, rows, inputs.outages, ~ended[rows])


def ends(
    state: BatchState, rows: np.ndarray, outcome: StepOutcome, inputs: TurnInputs
) -> tuple[np.ndarray, np.ndarray]:
    """(k,) terminated (a game over) and (k,) truncated (the given truncation, where the
    episode did not end by a game over)."""
    terminated = outcome.ended[selector(rows, state.n)]
    truncated = inputs.truncated
    if any_true(terminated):
        truncated = truncated & ~terminated
    return terminated, truncated


def observe(
    rules: TurnRules, state: BatchState, rows: np.ndarray, inputs: TurnInputs
) -> tuple[np.ndarray, np.ndarray]:
    """The observations of ``rows`` and their rho (the rewards read it)."""
    return rules.observer.observe(
        state, rows, inputs.times, inputs.played, inputs.scenarios, inputs.outages,
        inputs.clock_rows, inputs.ahead,
    )  # fmt: skip


def reward(
    rules: TurnRules,
    state: BatchState,
    rows: np.ndarray,
    obs: np.ndarray,
    rho: np.ndarray,
    outcome: StepOutcome,
    terminated: np.ndarray,
    truncated: np.ndarray,
    asked: ActionBatch,
    legal: Legality,
    attacks: np.ndarray,
    inputs: TurnInputs,
    failed: dict[int, str],
) -> StepBatch:
    """The rewards of the step (from the actions as asked, before any refusal), then its
    record: observations, rewards, ends, legality, trips, attacks and reasons."""
    sel = selector(rows, state.n)
    illegal, ambiguous, (why_illegal, why_ambiguous) = legal
    done = terminated | truncated if any_true(truncated) else terminated
    inputs_ = RewardInputs(
        rho=rho,
        line_status=state.line_status[sel],
        load_p=state.load_p[sel],
        gen_p=state.gen_p[sel],
        actual_dispatch=state.actual_dispatch[sel],
        action=asked.topology,
        redispatch=asked.redispatch,
        is_illegal=illegal,
        is_ambiguous=ambiguous,
        game_over=terminated,
        done=done,
        step=inputs.played,
        max_steps=inputs.max_steps,
        topo=state.topo[sel],
        cooldown_line=state.cooldown_line[sel],
        outages=OutageFlows(state, rules.model, rules.topology, rows, ~terminated),
        context=rules.reward_context,
    )
    rewards = batch_rewards(rules.reward_fn, inputs_, terminated)
    others = {}
    if rules.other_rewards:
        others = {
            name: batch_rewards(fn, inputs_, terminated) for name, fn in rules.other_rewards.items()
        }
    reasons = {}
    if any_true(terminated):
        reasons = {j: outcome.game_over[rows[j]] for j in np.flatnonzero(terminated).tolist()}
    mask = None
    if inputs.action_masks:
        mask = rules.observer.mask_of(state, rows, rules.parameters)
    return StepBatch(
        obs=obs,
        reward=rewards,
        terminated=terminated,
        truncated=truncated,
        is_illegal=illegal,
        is_ambiguous=ambiguous,
        tripped=outcome.tripped[sel],
        attacked=attacks,
        other_rewards=others,
        illegal_reason=why_illegal,
        ambiguous_reason=why_ambiguous,
        game_over_reason=reasons,
        failed_redispatch_reason=failed,
        action_mask=mask,
    )


def _wake(state: BatchState, rows: np.ndarray, setpoints: np.ndarray) -> None:
    """Rows at rest about to dispatch start from the setpoints of their last step: their
    schedule (grid2op updates them every step; a row at rest keeps them in ``setpoints``)."""
    for row in rows.tolist():
        if not state.dispatching[row]:
            state.gen_p_redisp[row] = setpoints[row]
            state.dispatching[row] = True


def _no_attack(k: int) -> np.ndarray:
    """(k,) -1: no branch attacked (read-only)."""
    return _NO_ATTACK[:k] if k <= len(_NO_ATTACK) else np.full(k, -1, dtype=np.int64)


def _positions(rows: np.ndarray, which: tuple[int, ...], reasons: list) -> dict[int, str]:
    """``{position in rows: reason}`` of the batch rows ``which``."""
    return {int(np.searchsorted(rows, row)): reasons[row] for row in which}
