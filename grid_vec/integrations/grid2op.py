"""grid2op's agents on grid_vec's envs, unchanged (``pip install grid_vec[grid2op]``).

A grid2op agent (a ``BaseAgent``: ``act(observation, reward, done)``) reads grid2op
observation objects (``obs.rho``, ``obs.topo_vect``, ``obs.simulate(action)``, ...) and
returns grid2op actions built with grid2op's ``action_space``. :class:`Grid2opAgentPolicy`
plays it on a GridEnv of the same grid2op folder: each step it builds the folder's own
grid2op observation from grid_vec's (every attribute grid_vec computes, under grid2op's
name and dtype; ``simulate`` played by grid_vec's ``simulate``), hands it to the agent, and
turns the agent's action into grid_vec's general topology action (``action_type="set_bus"``).

::

    env = make_env(folder)                        # grid_vec's GridEnv for grid2op agents
    g2op = reference_env(folder)                  # grid2op's env: its spaces build agents
    policy = Grid2opAgentPolicy(TopologyGreedy(g2op.action_space), env, g2op)
    obs, info = env.reset(seed=0)
    reward, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, reward, done))
        done = terminated or truncated

In grid_vec's Runner, over a vector env of such envs, the agent is a
:class:`Grid2opBatchPolicy` (one copy of the agent per sub-env; the greedy agents' candidates
of every sub-env simulated in one call).

What is translated, and what is refused (:class:`UnplayableAction`, naming the part):

* ``set_bus`` and ``set_line_status`` as they are; ``change_bus`` as the set of the other
  bus bar of the element now (refused on a disconnected element), ``change_line_status`` as
  the set of the other status now;
* an action grid2op finds ambiguous (``is_ambiguous()``) as an action grid_vec finds
  ambiguous too, so the env plays it as grid2op does (do-nothing, ``info["is_ambiguous"]``);
* redispatch (MW), curtailment (limits) and storage (MW) into the continuous part of
  :func:`make_env`'s env (``action_type="set_bus_continuous"``) as they are: a generator the
  action does not curtail (grid2op's -1) is one whose limit the env leaves as it is (the
  box's curtailment columns go down to -1 for it), so an agent that never curtails plays, and
  is exported (:meth:`GridEnv.grid2op_action <grid_vec.env.grid_env.GridEnv.grid2op_action>`),
  with no curtailment at all; refused on an env of the general topology action alone
  (``"set_bus"``);
* injections and alarms are refused, and so is moving a storage unit off bus bar 1 (grid_vec
  keeps them there);
* ``obs.simulate(action, time_step=1)`` is grid_vec's ``simulate`` (the forecast of the next
  step, no opponent; the info holds ``is_illegal``, ``is_ambiguous`` and ``exception``);
  another ``time_step`` is refused. grid2op's greedy agents' candidates are simulated
  together, in one ``simulate_candidates`` call (:meth:`Grid2opAgentPolicy.act`).

The observation's attributes grid_vec does not compute (alarms and alerts, shunts,
``gen_p_delta``, ``_forecasted_inj``) are those of the grid2op observation the policy was
built with, shared, not copied (read them, do not write them); ``thermal_limit`` is the
grid_vec env's.
"""

from __future__ import annotations

import copy
import shutil
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import grid2op  # the extra: pip install 'grid_vec[grid2op]'
import numpy as np
from grid2op.Observation import BaseObservation

import grid_vec
from grid_vec.core.continuous import ContinuousLayout
from grid_vec.env.action_types import ACTION_TYPES, SET_BUS_CONTINUOUS_KEYS, SET_BUS_KEYS
from grid_vec.integrations.grid2op_folder import runnable_copy

__all__ = [
    "AGENT_ACTION_TYPES",
    "GRID2OP_OBSERVATION",
    "Grid2opAgentPolicy",
    "Grid2opBatchPolicy",
    "UnplayableAction",
    "make_env",
    "reference_env",
]

