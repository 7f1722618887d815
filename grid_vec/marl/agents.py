"""Who the agents of the multi-agent view are, and what each sees, may do and earns.

A :class:`MultiAgentLayout` splits one GridEnv among agents, as MARL2Grid splits grid
operation: one agent per **substation** (it picks one of its substation's bus-bar
configurations of the topology catalog, or leaves it as it is) and / or one per
**dispatchable generator** (it asks a redispatch, in MW, within the generator's ramps). Every
method works on a batch of envs at once (arrays with a leading env axis), so the
single-env :class:`~grid_vec.marl.parallel.GridParallelEnv` and the batched
:class:`~grid_vec.marl.vector.MultiAgentVecEnv` share one implementation.

**The joint action** is one grid2op action (``set_bus`` of the chosen configurations, and the
redispatch of the generator agents), resolved first by a fixed rule, because grid2op refuses
the *whole* action when one part breaks a rule:

1. a substation agent's choice that the catalog's legal mask refuses now (its substation or a
   branch it would reconnect in cooldown) is dropped: it plays "unchanged" (``refused``);
2. of the substation agents still asking for a change, at most ``max_sub_changed`` act: those
   whose branches are the most loaded (highest max rho over the substation's branches), ties
   to the lower agent index; the others play "unchanged" (``deferred``).

What is left is played as grid2op plays any action (a joint action whose reconnections exceed
``max_line_status_changed`` is illegal as a whole and played as do-nothing, as grid2op does).

**Observations** are a fixed-width vector per agent (one width for all agents, as a
parameter-shared MAPPO actor wants): ``ELEMENT_FEATURES`` for each element of the agent's
substation (the generator agent's: the substation it sits in), padded with zeros to the
largest substation of the layout, then ``AGENT_FEATURES``. The global state is the env's flat
observation.

**Rewards** (:data:`REWARDS`): ``"shared"`` gives every agent the env's reward; ``"local"``
gives each agent grid_vec's ``line_margin`` over its own substation's branches (mean of
``max(0, 1 - rho)``, a disconnected branch 0) at the state returned, 0 on a game over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from grid_vec.core.actions import KIND_SUB
from grid_vec.env.grid_env import GridEnv

KIND_SUBSTATION, KIND_GENERATOR = 0, 1
ELEMENT_FEATURES = ("present", "is_load", "is_generator", "is_branch", "bus", "p_mw", "rho")
AGENT_FEATURES = (
    "is_substation",
    "is_generator",
    "substation_cooldown",
    "generator_p_mw",
    "actual_dispatch_mw",
)
# the observation segments the view reads (a custom observation_attributes must keep them)
_SEGMENTS = (
    "rho",
    "line_status",
    "p_or",
    "p_ex",
    "load_p",
    "gen_p",
    "actual_dispatch",
    "topo_vect",
    "time_before_cooldown_sub",
)


def _substation_agents(env: Any) -> tuple[list[int], list[int]]:
    """Every substation with at least one configuration in the catalog."""
    catalog = env.catalog
    return sorted(set(catalog.target[catalog.kind == KIND_SUB].tolist())), []


def _generator_agents(env: Any) -> tuple[list[int], list[int]]:
    """Every dispatchable generator the action type can redispatch."""
    return [], _redispatch_columns(env)[0].tolist()


def _both(env: Any) -> tuple[list[int], list[int]]:
    return _substation_agents(env)[0], _generator_agents(env)[1]


# named scopes: the substation agents and the generator agents they make of an env
SCOPES: dict[str, Callable[[Any], tuple[list[int], list[int]]]] = {
    "substations": _substation_agents,
    "generators": _generator_agents,
    "substations_and_generators": _both,
}


def _redispatch_columns(env: Any) -> tuple[np.ndarray, np.ndarray]:
    """The generators the env's continuous part redispatches, and their columns in it."""
    layout = env.continuous
    if layout is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    for part in layout.parts:
        if part.name == "redispatch":
            columns = np.arange(part.start, part.stop, dtype=np.int64)
            return np.asarray(part.columns, dtype=np.int64), columns
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def env_settings(generators: bool) -> dict[str, Any]:
    """The GridEnv settings the view needs: the general topology action (with its continuous
    part when there are generator agents) and the catalog's legal mask, no action subset."""
    return {
        "action_type": "set_bus_continuous" if generators else "set_bus",
        "action_mask": True,
        "action_subset": None,
    }


