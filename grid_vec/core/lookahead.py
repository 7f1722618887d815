"""Look-ahead: ``simulate``, candidate actions over one or several steps, and the safe-action
mask. What an agent's search plays on copies of some envs' states; nothing of the batch
changes.

A look-ahead is the turn of :mod:`grid_vec.core.turn` played on copies of the envs' states
(``K`` copies per env, one per candidate), on the inputs of their next step as far as the
current step tells (:meth:`Lookahead.inputs`): the forecast injections, the outages known
now, no attack, the clocks one step on, setpoints written to a throwaway array, nothing
truncated. A horizon ``H`` chains ``H`` turns on the same copies, the ``h``-th on the
forecast made now of step ``t + h``
(:meth:`~grid_vec.chronics.handler.ScenarioHandler.rows_ahead`), as grid2op chains
``simulate`` on a simulated observation: timers, targets and storage carry from one step to
the next. A copy whose game ended, or whose episode has no step left, plays no further.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Protocol

import numpy as np

from grid_vec.core import turn as turn_
from grid_vec.core.game_state import GameState
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import ActionBatch, CandidateResults, StepBatch
from grid_vec.core.rules import outages as outages_
from grid_vec.core.rules.actions import false_flags
from grid_vec.core.rules.storage import StepLength, StorageUnits
from grid_vec.core.turn import TurnInputs, TurnRules
from grid_vec.grid.backend import InjectionRows
from grid_vec.grid.model import GridModel

# the bytes of power-flow results (a row of the flows per copy: 1.7 kB for the 14-bus grids,
# 15.6 kB for case118) a look-ahead plays at a time: a sandbox catalog of 8 envs in one turn
# (each turn has a fixed cost), case118's in chunks of ~540 copies, which stay in the caches
# (measured: larger chunks of case118 run slower, smaller ones of the sandbox too)
CHUNK_BYTES = 8 * 2**20


def chunk_rows(n_flows: int) -> int:
    """How many copies a look-ahead plays at a time on a grid of ``n_flows`` results."""
    return max(1, CHUNK_BYTES // (8 * n_flows))


# the longest chain: half a day of 5-minute steps (the batch's time features are computed a
# day at a time; grid2op's longest multi-horizon forecasts are an hour)
MAX_HORIZON = 144

# one step of a chain: the step of the copies still playing, their (p, n_branch) rho and
# their (p,) positions (sorted) among the copies
ChainStep = tuple[StepBatch, np.ndarray, np.ndarray]


class HorizonRefused(ValueError):
    """A look-ahead longer than an env's scenario forecasts; ``rows`` holds that env's
    position among the envs asked (as :class:`~grid_vec.core.continuous.RefusedActions`
    does), so that a vector env can name the sub-env."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.rows = (position,)

    def __reduce__(self) -> tuple:  # raised in a GridVecEnv worker, unpickled in the parent
        return type(self), (str(self), self.rows[0])


class LookaheadHost(Protocol):
    """What a look-ahead reads of its batch (:class:`~grid_vec.core.batch.GridBatch` is one),
    written here so that this module, which the batch calls, needs no import of it."""

    game: GameState  # the envs' state, read (candidates are copies of its rows)
    model: GridModel
    turn_rules: TurnRules
    action_subset: np.ndarray | None
    counts: dict[str, np.ndarray]
    parameters: Parameters
    storage: StorageUnits | None
    inv_limit: np.ndarray
    simulate_seconds: np.ndarray
    n_actions: int
    safe_mask_rho: float | None

    def step_length(self, clock_rows: np.ndarray) -> StepLength: ...

    def time_features(self, rows: np.ndarray, ahead: int = 0) -> np.ndarray: ...

    def check_running(self, rows: np.ndarray) -> None: ...


