"""GridBatch: the game of N envs of one compiled grid, played together (the batched core).

Every rule is written once here, in :mod:`grid_vec.core.state` (solve, cascades, timers) and
:mod:`grid_vec.core.rules.actions` (legality and effect of actions), as numpy operations over
a leading env axis; only what is per env by nature runs once per env (its scenario handler's
step, its power flow, the draws of its opponent). :class:`~grid_vec.env.grid_env.GridEnv` is
the batch of one, and :class:`~grid_vec.vector.batched.BatchedGridVecEnv` the batch of N.

(About 620 lines: the class is the one entry point of the core for reset, step, pool steps,
simulate, lookahead and snapshots; each of those lives in its own module and is a thin call here:
the look-ahead in :mod:`grid_vec.core.lookahead`, the turn in :mod:`grid_vec.core.turn`,
snapshots in :mod:`grid_vec.core.snapshot` (their checks in :mod:`grid_vec.core.snapshot_checks`),
pool steps in :mod:`grid_vec.core.pool`.)

One step, for the envs stepped together: move each scenario and clock one step, then play
the turn (:mod:`grid_vec.core.turn`, grid2op's order: legality, redispatch, storage, the
opponent, the actions, maintenance and hazards, injections, solve and cascade, timers,
observations, rewards and infos) on the batch's state. ``simulate`` plays the same turn on a
copy of one env's state, with the forecast of its next step (:mod:`grid_vec.core.lookahead`).

Reset solves the first state as grid2op's reset does: a branch above the hard overflow
threshold trips (soft overflows are not counted) and every timer starts at 0.

Everything a step changes is one record, :class:`~grid_vec.core.game_state.GameState` (the
grid's and the solver's rows, the scenarios' clocks and windows, the opponent, the simulate
budget, the setpoints, the episodes' flags); the unchanging part is the
:class:`~grid_vec.core.config.GameConfig`. Each env has its own solver row, scenario handler
and RNG, so every float of an env's trajectory depends only on its seed, options and
actions, not on the batch.

Each env's resources, reset, and the inputs of a step and of a look-ahead are here; the
turn is :mod:`grid_vec.core.turn`'s, the rules live in the modules it calls (``state``,
``rules/``: ``actions``, ``dispatch``, ``storage``, ``outages``, ``opponent``,
``heuristics``; ``rewards/``), each written once; its records are ``records``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import Any

import numpy as np

from grid_vec.chronics.scenario import ScenarioSource
from grid_vec.core import turn as turn_
from grid_vec.core.actions import ActionCatalog
from grid_vec.core.config import GameConfig
from grid_vec.core.contingency import ContingencyResults, branch_indices, screen
from grid_vec.core.continuous import ContinuousLayout
from grid_vec.core.game_state import GameState
from grid_vec.core.lookahead import Lookahead
from grid_vec.core.observation import ObservationLayout
from grid_vec.core.observation_select import ObservationSelection
from grid_vec.core.observer import Observer
from grid_vec.core.parameters import Parameters
from grid_vec.core.pool import TurnPool
from grid_vec.core.records import ActionBatch, CandidateResults, StepBatch
from grid_vec.core.reset_options import (
    apply_init_state,
    check_init_state,
    check_maintenance,
    check_options,
)
from grid_vec.core.rewards.base import (
    RewardContext,
    initialize_rewards,
)
from grid_vec.core.rules import outages as outages_
from grid_vec.core.rules.actions import ActionRules, false_flags
from grid_vec.core.rules.heuristics import (
    Heuristics,
    line_toggles,
    reference_actions,
    step_with_heuristics,
)
from grid_vec.core.rules.opponent import OpponentBatch
from grid_vec.core.rules.storage import StepLength, reset_storage
from grid_vec.core.scenario_rows import CALM_NONE, ScenarioRows
from grid_vec.core.snapshot import GridSnapshot, capture, hand_over_solvers, put
from grid_vec.core.snapshot_checks import check
from grid_vec.core.state import (
    BatchState,
    OverflowLimits,
    any_true,
    initial_state,
    push_topology,
    selector,
    solve,
)
from grid_vec.core.topology import TopologyLayout, layout_of
from grid_vec.core.turn import TurnInputs, TurnRules
from grid_vec.grid import make_solver
from grid_vec.grid.model import GridModel


class GridBatch:
    """N envs of one compiled grid sharing one set of rules, stepped together.

    Args:
        model: the compiled grid.
        sources: one scenario source per env (the same object may be given for all).
        config: the game's settings (:class:`~grid_vec.core.config.GameConfig`, checked).

    Raises:
        ValueError: a grid with storage units and settings without their characteristics,
            or an ``action_subset`` that is not catalog indices with do-nothing first.
    """

    def __init__(
        self, model: GridModel, sources: Sequence[ScenarioSource], config: GameConfig
    ) -> None:
        self.n = len(sources)
        self.config = config
        storage_units, dispatch_limits = config.storage_units, config.dispatch_limits
        thermal_limit, action_subset = config.thermal_limit, config.action_subset
        if model.n_storage and (storage_units is None or storage_units.n != model.n_storage):
            raise ValueError(
                f"the grid has {model.n_storage} storage units: storage_units must give their "
                "characteristics (grid_vec.make reads storage_units_charac.csv)"
            )
        # None: no storage unit, nothing of the storage rules runs
        self.storage = storage_units if model.n_storage else None
        self.model = model
        self.backend_name = config.backend
        self.topology: TopologyLayout = layout_of(model)
        self.catalog = ActionCatalog.from_model(model, self.topology)
        # the default observation is always built; a chosen set of attributes is taken from it
        self._default_layout = ObservationLayout(model, self.topology.n_elem)
        self._selection = (
            None
            if config.observation_attributes is None
            else ObservationSelection(self._default_layout, model, config.observation_attributes)
        )
        self.obs_layout = (
            self._default_layout if self._selection is None else self._selection.layout
        )
        self.action_type = config.action_type
        self.dispatch_limits = dispatch_limits
        self.continuous = ContinuousLayout.of(config.action_kind, dispatch_limits, self.storage)
        self.redispatchable = np.flatnonzero(dispatch_limits.redispatchable)
        self.curtailable = np.flatnonzero(dispatch_limits.renewable)
        self.thermal_limit = thermal_limit
        self.reward_fn = reward_fn = config.reward_fn
        self.other_rewards = other_rewards = config.other_rewards
        self.reward_context = RewardContext(
            model, thermal_limit, self.topology, self.catalog, sources[0]
        )
        initialize_rewards((reward_fn, *other_rewards.values()), self.reward_context)
        # the scenarios in play: handlers, clocks, and windows of their next steps as arrays
        scenarios = ScenarioRows(
            model, sources, chunk_size=config.chunk_size, max_iter=config.max_iter,
            maintenance=config.maintenance,
        )  # fmt: skip
        opponent = config.opponent
        opponents = None if opponent is None else OpponentBatch(opponent, self.n)
        self._rules = ActionRules.of(model, self.catalog, self.topology)
        self.action_mask = config.action_mask  # each result carries the legal catalog actions
        # each result of a reset or step carries the agent actions whose simulated next step
        # keeps max rho below this (None: no such mask)
        self.safe_mask_rho = config.safe_mask_rho
        self.heuristics = config.heuristics
        self.line_toggles = line_toggles(self.catalog, model.n_branch)
        self.reference_actions = reference_actions(self.catalog, model.n_sub)
        # the agent's action k is the catalog's action_subset[k] (None: the whole catalog)
        self.action_subset = self.catalog.checked_subset(action_subset)
        self.n_actions = len(self.catalog if action_subset is None else self.action_subset)

        # Each episode starts from this state (BatchState.restore), its backend reset in place
        # to one that has never solved, so that the solver's warm start (hence every float of
        # a trajectory) depends only on the seed and actions; its initial topology is pushed
        # (and checked) once for all.
        self._initial = initial_state(model, self.topology, make_solver(model, config.backend, 1))
        failed = push_topology(self._initial, model, self.topology, np.zeros(1, dtype=np.intp))
        if failed:
            raise ValueError(f"grid {model.name!r} cannot be solved as compiled: {failed[0]}")
        # everything a step changes, one record (its grid rows copies of the initial state)
        self.game = GameState.new(
            self._initial.take(np.zeros(self.n, dtype=np.intp)), scenarios, opponents, model.n_gen
        )
        # steps every running env surely plays before one reaches its max_steps or the end of
        # its scenario window: until then a step checks neither (ScenarioRows.calm_steps)
        self._calm = CALM_NONE
        self.observer = Observer(
            model, self.topology, self._default_layout, self._selection, thermal_limit,
            dispatch_limits, self._rules, self.action_mask, self.action_subset,
            # the default observation's flows: the storage units' are chosen attributes only
            self._initial.slices["storage_p"].start, self.n,
        )  # fmt: skip
        self.inv_limit = self.observer.inv_limit
        self.timings = dict.fromkeys(("action", "powerflow", "observation", "total"), 0.0)
        self.counts = {
            "steps": scenarios.steps,
            **{name: np.zeros(self.n, dtype=np.int64) for name in ("resets", "simulates")},
        }
        self.simulate_seconds = np.zeros(self.n)
        # the rules, and the record the turn of a step and of a simulate is played by
        # (TurnRules, built again with new parameters)
        self.set_parameters(config.parameters)
        self.lookahead = Lookahead(self)  # simulate, candidates and the safe-action mask
        self._turns: TurnPool | None = None  # pool stepping, once asked for

    def __setstate__(self, state: dict) -> None:
        # the steps counted are the scenarios' clock column: a copy (pickle, deepcopy) of the
        # batch counts them there again
        self.__dict__.update(state)
        self.counts["steps"] = self.game.scenarios.steps

    # --- rules ------------------------------------------------------------------------

    def set_parameters(self, parameters: Parameters) -> None:
        """New rules for every env, in force from the next step."""
        if not isinstance(parameters, Parameters):
            raise TypeError(f"parameters must be a Parameters, got {type(parameters).__name__}")
        self.parameters = parameters
        self.limits = OverflowLimits.of(parameters, self.thermal_limit)
        self.turn_rules = self._turn_rules()

    def _turn_rules(self) -> TurnRules:
        """The turn's record of the game's rules as they are now."""
        return TurnRules(
            model=self.model,
            topology=self.topology,
            parameters=self.parameters,
            limits=self.limits,
            storage=self.storage,
            dispatch_limits=self.dispatch_limits,
            actions=self._rules,
            observer=self.observer,
            reward_fn=self.reward_fn,
            other_rewards=self.other_rewards,
            reward_context=self.reward_context,
        )

    def env_timings(self, row: int) -> dict[str, float]:
        """Cumulative seconds per phase of ``step`` (action, powerflow, observation, total;
        the batch's, shared by its envs) and of ``simulate``, and env ``row``'s counts of
        steps, simulates and resets."""
        return {
            **self.timings,
            "simulate": float(self.simulate_seconds[row]),
            **{name: int(count[row]) for name, count in self.counts.items()},
        }

    # --- reset --------------------------------------------------------------------------

    def reset(
        self,
        rows: np.ndarray,
        rngs: list[np.random.Generator],
        seeds: list[int | None],
        options: list[dict[str, Any] | None],
    ) -> StepBatch:
        """Start a new episode on ``rows`` (sorted env indices).

        Args:
            rows: the envs to reset.
            rngs: each env's RNG (fast-forward and opponent draws come from it).
            seeds: per env, a seed for its scenario order, or None to keep it.
            options: per env, the reset options (``RESET_OPTIONS``) or None.

        Returns:
            The initial observations (rewards 0, nothing flagged).

        Raises:
            TypeError, ValueError: bad options (checked for every env before any is reset),
                or a ``state`` option given to some of ``rows`` only.
            RuntimeError: a scenario whose first state is already a game over.
        """
        rows = np.asarray(rows, dtype=np.intp)
        options = [check_options(o) for o in options]
        restored = ["state" in o for o in options]
        if any(restored):  # snapshots to restore (reset_options: the option comes alone)
            if not all(restored):
                raise ValueError("reset option 'state': give it to every env reset together")
            return self._with_safe_mask(
                rows, self.restore(rows, [o["state"] for o in options], rngs)
            )
        if self._turns is not None:  # a reset ends a pool turn in progress
            self._turns.discard(rows)
        inits = [
            check_init_state(o["init_state"], self.model, self.topology)
            if "init_state" in o
            else None
            for o in options
        ]
        schedules = [
            check_maintenance(o["maintenance"], self.model) if "maintenance" in o else None
            for o in options
        ]
        self.game.scenarios.reset(rows, rngs, seeds, options, schedules)
        state = self.game.grid
        state.restore(rows, self._initial)
        for row, init in zip(rows.tolist(), inits, strict=True):
            if init is not None:
                apply_init_state(state, self.topology, row, init)
        if self.game.opponent is not None:
            seeded = [np.random.default_rng(r.integers(2**63)) for r in rngs]
            self.game.opponent.reset(rows, seeded, self.game.scenarios.max_steps[rows])
        # maintenance and hazards of the first step (timers start at 0 below, as grid2op's)
        outages = self.game.scenarios.outages(rows)
        if outages is not None:
            outages_.take_out(state, self.topology, rows, outages)
        length = None
        if self.storage is not None:
            length = self.step_length(rows)
            reset_storage(state, rows, self.storage, self.parameters, length)
        dead = turn_.inject(
            self.turn_rules,
            state,
            rows,
            self.game.scenarios.injections(rows),
            None,
            self.game.setpoints,
            length,
            first=True,
        )
        # grid2op's reset plays one step in which only hard overflows trip, then zeroes every
        # counter and timer: a branch tripped there starts disconnected, reconnectable at once
        outcome = solve(
            state, self.model, self.topology, self.parameters, self.limits, rows,
            count_soft=False, failed=dead,
        )  # fmt: skip
        for row in rows.tolist():
            if outcome.game_over[row] is not None:
                info = self.game.scenarios.handlers[row].info
                self.game.done[row] = True
                raise RuntimeError(
                    f"scenario {info.name!r} (id {info.id}) cannot start: {outcome.game_over[row]}"
                )
        sel = selector(rows, self.n)
        state.timers[sel] = 0
        self.game.started[sel] = True
        self.game.done[sel] = False
        self._calm = min(self._calm, self.game.scenarios.calm_steps(rows))
        self.counts["resets"][sel] += 1
        self.game.simulates.new_episode(sel)
        return self._with_safe_mask(
            rows, self._observe_now(rows, np.zeros(len(rows), dtype=np.int64), outages)
        )

    def _observe_now(
        self, rows: np.ndarray, played: np.ndarray, outages: outages_.OutageRows | None
    ) -> StepBatch:
        """The observations of ``rows`` in their current states, nothing flagged."""
        obs, _ = self.observer.observe(
            self.game.grid, rows, self.time_features(rows), played, self.game.scenarios, outages
        )
        return StepBatch.quiet(
            obs, self.model.n_branch, action_mask=self.mask_of(self.game.grid, rows)
        )

    # --- snapshots (grid_vec.core.snapshot) ---------------------------------------------

    def snapshot(self, row: int, rng: np.random.Generator | None = None) -> GridSnapshot:
        """Env ``row``'s whole game state, copied (the env unchanged); ``rng``: its env's
        RNG, kept too (None: not kept).

        Raises:
            RuntimeError: the env was never reset.
        """
        if not self.game.started[row]:
            raise RuntimeError(f"env {row}: no episode to take a snapshot of: call reset() first")
        return capture(self.game.at(row), rng)

    def restore(
        self,
        rows: np.ndarray,
        snapshots: Sequence[GridSnapshot],
        rngs: Sequence[np.random.Generator | None],
    ) -> StepBatch:
        """Put each of ``rows`` (sorted env indices) in the state of its snapshot (of any env
        of this configuration) and ``rngs`` (their envs' RNGs, or None) in the snapshots'.

        Returns:
            The observations of the restored states (rewards 0, nothing flagged).

        Raises:
            TypeError, ValueError: a snapshot that is not one, not of this grid and
                configuration, or with a value outside its domain (every snapshot is checked
                whole before any env changes; then no env has changed).
        """
        rows = np.asarray(rows, dtype=np.intp)
        game = self.game
        for row, snap, rng in zip(rows.tolist(), snapshots, rngs, strict=True):
            check(snap, game.at(row), self.model, self.topology, self.parameters, rng)
        hand_over_solvers(snapshots, game.grid, rows.tolist())
        if self._turns is not None:  # a restore, as a reset, ends a pool turn in progress
            self._turns.discard(rows)
        for row, snap, rng in zip(rows.tolist(), snapshots, rngs, strict=True):
            put(snap, game.at(row), self.model, self.topology, rng)
        game.scenarios.follow(rows)
        self._calm = game.scenarios.calm_steps(np.flatnonzero(~game.done))
        return self._observe_now(rows, game.scenarios.played[rows], game.scenarios.outages(rows))

    # --- step ---------------------------------------------------------------------------

    def step(self, rows: np.ndarray, action: ActionBatch) -> StepBatch:
        """Play the agent's step of ``rows`` (sorted env indices, episodes running), then,
        with heuristics, the steps the env plays on its own (:mod:`grid_vec.core.rules.heuristics`).

        Args:
            rows: the envs to step.
            action: their checked actions (``env.action_input``'s): the topology part as
                agent action indices (catalog indices, or positions in ``action_subset``
                when there is one; all 0 in continuous modes).

        Returns:
            The step of each row; ``done`` is updated.
        """
        if self._turns is not None and self._turns.in_turn[rows].any():
            raise RuntimeError("a lockstep step of envs in a pool turn: finish_turns first")
        action = self._catalog_actions(action)
        if self.heuristics is None:
            result = self.play_step(rows, action)
        else:
            result = step_with_heuristics(self, self.heuristics, rows, action)
        return self._with_safe_mask(rows, result)

    def begin_turns(self, rows: np.ndarray, action: ActionBatch) -> None:
        """Pool stepping (:mod:`grid_vec.core.pool`): play the agent's step of ``rows``
        (arguments as :meth:`step`'s); :meth:`finish_turns` plays the rest of their turns.

        Raises:
            ValueError: some of ``rows`` are in a turn already.
        """
        if self._turns is None:
            self._turns = TurnPool(self, self.heuristics or Heuristics(), self.n)
        self._turns.begin(rows, self._catalog_actions(action))

    def finish_turns(self, count: int) -> tuple[np.ndarray, StepBatch]:
        """Pool stepping: the env's own steps of every env in a turn until ``count`` turns
        have ended; those envs (sorted) and their steps, as :meth:`step` gives them.

        Raises:
            ValueError: fewer than ``count`` envs are in a turn.
        """
        if self._turns is None:
            raise ValueError(f"{count} turns asked, none is begun")
        rows, result = self._turns.finish(count)
        return rows, self._with_safe_mask(rows, result)

    def envs_in_turn(self) -> np.ndarray:
        """Pool stepping: the envs (sorted) whose turn is begun and not yet finished."""
        if self._turns is None:
            return np.zeros(0, dtype=np.intp)
        return np.flatnonzero(self._turns.in_turn)

    def _catalog_actions(self, action: ActionBatch) -> ActionBatch:
        """The agent's actions with their topology part as catalog indices."""
        if self.action_subset is None:
            return action
        return replace(action, topology=self.action_subset[action.topology])

    def play_step(self, rows: np.ndarray, action: ActionBatch, *, masks: bool = True) -> StepBatch:
        """Play one step of ``rows``, without heuristics (arguments as :meth:`step`'s, the
        topology part as catalog indices): the turn (:mod:`grid_vec.core.turn`) on the
        batch's state, its scenarios and clocks moved to the next step. ``masks``: whether
        the step carries the legal actions (the env's own steps of a turn need none: the
        turn's last state gets them)."""
        t0 = perf_counter()
        inputs, calm = self._next_step(rows, masks)
        result, t1, t2 = turn_.play(self.turn_rules, self.game.grid, rows, action, inputs)
        terminated, truncated = result.terminated, result.truncated
        if any_true(terminated) or any_true(truncated):
            self.game.done[selector(rows, self.n)] = terminated | truncated
        if not calm:
            self._calm = self.game.scenarios.calm_steps(np.flatnonzero(~self.game.done))
        t3 = perf_counter()
        timings = self.timings
        timings["action"] += t1 - t0
        timings["powerflow"] += t2 - t1
        timings["observation"] += t3 - t2
        timings["total"] += t3 - t0
        return result

    def _next_step(self, rows: np.ndarray, masks: bool = True) -> tuple[TurnInputs, bool]:
        """Move the scenarios and clocks of ``rows`` one step on; the turn's inputs of that
        step, and whether the step was calm (no row could reach its max_steps or the end of
        its scenario window: neither is checked)."""
        scenarios = self.game.scenarios
        scenarios.advance(rows)
        sel = selector(rows, self.n)
        played = scenarios.played[sel]
        calm = self._calm > 0
        if calm:
            self._calm -= 1
            truncated = false_flags(len(rows))
        else:
            truncated = played >= scenarios.max_steps[sel]
            scenarios.refill_due(rows)
        inputs = TurnInputs(
            clock_rows=rows,
            scenarios=scenarios,
            injections=scenarios.injections(rows),
            outages=scenarios.outages(rows),  # maintenance and hazards of this step
            setpoints=self.game.setpoints,
            length=None if self.storage is None else self.step_length(rows),
            opponent=self.game.opponent,
            times=scenarios.times(rows),
            played=played,
            max_steps=scenarios.max_steps[sel],
            truncated=truncated,
            action_masks=masks,
        )
        return inputs, calm

    def simulate(self, row: int, action: ActionBatch) -> StepBatch:
        """Play an action of env ``row`` (a checked one-row record, its topology part an
        agent action index) on the forecast of its next step, on a copy of its state:
        nothing of the env changes. No opponent attack is simulated.

        Raises:
            RuntimeError: the episode is over, or ``max_simulate_per_step`` /
                ``max_simulate_per_episode`` is reached.
        """
        return self.lookahead.simulate(row, action)

    def simulate_candidates(
        self, rows: np.ndarray, actions: Sequence[ActionBatch], k: int
    ) -> CandidateResults:
        """Play ``k`` candidates of each env of ``rows``, each on a copy of the env's state,
        as the rows of one turn per step (:mod:`grid_vec.core.lookahead`): one step on the
        forecast of the next, or with several steps of actions a chain on the forecasts of
        the next ``len(actions)`` steps. Nothing of the envs changes; no opponent attack is
        simulated. Each candidate's step counts as one simulate against
        ``max_simulate_per_step`` / ``_per_episode``.

        Args:
            rows: the envs (sorted, distinct, episodes running).
            actions: per step, ``len(rows) * k`` checked actions (agent action indices in
                the topology part), the ``k`` candidates of ``rows[0]`` first.
            k: candidates per env.

        Returns:
            The results, ``(len(rows), k, ...)`` arrays, with a horizon axis after ``k``
            for more than one step.

        Raises:
            ValueError: no candidate (``k`` < 1), or more steps than the scenarios forecast.
            RuntimeError: an episode is over, or a simulate budget would be exceeded (then
                nothing is simulated, nothing counted).
        """
        return self.lookahead.candidates(rows, actions, k)

    def _with_safe_mask(self, rows: np.ndarray, result: StepBatch) -> StepBatch:
        """``result`` with its safe-action mask when the env gives one
        (:meth:`Lookahead.safe_mask <grid_vec.core.lookahead.Lookahead.safe_mask>`)."""
        if self.safe_mask_rho is None:
            return result
        return self.lookahead.safe_mask(rows, result)

    def contingencies(self, rows: np.ndarray, branches: Any) -> ContingencyResults:
        """The N-1 screening of ``rows`` (:mod:`grid_vec.core.contingency`): each env's flows
        with each of ``branches`` (names or indices; None: all) out alone, from its current
        state, the envs untouched.

        Raises:
            ValueError: an unknown branch.
            RuntimeError: an episode is over (or never started).
        """
        self.check_running(rows)
        return screen(
            self.game.grid, self.model, self.topology, self.inv_limit, rows,
            branch_indices(self.model, branches),
        )  # fmt: skip

    def check_running(self, rows: np.ndarray) -> None:
        """Raise RuntimeError naming the first of ``rows`` whose episode is over."""
        done = rows[self.game.done[rows]]
        if len(done):
            raise RuntimeError(
                f"env {int(done[0])}: the episode is over (or never started): call reset() first"
            )

    # --- the pieces of a step -----------------------------------------------------------

    def step_length(self, clock_rows: np.ndarray) -> StepLength:
        """The step lengths of the batch's ``clock_rows`` (their scenarios')."""
        return self.game.scenarios.step_length(clock_rows)

    def mask_of(self, state: BatchState, rows: np.ndarray) -> np.ndarray | None:
        """The legal agent actions of ``rows`` of ``state`` now, when the env gives them."""
        return self.observer.mask_of(state, rows, self.parameters)

    def legal_actions(self, rows: np.ndarray) -> np.ndarray:
        """(k, n_catalog) bool: the catalog actions legal now in ``rows``."""
        return self._rules.legal_mask(self.game.grid, rows, self.parameters)

    def catalog_index(self, action: int) -> int:
        """The catalog index of the agent's discrete action ``action`` (assumed valid)."""
        return int(action if self.action_subset is None else self.action_subset[action])

    def time_features(self, rows: np.ndarray, ahead: int = 0) -> np.ndarray:
        """(k, 6) time features of each row's current step (``ahead``: of the step that many
        steps on, fewer than a scenario window's)."""
        return self.game.scenarios.times(rows, ahead)
