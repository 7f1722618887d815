"""What a turn reads off a state once its physics are done: the observations and the legal
actions. One object per batch, built from the game's settings and never changed, so that the
turn (:mod:`grid_vec.core.turn`) takes it as data with the rest of its rules instead of
calling back into the batch; a reset, a step and a look-ahead observe through it alike.
"""

from __future__ import annotations

import numpy as np

from grid_vec.core.observation import ObservationLayout
from grid_vec.core.observation_select import ObservationSelection, extra_values
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules import outages as outages_
from grid_vec.core.rules.actions import ActionRules
from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.scenario_rows import ScenarioRows
from grid_vec.core.state import BatchState, selector
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel


class Observer:
    """The observations and legal-action masks of a batch's envs.

    Args:
        model: the grid.
        topology: its layout.
        layout: the default observation's layout (always built; a selection is taken from
            it).
        selection: the attributes the env chose (None: the default observation).
        thermal_limit: (n_branch,) A, the limits rho is relative to.
        dispatch_limits: the generators' (chosen dispatch attributes read them).
        actions: the legality of the catalog actions.
        action_mask: whether observations come with their legal actions.
        action_subset: the agent's actions as catalog indices (None: the whole catalog).
        n_flows: the leading flows of a state's flow rows that the default observation shows.
        n_rows: the batch's envs (the no-maintenance segments are kept for as many).
    """

    def __init__(
        self,
        model: GridModel,
        topology: TopologyLayout,
        layout: ObservationLayout,
        selection: ObservationSelection | None,
        thermal_limit: np.ndarray,
        dispatch_limits: GeneratorLimits,
        actions: ActionRules,
        action_mask: bool,
        action_subset: np.ndarray | None,
        n_flows: int,
        n_rows: int,
    ) -> None:
        self.model = model
        self.topology = topology
        self.layout = layout
        self.selection = selection
        self.inv_limit = 1.0 / thermal_limit[None]  # a row: see OverflowLimits
        self.dispatch_limits = dispatch_limits
        self.actions = actions
        self.action_mask = action_mask
        self.action_subset = action_subset
        self._n_flows = n_flows
        self._n_timers = 2 * model.n_branch + model.n_sub
        # the last two segments of an observation when no outage is planned for its env
        self._no_maintenance = _no_maintenance(n_rows, model.n_branch)

    def observe(
        self,
        state: BatchState,
        rows: np.ndarray,
        times: np.ndarray,
        played: np.ndarray,
        scenarios: ScenarioRows,
        outages: outages_.OutageRows | None = None,
        clock_rows: np.ndarray | None = None,
        ahead: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The observations of ``rows`` of ``state`` and their rho.

        Args:
            state: the state observed (a batch's, or a look-ahead's copies).
            rows: its rows observed.
            times: (k, 6) their time features.
            played: (k,) their steps played this episode.
            scenarios: the scenarios whose clocks the rows follow (read for the chosen
                attributes that count steps).
            outages: the maintenance segments (None: no outage planned).
            clock_rows: the rows of ``scenarios`` the observations are of (default
                ``rows``), ``ahead`` steps on.
            ahead: steps from those clocks to the observed step.

        Returns:
            (k, size) float32 observations, in one ``concatenate`` of every segment (a fresh
            array: the caller keeps it), then the chosen attributes when the env chose them;
            and their (k, n_branch) rho (the rewards read it).
        """
        sel = selector(rows, state.n)
        rho = state.a_or[sel] * self.inv_limit
        k = len(rows)
        obs = np.empty((k, self.layout.size), dtype=np.float32)
        segments = [
            times, played[:, None], rho, state.line_status[sel],
            state.flows[sel, : self._n_flows],
            state.actual_dispatch[sel], state.topo[sel], state.timers[sel, : self._n_timers],
        ]  # fmt: skip
        if outages is None:
            if k > len(self._no_maintenance):  # look-ahead rows: more than the batch's
                self._no_maintenance = _no_maintenance(k, self.model.n_branch)
            segments.append(self._no_maintenance[:k])
        else:
            segments += (outages.time, outages.duration)
        np.concatenate(segments, axis=1, out=obs, casting="same_kind")
        if self.selection is not None:
            clock_rows = rows if clock_rows is None else clock_rows
            steps = scenarios.step_index[clock_rows] + ahead
            extras = extra_values(
                self.selection, self, state, rows, steps, played, clock_rows, scenarios
            )
            obs = self.selection.select(obs, extras)
        return obs, rho

    def mask_of(
        self, state: BatchState, rows: np.ndarray, parameters: Parameters
    ) -> np.ndarray | None:
        """The legal agent actions of ``rows`` of ``state`` under ``parameters``, when the
        env gives them (else None)."""
        if not self.action_mask:
            return None
        mask = self.actions.legal_mask(state, rows, parameters)
        return mask if self.action_subset is None else mask[:, self.action_subset]


def _no_maintenance(k: int, n_branch: int) -> np.ndarray:
    """(k, 2 n_branch) read-only: the maintenance segments of an observation with no outage
    planned (time_next_maintenance -1, duration_next_maintenance 0)."""
    segments = np.zeros((k, 2 * n_branch), dtype=np.float32)
    segments[:, :n_branch] = -1.0
    segments.flags.writeable = False
    return segments