class Lookahead:
    """The look-ahead of a batch (see the module docstring).

    Args:
        host: the batch it simulates for.
    """

    def __init__(self, host: LookaheadHost) -> None:
        self.host = host

    def simulate(self, row: int, action: ActionBatch) -> StepBatch:
        """:meth:`GridBatch.simulate <grid_vec.core.batch.GridBatch.simulate>`."""
        rows = np.array([row])
        self.admit(rows, 1, 1, charge=True)
        return self.chain(rows, [action], action_masks=True)[0][0]

    def candidates(
        self, rows: np.ndarray, actions: Sequence[ActionBatch], k: int, *, charge: bool = True
    ) -> CandidateResults:
        """:meth:`GridBatch.simulate_candidates
        <grid_vec.core.batch.GridBatch.simulate_candidates>`; ``charge``: whether each
        candidate's steps count against the simulate budgets. The copies are played
        :func:`chunk_rows` at a time (a row's outcome does not depend on the others): a search
        over a large catalog holds that many copies of a state, not one per candidate."""
        self.admit(rows, k, len(actions), charge=charge)
        copies = np.repeat(rows, k)
        parts = []
        size = chunk_rows(self.host.game.grid.flows.shape[1])
        for first in range(0, len(copies), size):
            part = slice(first, first + size)
            chunk = [a.rows(part) for a in actions] if len(copies) > size else actions
            chain = self.chain(copies[part], chunk, action_masks=False)
            if len(actions) == 1:
                step, rho, _ = chain[0]
                parts.append(CandidateResults.of(step, rho, 1, len(copies[part])))
            else:
                parts.append(CandidateResults.of_chain(chain, 1, len(copies[part]), len(actions)))
        return CandidateResults.joined(parts, len(rows), k)

    def safe_mask(self, rows: np.ndarray, result: StepBatch) -> StepBatch:
        """``result`` (of a reset or step of ``rows``) with its safe-action mask: every agent
        action simulated one step from each row still playing, as :meth:`candidates` does (not
        counted against the simulate budgets: it is the env's look-ahead, not the agent's);
        safe: legal, unambiguous, no game over, and the highest rho below
        ``safe_mask_rho``. A row whose episode ended has none safe."""
        host = self.host
        k = host.n_actions
        safe = np.zeros((len(rows), k), dtype=bool)
        playing = ~host.game.done[rows]
        if playing.any():
            alive = rows[playing]
            every = ActionBatch(np.tile(np.arange(k, dtype=np.int64), len(alive)))
            found = self.candidates(alive, [every], k, charge=False)  # inf at a game over
            refused = found.illegal | found.ambiguous | found.terminated
            safe[playing] = ~refused & (found.max_rho < host.safe_mask_rho)
        return replace(result, safe_mask=safe)

    def admit(self, rows: np.ndarray, k: int, horizon: int, *, charge: bool) -> None:
        """Check a look-ahead of ``k`` candidates of ``horizon`` steps from each env of
        ``rows``, and with ``charge`` count each candidate's steps against the simulate
        budgets (one simulate per step, as grid2op counts a chained ``simulate``).

        Raises:
            ValueError: no candidate, or a horizon the scenarios do not forecast.
            RuntimeError: an episode is over, or a simulate budget would be exceeded (then
                nothing is counted).
        """
        host = self.host
        if k < 1:
            raise ValueError("simulate_candidates needs at least one candidate")
        host.check_running(rows)
        self.check_horizon(rows, horizon)
        if charge:
            host.game.simulates.charge(
                rows, k * horizon, host.counts["steps"][rows], host.parameters
            )
            host.counts["simulates"][rows] += k * horizon

    def chain(
        self, copies: np.ndarray, actions: Sequence[ActionBatch], *, action_masks: bool
    ) -> list[ChainStep]:
        """Play candidates over ``len(actions)`` steps on copies of their envs' states:
        ``copies`` the env of each candidate (sorted, admitted by :meth:`admit`),
        ``actions[h]`` their actions at step ``h + 1`` (checked; agent action indices in
        the topology part). ``action_masks``: whether the steps carry the legal actions of
        the simulated states.

        Returns:
            Per step played, the step of the copies still playing, their rho and positions.
        """
        host = self.host
        t0 = perf_counter()
        if host.action_subset is not None:
            actions = [replace(a, topology=host.action_subset[a.topology]) for a in actions]
        envs = np.unique(copies)
        env_of = np.searchsorted(envs, copies)  # each copy's position in envs
        game = host.game
        state, setpoints = game.copies(copies)  # the copies' own rows (gathers copy)
        clocks = game.scenarios
        left = (clocks.max_steps[envs] - clocks.played[envs])[env_of]  # steps each may play
        outages = clocks.outages(envs)
        playing = np.arange(len(copies))
        chain: list[ChainStep] = []
        for h, action in enumerate(actions, start=1):
            if outages is not None:
                outages = outages.next_step()
            inputs = self.inputs(envs, env_of, h, playing, setpoints, outages, action_masks)
            if len(playing) < len(copies):
                action = action.rows(playing)
            step = turn_.play(host.turn_rules, state, playing, action, inputs).step
            chain.append((step, state.a_or[playing] * host.inv_limit, playing))
            playing = playing[~step.terminated & (left[playing] > h)]
            if not len(playing):
                break
        seconds = perf_counter() - t0
        np.add.at(host.simulate_seconds, copies, seconds / len(copies))
        return chain

    def check_horizon(self, rows: np.ndarray, horizon: int) -> None:
        """Raise unless every env of ``rows`` forecasts ``horizon`` steps ahead.

        Raises:
            ValueError: a horizon outside ``[1, MAX_HORIZON]``.
            HorizonRefused: an env whose scenario forecasts fewer steps (naming its
                position in ``rows``).
        """
        if not 1 <= horizon <= MAX_HORIZON:
            raise ValueError(f"horizon must be in [1, {MAX_HORIZON}], got {horizon}")
        if horizon == 1:
            return
        for j, row in enumerate(rows.tolist()):
            handler = self.host.game.scenarios.handler(row)
            most = handler.forecast_horizons
            if most is not None and most < horizon:
                raise HorizonRefused(
                    f"horizon={horizon}, but the scenario {handler.info.name!r} forecasts "
                    f"{most} step(s) ahead (a folder's h_forecast; grid2op's l2rpn_idf_2023 "
                    "forecasts 12)",
                    j,
                )

    def inputs(
        self,
        envs: np.ndarray,
        env_of: np.ndarray,
        h: int,
        playing: np.ndarray,
        setpoints: np.ndarray,
        outages: outages_.OutageRows | None,
        action_masks: bool,
    ) -> TurnInputs:
        """The inputs of step ``h`` ahead of the copies ``playing`` (positions among the
        copies, of the envs ``envs[env_of]``), as far as the current step tells: the forecast
        made now of that step, the ``outages`` of ``envs`` known now carried ``h`` steps on,
        no attack, the clocks ``h`` steps ahead, ``setpoints`` (the copies' own array: a step
        writes them, the next reads them), nothing truncated; the legal actions of the
        outcome if ``action_masks``."""
        host = self.host
        at = env_of[playing]
        clock_rows = envs[at]
        # only the envs still playing: one whose episode ends sooner may have no forecast
        envs_playing, position = _runs(at)
        scenarios = host.game.scenarios
        if h == 1:  # the forecasts of the windows, one gather
            forecasts = scenarios.forecasts(envs[envs_playing])
        else:  # further: each env's handler (a folder's multi-horizon files, or a chain)
            forecasts = InjectionRows.of_rows(
                [
                    np.concatenate(scenarios.handler(int(envs[i])).rows_ahead(h))
                    for i in envs_playing
                ],
                host.model,
            )
        forecasts = forecasts.take(position)
        if outages is not None:
            each = (outages.time, outages.duration, outages.hazard)
            outages = outages_.OutageRows(*(a[at] for a in each))
        return TurnInputs(
            clock_rows=clock_rows,
            scenarios=scenarios,
            injections=forecasts,
            outages=outages,
            setpoints=setpoints,
            length=None if host.storage is None else host.step_length(clock_rows),
            opponent=None,
            times=host.time_features(envs, ahead=h)[at],
            played=host.game.scenarios.played[clock_rows] + h,
            max_steps=host.game.scenarios.max_steps[clock_rows],
            truncated=false_flags(len(playing)),
            ahead=h,
            action_masks=action_masks,
        )


def _runs(sorted_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(sorted_values, return_inverse=True)`` of a sorted, non-empty array, without
    its sort: the first value of each run, and each value's run."""
    starts = np.empty(len(sorted_values), dtype=bool)
    starts[0] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=starts[1:])
    return sorted_values[starts], np.cumsum(starts) - 1