# grid_vec's observation attributes that are grid2op's too, under the same name: the
# observation a policy reads (the storage ones are empty on a grid without storage units)
GRID2OP_OBSERVATION = (
    "year", "month", "day", "hour_of_day", "minute_of_hour", "day_of_week",
    "gen_p", "gen_q", "gen_v", "load_p", "load_q", "load_v",
    "p_or", "q_or", "v_or", "a_or", "p_ex", "q_ex", "v_ex", "a_ex",
    "rho", "line_status", "timestep_overflow", "topo_vect",
    "time_before_cooldown_line", "time_before_cooldown_sub",
    "time_next_maintenance", "duration_next_maintenance",
    "target_dispatch", "actual_dispatch",
    "gen_p_before_curtail", "curtailment", "curtailment_limit", "curtailment_limit_effective",
    "current_step", "max_step", "delta_time", "gen_margin_up", "gen_margin_down",
    "timestep_protection_engaged", "theta_or", "theta_ex", "load_theta", "gen_theta",
    "storage_charge", "storage_power_target", "storage_power", "storage_theta",
)  # fmt: skip
# the action types grid2op's agents play through, read from the registry: the general
# topology action with the continuous controls (redispatch, curtailment, storage; make_env's
# default), then alone
_GENERAL = {t.kind.continuous: t.name for t in ACTION_TYPES.values() if t.kind.set_bus}
AGENT_ACTION_TYPES = (_GENERAL[True], _GENERAL[False])
# the parts of a grid2op action grid_vec never plays, by their flag
_REFUSED_ALWAYS = {"_modif_inj": "injections", "_modif_alarm": "alarms", "_modif_alert": "alerts"}
# and those the general topology action alone cannot carry
_REFUSED = {
    "_modif_redispatch": "redispatch",
    "_modif_curtailment": "curtailment",
    "_modif_storage": "storage",
    **_REFUSED_ALWAYS,
}


# what a grid2op observation derives from its values and keeps (read again after a fill)
_CACHES = ("_connectivity_matrix_", "_bus_connectivity_matrix_", "_dictionnarized", "_vectorized")


class UnplayableAction(ValueError):
    """A grid2op action (or part of one) that a grid_vec env cannot play; the message names
    the part."""


def make_env(folder: str | Path, *, continuous: bool = True, **kwargs: Any) -> Any:
    """A GridEnv of a grid2op folder that grid2op agents play through
    :class:`Grid2opAgentPolicy`: the general topology action with the continuous controls
    (action type ``"set_bus_continuous"``: redispatch, curtailment, storage) and the
    observation attributes grid2op's observation is built from.

    Args:
        folder: a grid2op-format dataset folder (or a bundled one's name).
        continuous: False: the general topology action alone (``"set_bus"``; a folder without
            the generators' characteristics has no continuous controls).
        **kwargs: :func:`grid_vec.make`'s other keywords.

    Returns:
        The env.

    Raises:
        ValueError: ``action_type`` or ``observation_attributes`` given (they are this
            function's), or what :func:`grid_vec.make` raises (a folder without
            ``prods_charac.csv`` with ``continuous``).
    """
    for own in ("action_type", "observation_attributes"):
        if own in kwargs:
            raise ValueError(f"make_env sets {own} itself; got {own}={kwargs[own]!r}")
    action_type = AGENT_ACTION_TYPES[0] if continuous else AGENT_ACTION_TYPES[1]
    return grid_vec.make(
        folder, action_type=action_type, observation_attributes=GRID2OP_OBSERVATION, **kwargs
    )


