"""GridEnv: operate a power grid through a scenario, as a ``gymnasium.Env``.

One step (grid2op's order): check the action's legality with the current timers (an illegal
action becomes do-nothing, flagged in ``info``), move the scenario one step, let the
opponent attack, apply the action and the new injections, solve and cascade (see
:mod:`grid_vec.env.state`), move the timers, build the observation, reward and info.

Reset solves the first state as grid2op's reset does: a branch above the hard overflow
threshold trips (soft overflows are not counted) and every timer starts at 0, so such a
branch starts disconnected and may be reconnected at once.

``terminated``: game over (divergence, isolated load/generator, disconnected slack).
``truncated``: end of the scenario, of ``max_iter`` or of the reset's ``max_steps``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.scenario import ScenarioInfo, ScenarioSource
from grid_vec.env.actions import KIND_LINE, KIND_NOTHING, KIND_SUB, ActionCatalog
from grid_vec.env.observation import ObservationLayout, ObservationView, time_features
from grid_vec.env.opponent import RandomLineOpponent
from grid_vec.env.parameters import Parameters
from grid_vec.env.rewards import RewardFn, RewardInputs, make_reward
from grid_vec.env.state import (
    GridState,
    OverflowLimits,
    StepOutcome,
    disconnect,
    fresh_state,
    push_topology,
    reconnect,
    solve,
    update_timers,
)
from grid_vec.env.topology import layout_of
from grid_vec.grid import make_backend
from grid_vec.grid.model import GridModel

ACTION_TYPES = ("discrete", "redispatch")
# A validated action: (kind, target branch/substation, substation bus bars, redispatch MW)
Parsed = tuple[int, int, "np.ndarray | None", "np.ndarray | None"]
RESET_OPTIONS = ("scenario_id", "fast_forward", "max_steps", "init_state")
_TIME_BLOCK = 2016  # steps of time features computed at once (a week of 5-minute steps)


class GridEnv(gym.Env):
    """A grid-operation game over scenarios; see the module docstring for one step.

    ``model`` is a compiled grid, ``source`` any scenario source (synthetic or folder).
    ``gen_ramp`` (MW per step, one per generator) bounds the redispatch action; by default
    5% of each generator's ``pmax``.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(
        self,
        model: GridModel,
        source: ScenarioSource,
        *,
        backend: str = "lightsim2grid",
        parameters: Parameters | None = None,
        thermal_limits: Sequence[float] | np.ndarray | None = None,
        reward: str | RewardFn = "flat",
        other_rewards: Sequence[str] | dict[str, str | RewardFn] = (),
        opponent: RandomLineOpponent | None = None,
        max_iter: int | None = None,
        action_type: str = "discrete",
        chunk_size: int | None = None,
        gen_ramp: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        if action_type not in ACTION_TYPES:
            raise ValueError(f"action_type must be one of {ACTION_TYPES}, got {action_type!r}")
        if parameters is not None and not isinstance(parameters, Parameters):
            raise TypeError(f"parameters must be a Parameters, got {type(parameters).__name__}")
        if opponent is not None and not isinstance(opponent, RandomLineOpponent):
            raise TypeError(
                f"opponent must be a RandomLineOpponent or None, got {type(opponent).__name__}"
            )
        self.model = model
        self.backend_name = backend
        self.parameters = parameters if parameters is not None else Parameters()
        self.thermal_limit = _check_limits(thermal_limits, model)
        self.reward_fn = make_reward(reward)
        self.other_rewards = _other_rewards(other_rewards)
        self.opponent = opponent
        if opponent is not None:
            opponent.bind(model.branch_names)
        self.action_type = action_type
        self._handler = ScenarioHandler(source, chunk_size=chunk_size, max_iter=max_iter)

        self.topology = layout_of(model)
        self.catalog = ActionCatalog.from_model(model, self.topology)
        self.obs_layout = ObservationLayout(model, self.topology.n_elem)
        self.observation_space = self.obs_layout.space()
        self.redispatchable = np.flatnonzero(model.gen_kind == "gen")
        ramp = _check_ramp(gen_ramp, model)
        if action_type == "discrete":
            self.action_space = spaces.Discrete(len(self.catalog))
        else:
            r = ramp[self.redispatchable].astype(np.float32)
            self.action_space = spaces.Box(low=-r, high=r, dtype=np.float32)

        # Each episode starts from a copy of this state: its backend has never solved, so the
        # solver's warm start (hence every float of a trajectory) depends only on the seed and
        # actions, and its initial topology is already pushed (and checked) once for all.
        self._initial_state = fresh_state(model, self.topology, make_backend(model, backend))
        push_topology(self._initial_state, model, self.topology)
        self._state: GridState = self._initial_state.copy()
        self._limits = OverflowLimits.of(self.parameters, self.thermal_limit)
        # discrete action index -> parsed action, built once (the step hot path only looks up)
        self._parsed_actions: list[Parsed] = (
            [
                (int(k), int(t), b, None)
                for k, t, b in zip(
                    self.catalog.kind, self.catalog.target, self.catalog.sub_buses, strict=True
                )
            ]
            if action_type == "discrete"
            else []
        )
        self._do_nothing: Parsed | None = self._parsed_actions[0] if self._parsed_actions else None
        self._obs_buf = np.zeros(self.obs_layout.size, dtype=np.float32)
        sl = self.obs_layout.slices
        # rho .. time_before_cooldown_sub, filled by one concatenate: rho, line status, the
        # backend's flows (p_or .. gen_v, its read_flows layout), dispatch, topology, then the
        # state's timers (timestep_overflow, cooldown_line, cooldown_sub: its buffer's order)
        self._obs_state = self._obs_buf[sl["rho"].start : sl["time_before_cooldown_sub"].stop]
        self._n_obs_timers = 2 * model.n_branch + model.n_sub
        self._obs_buf[sl["time_next_maintenance"]] = -1.0  # no maintenance is modelled
        self._inv_limit = 1.0 / self.thermal_limit
        self._rho = np.zeros(model.n_branch)
        self._no_trip = np.zeros(model.n_branch, dtype=bool)
        self._no_trip.flags.writeable = False
        self._needs_reset = True
        self._simulates_this_step = 0
        self._simulates_this_episode = 0
        self._timings = dict.fromkeys(
            ("action", "powerflow", "observation", "total", "simulate"), 0.0
        )
        self._counts = {"steps": 0, "simulates": 0, "resets": 0}
        self._inputs = self._reward_inputs(self._state)
        # time features of the steps from _times_first on, for scenarios of this calendar
        # (start, step duration): synthetic scenarios all share one
        self._times = np.zeros((0, 6), dtype=np.float32)
        self._times_calendar: tuple[dt.datetime, dt.timedelta] | None = None
        self._times_first = 0

    # --- gymnasium API ----------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; allowed: {list(RESET_OPTIONS)}")
        if seed is not None:
            self._handler.seed(seed)
        info = self._handler.reset(
            scenario_id=options.get("scenario_id"),
            fast_forward=options.get("fast_forward"),
            max_steps=options.get("max_steps"),
            rng=self.np_random,
        )
        state = self._initial_state.copy()
        if "init_state" in options:
            self._apply_init_state(state, options["init_state"])
        if self.opponent is not None:
            self.opponent.reset(np.random.default_rng(self.np_random.integers(2**63)))
        self._set_injections(state, self._handler.rows())
        # grid2op's reset plays one step in which only hard overflows trip, then zeroes every
        # counter and timer: a branch tripped there starts disconnected, reconnectable at once
        outcome = solve(
            state, self.model, self.topology, self.parameters, self._limits, count_soft=False
        )
        if outcome.game_over is not None:
            raise RuntimeError(
                f"scenario {info.name!r} (id {info.id}) cannot start: {outcome.game_over}"
            )
        state.timers[:] = 0
        self._state = state
        self._inputs = self._reward_inputs(state)
        self._needs_reset = False
        self._simulates_this_episode = 0
        self._simulates_this_step = 0
        self._counts["resets"] += 1
        obs = self._observe(state, self._handler.info, self._handler.step, 0)
        return obs, {"scenario_id": info.id, "scenario_name": info.name}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        t0 = perf_counter()
        parsed = self._parse(action)
        state = self._state
        do_nothing = parsed is self._do_nothing  # nothing to legalise nor apply (fast path)
        illegal = ambiguous = None
        if not do_nothing:
            illegal, ambiguous, parsed = self._legalise(state, parsed)
        handler = self._handler
        handler.advance()
        attack = -1
        if self.opponent is not None:
            attack = self.opponent.step(state.line_status)
            if attack >= 0:
                disconnect(state, self.topology, np.array([attack]))
                cd = state.cooldown_line
                cd[attack] = max(cd[attack], self.opponent.attack_duration)
        acted_line, acted_sub = (-1, -1) if do_nothing else self._apply(state, parsed)
        self._set_injections(state, handler.rows())
        t1 = perf_counter()
        outcome = solve(state, self.model, self.topology, self.parameters, self._limits)
        t2 = perf_counter()
        terminated = outcome.game_over is not None
        if not terminated:
            update_timers(state, self.parameters, self._limits, outcome, acted_line, acted_sub)
        played = handler.steps_played
        truncated = not terminated and played >= handler.max_steps
        self._needs_reset = terminated or truncated
        self._simulates_this_step = 0
        obs = self._observe(state, handler.info, handler.step, played)
        reward, others = self._rewards(self._inputs, terminated)
        info = self._info(illegal, ambiguous, outcome, others)
        info["attacked_branch"] = attack
        t3 = perf_counter()
        timings = self._timings
        timings["action"] += t1 - t0
        timings["powerflow"] += t2 - t1
        timings["observation"] += t3 - t2
        timings["total"] += t3 - t0
        self._counts["steps"] += 1
        return obs, reward, terminated, truncated, info

    # --- look-ahead -------------------------------------------------------------------

    def simulate(self, action: Any) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        """Play ``action`` on the forecast of the next step, on a copy of the state.

        The env's state, RNGs, scenario position and timers are untouched. No opponent
        attack is simulated. Limited by ``max_simulate_per_step`` / ``_per_episode``.
        """
        if self._needs_reset:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        p = self.parameters
        if 0 <= p.max_simulate_per_step <= self._simulates_this_step:
            raise RuntimeError(f"max_simulate_per_step={p.max_simulate_per_step} reached")
        if 0 <= p.max_simulate_per_episode <= self._simulates_this_episode:
            raise RuntimeError(f"max_simulate_per_episode={p.max_simulate_per_episode} reached")
        t0 = perf_counter()
        parsed = self._parse(action)
        state = self._state.copy()
        illegal, ambiguous, parsed = self._legalise(state, parsed)
        acted_line, acted_sub = self._apply(state, parsed)
        self._set_injections(state, self._handler.rows(forecast=True))
        outcome = solve(state, self.model, self.topology, self.parameters, self._limits)
        terminated = outcome.game_over is not None
        if not terminated:
            update_timers(state, self.parameters, self._limits, outcome, acted_line, acted_sub)
        played = self._handler.steps_played + 1
        obs = self._observe(state, self._handler.info, self._handler.step + 1, played)
        reward, others = self._rewards(self._reward_inputs(state), terminated)
        self._simulates_this_step += 1
        self._simulates_this_episode += 1
        self._counts["simulates"] += 1
        self._timings["simulate"] += perf_counter() - t0
        return obs, reward, terminated, self._info(illegal, ambiguous, outcome, others)

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
        """New rules, in force from the next step."""
        if not isinstance(parameters, Parameters):
            raise TypeError(f"parameters must be a Parameters, got {type(parameters).__name__}")
        self.parameters = parameters
        self._limits = OverflowLimits.of(parameters, self.thermal_limit)

    @property
    def scenario_info(self) -> ScenarioInfo | None:
        """The scenario of the current (or last) episode; None before the first reset."""
        return self._handler.info if self._counts["resets"] else None

    @property
    def scenario_order(self) -> np.ndarray:
        """Scenario ids in the order the next resets play them."""
        return self._handler.order

    def timings(self) -> dict[str, float]:
        """Cumulative seconds per phase of ``step`` (action, powerflow, observation, total),
        of ``simulate``, and the counts of steps, simulates and resets since construction."""
        return {**self._timings, **self._counts}

    def view(self, obs: np.ndarray) -> ObservationView:
        """Named, zero-copy access to the segments of an observation."""
        return ObservationView(obs, self.obs_layout)

    def describe_action(self, index: int) -> str:
        """A discrete action in words."""
        return self.catalog.describe(index, self.model, self.topology)

    # --- internals ----------------------------------------------------------------------

    def _parse(self, action: Any) -> Parsed:
        """Validate an action; return (kind, target, substation buses, redispatch MW)."""
        parsed_actions = self._parsed_actions
        # the common cases, fast: a Python int, or the int64 a vector env reads from its batch
        if (type(action) is int or type(action) is np.int64) and (
            0 <= action < len(parsed_actions)
        ):
            return parsed_actions[action]
        if self.action_type == "discrete":
            if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
                action = int(action)
            if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
                raise ValueError(
                    f"action must be an int in [0, {self.action_space.n - 1}], got {action!r}"
                )
            if not 0 <= action < self.action_space.n:
                raise ValueError(
                    f"action must be an int in [0, {self.action_space.n - 1}], got {action}"
                )
            return self._parsed_actions[action]
        space = self.action_space
        if not isinstance(action, np.ndarray) or action.dtype.kind != "f":
            raise ValueError(
                f"redispatch action must be a float array of shape {space.shape}, got "
                f"{type(action).__name__} {getattr(action, 'dtype', '')}"
            )
        if action.shape != space.shape:
            raise ValueError(f"redispatch action must have shape {space.shape}, got {action.shape}")
        if not np.isfinite(action).all():
            raise ValueError(f"redispatch action must be finite, got {action}")
        tol = 1e-5
        if (action < space.low - tol).any() or (action > space.high + tol).any():
            raise ValueError(
                f"redispatch action outside the ramp limits [{space.low}, {space.high}]: {action}"
            )
        mw = np.zeros(self.model.n_gen)
        mw[self.redispatchable] = action
        return KIND_NOTHING, -1, None, mw

    def _legalise(self, state: GridState, parsed: Parsed) -> tuple[str | None, str | None, Parsed]:
        """Return (illegal reason, ambiguous reason, action to play)."""
        kind, target, _, redispatch = parsed
        if kind == KIND_NOTHING and redispatch is None:
            return None, None, parsed
        illegal = None
        p = self.parameters
        if kind == KIND_LINE:
            name = self.model.branch_names[target]
            if p.max_line_status_changed < 1:
                illegal = "max_line_status_changed is 0"
            elif state.cooldown_line[target] > 0:
                illegal = (
                    f"branch {name} cannot change status for "
                    f"{state.cooldown_line[target]} more step(s)"
                )
        elif kind == KIND_SUB:
            if p.max_sub_changed < 1:
                illegal = "max_sub_changed is 0"
            elif state.cooldown_sub[target] > 0:
                illegal = (
                    f"substation {self.model.sub_names[target]} is in cooldown for "
                    f"{state.cooldown_sub[target]} more step(s)"
                )
        ambiguous = None
        if redispatch is not None and redispatch.any():
            sched = self._handler.rows()[2]  # gen_p, not yet advanced: checked on the next step
            target_mw = sched + state.target_dispatch + redispatch
            bad = (
                (target_mw < self.model.gen_pmin - 1e-6) | (target_mw > self.model.gen_pmax + 1e-6)
            ) & (redispatch != 0)
            if bad.any():
                g = int(np.argmax(bad))
                ambiguous = (
                    f"redispatch would take generator {self.model.gen_names[g]} to "
                    f"{target_mw[g]:.2f} MW, outside [{self.model.gen_pmin[g]}, "
                    f"{self.model.gen_pmax[g]}]"
                )
        if illegal is not None or ambiguous is not None:
            return illegal, ambiguous, (KIND_NOTHING, -1, None, None)
        return None, None, parsed

    def _apply(self, state: GridState, parsed: Parsed) -> tuple[int, int]:
        """Apply a legal action to the state; return (acted branch, acted substation)."""
        kind, target, buses, redispatch = parsed
        if redispatch is not None:
            state.target_dispatch += redispatch
        if kind == KIND_LINE:
            if state.line_status[target]:
                disconnect(state, self.topology, np.array([target]))
            else:
                reconnect(state, self.topology, target)
            return target, -1
        if kind == KIND_SUB:
            layout = self.topology
            lo, hi = layout.sub_start[target], layout.sub_start[target + 1]
            block = state.topo[lo:hi]
            connected = block > 0
            block[connected] = buses[connected]
            self._remember_branch_buses(state, lo, hi, buses)
            state.topo_dirty = True
            return -1, target
        return -1, -1

    def _remember_branch_buses(self, state: GridState, lo: int, hi: int, buses: np.ndarray) -> None:
        """Disconnected branch ends at the substation will come back on the configured bus."""
        layout = self.topology
        in_block_or = (layout.pos_or >= lo) & (layout.pos_or < hi)
        in_block_ex = (layout.pos_ex >= lo) & (layout.pos_ex < hi)
        state.last_or[in_block_or] = buses[layout.pos_or[in_block_or] - lo]
        state.last_ex[in_block_ex] = buses[layout.pos_ex[in_block_ex] - lo]

    def _set_injections(self, state: GridState, rows: tuple[np.ndarray, ...]) -> None:
        """Give the backend a step's (load_p, load_q, gen_p, gen_v), with the redispatch."""
        load_p, load_q, gen_p, gen_v = rows
        if np.count_nonzero(state.target_dispatch):
            m = self.model
            wanted = np.clip(gen_p + state.target_dispatch, m.gen_pmin, m.gen_pmax)
            state.actual_dispatch[:] = np.where(state.target_dispatch != 0, wanted - gen_p, 0.0)
            gen_p = gen_p + state.actual_dispatch
        # the scenario sources hand out finite float64 rows of the model's sizes (the folder
        # source checks its files as it reads them): no re-validation on the hot path
        state.backend.set_injections_trusted(load_p, load_q, gen_p, gen_v)

    def _observe(self, state: GridState, info: ScenarioInfo, step: int, played: int) -> np.ndarray:
        """Fill the preallocated buffer (time features, then one ``concatenate`` from rho to
        the substation cooldowns, casting to float32) and return a copy."""
        buf = self._obs_buf
        row = step - self._times_first
        calendar = (info.start, info.step_duration)
        if self._times_calendar != calendar or not 0 <= row < len(self._times):
            self._times = time_features(info.start, info.step_duration, step, _TIME_BLOCK)
            self._times_calendar, self._times_first, row = calendar, step, 0
        buf[:6] = self._times[row]
        buf[6] = played
        np.multiply(state.a_or, self._inv_limit, out=self._rho)
        np.concatenate(
            (
                self._rho, state.line_status, state.flows, state.actual_dispatch, state.topo,
                state.timers[: self._n_obs_timers],
            ),
            out=self._obs_state,
            casting="same_kind",
        )  # fmt: skip
        return buf.copy()

    def _reward_inputs(self, state: GridState) -> RewardInputs:
        """What the rewards read: views of the state's buffers and of the rho that
        ``_observe`` computes, so one object serves a whole episode."""
        return RewardInputs(
            self._rho, state.line_status, state.load_p, state.gen_p, state.actual_dispatch
        )

    def _rewards(self, inputs: RewardInputs, terminated: bool) -> tuple[float, dict[str, float]]:
        """Main and other rewards (after ``_observe`` computed rho)."""
        reward = float(self.reward_fn(inputs, terminated))
        if not self.other_rewards:
            return reward, {}
        others = {name: float(fn(inputs, terminated)) for name, fn in self.other_rewards.items()}
        return reward, others

    def _info(
        self,
        illegal: str | None,
        ambiguous: str | None,
        outcome: StepOutcome,
        others: dict[str, float],
    ) -> dict[str, Any]:
        """The step's info, fixed-shape entries only so that vector envs batch it cheaply:
        ``is_illegal``, ``is_ambiguous``, ``tripped_branches`` (a mask per branch) always;
        ``other_rewards`` when some are configured; the reasons (``illegal_reason``,
        ``ambiguous_reason``, ``game_over_reason``) only on the steps they explain."""
        tripped = outcome.tripped
        info: dict[str, Any] = {
            "is_illegal": illegal is not None,
            "is_ambiguous": ambiguous is not None,
            "tripped_branches": self._no_trip.copy() if tripped is None else tripped,
        }
        if others:
            info["other_rewards"] = others
        if illegal is not None:
            info["illegal_reason"] = illegal
        if ambiguous is not None:
            info["ambiguous_reason"] = ambiguous
        if outcome.game_over is not None:
            info["game_over_reason"] = outcome.game_over
        return info

    def _apply_init_state(self, state: GridState, init: Any) -> None:
        """``{"line_status": (n_branch,) bool, "bus": (n_elem,) topo vector of 1/2}``."""
        if not isinstance(init, dict):
            raise TypeError(f"init_state must be a dict, got {type(init).__name__}")
        unknown = sorted(set(init) - {"line_status", "bus"})
        if unknown:
            raise ValueError(f"unknown init_state keys {unknown}; allowed: ['line_status', 'bus']")
        if "bus" in init:
            bus = np.asarray(init["bus"])
            if bus.shape != (self.topology.n_elem,) or not np.isin(bus, (1, 2)).all():
                raise ValueError(
                    f"init_state['bus'] must be {self.topology.n_elem} values in {{1, 2}} "
                    f"(topology-vector order), got shape {bus.shape}"
                )
            state.topo[:] = bus
            state.last_or[:] = bus[self.topology.pos_or]
            state.last_ex[:] = bus[self.topology.pos_ex]
        if "line_status" in init:
            status = np.asarray(init["line_status"])
            if status.shape != (self.model.n_branch,) or status.dtype != bool:
                raise ValueError(
                    f"init_state['line_status'] must be {self.model.n_branch} bools, got "
                    f"{status.dtype} of shape {status.shape}"
                )
            disconnect(state, self.topology, ~status)
        state.topo_dirty = True