def agent_name(kind: int, index: int) -> str:
    """``"substation_<s>"`` or ``"generator_<g>"`` (indices of the grid's order)."""
    return f"substation_{index}" if kind == KIND_SUBSTATION else f"generator_{index}"


@dataclass(frozen=True)
class JointActions:
    """A batch of joint actions resolved into grid2op actions, and what became of each
    agent's part.

    Attributes:
        set_bus: (N, n_elem) int64, grid2op's ``set_bus`` (0: unchanged).
        continuous: (N, n_continuous) float32 (the redispatch columns the generator agents
            set; every other redispatch 0, curtailment limits 1 (none), storage 0), or None
            when the env has no continuous part.
        refused: (N, A) bool, a substation choice the legal mask refused (played unchanged).
        deferred: (N, A) bool, a legal substation choice beyond ``max_sub_changed``.
    """

    set_bus: np.ndarray
    continuous: np.ndarray | None
    refused: np.ndarray
    deferred: np.ndarray
    n_branch: int

    def env_action(self, row: int) -> dict[str, np.ndarray]:
        """Env ``row``'s action, as GridEnv's ``"set_bus"`` / ``"set_bus_continuous"``
        action types take it."""
        action = {
            "set_bus": self.set_bus[row],
            "set_line_status": np.zeros(self.n_branch, dtype=np.int64),
        }
        if self.continuous is not None:
            action["continuous"] = self.continuous[row]
        return action

    def env_actions(self) -> dict[str, np.ndarray]:
        """Every row's action, batched as a vector env of such GridEnvs takes it."""
        action = {
            "set_bus": self.set_bus,
            "set_line_status": np.zeros((len(self.set_bus), self.n_branch), dtype=np.int64),
        }
        if self.continuous is not None:
            action["continuous"] = self.continuous
        return action