def reference_env(folder: str | Path, **kwargs: Any) -> Any:
    """grid2op's env of ``folder`` (with lightsim2grid's backend): its ``action_space`` builds
    the agents, its ``observation_space`` the observations a policy hands them. The folder's
    ``config.py`` is never run: grid2op opens a copy whose ``config.py`` is written from the
    values read as data (:func:`grid_vec.integrations.grid2op_folder.runnable_copy`), removed
    when the env is garbage-collected or the process ends.

    Args:
        folder: the folder's path.
        **kwargs: ``grid2op.make``'s other keywords.

    Raises:
        FolderFormatError: the folder's ``config.py`` names what cannot be read as data, or
            a class that is not one of grid2op's or lightsim2grid's.
    """
    from lightsim2grid import LightSimBackend

    mirror = runnable_copy(folder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = grid2op.make(str(mirror), backend=LightSimBackend(), **kwargs)
    except BaseException:
        shutil.rmtree(mirror.parent, ignore_errors=True)
        raise
    weakref.finalize(env, shutil.rmtree, mirror.parent, True)
    return env


@dataclass(frozen=True)
class PlayedIn:
    """What a grid2op action reads of the state it is played in: a ``change`` the topology
    and the branches' status (a curtailment left unchanged reads nothing: it is the box's
    "unchanged" value, not the limit now)."""

    topology: np.ndarray  # (n_elem,) bus bars, grid_vec's order
    line_status: np.ndarray  # (n_branch,) bool


@dataclass(frozen=True)
class _Simulated:
    """What ``obs.simulate`` hands back, as grid_vec gives it."""

    obs: np.ndarray
    reward: float
    done: bool
    illegal: bool
    ambiguous: bool
    reason: str


class Grid2opBridge:
    """grid2op's observation and action objects of one folder for a grid_vec layout (the
    observation's segments, the topology vector, the branches): the part both policies
    (and the export of recorded runs) share.

    Raises:
        ValueError: a layout without an attribute the observation is built from, or of
            another grid than ``reference``'s.
    """

    def __init__(
        self,
        reference: Any,
        obs_layout: Any,
        topology: Any,
        n_branch: int,
        continuous: ContinuousLayout | None = None,
        thermal_limit: np.ndarray | None = None,
    ) -> None:
        missing = [n for n in GRID2OP_OBSERVATION if n not in obs_layout.names]
        if missing:
            raise ValueError(
                f"the env's observation lacks {missing}: make it with make_env(folder) or "
                "observation_attributes=GRID2OP_OBSERVATION"
            )
        self.reference, self.topology, self.n_branch = reference, topology, n_branch
        self.continuous = continuous  # None: the env plays no continuous part
        self.keys = SET_BUS_KEYS if continuous is None else SET_BUS_CONTINUOUS_KEYS
        self.slices = obs_layout.slices
        current = getattr(reference, "current_obs", None)
        self.template = (reference.reset() if current is None else current).copy()
        cls = type(self.template)
        if thermal_limit is not None:  # the grid_vec env's, which grid2op's observation holds
            limits = np.asarray(thermal_limit, dtype=self.template.thermal_limit.dtype)
            if limits.shape != self.template.thermal_limit.shape:
                raise ValueError("the grid2op env and the grid_vec env are not of the same grid")
            self.template._thermal_limit = limits  # grid2op's storage of the property
        if cls.dim_topo - cls.n_storage != topology.n_elem or cls.n_line != n_branch:
            raise ValueError("the grid2op env and the grid_vec env are not of the same grid")
        self.positions = _positions(cls, topology)
        # what an observation fills: (name, its segment, grid2op's dtype or scalar type,
        # whether it is a scalar), for every attribute of grid_vec's that grid2op's has
        self.fills = [
            (name, at, *_cast(getattr(self.template, name)))
            for name, at in self.slices.items()
            if name not in ("topo_vect", "line_status") and hasattr(self.template, name)
        ]
        self.observed = _simulating(cls)

    def observation(
        self, obs: np.ndarray, simulate: Callable[[dict], _Simulated]
    ) -> BaseObservation:
        """grid_vec's observation ``obs`` as grid2op's observation object, whose ``simulate``
        plays ``simulate`` (a general topology action -> its simulated step)."""
        # a shallow copy of the template (grid2op's own copy deep-copies its internals, most
        # of an observation's cost): every attribute grid_vec computes is a new array below
        g_obs = object.__new__(self.observed)
        g_obs.__dict__.update(self.template.__dict__)
        for cache in _CACHES:  # nothing derived from the template's values
            if cache in g_obs.__dict__:
                setattr(g_obs, cache, None)
        values = g_obs.__dict__
        for name, at, cast, scalar in self.fills:
            values[name] = cast(obs[at.start]) if scalar else obs[at].astype(cast)
        topo = np.ones(type(g_obs).dim_topo, dtype=self.template.topo_vect.dtype)  # storage: 1
        topo[self.positions] = obs[self.slices["topo_vect"]]
        g_obs.topo_vect = topo
        g_obs.line_status = obs[self.slices["line_status"]] > 0.5
        g_obs._grid_vec_bridge = self
        g_obs._grid_vec_simulate = simulate
        g_obs._grid_vec_found = None
        return g_obs

    def action(self, g_act: Any, now: Callable[[], PlayedIn]) -> dict[str, np.ndarray]:
        """A grid2op action as grid_vec's action (the general topology action, and its
        continuous part when the env has one); ``now`` gives the state it is played in,
        which a ``change`` reads (called only for one).

        Raises:
            UnplayableAction: a part grid_vec cannot play (named).
        """
        refused = _REFUSED if self.continuous is None else _REFUSED_ALWAYS
        for flag, what in refused.items():
            if not getattr(g_act, flag, False):
                continue
            if what in _REFUSED_ALWAYS.values():
                raise UnplayableAction(f"grid2op action with {what}: grid_vec plays none ({g_act})")
            raise UnplayableAction(
                f"grid2op action with {what}: an env of the general topology action alone "
                "(action_type='set_bus') plays set/change bus and line status only; make it "
                f"with make_env(folder) ({g_act})"
            )
        layout = self.topology
        set_bus = np.zeros(layout.n_elem, dtype=np.int64)
        status = np.zeros(self.n_branch, dtype=np.int64)
        if g_act.is_ambiguous()[0]:  # grid2op plays it as do-nothing: so will the env
            status[0], set_bus[layout.pos_or[0]] = -1, 1
            return self._with_continuous(set_bus, status, g_act, ambiguous=True)
        cls = type(g_act)
        storage_pos = np.asarray(cls.storage_pos_topo_vect, dtype=np.int64)
        if cls.n_storage and (
            (g_act._set_topo_vect[storage_pos] > 1).any()
            or g_act._change_bus_vect[storage_pos].any()
        ):
            raise UnplayableAction(
                "grid2op action moving a storage unit: grid_vec keeps them on bus bar 1"
            )
        if g_act._modif_set_bus:
            set_bus[:] = g_act._set_topo_vect[self.positions]
        if g_act._modif_set_status:
            status[:] = g_act._set_line_status
        if g_act._modif_change_bus or g_act._modif_change_status:
            state = now()
            topo, on = state.topology, state.line_status
            if g_act._modif_change_bus:
                change = g_act._change_bus_vect[self.positions]
                if (topo[change] < 1).any():
                    raise UnplayableAction(
                        "grid2op action changing the bus of a disconnected element: set it instead"
                    )
                set_bus[change] = 3 - topo[change]
            if g_act._modif_change_status:
                switch = np.asarray(g_act._switch_line_status, dtype=bool)
                status[switch] = np.where(on[switch], -1, 1)
        return self._with_continuous(set_bus, status, g_act)

    def _with_continuous(
        self, set_bus: np.ndarray, status: np.ndarray, g_act: Any, ambiguous: bool = False
    ) -> dict[str, np.ndarray]:
        """The action with its continuous part (where the env has one): grid2op's
        redispatch (MW), curtailment limits and storage powers (MW) in the box's columns, as
        they are: grid2op's -1 for a generator not curtailed is the box's "unchanged" (not the
        limit now, which would set it again: a curtailment action every step); neutral for an
        ambiguous action (a value of grid2op's in (-1, 0) is one)."""
        action = {"set_bus": set_bus, "set_line_status": status}
        layout = self.continuous
        if layout is None:
            return action
        if ambiguous:
            action["continuous"] = _in_columns(layout, {})
            return action
        values = {
            "redispatch": g_act._redispatch,
            "curtailment": g_act._curtail,
            "storage": g_act._storage_power,
        }
        action["continuous"] = _in_columns(layout, values)
        return action

    def state_of(self, g_obs: BaseObservation) -> Callable[[], PlayedIn]:
        """``now`` for :meth:`action`: the state ``g_obs`` shows."""
        return lambda: PlayedIn(
            np.asarray(g_obs.topo_vect)[self.positions], np.asarray(g_obs.line_status)
        )

    def to_grid2op(self, action: dict[str, np.ndarray]) -> Any:
        """grid_vec's action as grid2op's action (the reverse of :meth:`action`): the parts
        that ask something (a redispatch or storage power other than 0, a curtailment limit
        set: one the box does not leave unchanged)."""
        parts = self.topology.grid2op_set_bus(action["set_bus"], action["set_line_status"])
        if self.continuous is not None:
            for key, pairs in self.continuous.grid2op_action(action["continuous"]).items():
                # grid2op_action gives every redispatch and storage column, 0 included
                asked = [(e, v) for e, v in pairs if key == "curtail" or abs(v) > 1e-6]
                if asked:
                    parts[key] = asked
        return self.reference.action_space(parts)

    def candidates(self, g_obs: BaseObservation, tried: list) -> dict[bytes, dict]:
        """A greedy agent's candidates (grid2op actions) in ``g_obs``'s state as grid_vec's,
        by their key, each once (those grid_vec cannot play are left to ``simulate``, which
        names them)."""
        actions: dict[bytes, dict] = {}
        for candidate in tried:
            try:
                action = self.action(candidate, self.state_of(g_obs))
            except UnplayableAction:
                continue
            actions.setdefault(_key(action), action)
        return actions


class Grid2opAgentPolicy:
    """A grid2op agent as a policy of a GridEnv (see the module docstring).

    Args:
        agent: a grid2op ``BaseAgent`` (built with ``reference``'s ``action_space``).
        env: a GridEnv of the same folder, made by :func:`make_env` (or with
            ``action_type="set_bus"`` and ``observation_attributes=GRID2OP_OBSERVATION``).
        reference: grid2op's env of that folder (:func:`reference_env`; None: made from the
            env's folder).

    Raises:
        ValueError: an env without the general topology action or without an attribute the
            observation is built from, or of another grid than ``reference``'s.
    """

    def __init__(self, agent: Any, env: Any, reference: Any = None) -> None:
        self.agent = agent
        self.env = env.unwrapped
        if reference is None:
            reference = reference_env(self.env.source.path)
        self.reference = reference
        _check_agents_play(self.env.action_type)
        self._bridge = Grid2opBridge(
            reference,
            self.env.obs_layout,
            self.env.topology,
            self.env.model.n_branch,
            self.env.continuous,
            self.env.thermal_limit,
        )
        self.last_action: Any = None  # the agent's last grid2op action

    def observation(self, obs: np.ndarray) -> BaseObservation:
        """grid_vec's observation ``obs`` (of this policy's env) as grid2op's observation
        object, whose ``simulate`` plays the env's."""
        return self._bridge.observation(obs, self._simulate)

    def action(self, g_act: Any, obs: BaseObservation | None = None) -> dict[str, np.ndarray]:
        """A grid2op action as grid_vec's general topology action, in the state of ``obs``
        (grid2op's observation of the state it is played in; None: the env's now), which a
        ``change`` reads.

        Raises:
            UnplayableAction: a part grid_vec cannot play (named).
        """
        return self._bridge.action(g_act, self._now if obs is None else self._bridge.state_of(obs))

    def to_grid2op(self, action: dict[str, np.ndarray]) -> Any:
        """grid_vec's action as grid2op's action (the reverse of :meth:`action`; it reads no
        state: a curtailment left unchanged is the box's value below 0, not the limit now).

        Args:
            action: an action of the env's action space (the general topology action, with
                its continuous part on :func:`make_env`'s env).

        Returns:
            grid2op's action (of the reference env's ``action_space``).
        """
        return self._bridge.to_grid2op(action)

    def _now(self) -> PlayedIn:
        state = self.env.snapshot().state
        return PlayedIn(state["topo"], state["line_status"].astype(bool))

    def _simulate(self, played: dict) -> _Simulated:
        obs, reward, done, info = self.env.simulate(played)
        why = info.get("game_over_reason", "")
        return _Simulated(obs, reward, done, info["is_illegal"], info["is_ambiguous"], why)

    # --- the agent's API, as a loop calls it --------------------------------------------------

    def act(self, obs: np.ndarray, reward: float, done: bool) -> dict[str, np.ndarray]:
        """The agent's action on grid_vec's observation ``obs``, as grid_vec's action.

        grid2op's greedy agents (``GreedyAgent``'s subclasses of ``grid2op.Agent``) simulate
        their candidates one by one; their candidates are simulated here first, in one
        ``simulate_candidates`` call, and each ``obs.simulate`` of the agent reads its row
        (the same results as one ``simulate`` each)."""
        g_obs = self.observation(obs)
        if _searches_candidates(self.agent):
            actions = self._bridge.candidates(g_obs, self.agent._get_tested_action(g_obs))
            if len(actions) > 1:
                found = self.env.simulate_candidates(
                    _stacked(list(actions.values()), self._bridge.keys)
                )
                g_obs._grid_vec_found = (_rows_by_key(actions), found)
        self.last_action = self.agent.act(g_obs, reward, done)
        return self.action(self.last_action, g_obs)

    def reset(self, obs: np.ndarray) -> None:
        """A new episode: the agent's ``reset`` with its first observation."""
        if hasattr(self.agent, "reset"):
            self.agent.reset(self.observation(obs))

    def seed(self, seed: int | None) -> None:
        """The agent's ``seed``."""
        if hasattr(self.agent, "seed"):
            self.agent.seed(seed)

    def __deepcopy__(self, memo: dict) -> Grid2opAgentPolicy:
        """A copy with its own agent, over the same env and grid2op env."""
        twin = copy.copy(self)
        twin.agent = copy.deepcopy(self.agent, memo)
        return twin


class Grid2opBatchPolicy:
    """A grid2op agent as a batched policy of grid_vec's vector envs, for the Runner
    (``Runner(envs, Grid2opBatchPolicy(agent, reference))``): one copy of the agent per
    sub-env, called with its grid2op observation; the candidates of grid2op's greedy agents,
    of every sub-env, simulated in one ``simulate_candidates`` call of the vector env.

    A batched policy sees no reward and no episode boundary: the agents get ``reward`` 0 and
    ``done`` False, and their ``reset`` is not called (grid2op's own agents read neither).

    Args:
        agent: a grid2op ``BaseAgent`` (built with ``reference``'s ``action_space``).
        reference: grid2op's env of the sub-envs' folder (:func:`reference_env`).
    """

    def __init__(self, agent: Any, reference: Any) -> None:
        self.agent = agent
        self.reference = reference
        self.agents: list[Any] = []
        self.last_actions: list[Any] = []  # the agents' last grid2op actions, one per sub-env
        self._env: Any = None
        self._bridge: Grid2opBridge | None = None

    @property
    def agent_name(self) -> str:
        """The name a run records: ``grid2op.`` and the agent's class."""
        return f"grid2op.{type(self.agent).__name__}"

    def bind(self, env: Any) -> None:
        """Check the sub-envs (grid_vec GridEnvs made by :func:`make_env`) and give each its
        copy of the agent (the Runner calls it).

        Raises:
            TypeError: a vector env without ``simulate_candidates`` (grid_vec's
                ``BatchedGridVecEnv`` or ``GridVecEnv``).
            ValueError: sub-envs without the general topology action or the attributes the
                observation is built from.
        """
        if not hasattr(env, "simulate_candidates"):
            raise TypeError(
                "Grid2opBatchPolicy needs a vector env with simulate_candidates (grid_vec's "
                f"BatchedGridVecEnv or GridVecEnv), got {type(env).__name__}"
            )
        first = {
            name: env.get_attr(name)[0]
            for name in (
                "action_type", "obs_layout", "topology", "model", "continuous", "thermal_limit",
            )
        }  # fmt: skip
        _check_agents_play(first["action_type"])
        self._bridge = Grid2opBridge(
            self.reference,
            first["obs_layout"],
            first["topology"],
            first["model"].n_branch,
            first["continuous"],
            first["thermal_limit"],
        )
        self._env = env
        self.agents = [copy.deepcopy(self.agent) for _ in range(env.num_envs)]

    def __call__(self, obs_batch: np.ndarray) -> dict[str, np.ndarray]:
        """Each sub-env's agent's action on its observation, as grid_vec's actions.

        Raises:
            RuntimeError: :meth:`bind` was not called.
        """
        if self._bridge is None:
            raise RuntimeError("Grid2opBatchPolicy must be bound to a vector env (bind(env))")
        bridge, n = self._bridge, len(obs_batch)
        g_obs = [bridge.observation(obs_batch[i], self._one(i)) for i in range(n)]
        searching = [i for i in range(n) if _searches_candidates(self.agents[i])]
        if searching:
            self._simulate_together(g_obs, searching)
        self.last_actions = [self.agents[i].act(g_obs[i], 0.0, False) for i in range(n)]
        played = [
            bridge.action(a, bridge.state_of(o))
            for a, o in zip(self.last_actions, g_obs, strict=True)
        ]
        return _stacked(played, bridge.keys)

    def _simulate_together(self, g_obs: list[BaseObservation], rows: list[int]) -> None:
        """Simulate the candidates of the sub-envs ``rows``, all in one call (a sub-env with
        fewer candidates tries do-nothing in the columns left)."""
        by_row = {
            i: self._bridge.candidates(g_obs[i], self.agents[i]._get_tested_action(g_obs[i]))
            for i in rows
        }
        width = max(len(actions) for actions in by_row.values())
        nothing = _nothing(self._bridge)
        table = [
            list(by_row[i].values()) + [nothing] * (width - len(by_row[i]))
            if i in by_row
            else [nothing] * width
            for i in range(len(g_obs))
        ]
        found = self._env.simulate_candidates(
            {
                name: np.stack([[a[name] for a in row] for row in table])
                for name in self._bridge.keys
            }
        )
        for i, actions in by_row.items():
            g_obs[i]._grid_vec_found = (_rows_by_key(actions), _row(found, i))

    def _one(self, i: int) -> Callable[[dict], _Simulated]:
        """Sub-env ``i``'s ``simulate`` of one action (the others try do-nothing)."""

        def simulate(played: dict) -> _Simulated:
            nothing = _nothing(self._bridge)
            table = {
                name: np.stack(
                    [[played[name] if j == i else nothing[name]] for j in range(self._env.num_envs)]
                )
                for name in self._bridge.keys
            }
            found = _row(self._env.simulate_candidates(table), i)
            return _found(found, 0)

        return simulate


def _check_agents_play(name: str) -> None:
    """Refuse an env whose action type is not the general topology action (with or without
    its continuous part)."""
    if name not in AGENT_ACTION_TYPES:
        raise ValueError(
            "grid2op's agents play through the general topology action: make the env "
            f"with make_env(folder) or action_type in {AGENT_ACTION_TYPES}, got "
            f"action_type={name!r}"
        )


def _cast(value: Any) -> tuple[Any, bool]:
    """How a grid2op observation holds an attribute of this value: (its array's dtype, False)
    or (its scalar type, True)."""
    if isinstance(value, np.ndarray) and value.shape:
        return value.dtype, False
    return type(value), True


def _positions(cls: Any, layout: Any) -> np.ndarray:
    """For each position of grid_vec's topology vector, its position in grid2op's (which
    also holds the storage units)."""
    positions = np.empty(layout.n_elem, dtype=np.int64)
    for ours, theirs in (
        (layout.pos_load, cls.load_pos_topo_vect),
        (layout.pos_gen, cls.gen_pos_topo_vect),
        (layout.pos_or, cls.line_or_pos_topo_vect),
        (layout.pos_ex, cls.line_ex_pos_topo_vect),
    ):
        positions[ours] = theirs
    return positions


_SIMULATING: dict[type, type] = {}


def _simulating(cls: type) -> type:
    """``cls`` (a grid2op observation class) whose ``simulate`` is grid_vec's."""
    if cls not in _SIMULATING:
        _SIMULATING[cls] = type(cls.__name__, (cls,), {"simulate": _simulate})
    return _SIMULATING[cls]


def _simulate(self: Any, action: Any, time_step: int = 1, **_: Any) -> tuple:
    """grid2op's ``obs.simulate(action, time_step)``, played by grid_vec on the env the
    observation came from (a candidate simulated already is read from its row):
    ``(observation, reward, done, info)``."""
    if time_step != 1:
        raise UnplayableAction(f"obs.simulate with time_step={time_step}: grid_vec's is 1")
    bridge: Grid2opBridge = self._grid_vec_bridge
    played = bridge.action(action, bridge.state_of(self))
    known = self._grid_vec_found
    row = None if known is None else known[0].get(_key(played))
    result = self._grid_vec_simulate(played) if row is None else _found(known[1], row)
    info = {
        "is_illegal": bool(result.illegal),
        "is_ambiguous": bool(result.ambiguous),
        "exception": [result.reason] if result.reason else [],
    }
    return bridge.observation(result.obs, self._grid_vec_simulate), result.reward, result.done, info


def _found(found: Any, k: int) -> _Simulated:
    """Candidate ``k`` of a GridEnv's (or one sub-env's) ``CandidateResults``."""
    return _Simulated(
        found.observations[k],
        float(found.rewards[k]),
        bool(found.terminated[k]),
        bool(found.illegal[k]),
        bool(found.ambiguous[k]),
        str(found.game_over_reason[k]),
    )


def _row(found: Any, i: int) -> Any:
    """Sub-env ``i``'s part of a vector env's ``CandidateResults``."""
    return type(found)(**{f.name: getattr(found, f.name)[i] for f in fields(found)})


def _nothing(bridge: Grid2opBridge) -> dict[str, np.ndarray]:
    """An action asking nothing, for the rows of a candidates table whose results are not
    read (its continuous part leaves the curtailment limits as they are)."""
    action = {
        "set_bus": np.zeros(bridge.topology.n_elem, dtype=np.int64),
        "set_line_status": np.zeros(bridge.n_branch, dtype=np.int64),
    }
    if bridge.continuous is not None:
        action["continuous"] = _in_columns(bridge.continuous, {})
    return action


def _in_columns(layout: ContinuousLayout, values: dict[str, np.ndarray]) -> np.ndarray:
    """A continuous action from per-entity values by control (its action type: redispatch MW
    and curtailment limits per generator, storage MW per unit); a control not given asks
    nothing: 0 MW, its limits left unchanged (the box's lowest value, -1 for curtailment:
    grid2op's own "unchanged")."""
    continuous = np.zeros(layout.size, dtype=np.float32)
    for part in layout.parts:
        given = values.get(part.control.action_type)
        if given is not None:
            continuous[part.start : part.stop] = np.asarray(given)[part.columns]
        elif part.control.unchanged_below is not None:
            continuous[part.start : part.stop] = layout.low[part.start : part.stop]
    return continuous


def _stacked(actions: list[dict], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Actions as one candidates record: each key's arrays stacked."""
    return {name: np.stack([a[name] for a in actions]) for name in keys}


def _rows_by_key(actions: dict[bytes, dict]) -> dict[bytes, int]:
    return {key: k for k, key in enumerate(actions)}


def _key(action: dict[str, np.ndarray]) -> bytes:
    """What tells actions apart (their arrays' bytes: topology as int64, the continuous part
    as float32)."""
    return b"".join(
        np.asarray(action[name], dtype=np.float32 if name == "continuous" else np.int64).tobytes()
        for name in sorted(action)
    )


def _searches_candidates(agent: Any) -> bool:
    """Whether ``agent`` is one of grid2op's own greedy agents, whose candidates
    (``_get_tested_action``) depend on the observation alone, so that asking for them once
    more changes nothing."""
    from grid2op.Agent import GreedyAgent

    return isinstance(agent, GreedyAgent) and type(agent).__module__.startswith("grid2op.")
