"""What a reward is given and how a batch of envs calls it (the rewards themselves are in
the modules of this package, chosen by name through :mod:`grid_vec.core.rewards.registry`).

A reward is a callable ``reward(inputs, terminated) -> float``: ``inputs`` is the step's
:class:`RewardInputs` of one env, ``terminated`` whether the step was a game over. The
built-in rewards are also *batched* (their ``batched`` attribute is True): given the inputs of
a whole batch (arrays with a leading env axis) and a ``terminated`` array, they return one
reward per env at once; a custom callable is called once per env with that env's rows
(:func:`batch_rewards`), so it sees plain per-env arrays and scalars.

What a reward can read (:class:`RewardInputs`): the physics after the step (``rho``,
``line_status``, ``load_p``, ``gen_p``, ``actual_dispatch``, ``topo``), the action the agent
asked for (``action``: catalog index; ``redispatch``: MW per generator in redispatch mode, else
None; ``acted_line`` / ``acted_sub``: the branch / substation that action targets, -1: none)
and whether it was refused (``is_illegal``, ``is_ambiguous``: the action was then played as
do-nothing), the episode flags (``game_over``; ``done``: game over or last step, grid2op's
``is_done``), the position (``step``: steps played this episode, ``max_steps``), the timers
(``cooldown_line``: steps before each branch's status may change), the N-1 currents of the
state reached (``outages.currents(branch)``, computed only when a reward asks) and, in
``context``, what
does not change during an episode (:class:`RewardContext`: thermal limits, generator limits
and costs, the step duration, the topology layout). A custom reward, for example::

    def no_refused_actions(inputs, terminated):
        if terminated:
            return -1.0
        return 0.0 if inputs.is_illegal or inputs.is_ambiguous else 1.0

A reward object with an ``initialize(context)`` method gets it called once, with the env's
:class:`RewardContext`, when the env is built (grid2op's ``BaseReward.initialize``); such an
object is copied first, so one instance can serve several envs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grid_vec.chronics.prods_charac import folder_generators


class RewardContext:
    """What a reward may read that does not change during an episode.

    Args:
        model: the compiled grid (:class:`~grid_vec.grid.model.GridModel`).
        thermal_limit: (n_branch,) amperes.
        topology: the topology layout (positions of element ends in ``topo``).
        catalog: the discrete action catalog.
        source: the scenario source (the generator costs and the step duration come from
            it, read on first use).
    """

    def __init__(
        self, model: Any, thermal_limit: np.ndarray, topology: Any, catalog: Any, source: Any
    ) -> None:
        self.model = model
        self.thermal_limit = thermal_limit
        self.topology = topology
        self.catalog = catalog
        self.source = source

    @functools.cached_property
    def _folder_generators(self) -> dict[str, np.ndarray]:
        return folder_generators(self.source, self.model)

    @property
    def gen_cost_per_MW(self) -> np.ndarray | None:
        """Marginal cost of each generator (``prods_charac.csv``'s ``marginal_cost`` of a
        dataset folder), None when the source gives none."""
        return self._folder_generators.get("marginal_cost")

    @property
    def gen_pmax(self) -> np.ndarray:
        """Each generator's ``pmax`` as grid2op has it: ``prods_charac.csv``'s ``Pmax`` of a
        dataset folder, else the compiled grid's."""
        pmax = self._folder_generators.get("Pmax")
        return np.asarray(self.model.gen_pmax, dtype=np.float64) if pmax is None else pmax

    @functools.cached_property
    def delta_time_seconds(self) -> float:
        """Duration of a step (the source's first scenario's), seconds."""
        return float(self.source.info(0).step_duration.total_seconds())


@dataclass(kw_only=True)  # built by name: sixteen fields, some of one type
class RewardInputs:
    """What a reward may read about the step just played (see the module docstring).

    In a batch every array has a leading env axis; a custom reward gets one env's rows.
    """

    rho: np.ndarray
    line_status: np.ndarray
    load_p: np.ndarray
    gen_p: np.ndarray
    actual_dispatch: np.ndarray
    action: Any = None  # catalog index asked for (0 in redispatch mode)
    redispatch: Any = None  # MW asked per generator (redispatch mode), else None
    is_illegal: Any = None
    is_ambiguous: Any = None
    game_over: Any = None
    done: Any = None  # game over or last step of the episode (grid2op's is_done)
    step: Any = None  # steps played in this episode, this one included
    max_steps: Any = None  # steps the episode may last
    topo: Any = None  # bus bar of every element end (-1: disconnected), grid2op's order
    cooldown_line: Any = None  # steps before each branch's status may change
    # the N-1 currents of the state after the step, computed on demand
    # (:class:`~grid_vec.core.contingency.OutageFlows`: ``outages.currents(branch)``)
    outages: Any = None
    context: RewardContext | None = None  # not per env

    @property
    def acted_line(self) -> Any:
        """Branch targeted by the action asked for (-1: none)."""
        return _target(self, 1)

    @property
    def acted_sub(self) -> Any:
        """Substation targeted by the action asked for (-1: none)."""
        return _target(self, 2)

    def row(self, i: int) -> RewardInputs:
        """Env ``i``'s inputs out of a batch's."""
        return RewardInputs(
            **{
                f.name: v if v is None or f.name == "context" else v[i]
                for f in dataclasses.fields(self)
                for v in (getattr(self, f.name),)
            }
        )


def _target(inputs: RewardInputs, kind: int) -> Any:
    catalog = inputs.context.catalog
    action = inputs.action
    return np.where(catalog.kind[action] == kind, catalog.target[action], -1)[()]


RewardFn = Callable[[RewardInputs, bool], float]


def batch_rewards(fn: RewardFn, inputs: RewardInputs, terminated: np.ndarray) -> np.ndarray:
    """``fn`` over a batch: one call when it is batched, else one call per env with that
    env's rows. Returns float64 rewards, one per env."""
    if getattr(fn, "batched", False):
        reward = fn(inputs, terminated)
        if type(reward) is np.ndarray and reward.shape == terminated.shape:
            return reward.astype(np.float64, copy=False)
        return np.full(terminated.shape, reward, dtype=np.float64)
    return np.array(
        [float(fn(inputs.row(i), bool(terminated[i]))) for i in range(len(terminated))],
        dtype=np.float64,
    )


def initialize_rewards(fns: Any, context: RewardContext) -> None:
    """Call ``initialize(context)`` of the rewards that have one (when an env is built)."""
    for fn in fns:
        initialize = getattr(fn, "initialize", None)
        if initialize is not None:
            initialize(context)
