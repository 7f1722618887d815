"""GridEnv: operate a power grid through a scenario, as a ``gymnasium.Env``.

A GridEnv is the batch of one of :class:`~grid_vec.core.batch.GridBatch`, where the game is
written (once, for any number of envs): one step checks the action's legality with the
current timers (an illegal action becomes do-nothing, flagged in ``info``), moves the
scenario one step, lets the opponent choose its attack, applies the action, the scenario's
maintenance and hazards, the attack and the new injections, solves and cascades (see
:mod:`grid_vec.core.state`), moves the timers, and builds the observation, reward and info.
This module holds what is per env: the gymnasium API, the validation of one action, the
info dict and the look-ahead budget.

Reset solves the first state as grid2op's reset does: a branch above the hard overflow
threshold trips (soft overflows are not counted) and every timer starts at 0, so such a
branch starts disconnected and may be reconnected at once.

``terminated``: game over (divergence, isolated load/generator, disconnected slack).
``truncated``: end of the scenario, of ``max_iter`` or of the reset's ``max_steps``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from grid_vec.chronics.scenario import ScenarioInfo, ScenarioSource
from grid_vec.core.batch import GridBatch
from grid_vec.core.config import GameConfig
from grid_vec.core.contingency import ContingencyResults
from grid_vec.core.observation import ObservationView
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import CandidateResults, StepBatch, env_info
from grid_vec.core.reset_options import RESET_OPTIONS
from grid_vec.core.rewards.base import RewardFn
from grid_vec.core.snapshot import GridSnapshot
from grid_vec.env.action_input import DECLARES_DO_NOTHING, ActionBatch, horizon_actions
from grid_vec.env.action_types import ACTION_TYPES, ActionType
from grid_vec.grid.model import GridModel

__all__ = ["ACTION_TYPES", "RESET_OPTIONS", "GridEnv"]


class GridEnv(gym.Env):
    """A grid-operation game over scenarios; see the module docstring for one step.

    ``model`` is a compiled grid, ``source`` any scenario source (synthetic or folder). The
    game's settings are a :class:`~grid_vec.core.config.GameConfig`: give one as ``config``,
    or its keywords (:meth:`GameConfig.build <grid_vec.core.config.GameConfig.build>`'s,
    written there once; an unknown keyword is a ``TypeError``), described below.
    ``action_type``: ``"discrete"`` (the topology catalog), ``"redispatch"``,
    ``"curtailment"``, ``"storage"`` or ``"continuous"`` (all three), played by grid2op's
    dispatch and storage rules, ``"combined"`` (a catalog action and a continuous one) or
    ``"set_bus"`` (grid2op's general topology action: ``{"set_bus": a bus bar per element of
    the topology vector, "set_line_status": a status per branch}``, played by grid2op's
    rules, :mod:`grid_vec.core.rules.set_bus`) or ``"set_bus_continuous"`` (both, with a
    ``"continuous"`` part: every part of a grid2op action grid_vec plays) (see
    :mod:`grid_vec.env.action_types`,
    :mod:`grid_vec.core.rules.dispatch` and :mod:`grid_vec.core.rules.storage`). ``dispatch_limits``
    are the generators' characteristics those rules use (a folder's ``prods_charac.csv``;
    :func:`grid_vec.make` passes them); without them, the net's pmin / pmax, ``gen_ramp``
    (MW per step, one per generator; by default 5% of each generator's ``pmax``) both ways,
    its ``gen`` rows dispatchable and its static generators curtailable. ``storage_units``
    are the storage units' characteristics (a folder's ``storage_units_charac.csv``,
    :func:`grid_vec.make` passes them), required when the grid has storage units.

    ``reward`` and the values of ``other_rewards`` (a list of names, or a dict name ->
    reward; their values go to ``info["other_rewards"]``) are reward names (grid_vec's:
    ``"flat"``, ``"line_margin"``, ``"redispatch_cost"``; grid2op's, with grid2op's formulas:
    ``"L2RPNReward"``, ``"RedispReward"``, ... see :mod:`grid_vec.core.rewards.grid2op`),
    reward objects (``RedispReward(alpha_redisp=3)``) or custom callables
    ``fn(inputs, terminated) -> float``, called once per env and step with that env's
    :class:`~grid_vec.core.rewards.base.RewardInputs`: the flows after the step, the action asked
    for (``inputs.action``, ``inputs.redispatch``, ``inputs.acted_line``,
    ``inputs.acted_sub``), whether it was refused (``inputs.is_illegal``,
    ``inputs.is_ambiguous``), ``inputs.done``, ``inputs.step`` / ``inputs.max_steps``, the
    timers and the topology. Without ``reward``, a dataset folder whose ``config.py`` names a
    grid2op reward class grid_vec has (``"reward_class": RedispReward``) plays that reward,
    as grid2op does; any other env plays ``"flat"``.

    ``maintenance=False`` leaves out the line outages the scenarios plan (maintenance and
    hazards, see :mod:`grid_vec.core.rules.outages`), as grid2op's scenario classes without
    maintenance do.

    ``observation_attributes`` (a list of names) makes the flat observation of these
    attributes only, in this order, as grid2op's ``gym_compat`` lets users choose: the
    default ones (see :mod:`grid_vec.core.observation`) and grid2op's ``target_dispatch``,
    ``current_step``, ``max_step``, ``delta_time``, ``timestep_protection_engaged``,
    ``theta_or``, ``theta_ex``, ``load_theta``, ``gen_theta``, ``storage_charge``,
    ``storage_power_target``, ``storage_power``, ``storage_theta`` (see
    :mod:`grid_vec.core.observation_select`). ``env.view(obs)`` names them.

    ``action_mask=True`` (``"discrete"``, ``"combined"``, ``"set_bus"`` and
    ``"set_bus_continuous"``: the catalog's actions are general topology actions too) puts in
    the info
    of every reset and step ``action_mask``, a ``(n_catalog,)`` bool array: True where the
    catalog action would be legal in the state returned (the cooldowns of its branch or
    substation are over, ``max_line_status_changed`` / ``max_sub_changed`` allow it, a
    configuration reconnects no branch in cooldown and no more branches than
    ``max_line_status_changed``); do-nothing is always legal. An illegal action is played as
    do-nothing (``info["is_illegal"]``): a maskable policy never picks one.

    ``heuristics`` (a :class:`~grid_vec.core.rules.heuristics.Heuristics`) lets the env play steps
    on its own while the grid is safe, and reconnect lines: a ``step`` then returns at the
    next decision point, with the rewards summed and ``info["skipped_steps"]`` (see
    :mod:`grid_vec.core.rules.heuristics`).

    ``action_subset`` (catalog indices, do-nothing ``0`` first) restricts the discrete
    actions to these: action ``k`` is catalog action ``action_subset[k]``, and the
    ``action_mask`` has one entry per action of the subset. The heuristics still use the
    whole catalog (a reconnection or a recovery need not be in the subset).

    ``safe_mask_rho=0.95`` (``"discrete"`` and ``"combined"``) puts in the info of every reset
    and step ``safe_mask``, a ``(n_actions,)`` bool array: True where the agent action,
    simulated from the state returned on the forecast of the next step (as
    :meth:`simulate_candidates` simulates it), is legal, unambiguous, ends no game and keeps
    every branch's rho below 0.95. It costs one simulated step per action and per step; those
    simulations do not count against ``max_simulate_per_step`` / ``_per_episode``.
    """

    # DECLARES_DO_NOTHING: a vector env of these envs may read their ``do_nothing_action``
    # (reading an attribute an env lacks breaks gymnasium's AsyncVectorEnv: it is asked first)
    metadata: ClassVar[dict] = {"render_modes": [], DECLARES_DO_NOTHING: True}
    # a row of a batched core, stepped by the vector envs' slice engine with its batch (read
    # on this class only, by grid_vec.vector.worker.is_grid_env: a subclass may step otherwise)
    steps_as_batch_row: ClassVar[bool] = True

    def __init__(
        self,
        model: GridModel,
        source: ScenarioSource,
        config: GameConfig | None = None,
        **settings: Any,
    ) -> None:
        # the keywords are GameConfig.build's, written there once (see the class docstring)
        if config is None:
            config = GameConfig.build(model, source, **settings)
        elif settings:
            raise TypeError(
                f"GridEnv takes a config or its settings, not both (got {sorted(settings)})"
            )
        self.config = config
        self._source = source
        self._batch = batch = GridBatch(model, [source], config)
        self.model = model
        self.backend_name = config.backend
        self.opponent = config.opponent
        self.action_type = config.action_type
        # its record: space, checks, parts, do-nothing (action_type checked by the config)
        self.action_kind: ActionType = ACTION_TYPES[config.action_type]
        self.topology = batch.topology
        self.catalog = batch.catalog
        # where each control lies in the continuous part of an action (None: there is none)
        self.continuous = batch.continuous
        self.obs_layout = batch.obs_layout
        self.observation_space = spaces.Box(*self.obs_layout.bounds(), dtype=np.float32)
        self.redispatchable = batch.redispatchable
        self.dispatch_limits = config.dispatch_limits
        self.storage_units = batch.storage  # None: the grid has none
        self.action_space = self.action_kind.space(batch)
        # a bare int action is a catalog index below this (0 otherwise: no int is one)
        self._n_discrete = batch.n_actions if isinstance(self.action_space, spaces.Discrete) else 0
        self._parsed: dict[int, ActionBatch] = {}  # the bare int actions, parsed (see _parse)
        self._bind(batch, 0)

    def _bind(self, batch: GridBatch, row: int) -> None:
        """Make this env row ``row`` of ``batch``."""
        self._batch = batch
        self._k = row
        self._row = np.array([row], dtype=np.intp)
        self._handler = batch.game.scenarios.handlers[row]

    def sharing_one_batch(self, n: int) -> list[GridEnv]:
        """``n`` fresh envs configured as this one, the rows of one new batched core.

        Each is a complete GridEnv (its own RNG, scenario order and spaces; ``step`` and
        ``reset`` play its row alone); a vector env holding them can also step all of them
        at once through their shared batch (``env.batch_row``). They share what a batch
        shares: the rules (``set_parameters`` on one sets them for all), rewards, limits.

        Raises:
            ValueError: ``n`` < 1.
        """
        batch = self.make_batch(n)
        envs = []
        for row in range(n):
            env = copy.copy(self)
            env.action_space = copy.deepcopy(self.action_space)
            env.observation_space = copy.deepcopy(self.observation_space)
            env._bind(batch, row)
            envs.append(env)
        return envs

    @property
    def batch_row(self) -> tuple[GridBatch, int]:
        """The batched core this env is a row of, and its row."""
        return self._batch, self._k

    def make_batch(self, n: int) -> GridBatch:
        """A batched core of ``n`` fresh envs configured as this one (model, scenario source,
        rules, rewards, opponent, limits): what a vector env of this env's copies steps.

        Raises:
            ValueError: ``n`` < 1.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        return GridBatch(self.model, [self._source] * n, self.config)

    @property
    def do_nothing_action(self) -> Any:
        """The action of this env's space that changes nothing (what a do-nothing agent
        plays: its action type's, :meth:`~grid_vec.env.action_types.ActionType.do_nothing`)."""
        return self.action_kind.do_nothing(self._batch)

    @property
    def grid2op_layout(self) -> dict[str, np.ndarray]:
        """grid2op's layout arrays under grid2op's names (``load_pos_topo_vect``,
        ``line_or_to_subid``, ``sub_info``, ``dim_topo``, ...): the same positions as
        grid2op's on the same grid, so that code indexing ``topo_vect`` with them reads the
        same elements in the observation's ``topo_vect`` segment."""
        return self.topology.grid2op_arrays(self.model)

    @property
    def parameters(self) -> Parameters:
        """The rules in force."""
        return self._batch.parameters

    @property
    def thermal_limit(self) -> np.ndarray:
        """Thermal limit of every branch, amperes."""
        return self._batch.thermal_limit

    @property
    def reward_fn(self) -> RewardFn:
        return self._batch.reward_fn

    @property
    def other_rewards(self) -> dict[str, RewardFn]:
        return self._batch.other_rewards

    # --- gymnasium API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: seeds the env's RNG and shuffles its scenario order (None: keep both).
            options: ``scenario_id`` (id or name), ``fast_forward`` (steps to skip),
                ``max_steps`` (cap of this episode), ``init_state`` (``line_status`` and
                ``bus`` of the first state), ``maintenance`` (an explicit schedule: a
                ``(steps, n_branch)`` 0/1 array, row ``t`` the branches in maintenance at
                the scenario's step ``t``, replacing the scenario's own, e.g. to replay the
                maintenance grid2op drew).

        Returns:
            The first observation and ``{"scenario_id", "scenario_name"}``, with
            ``action_mask`` when the env gives it.

        Raises:
            TypeError, ValueError: bad options.
            RuntimeError: a scenario whose first state is already a game over.
        """
        super().reset(seed=seed)
        result = self._batch.reset(self._row, [self.np_random], [seed], [options])
        info = self._handler.info
        out: dict[str, Any] = {"scenario_id": info.id, "scenario_name": info.name}
        if result.action_mask is not None:
            out["action_mask"] = result.action_mask[0].copy()
        if result.safe_mask is not None:
            out["safe_mask"] = result.safe_mask[0].copy()
        return result.obs[0], out

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one step (with ``heuristics``: the agent's step, then those the env plays on
        its own until the next decision point).

        Args:
            action: a catalog index (``Discrete``) or a continuous action (``Box``: redispatch
                MW, curtailment limits and / or storage MW, see
                :mod:`grid_vec.env.action_input`).

        Returns:
            ``(observation, reward, terminated, truncated, info)``; ``info`` always holds
            ``is_illegal``, ``is_ambiguous``, ``tripped_branches`` and ``attacked_branch``,
            ``other_rewards`` when configured, the reasons on the steps they explain,
            ``action_mask`` when asked for and ``skipped_steps`` under heuristics.

        Raises:
            ValueError: an action outside the action space.
            RuntimeError: the episode is over (or never started).
        """
        batch = self._batch
        if batch.game.done[self._k]:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        result = batch.step(self._row, self._parse(action))
        return (
            result.obs[0],
            float(result.reward[0]),
            bool(result.terminated[0]),
            bool(result.truncated[0]),
            env_info(result, 0),
        )

    def fixed_info(self) -> dict[str, Any]:
        """The info of a step with no reason to give, zeroed: the entries every ``step``'s
        info holds, each of one type and shape whatever the step (a vector env lays them
        out in shared memory once, see :mod:`grid_vec.vector.slice_engine`)."""
        batch = self._batch
        quiet = StepBatch.quiet(
            np.zeros((1, 0), dtype=np.float32),
            self.model.n_branch,
            other_rewards=tuple(batch.other_rewards),
            action_mask=np.zeros((1, batch.n_actions), dtype=bool) if batch.action_mask else None,
            safe_mask=(
                np.zeros((1, batch.n_actions), dtype=bool)
                if batch.safe_mask_rho is not None
                else None
            ),
            skipped=batch.heuristics is not None,
        )
        return env_info(quiet, 0)

    # --- look-ahead -------------------------------------------------------------------

    def simulate(self, action: Any) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        """Play ``action`` on the forecast of the next step, on a copy of the state.

        The env's state, RNGs, scenario position and timers are untouched. No opponent
        attack is simulated, nor any heuristic step. Limited by ``max_simulate_per_step`` /
        ``_per_episode``.

        Returns:
            ``(observation, reward, terminated, info)`` of the simulated step.

        Raises:
            ValueError: an action outside the action space.
            RuntimeError: the episode is over, or a simulate budget is spent.
        """
        if self._batch.game.done[self._k]:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        result = self._batch.simulate(self._k, self._parse(action))
        return (
            result.obs[0],
            float(result.reward[0]),
            bool(result.terminated[0]),
            env_info(result, 0),
        )

    def simulate_candidates(self, candidates: Any, horizon: int = 1) -> CandidateResults:
        """Simulate ``K`` candidate actions at once, each on the forecast of the next step
        from the env's current state (as :meth:`simulate` plays one), as the rows of one
        batched turn; or, with ``horizon`` H > 1, ``K`` sequences of H actions, each played
        on the forecasts of the next H steps (as grid2op chains ``simulate`` on a simulated
        observation). The env is untouched; each candidate's step counts as one simulate
        against ``max_simulate_per_step`` / ``_per_episode``.

        Args:
            candidates: ``K`` actions batched as ``(K,)`` catalog indices (``Discrete``),
                a ``(K, size)`` float array (``Box``), or a dict of both (combined); for
                ``horizon`` > 1, ``(K, H)`` indices, ``(K, H, size)`` floats or a dict of
                both: the ``H`` actions of each candidate.
            horizon: the steps ahead (1 to :data:`~grid_vec.core.lookahead.MAX_HORIZON`;
                more than 1 needs a scenario that forecasts that far: a folder with
                multi-horizon forecasts, or the synthetic scenarios).

        Returns:
            The results, arrays starting with ``K``, then the horizon for ``horizon`` > 1
            (:class:`~grid_vec.core.records.CandidateResults`): observations, rewards,
            terminated, illegal, ambiguous, max_rho, overloaded, game_over_reason, played.

        Raises:
            ValueError: no candidate, a candidate outside the action space, candidates not
                shaped for ``horizon``, or a horizon the scenario does not forecast.
            RuntimeError: the episode is over, or a simulate budget would be exceeded.
        """
        if self._batch.game.done[self._k]:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        actions = horizon_actions(self._batch, candidates, horizon)
        k = len(actions[0].topology)
        return self._batch.simulate_candidates(self._row, actions, k).env(0)

    def contingencies(self, branches: Any = None) -> ContingencyResults:
        """The N-1 screening of the current state: every branch's flow if one branch went out
        now, each of ``branches`` in turn (the env untouched; no rule or timer involved).

        Args:
            branches: branch names or indices (None: every branch).

        Returns:
            The results, arrays starting with ``m`` = ``len(branches)``
            (:class:`~grid_vec.core.contingency.ContingencyResults`): ``rho``, ``max_rho``
            (``inf`` for an outage that ends the game), ``game_over_reason``.

        Raises:
            ValueError: an unknown branch.
            RuntimeError: the episode is over (or never started).
        """
        batch = self._batch
        return batch.contingencies(self._row, branches).env(0)

    # --- snapshots ----------------------------------------------------------------------

    def snapshot(self) -> GridSnapshot:
        """The env's whole game state as plain arrays (:mod:`grid_vec.core.snapshot`): the
        grid's state, the scenario's place, the opponent and every RNG, the solver's warm
        start. The env is untouched.

        Returns:
            A :class:`~grid_vec.core.snapshot.GridSnapshot` (``to_arrays()`` gives it as a
            dict of arrays for ``np.savez``, ``GridSnapshot.from_arrays`` reads it back).

        Raises:
            RuntimeError: the env was never reset.
        """
        return self._batch.snapshot(self._k, self.np_random)

    def restore(self, snapshot: GridSnapshot) -> tuple[np.ndarray, dict[str, Any]]:
        """Put the env in the state of ``snapshot`` (of this env or of any env of the same
        make arguments): from there it plays bitwise what the snapshot's env played.
        ``reset(options={"state": snapshot})`` does the same.

        Returns:
            The observation of the restored state and ``{"scenario_id", "scenario_name"}``
            (with ``action_mask`` when the env gives it), as ``reset``'s.

        Raises:
            TypeError: not a GridSnapshot.
            ValueError: a snapshot of another grid or configuration (naming the field).
        """
        return self.reset(options={"state": snapshot})

    # --- commands used by the vector env ------------------------------------------------

    def set_scenario_id(self, id_or_name: int | str) -> None:
        """The next reset plays this scenario (id or name)."""
        self._handler.set_id(id_or_name)

    def set_scenario_filter(self, fn: Callable[[str], bool]) -> None:
        """Following resets only play scenarios whose name ``fn`` accepts."""
        self._handler.set_filter(fn)

    def set_chunk_size(self, n: int | None) -> None:
        self._handler.set_chunk_size(n)

    def set_fast_forward(self, max_steps: int | None) -> None:
        """Following resets (without a ``fast_forward`` option) skip a random number of
        steps in ``[0, max_steps)``, drawn from the env's seeded RNG; None or 0: no skip."""
        self._handler.set_max_fast_forward(max_steps or None)

    def set_max_iter(self, n: int | None) -> None:
        self._handler.set_max_iter(n)

    def set_parameters(self, parameters: Parameters) -> None:
        """New rules, in force from the next step.

        Envs sharing one batch (:meth:`sharing_one_batch`) share their rules: the first row
        sets them for all, the others may only repeat them (as a vector env's
        ``set_parameters`` does, env after env).

        Raises:
            TypeError: not a Parameters.
            ValueError: rules different from the batch's, given to a row other than the first.
        """
        batch = self._batch
        if self._k > 0 and parameters != batch.parameters:
            raise ValueError("the envs of a batch share one Parameters: give one for all envs")
        batch.set_parameters(parameters)

    @property
    def scenario_info(self) -> ScenarioInfo | None:
        """The scenario of the current (or last) episode; None before the first reset."""
        return self._handler.info if self._batch.game.started[self._k] else None

    @property
    def source(self) -> ScenarioSource:
        """Where the scenarios come from (a grid2op folder's source has its ``path``)."""
        return self._source

    @property
    def scenario_order(self) -> np.ndarray:
        """Scenario ids in the order the next resets play them."""
        return self._handler.order

    def timings(self) -> dict[str, float]:
        """Cumulative seconds per phase of ``step`` (action, powerflow, observation, total),
        of ``simulate``, and the counts of steps, simulates and resets since construction."""
        return self._batch.env_timings(self._k)

    def opponent_info(self) -> dict[str, Any] | None:
        """The opponent's budget, attacked branch (-1: none) and remaining attack steps;
        None without an opponent."""
        opponent = self._batch.game.opponent
        return None if opponent is None else opponent.info(self._k)

    def view(self, obs: np.ndarray) -> ObservationView:
        """Named, zero-copy access to the segments of an observation."""
        return ObservationView(obs, self.obs_layout)

    def describe_action(self, action: Any) -> str:
        """An action of this env's action space in words.

        Raises:
            ValueError: an action outside the action space.
        """
        self._parse(action)
        index, buses, continuous = self.action_kind.parts(self._batch, action)
        words = []
        if index is not None:
            words.append(self.catalog.describe(index, self.model, self.topology))
        if buses is not None:
            words.append(self.topology.describe_set_bus(self.model, *buses))
        if continuous is not None:
            names = self.model.gen_names, self.model.storage_names
            words.append(self._batch.continuous.describe(continuous, *names))
        return "; ".join(words)

    def grid2op_action(self, action: Any) -> dict:
        """An action of this env's action space in grid2op's vocabulary: the dict grid2op's
        ``action_space(...)`` takes (``{}``: do nothing), for the env's grid2op folder.

        A catalog toggle is grid2op's ``change_line_status``, a configuration its ``set_bus``
        of the substation; the continuous part names every generator and unit of its box
        (``redispatch``, ``curtail``, ``set_storage``), but a curtailment left unchanged
        (below 0): grid2op's ``curtail`` of it stays -1, so an agent that never curtails
        gives grid2op's action vector without curtailment.

        Raises:
            ValueError: an action outside the action space.
        """
        self._parse(action)
        index, buses, continuous = self.action_kind.parts(self._batch, action)
        parts: dict = {}
        if index is not None:
            parts.update(self.catalog.grid2op_action(index))
        if buses is not None:
            parts.update(self.topology.grid2op_set_bus(*buses))
        if continuous is not None:
            parts.update(self._batch.continuous.grid2op_action(continuous))
        return parts

    # --- internals ----------------------------------------------------------------------

    def _parse(self, action: Any) -> ActionBatch:
        """Validate an action; return it as the batch plays it (one row)."""
        # the common cases, fast: a Python int, or the int64 a vector env reads from its batch
        if (type(action) is int or type(action) is np.int64) and 0 <= action < self._n_discrete:
            parsed = self._parsed.get(action)
            if parsed is None:  # each catalog action parsed once (a record is never written)
                topology = np.array([action], dtype=np.int64)
                topology.flags.writeable = False
                parsed = self._parsed[int(action)] = ActionBatch(topology)
            return parsed
        return self.action_kind.parse_one(self._batch, action)