def _check_limits(limits: Any, model: GridModel) -> np.ndarray:
    if limits is None:
        return np.asarray(model.thermal_limit_a, dtype=np.float64).copy()
    arr = np.asarray(limits, dtype=np.float64)
    if arr.shape != (model.n_branch,):
        raise ValueError(
            f"thermal_limits must have one value per branch ({model.n_branch}), got shape "
            f"{arr.shape}"
        )
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = int(np.flatnonzero(~np.isfinite(arr) | (arr <= 0))[0])
        raise ValueError(
            f"thermal_limits must be finite and > 0 amperes; branch {bad} "
            f"({model.branch_names[bad]}) has {arr[bad]}"
        )
    return arr


def _check_ramp(ramp: Any, model: GridModel) -> np.ndarray:
    if ramp is None:
        return 0.05 * np.asarray(model.gen_pmax, dtype=np.float64)
    arr = np.asarray(ramp, dtype=np.float64)
    if arr.shape != (model.n_gen,) or not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(
            f"gen_ramp must be {model.n_gen} finite values >= 0 (MW per step), got {ramp!r}"
        )
    return arr


def _other_rewards(spec: Any) -> dict[str, RewardFn]:
    if isinstance(spec, dict):
        return {str(k): make_reward(v, argument=f"other_rewards[{k!r}]") for k, v in spec.items()}
    if isinstance(spec, str):
        raise TypeError("other_rewards must be a list of names or a dict name -> reward, not a str")
    return {name: make_reward(name, argument="other_rewards") for name in spec}
