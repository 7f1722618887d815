"""Heuristics played by the env itself: idle while the grid is safe, reconnect lines.

Published setups (L2RPN baselines, RL2Grid) ask the agent only when the grid needs it: while
every line is loaded below a threshold, the grid runs on its own. With
``GridEnv(..., heuristics=Heuristics(idle_below_rho=0.9, reconnect_lines=True))`` a step
plays the agent's action, then, while the episode runs and the maximum rho of the new state
is below ``idle_below_rho``, plays the next step itself (do-nothing, plus a reconnection
when ``reconnect_lines``) and returns only at the first state whose maximum rho reaches the
threshold (a decision point), or at the episode's end.

What a step returns then (one call of ``step``):

* the observation, ``terminated`` and ``truncated`` of the last step played;
* ``reward``: the sum of the rewards of every step played (the agent's and the env's), and
  ``info["other_rewards"]`` the sums of each;
* ``info["skipped_steps"]``: how many steps the env played on its own (0: the agent's step
  only);
* ``info["is_illegal"]``, ``info["is_ambiguous"]`` and their reasons: the agent's action's
  (the env's own actions are always legal);
* ``info["tripped_branches"]``: the branches the protections tripped in any step played;
  ``info["attacked_branch"]``: the last step's;
* ``info["game_over_reason"]``, ``info["failed_redispatch_reason"]``: of the step they
  explain (a later step's replaces an earlier one's).

The reconnection rule: on each step the env plays on its own (and, with
``reconnect_on_agent_steps``, on each agent step whose catalog action is do-nothing,
``0``: every agent step of the continuous action types), the disconnected branch of lowest
index whose cooldown is over (``time_before_cooldown_line`` 0: not in maintenance, not under
attack, not just tripped) is reconnected by the catalog's toggle of that branch, the first
such toggle of the catalog. One branch per step: grid2op's ``max_line_status_changed`` is at
least 1 in every rule set that allows reconnections (with 0, none is made).

The recovery rule (``recover_topology``): on each step the env plays on its own where no
branch is reconnected, a substation with an element on bus bar 2 is set back to its
reference configuration (every element on bus bar 1: the catalog's first configuration of
that substation), the one of lowest index where that action is legal now (cooldowns, rules).
One substation per step, as ``max_sub_changed`` is at least 1 wherever topology can change.

The dispatch recovery rule (``recover_dispatch``, action types with redispatch): on each
step the env plays on its own, an env whose target dispatch is not zero is redispatched
towards zero, by its opposite clipped to the generators' ramps (the most one redispatch
may ask, as in grid2op's action space), so that the target is back at zero after a step or
a few. A redispatch stays in the target after the tight moment it was played
for, and the agent, asked only while the grid is loaded, would otherwise have no turn to
take it back: this is to redispatch what the recovery of the reference topology is to
topology.

The rows of a batch still idle are stepped together, in a loop, until none is left; each
env's trajectory depends only on its own seed and actions, as for plain steps.
``simulate`` plays one step, without heuristics; ``reset`` returns the first state whatever
its loading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from grid_vec.core.actions import KIND_LINE, KIND_SUB, ActionCatalog
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import INFO_COLUMNS, REASONS, ActionBatch, StepBatch
from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.state import BatchState
from grid_vec.core.topology import TopologyLayout


class GameRecord(Protocol):
    """What the heuristics read of the game's state (:class:`~grid_vec.core.game_state.
    GameState` is one; it sits above the rules, which it holds)."""

    grid: BatchState


class GridBatch(Protocol):
    """What the heuristics use of the batched core (:class:`~grid_vec.core.batch.GridBatch`
    is one): written here so that this module, which the core calls, needs no import of it."""

    parameters: Parameters
    game: GameRecord
    topology: TopologyLayout
    inv_limit: np.ndarray
    dispatch_limits: GeneratorLimits
    line_toggles: np.ndarray
    reference_actions: np.ndarray

    def play_step(
        self, rows: np.ndarray, action: ActionBatch, *, masks: bool = True
    ) -> StepBatch: ...

    def legal_actions(self, rows: np.ndarray) -> np.ndarray: ...

    def mask_of(self, state: BatchState, rows: np.ndarray) -> np.ndarray | None: ...


@dataclass(frozen=True)
class Heuristics:
    """What the env plays on its own (see the module docstring).

    Args:
        idle_below_rho: while the maximum rho stays below this, the env steps on its own
            (None: it never does; 0: nothing is skipped).
        reconnect_lines: reconnect a disconnected branch whose cooldown is over on each step
            the env plays on its own.
        reconnect_on_agent_steps: also on the agent's do-nothing steps.
        max_skipped: at most this many steps played on its own per call (None: up to the
            episode's end).
        recover_topology: set a substation back to its reference configuration on each step
            the env plays on its own where no branch is reconnected.
        recover_dispatch: set the target dispatch back to zero on each step the env plays
            on its own (an action type with redispatch).

    Raises:
        TypeError, ValueError: a field of the wrong type or value.
    """

    idle_below_rho: float | None = None
    reconnect_lines: bool = False
    reconnect_on_agent_steps: bool = False
    max_skipped: int | None = None
    recover_topology: bool = False
    recover_dispatch: bool = False

    def __post_init__(self) -> None:
        rho = self.idle_below_rho
        if rho is not None:
            if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)):
                raise TypeError(f"idle_below_rho must be a float or None, got {rho!r}")
            if not math.isfinite(rho) or rho < 0:
                raise ValueError(f"idle_below_rho must be finite and >= 0, got {rho!r}")
        flags = (
            "reconnect_lines",
            "reconnect_on_agent_steps",
            "recover_topology",
            "recover_dispatch",
        )
        for name in flags:
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        cap = self.max_skipped
        if cap is not None and (
            isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 0
        ):
            raise ValueError(f"max_skipped must be an int >= 0 or None, got {cap!r}")


def reconnections(batch: GridBatch, rows: np.ndarray, toggles: np.ndarray) -> np.ndarray:
    """(k,) the catalog action reconnecting each row's disconnected branch of lowest index
    whose cooldown is over, 0 (do-nothing) where there is none.

    Args:
        batch: the batched core.
        rows: the envs (sorted batch indices).
        toggles: (n_branch,) the catalog index of each branch's toggle (:func:`line_toggles`).

    Returns:
        The actions, int64.
    """
    if batch.parameters.max_line_status_changed < 1:
        return np.zeros(len(rows), dtype=np.int64)
    state = batch.game.grid
    ready = ~state.line_status[rows] & (state.cooldown_line[rows] == 0)
    first = np.argmax(ready, axis=1)
    return np.where(ready.any(axis=1), toggles[first], 0).astype(np.int64)


def recoveries(batch: GridBatch, rows: np.ndarray, references: np.ndarray) -> np.ndarray:
    """(k,) the catalog action setting back each row's first substation (lowest index) that
    has an element on bus bar 2 and whose reference action is legal now; 0 where none.

    Args:
        batch: the batched core.
        rows: the envs (sorted batch indices).
        references: (n_sub,) each substation's reference action in the catalog, -1 where the
            catalog has none (:func:`reference_actions`).

    Returns:
        The actions, int64.
    """
    actions = np.zeros(len(rows), dtype=np.int64)
    has = references >= 0
    if not has.any():
        return actions
    moved = split_substations(batch.game.grid.topo[rows], batch.topology.sub_start) & has
    need = np.flatnonzero(moved.any(axis=1))
    if not len(need):
        return actions
    legal = batch.legal_actions(rows[need])[:, np.maximum(references, 0)]
    ready = moved[need] & legal
    first = np.argmax(ready, axis=1)
    found = ready.any(axis=1)
    actions[need[found]] = references[first[found]]
    return actions


def split_substations(topo: np.ndarray, sub_start: np.ndarray) -> np.ndarray:
    """(k, n_sub) whether each substation of each topology has an element on bus bar 2.

    Args:
        topo: (k, n_elem) bus bars of the element ends (a topology vector per row: the
            state's, or an observation's ``topo_vect``).
        sub_start: (n_sub + 1,) each substation's first position in it, then ``n_elem``
            (``TopologyLayout.sub_start``).

    Returns:
        The flags.
    """
    on_two = np.cumsum(topo == 2, axis=1)
    on_two = np.concatenate([np.zeros((len(topo), 1), dtype=on_two.dtype), on_two], axis=1)
    return on_two[:, sub_start[1:]] > on_two[:, sub_start[:-1]]


def reference_actions(catalog: ActionCatalog, n_sub: int) -> np.ndarray:
    """(n_sub,) the catalog index of each substation's reference configuration (every
    element on bus bar 1), -1 where the catalog has no configuration of that substation."""
    references = np.full(n_sub, -1, dtype=np.int64)
    for index in np.flatnonzero(catalog.kind == KIND_SUB)[::-1]:
        if not (catalog.sub_buses[index] == 2).any():
            references[catalog.target[index]] = index
    return references


def line_toggles(catalog: ActionCatalog, n_branch: int) -> np.ndarray:
    """(n_branch,) the catalog index of the first toggle of each branch."""
    toggles = np.zeros(n_branch, dtype=np.int64)
    lines = np.flatnonzero(catalog.kind == KIND_LINE)
    # reversed: where a branch had several toggles, the first one is written last
    toggles[catalog.target[lines[::-1]]] = lines[::-1]
    return toggles


def step_with_heuristics(
    batch: GridBatch,
    heuristics: Heuristics,
    rows: np.ndarray,
    action: ActionBatch,
) -> StepBatch:
    """The agent's step of ``rows``, then the env's own steps of the rows still idle, all
    stepped together until none is left (see the module docstring for what is returned).

    Args:
        batch: the batched core (its ``play_step`` plays one step).
        heuristics: what to play.
        rows, action: as ``GridBatch.play_step``'s (catalog indices).

    Returns:
        One row per env of ``rows``, with ``skipped`` set.
    """
    result = agent_step(batch, heuristics, rows, action)
    skipped = np.zeros(len(rows), dtype=np.int64)
    result.skipped = skipped
    idle = np.flatnonzero(still_idle(batch, heuristics, rows, result, skipped))
    if not len(idle):
        return result
    result = writable(result)
    while len(idle):
        sub = rows[idle]
        step = own_step(batch, heuristics, sub)
        merge_own_step(result, step, idle)
        skipped[idle] += 1
        going = still_idle(batch, heuristics, sub, step, skipped[idle])
        ended_masks(batch, result, idle[~going], sub[~going])
        idle = idle[going]
    return result


def agent_step(
    batch: GridBatch, heuristics: Heuristics, rows: np.ndarray, action: ActionBatch
) -> StepBatch:
    """The agent's step of ``rows`` (a reconnection added to its do-nothing actions with
    ``reconnect_on_agent_steps``)."""
    if heuristics.reconnect_on_agent_steps:
        nothing = (action.topology == 0) & ~action.setting_buses()  # a set_bus acts too
        if nothing.any():
            own = np.where(nothing, reconnections(batch, rows, batch.line_toggles), action.topology)
            action = replace(action, topology=own)
    return batch.play_step(rows, action)


def own_step(batch: GridBatch, heuristics: Heuristics, rows: np.ndarray) -> StepBatch:
    """One step the env plays on its own for ``rows``: a reconnection, else a recovery of
    the reference topology, else do-nothing, and the target dispatch set back to zero (as
    ``heuristics`` enable them)."""
    own = (
        reconnections(batch, rows, batch.line_toggles)
        if heuristics.reconnect_lines
        else np.zeros(len(rows), dtype=np.int64)
    )
    if heuristics.recover_topology:
        free = own == 0
        if free.any():
            own[free] = recoveries(batch, rows[free], batch.reference_actions)
    redispatch = None
    if heuristics.recover_dispatch:
        target = batch.game.grid.target_dispatch[rows]
        if target.any():  # otherwise no redispatch at all: the step of an action without one
            limits = batch.dispatch_limits
            redispatch = np.clip(-target, -limits.ramp_down, limits.ramp_up).astype(np.float64)
    # no legal actions: only a turn's last state shows them (ended_masks)
    return batch.play_step(rows, ActionBatch(own, redispatch=redispatch), masks=False)


def ended_masks(batch: GridBatch, result: StepBatch, at: np.ndarray, rows: np.ndarray) -> None:
    """Write the legal actions of ``rows``, whose turns just ended after steps the env
    played (which carry none), into rows ``at`` of ``result``'s mask (when it has one)."""
    if result.action_mask is not None and len(rows):
        result.action_mask[at] = batch.mask_of(batch.game.grid, rows)


def still_idle(
    batch: GridBatch,
    heuristics: Heuristics,
    rows: np.ndarray,
    step: StepBatch,
    skipped: np.ndarray,
) -> np.ndarray:
    """(k,) the rows of ``step`` the env goes on playing: their episode runs, their maximum
    rho is below ``idle_below_rho`` and they have played fewer than ``max_skipped`` steps on
    their own (``skipped``)."""
    threshold, cap = heuristics.idle_below_rho, heuristics.max_skipped
    if threshold is None or cap == 0:
        return np.zeros(len(rows), dtype=bool)
    still = _idle(batch, rows, step, threshold)
    if cap is not None:
        still &= skipped < cap
    return still


def writable(result: StepBatch) -> StepBatch:
    """``result`` with its own copies of the fields the env's steps replace or add to (some
    are shared read-only)."""
    result.reward = result.reward.copy()
    result.terminated, result.truncated = result.terminated.copy(), result.truncated.copy()
    for column in INFO_COLUMNS:
        if column.merge != "keep":
            setattr(result, column.field, getattr(result, column.field).copy())
    result.other_rewards = {name: v.copy() for name, v in result.other_rewards.items()}
    for key, merge in REASONS.items():
        if merge != "keep":
            setattr(result, key, dict(getattr(result, key)))
    return result


def _idle(batch: GridBatch, rows: np.ndarray, step: StepBatch, threshold: float) -> np.ndarray:
    """(k,) the rows whose episode runs and whose maximum rho is below ``threshold``."""
    running = ~(step.terminated | step.truncated)
    rho = batch.game.grid.a_or[rows] * batch.inv_limit
    return running & (rho.max(axis=1) < threshold)


def merge_own_step(result: StepBatch, step: StepBatch, at: np.ndarray) -> None:
    """Fold ``step`` (the env's step of ``result``'s rows ``at``) into ``result``, each info
    entry as its layout says (:mod:`grid_vec.core.records`)."""
    result.obs[at] = step.obs
    result.reward[at] += step.reward
    result.terminated[at] = step.terminated
    result.truncated[at] = step.truncated
    for column in INFO_COLUMNS:
        if column.merge == "set":
            getattr(result, column.field)[at] = getattr(step, column.field)
        elif column.merge == "or":
            getattr(result, column.field)[at] |= getattr(step, column.field)
    for name, values in step.other_rewards.items():
        result.other_rewards[name][at] += values
    if step.action_mask is not None:
        result.action_mask[at] = step.action_mask
    for key, merge in REASONS.items():
        if merge == "set":
            into = getattr(result, key)
            for j, text in getattr(step, key).items():
                into[int(at[j])] = text