@dataclass(frozen=True, eq=False)
class MultiAgentLayout:
    """The agents of one env's grid and the index arrays that serve them (build one with
    :meth:`of`).

    Attributes:
        names: the agents' names, in agent order.
        kind: (A,) ``KIND_SUBSTATION`` or ``KIND_GENERATOR``.
        substation: (A,) the agent's substation (a generator's: where it is connected).
        generator: (A,) the generator of a generator agent, -1 for a substation agent.
        column: (A,) the column of the generator's redispatch in the continuous part, -1.
        choices: (A, C) int64, the catalog index of each substation agent's choice ``k``
            (choice 0, "unchanged", and padding hold 0).
        n_choices: (A,) the number of choices of each agent (1 + its configurations; 0 for a
            generator agent).
        low, high: (A,) a generator agent's redispatch bounds, MW (0 for the others).
    """

    names: tuple[str, ...]
    kind: np.ndarray
    substation: np.ndarray
    generator: np.ndarray
    column: np.ndarray
    choices: np.ndarray
    n_choices: np.ndarray
    low: np.ndarray
    high: np.ndarray
    slots: np.ndarray  # (A, E) topology position of each element slot, -1 padding
    sub_branches: np.ndarray  # (A, n_branch) bool: the branches with an end at the substation
    sub_start: np.ndarray  # (n_sub + 1,) the topology vector's substation boundaries
    element_kind: np.ndarray  # (n_elem,) 0 load, 1 generator, 2 branch origin, 3 extremity
    element_index: np.ndarray  # (n_elem,) the element's index within its kind
    neutral: np.ndarray | None  # (n_continuous,) the continuous part's "do nothing"
    buses: dict[int, np.ndarray]  # the bus bars of each configuration a choice names
    max_sub_changed: int
    obs_slices: dict[str, slice]
    n_elem: int
    n_branch: int

    @classmethod
    def of(
        cls, env: GridEnv, scope: str = "substations", agents: Sequence[str] | None = None
    ) -> MultiAgentLayout:
        """The layout of ``env`` (a GridEnv of action type ``"set_bus"`` or
        ``"set_bus_continuous"``) for a named scope, or for the agents named.

        Args:
            env: the GridEnv the agents share.
            scope: a key of :data:`SCOPES`.
            agents: the agents' names (``"substation_<s>"``, ``"generator_<g>"``), a
                subset of the scopes' agents; None: the scope's.

        Returns:
            The layout.

        Raises:
            ValueError: an unknown scope or agent, no agent, an env whose action type or
                observation the view cannot use.
        """
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        if not isinstance(env, GridEnv):
            raise ValueError(
                f"the multi-agent view needs one GridEnv, got a {type(env).__name__} (a "
                "multi-mix folder's mixes are different grids: give the folder of one mix)"
            )
        missing = [name for name in _SEGMENTS if name not in env.obs_layout.slices]
        if missing:
            raise ValueError(
                f"the multi-agent view reads the observation's {', '.join(missing)}: keep them "
                "in observation_attributes"
            )
        subs, gens = SCOPES[scope](env)
        if agents is not None:
            subs, gens = _named(env, agents)
        if not subs and not gens:
            raise ValueError(f"scope {scope!r} makes no agent on this grid")
        model, topology, catalog = env.model, env.topology, env.catalog
        gen_of_column, columns = _redispatch_columns(env)
        column_of = dict(zip(gen_of_column.tolist(), columns.tolist(), strict=True))
        a = len(subs) + len(gens)
        kind = np.array([KIND_SUBSTATION] * len(subs) + [KIND_GENERATOR] * len(gens))
        substation = np.array(subs + [int(model.gen_sub[g]) for g in gens], dtype=np.int64)
        generator = np.array([-1] * len(subs) + gens, dtype=np.int64)
        column = np.array([-1] * len(subs) + [column_of[g] for g in gens], dtype=np.int64)
        configs = [np.flatnonzero((catalog.kind == KIND_SUB) & (catalog.target == s)) for s in subs]
        n_choices = np.array([1 + len(c) for c in configs] + [0] * len(gens), dtype=np.int64)
        choices = np.zeros((a, max(int(n_choices.max()), 1)), dtype=np.int64)
        for i, c in enumerate(configs):
            choices[i, 1 : 1 + len(c)] = c
        low = np.zeros(a, dtype=np.float32)
        high = np.zeros(a, dtype=np.float32)
        if gens:
            box = env.continuous
            low[len(subs) :] = box.low[column[len(subs) :]]
            high[len(subs) :] = box.high[column[len(subs) :]]
        start = topology.sub_start
        sizes = start[substation + 1] - start[substation]
        slots = np.full((a, int(sizes.max())), -1, dtype=np.int64)
        for i, s in enumerate(substation.tolist()):
            slots[i, : sizes[i]] = np.arange(start[s], start[s + 1])
        branch_subs = np.stack([model.branch_or_sub, model.branch_ex_sub])
        sub_branches = (branch_subs[None, :, :] == substation[:, None, None]).any(axis=1)
        element_kind = np.empty(topology.n_elem, dtype=np.int64)
        element_index = np.empty(topology.n_elem, dtype=np.int64)
        for k, positions in enumerate(
            (topology.pos_load, topology.pos_gen, topology.pos_or, topology.pos_ex)
        ):
            element_kind[positions] = k
            element_index[positions] = np.arange(len(positions))
        neutral = None
        if env.continuous is not None:
            # each control's "do nothing"; a curtailment's (NaN inside the core: the limit
            # unchanged) is its limit lifted, 1, as no agent curtails
            neutral = np.concatenate(
                [np.full(p.stop - p.start, p.control.neutral) for p in env.continuous.parts]
            ).astype(np.float32)
            neutral = np.where(np.isnan(neutral), env.continuous.high, neutral)
        return cls(
            names=tuple(
                [agent_name(KIND_SUBSTATION, s) for s in subs]
                + [agent_name(KIND_GENERATOR, g) for g in gens]
            ),
            kind=kind,
            substation=substation,
            generator=generator,
            column=column,
            choices=choices,
            n_choices=n_choices,
            low=low,
            high=high,
            slots=slots,
            sub_branches=sub_branches,
            sub_start=np.asarray(start),
            element_kind=element_kind,
            element_index=element_index,
            neutral=neutral,
            buses={
                int(i): np.asarray(catalog.sub_buses[i]) for i in np.unique(choices[choices > 0])
            },
            max_sub_changed=int(env.parameters.max_sub_changed),
            obs_slices=dict(env.obs_layout.slices),
            n_elem=int(topology.n_elem),
            n_branch=int(model.n_branch),
        )

    @cached_property
    def _lower(self) -> np.ndarray:
        """(A,) the lowest action of each agent (float32 rounding allowed for a generator)."""
        slack = 1e-5 * np.maximum(1.0, np.abs(self.low))
        return np.where(self.kind == KIND_SUBSTATION, 0.0, self.low - slack)

    @cached_property
    def _upper(self) -> np.ndarray:
        """(A,) a bound each action is below: a choice below ``n_choices``, a redispatch
        below its ramp (float32 rounding allowed)."""
        slack = 1e-5 * np.maximum(1.0, np.abs(self.high))
        return np.where(self.kind == KIND_SUBSTATION, self.n_choices, self.high + slack * 2)

    @property
    def num_agents(self) -> int:
        return len(self.names)

    @property
    def observation_size(self) -> int:
        """The width of an agent's observation."""
        return self.slots.shape[1] * len(ELEMENT_FEATURES) + len(AGENT_FEATURES)

    # --- actions ------------------------------------------------------------------------

    def check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as a float64 ``(N, A)`` array, checked: one number per env and agent
        (an int or a float: a generator agent's is MW, and one array holds every agent's;
        no bool, no str, no sequence), a substation agent's choice a whole number in ``[0,
        n_choices)``, a generator agent's redispatch finite and within its ramps.

        Args:
            actions: ``(N, A)`` numbers, an array or nested sequences.

        Returns:
            The actions, float64 ``(N, A)``.

        Raises:
            ValueError: a wrong shape, or a value that is not a number or is outside an
                agent's space, naming the env and the agent.
        """
        if isinstance(actions, np.ndarray) and actions.dtype.kind in "iuf":
            arr = actions.astype(np.float64, copy=False)  # the usual batch: numbers already
        else:
            arr = self._numbers(actions)
        if arr.ndim != 2 or arr.shape[1] != self.num_agents:
            raise ValueError(
                f"actions must be shaped (num_envs, {self.num_agents}), one per agent; got "
                f"{np.shape(actions)}"
            )
        subs = self.kind == KIND_SUBSTATION
        ok = np.empty(arr.shape, dtype=bool)  # NaN fails every comparison
        np.less(arr, self._upper, out=ok)
        ok &= arr >= self._lower
        ok[:, subs] &= arr[:, subs] == np.floor(arr[:, subs])
        if ok.all():
            return arr
        row, agent = (int(x) for x in np.argwhere(~ok)[0])
        raise ValueError(
            f"env {row}, agent {self.names[agent]}: action must be {self._allowed(agent)}, "
            f"got {arr[row, agent]!r}"
        )

    def _numbers(self, actions: Any) -> np.ndarray:
        """Actions that are not an array of numbers (nested sequences, an array of bools,
        strings or objects), each entry checked to be a number: ``np.asarray`` would turn a
        bool or a numeric string into a number, and a sequence into an error that names no
        agent."""
        try:
            entries = np.array(actions, dtype=object)
        except ValueError:  # sequences of sequences of no one shape, at the top levels
            entries = None
        if entries is None or entries.ndim != 2 or entries.shape[1] != self.num_agents:
            shape = "of no one shape" if entries is None else f"of shape {entries.shape}"
            raise ValueError(
                f"actions must be shaped (num_envs, {self.num_agents}), one number per agent; "
                f"got a {type(actions).__name__} {shape}"
            )
        for (row, agent), value in np.ndenumerate(entries):
            if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)
            ):
                raise ValueError(
                    f"env {row}, agent {self.names[agent]}: action must be "
                    f"{self._allowed(agent)}, got {value!r} ({type(value).__name__})"
                )
        return entries.astype(np.float64)

    def agent_action(self, agent: int, action: Any) -> float:
        """One agent's action as a ParallelEnv is handed it, checked as a single-agent GridEnv
        checks its own (:func:`grid_vec.env.action_input.one_action`): a substation agent's
        ``Discrete`` choice an int (a Python or numpy int, or a 0-d int array; no bool, str,
        float or sequence), a generator agent's ``Box(1,)`` redispatch a float array of shape
        ``(1,)``. Its range is :meth:`check_actions`'.

        Args:
            agent: the agent's index.
            action: its action.

        Returns:
            The action as the one number of the agent's entry in :meth:`check_actions`.

        Raises:
            ValueError: an action of another type or shape, naming the env (0: the
                ParallelEnv's one) and the agent.
        """
        if self.kind[agent] == KIND_SUBSTATION:
            if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
                action = action[()]
            if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
                return float(action)
        elif isinstance(action, np.ndarray) and action.dtype.kind == "f" and action.shape == (1,):
            return float(action[0])
        shown = f"{action!r} ({type(action).__name__}"
        if isinstance(action, np.ndarray):
            shown += f" {action.dtype} of shape {action.shape}"
        raise ValueError(
            f"env 0, agent {self.names[agent]}: action must be {self._allowed(agent, array=True)}"
            f", got {shown})"
        )

    def _allowed(self, agent: int, array: bool = False) -> str:
        """What the agent's action must be, in words (``array``: a generator agent's as the
        float array of its ``Box(1,)``)."""
        if self.kind[agent] == KIND_SUBSTATION:
            return f"an int in [0, {self.n_choices[agent] - 1}]"
        redispatch = f"a redispatch in [{self.low[agent]:g}, {self.high[agent]:g}] MW"
        return f"a float array of shape (1,), {redispatch}" if array else redispatch

    def joint_actions(
        self,
        actions: np.ndarray,
        catalog_mask: np.ndarray,
        rho: np.ndarray,
        max_sub_changed: int | None = None,
    ) -> JointActions:
        """Resolve checked agent actions into one grid2op action per env (the rule of the
        module docstring).

        Args:
            actions: (N, A) from :meth:`check_actions`.
            catalog_mask: (N, n_catalog) bool, the env's legal catalog actions now.
            rho: (N, n_branch), the branches' loading now (ranks the substations).
            max_sub_changed: the rule in force (None: the env's when the layout was made).

        Returns:
            The joint actions and what became of each part.
        """
        n = len(actions)
        subs = self.kind == KIND_SUBSTATION
        choice = np.where(subs, actions, 0).astype(np.int64)
        catalog_index = self.choices[np.arange(self.num_agents), choice]  # (N, A)
        asking = choice > 0
        legal = catalog_mask[np.arange(n)[:, None], catalog_index]
        refused = asking & ~legal
        asking &= legal
        deferred = np.zeros_like(asking)
        limit = self.max_sub_changed if max_sub_changed is None else int(max_sub_changed)
        if (asking.sum(axis=1) > limit).any():
            # rank the asking agents: most loaded first, then the lower index
            loading = np.where(self.sub_branches[None], rho[:, None, :], -np.inf).max(axis=2)
            key = np.where(asking, -loading, np.inf)
            order = np.lexsort((np.broadcast_to(np.arange(self.num_agents), key.shape), key))
            rank = np.empty_like(order)
            np.put_along_axis(rank, order, np.arange(self.num_agents)[None], axis=1)
            deferred = asking & (rank >= limit)
            asking &= ~deferred
        set_bus = np.zeros((n, self.n_elem), dtype=np.int64)
        for row, agent in np.argwhere(asking).tolist():
            lo, hi = self.slot_range(agent)
            set_bus[row, lo:hi] = self.buses[int(catalog_index[row, agent])]
        continuous = None
        if self.neutral is not None:
            continuous = np.repeat(self.neutral[None], n, axis=0)
            gens = np.flatnonzero(~subs)
            continuous[:, self.column[gens]] = actions[:, gens]
        return JointActions(set_bus, continuous, refused, deferred, self.n_branch)

    def slot_range(self, agent: int) -> tuple[int, int]:
        """The agent's substation's positions in the topology vector, ``[lo, hi)``."""
        s = int(self.substation[agent])
        return int(self.sub_start[s]), int(self.sub_start[s + 1])

    # --- what the agents see and earn -----------------------------------------------------

    def masks(self, catalog_mask: np.ndarray) -> np.ndarray:
        """(N, A, C) bool: each agent's legal choices (choice 0 always; padding and generator
        agents False beyond their choices)."""
        mask = catalog_mask[:, self.choices]  # (N, A, C)
        mask[:, :, 0] = True
        return mask & (np.arange(self.choices.shape[1]) < self.n_choices[:, None])[None]

    def observe(self, obs: np.ndarray) -> np.ndarray:
        """(N, A, W) float32: each agent's observation from the envs' flat observations
        ``(N, size)`` (one gather: :attr:`obs_source`)."""
        source, constant = self.obs_source
        return np.where(source >= 0, obs[:, source], constant).astype(np.float32, copy=False)

    @cached_property
    def obs_source(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each entry of an agent's observation comes from: ``(A, W)`` indices into the
        flat observation (-1 where the entry is a constant) and ``(A, W)`` constants (the
        flags, zero padding)."""
        at = self.obs_slices
        first = {name: at[name].start for name in _SEGMENTS}
        # per element end of the topology vector: its bus bar, its MW and its rho entries
        p_of_kind = ("load_p", "gen_p", "p_or", "p_ex")
        starts = np.array([first[name] for name in p_of_kind])
        p_index = starts[self.element_kind] + self.element_index
        is_branch = self.element_kind >= 2
        rho_index = np.where(is_branch, first["rho"] + self.element_index, -1)
        bus_index = first["topo_vect"] + np.arange(self.n_elem)
        a, e = self.slots.shape
        f = len(ELEMENT_FEATURES)
        source = np.full((a, e, f), -1, dtype=np.int64)
        constant = np.zeros((a, e, f), dtype=np.float32)
        present = self.slots >= 0
        slot = np.maximum(self.slots, 0)
        kind = np.minimum(self.element_kind[slot], 2)
        constant[..., 0] = present
        for k in range(3):  # is_load, is_generator, is_branch
            constant[..., 1 + k] = present & (kind == k)
        source[..., 4] = np.where(present, bus_index[slot], -1)
        source[..., 5] = np.where(present, p_index[slot], -1)
        source[..., 6] = np.where(present, rho_index[slot], -1)
        is_gen = self.kind == KIND_GENERATOR
        gen = np.maximum(self.generator, 0)
        agent_source = np.full((a, len(AGENT_FEATURES)), -1, dtype=np.int64)
        agent_constant = np.zeros((a, len(AGENT_FEATURES)), dtype=np.float32)
        agent_constant[:, 0], agent_constant[:, 1] = ~is_gen, is_gen
        agent_source[:, 2] = first["time_before_cooldown_sub"] + self.substation
        agent_source[:, 3] = np.where(is_gen, first["gen_p"] + gen, -1)
        agent_source[:, 4] = np.where(is_gen, first["actual_dispatch"] + gen, -1)
        source = np.concatenate([source.reshape(a, -1), agent_source], axis=1)
        constant = np.concatenate([constant.reshape(a, -1), agent_constant], axis=1)
        return source, constant

    def local_rewards(self, obs: np.ndarray, terminated: np.ndarray) -> np.ndarray:
        """(N, A): ``line_margin`` over each agent's substation's branches, 0 on a game
        over."""
        rho = obs[:, self.obs_slices["rho"]]
        status = obs[:, self.obs_slices["line_status"]]
        margin = np.maximum(1.0 - rho.astype(np.float64), 0.0) * status  # (N, B)
        counts = np.maximum(self.sub_branches.sum(axis=1), 1)
        # a row's sum, not a matrix product: the same float whatever the batch's size
        local = (margin[:, None, :] * self.sub_branches[None]).sum(axis=2) / counts
        return np.where(np.asarray(terminated)[:, None], 0.0, local)


