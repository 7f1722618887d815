"""Look-ahead: ``simulate``, candidate actions over one or several steps, and the safe-action
mask. What an agent's search plays on copies of some envs' states; nothing of the batch
changes.

A look-ahead is the turn of :mod:`grid_vec.core.turn` played on copies of the envs' states
(``K`` copies per env, one per candidate), on the inputs of their next step as far as the
current step tells (:meth:`Lookahead.inputs`): the forecast injections, the outages known
now, no attack, the clocks one step on, setpoints written to a throwaway list, nothing
truncated. A horizon ``H`` chains ``H`` turns on the same copies, the ``h``-th on the
forecast made now of step ``t + h`` (:meth:`~grid_vec.chronics.handler.ScenarioHandler.
rows_ahead`), as grid2op chains ``simulate`` on a simulated observation: timers, targets
and storage carry from one step to the next. A copy whose game ended, or whose episode has
no step left, plays no further.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Protocol

import numpy as np

from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import ActionBatch, CandidateResults, StepBatch
from grid_vec.core.rules import outages as outages_
from grid_vec.core.rules.actions import false_flags
from grid_vec.core.rules.storage import StepLength, StorageUnits
from grid_vec.core.simulate_budget import SimulateBudget
from grid_vec.core.state import BatchState
from grid_vec.core.turn import Turn, TurnInputs

# the longest chain: half a day of 5-minute steps (the batch's time features are computed a
# day at a time; grid2op's longest multi-horizon forecasts are an hour)
MAX_HORIZON = 144

# one step of a chain: the step of the copies still playing, their (p, n_branch) rho and
# their (p,) positions (sorted) among the copies
ChainStep = tuple[StepBatch, np.ndarray, np.ndarray]


class LookaheadHost(Protocol):
    """What a look-ahead reads of its batch (:class:`~grid_vec.core.batch.GridBatch` is one),
    written here so that this module, which the batch calls, needs no import of it."""

    state: BatchState
    turn: Turn
    handlers: list[ScenarioHandler]
    outages: outages_.OutageBatch
    action_subset: np.ndarray | None
    simulates: SimulateBudget
    counts: dict[str, np.ndarray]
    parameters: Parameters
    storage: StorageUnits | None
    max_steps: np.ndarray
    played: np.ndarray
    done: np.ndarray
    inv_limit: np.ndarray
    simulate_seconds: np.ndarray
    last_gen_p: list[np.ndarray]
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
        return self.chain(np.array([row]), [action], 1, action_masks=True)[0][0]

    def candidates(
        self, rows: np.ndarray, actions: Sequence[ActionBatch], k: int
    ) -> CandidateResults:
        """:meth:`GridBatch.simulate_candidates
        <grid_vec.core.batch.GridBatch.simulate_candidates>`."""
        chain = self.chain(rows, actions, k, action_masks=False)
        if len(actions) == 1:
            step, rho, _ = chain[0]
            return CandidateResults.of(step, rho, len(rows), k)
        return CandidateResults.of_chain(chain, len(rows), k, len(actions))

    def safe_mask(self, rows: np.ndarray, result: StepBatch) -> StepBatch:
        """``result`` (of a reset or step of ``rows``) with its safe-action mask: every agent
        action simulated one step from each row still playing, as :meth:`candidates` does (not
        counted against the simulate budgets: it is the env's look-ahead, not the agent's);
        safe: legal, unambiguous, no game over, and the highest rho below
        ``safe_mask_rho``. A row whose episode ended has none safe."""
        host = self.host
        k = host.n_actions
        safe = np.zeros((len(rows), k), dtype=bool)
        playing = ~host.done[rows]
        if playing.any():
            alive = rows[playing]
            every = ActionBatch(np.tile(np.arange(k, dtype=np.int64), len(alive)))
            step, rho, _ = self.chain(alive, [every], k, action_masks=False, charge=False)[0]
            found = CandidateResults.of(step, rho, len(alive), k)  # max_rho: inf at a game over
            refused = found.illegal | found.ambiguous | found.terminated
            safe[playing] = ~refused & (found.max_rho < host.safe_mask_rho)
        return replace(result, safe_mask=safe)

    def chain(
        self,
        rows: np.ndarray,
        actions: Sequence[ActionBatch],
        k: int,
        *,
        action_masks: bool,
        charge: bool = True,
    ) -> list[ChainStep]:
        """Play ``k`` candidates of each env of ``rows`` over ``len(actions)`` steps on copies
        of their states, ``actions[h]`` the ``len(rows) * k`` actions of step ``h + 1``
        (checked; agent action indices in the topology part; the ``k`` of ``rows[0]``
        first). ``action_masks``: whether the steps carry the legal actions of the simulated
        states; ``charge``: whether each candidate's steps count against the simulate
        budgets (one simulate per step, as grid2op counts a chained ``simulate``).

        Returns:
            Per step played, the step of the copies still playing, their rho and positions.

        Raises:
            ValueError: no candidate, no step, or a horizon the scenarios do not forecast.
            RuntimeError: an episode is over, or a simulate budget would be exceeded (then
                nothing is simulated, nothing counted).
        """
        host = self.host
        horizon = len(actions)
        if k < 1:
            raise ValueError("simulate_candidates needs at least one candidate")
        host.check_running(rows)
        self.check_horizon(rows, horizon)
        if charge:
            host.simulates.charge(rows, k * horizon, host.counts["steps"][rows], host.parameters)
            host.counts["simulates"][rows] += k * horizon
        t0 = perf_counter()
        if host.action_subset is not None:
            actions = [replace(a, topology=host.action_subset[a.topology]) for a in actions]
        copies = np.repeat(rows, k)
        state = host.state.take(copies)
        setpoints = [host.last_gen_p[r] for r in copies.tolist()]
        left = np.repeat(host.max_steps[rows] - host.played[rows], k)  # steps each may play
        outages = host.outages.now(rows)
        playing = np.arange(len(copies))
        chain: list[ChainStep] = []
        for h, action in enumerate(actions, start=1):
            if outages is not None:
                outages = outages.next_step()
            inputs = self.inputs(rows, k, h, playing, setpoints, outages, action_masks)
            if len(playing) < len(copies):
                action = action.rows(playing)
            step = host.turn.play(state, playing, action, inputs)
            chain.append((step, state.a_or[playing] * host.inv_limit, playing))
            playing = playing[~step.terminated & (left[playing] > h)]
            if not len(playing):
                break
        host.simulate_seconds[rows] += (perf_counter() - t0) / len(rows)
        return chain

    def check_horizon(self, rows: np.ndarray, horizon: int) -> None:
        """Raise ValueError unless every env of ``rows`` forecasts ``horizon`` steps ahead."""
        if not 1 <= horizon <= MAX_HORIZON:
            raise ValueError(f"horizon must be in [1, {MAX_HORIZON}], got {horizon}")
        if horizon == 1:
            return
        for row in rows.tolist():
            handler = self.host.handlers[row]
            most = handler.forecast_horizons
            if most is not None and most < horizon:
                raise ValueError(
                    f"env {row}: horizon={horizon}, but its scenario {handler.info.name!r} "
                    f"forecasts {most} step(s) ahead (a folder's h_forecast; grid2op's "
                    "l2rpn_idf_2023 forecasts 12)"
                )

    def inputs(
        self,
        rows: np.ndarray,
        k: int,
        h: int,
        playing: np.ndarray,
        setpoints: list[np.ndarray],
        outages: outages_.OutageRows | None,
        action_masks: bool,
    ) -> TurnInputs:
        """The inputs of step ``h`` ahead of the copies ``playing`` (positions among the
        ``k`` copies of each env of ``rows``), as far as the current step tells: the forecast
        made now of that step, the ``outages`` known now carried ``h`` steps on, no attack,
        the clocks ``h`` steps ahead, ``setpoints`` (the copies' own list: a step writes
        them, the next reads them), nothing truncated; the legal actions of the outcome if
        ``action_masks``."""
        host = self.host
        copies = np.repeat(rows, k)
        envs = np.unique(copies[playing]) if len(playing) < len(copies) else rows
        forecasts = {r: host.handlers[r].rows_ahead(h) for r in envs.tolist()}
        clock_rows = copies[playing]
        played = np.repeat(host.played[rows] + h, k)[playing]
        times = np.repeat(host.time_features(rows, ahead=h), k, axis=0)[playing]
        if outages is not None:
            each = (outages.time, outages.duration, outages.hazard)
            outages = outages_.OutageRows(*(np.repeat(a, k, axis=0)[playing] for a in each))
        return TurnInputs(
            clock_rows=clock_rows,
            injections=[forecasts[r] for r in clock_rows.tolist()],
            outages=outages,
            setpoints=setpoints,
            length=None if host.storage is None else host.step_length(clock_rows),
            opponent=None,
            times=times,
            played=played,
            max_steps=host.max_steps[clock_rows],
            truncated=false_flags(len(playing)),
            ahead=h,
            action_masks=action_masks,
        )