def _shared_rewards(
    layout: MultiAgentLayout, reward: np.ndarray, obs: np.ndarray, terminated: Any
) -> np.ndarray:
    """(N, A): the env's reward, to every agent."""
    return np.repeat(np.asarray(reward, dtype=np.float64)[:, None], layout.num_agents, axis=1)


def _local_rewards(
    layout: MultiAgentLayout, reward: np.ndarray, obs: np.ndarray, terminated: Any
) -> np.ndarray:
    return layout.local_rewards(obs, terminated)


# how the agents' rewards are made: fn(layout, env rewards (N,), observations, terminated)
REWARDS: dict[str, Callable[..., np.ndarray]] = {"shared": _shared_rewards, "local": _local_rewards}


def check_reward(reward: str) -> Callable[..., np.ndarray]:
    """The reward maker of :data:`REWARDS` named ``reward``.

    Raises:
        ValueError: an unknown name.
    """
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    return REWARDS[reward]


def _named(env: Any, agents: Sequence[str]) -> tuple[list[int], list[int]]:
    """The substations and generators of agents given by name."""
    allowed_subs = set(_substation_agents(env)[0])
    allowed_gens = set(_generator_agents(env)[1])
    subs, gens = [], []
    for name in agents:
        kind, _, index = str(name).rpartition("_")
        ok = index.isdigit() and (
            (kind == "substation" and int(index) in allowed_subs)
            or (kind == "generator" and int(index) in allowed_gens)
        )
        if not ok:
            raise ValueError(
                f"unknown agent {name!r}: agents are substation_<s> for a substation with "
                f"configurations ({sorted(allowed_subs)}) and generator_<g> for a "
                f"dispatchable generator ({sorted(allowed_gens)})"
            )
        (subs if kind == "substation" else gens).append(int(index))
    if len(set(subs)) < len(subs) or len(set(gens)) < len(gens):
        raise ValueError(f"agents must be distinct, got {list(agents)}")
    return sorted(subs), sorted(gens)
