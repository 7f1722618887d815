"""grid2op's rewards under grid2op's names, with grid2op's formulas, batched over the env axis.

Each class computes what the grid2op class of the same name gives at every step (checked
side by side with grid2op + LightSimBackend in ``tests/env/test_grid2op_rewards.py``), from
:class:`~grid_vec.core.rewards.base.RewardInputs`: ``has_error`` is ``terminated`` (a game over),
``is_done`` is ``inputs.done`` (a game over or the episode's last step), ``is_illegal`` /
``is_ambiguous`` are the step's flags, and the env's ``nb_time_step`` is ``inputs.step``. Every
class is batched (one call for a whole batch), and has grid2op's ``reward_min`` /
``reward_max`` once initialized.

The rewards that price energy (``RedispReward``, ``EconomicReward``, ``L2RPNSandBoxScore``)
need each generator's marginal cost and ``pmax`` as grid2op has them: ``prods_charac.csv``'s
``marginal_cost`` and ``Pmax`` columns when the env plays a dataset folder (grid2op takes
``Pmax`` from there, not from ``grid.json``), else the ``gen_cost_per_MW`` / ``gen_pmax``
constructor arguments (an error when the env is built if neither gives them). The rewards'
inputs carry neither the storage units' power nor the curtailment yet: their terms are 0
(grid2op's ``RedispReward`` and ``L2RPNSandBoxScore`` price the storage power too).

``N1Reward`` costs an extra power flow per step and per watched branch (only an env that
plays it pays for it). Not here: ``CombinedReward`` / ``CombinedScaledReward`` (a sum of
rewards: write a callable) and the alarm / alert rewards and scores (grid_vec has no alarms
nor alerts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grid_vec.core.rewards.base import RewardContext, RewardInputs
from grid_vec.core.state import any_true

# the ufuncs' reductions, called directly: what ndarray.sum / np.max call (the same floats),
# without their Python wrappers (a batch of one pays mostly for those)
_sum = np.add.reduce
_max = np.maximum.reduce


def _refused(inputs: RewardInputs) -> np.ndarray:
    return np.logical_or(inputs.is_illegal, inputs.is_ambiguous)


def _check_number(name: str, value: float, *, positive: bool = False) -> float:
    value = float(value)
    if not np.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number")
    return value


class Grid2opReward:
    """What every reward of this module shares: grid2op's ``reward_min`` / ``reward_max``,
    ``initialize`` (called once with the env's :class:`RewardContext`)."""

    batched = True
    reward_min: float = 0.0
    reward_max: float = 1.0

    def initialize(self, context: RewardContext) -> None:
        self.context = context

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class FlatReward(Grid2opReward):
    """``per_timestep`` each step without game over, else 0."""

    def __init__(self, per_timestep: float = 1.0) -> None:
        self.per_timestep = _check_number("per_timestep", per_timestep)
        self.reward_max = self.per_timestep

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        return np.where(terminated, 0.0, self.per_timestep)[()]


class ConstantReward(Grid2opReward):
    """Always 0."""

    reward_max = 0.0

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        return np.zeros(np.shape(terminated))[()]


class IncreasingFlatReward(Grid2opReward):
    """The number of steps played so far times ``per_timestep``; 0 on a game over."""

    def __init__(self, per_timestep: float = 1.0) -> None:
        self.per_timestep = _check_number("per_timestep", per_timestep)
        self.reward_max = np.inf  # grid2op: the scenario's length times per_timestep

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        return np.where(terminated, 0.0, inputs.step * self.per_timestep)[()]


class EpisodeDurationReward(Grid2opReward):
    """0 until the episode ends; then the share of its steps that were played (divided by
    ``per_timestep``), game over or not."""

    def __init__(self, per_timestep: float = 1.0) -> None:
        self.per_timestep = _check_number("per_timestep", per_timestep, positive=True)

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        share = inputs.step / (inputs.max_steps * self.per_timestep)
        return np.where(inputs.done, share, 0.0)[()]


class L2RPNReward(Grid2opReward):
    """Sum over branches of ``max(0, 1 - u**2)``, ``u`` the origin current over (thermal limit
    + 0.1 A), capped at 1 (a disconnected branch scores 1); 0 once the episode is over."""

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        self.reward_max = float(context.model.n_branch)
        limit = np.abs(context.thermal_limit)
        self._scale = limit / (limit + 0.1)  # rho * scale: current over (limit + 0.1)

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        usage = np.minimum(inputs.rho * self._scale, 1.0)
        score = np.maximum(1.0 - usage**2, 0.0).sum(axis=-1)
        return np.where(inputs.done, 0.0, score)[()]


class LinesCapacityReward(Grid2opReward):
    """The unused share of the connected branches' capacity: ``1 - sum(rho) / n`` over the
    ``n`` connected branches (the sum capped to [0, n]); 0 on a game over or a refused
    action."""

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        status = np.asarray(inputs.line_status, dtype=bool)
        n = np.count_nonzero(status, axis=-1)
        usage = np.minimum((inputs.rho * status).sum(axis=-1), n)  # rho >= 0
        value = (n - usage) / np.maximum(n, 1)  # no branch connected: a game over
        return np.where(terminated | _refused(inputs), 0.0, value)[()]


class CloseToOverflowReward(Grid2opReward):
    """``1 - k / max_lines``, ``k`` the branches close to their limit (``rho >= 0.95`` for a
    limit under 400 A, ``rho >= 0.975`` for any), capped at ``max_lines``; 0 on a game over or
    a refused action."""

    def __init__(self, max_lines: int = 5) -> None:
        self.max_lines = _check_number("max_lines", max_lines, positive=True)

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        self._small = context.thermal_limit < 400.0

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        rho = inputs.rho
        close = (self._small & (rho >= 0.95)) | (rho >= 0.975)
        k = np.minimum(close.sum(axis=-1), self.max_lines)
        return np.where(terminated | _refused(inputs), 0.0, 1.0 - k / self.max_lines)[()]


class LinesReconnectedReward(Grid2opReward):
    """``1 - k / 2``, ``k`` the disconnected branches whose cooldown is over (they could be
    reconnected), capped at 2; 0 on a game over or a refused action."""

    penalty_max_at_n_lines = 2.0

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        waiting = ~inputs.line_status.astype(bool) & (inputs.cooldown_line == 0)
        k = np.minimum(waiting.sum(axis=-1), self.penalty_max_at_n_lines)
        value = 1.0 - k / self.penalty_max_at_n_lines
        return np.where(terminated | _refused(inputs), 0.0, value)[()]


class _Priced(Grid2opReward):
    """A reward that needs each generator's marginal cost."""

    def __init__(self, gen_cost_per_MW: Any = None, gen_pmax: Any = None) -> None:
        self.gen_cost_per_MW = gen_cost_per_MW
        self.gen_pmax = gen_pmax

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        name = type(self).__name__
        given = {"gen_cost_per_MW": self.gen_cost_per_MW, "gen_pmax": self.gen_pmax}
        for key, value in given.items():
            value = getattr(context, key) if value is None else value
            value = np.asarray(value, dtype=np.float64)
            if value.shape != (context.model.n_gen,) or not np.isfinite(value).all():
                raise ValueError(
                    f"{name} needs {context.model.n_gen} finite {key} (one per generator), got "
                    f"{value!r}: play a dataset folder whose prods_charac.csv has the "
                    f"marginal_cost and Pmax columns, or pass {key}=... to {name}(...)"
                )
            given[key] = value
        self._costs, self._pmax = given["gen_cost_per_MW"], given["gen_pmax"]
        self._hours = context.delta_time_seconds / 3600.0

    def _marginal_cost(self, gen_p: np.ndarray) -> np.ndarray:
        """The highest cost among the generators producing (> 0 MW)."""
        return _max(np.where(gen_p > 0.0, self._costs, -np.inf), axis=-1)

    def _losses_mwh(self, inputs: RewardInputs) -> np.ndarray:
        """Production minus consumption, MWh, summed in float32 as grid2op does: the losses
        are a small difference of large sums, whose float32 rounding would otherwise show
        (about 1e-5 relative) in ``L2RPNSandBoxScore``."""
        f32 = np.float32
        gen = _sum(inputs.gen_p.astype(f32), axis=-1, dtype=f32)
        load = _sum(inputs.load_p.astype(f32), axis=-1, dtype=f32)
        return (gen - load).astype(np.float64) * self._hours


class RedispReward(_Priced):
    """grid2op's default reward of many datasets: a fixed budget (``max_regret``, the cost of
    a bound on losses and redispatching at the highest marginal cost) minus this step's cost
    of losses and of ``alpha_redisp`` times the redispatched energy at the marginal cost,
    divided by the total load. A refused action gives ``reward_illegal_ambiguous``; the
    episode's end gives ``min_reward`` when it comes with a game over or a refused action."""

    def __init__(
        self,
        alpha_redisp: float = 5.0,
        min_load_ratio: float = 0.1,
        worst_losses_ratio: float = 0.05,
        min_reward: float = -10.0,
        least_losses_ratio: float = 0.015,
        reward_illegal_ambiguous: float = 0.0,
        gen_cost_per_MW: Any = None,
        gen_pmax: Any = None,
    ) -> None:
        super().__init__(gen_cost_per_MW, gen_pmax)
        self.alpha_redisp = _check_number("alpha_redisp", alpha_redisp)
        self.min_load_ratio = _check_number("min_load_ratio", min_load_ratio, positive=True)
        self.worst_losses_ratio = _check_number("worst_losses_ratio", worst_losses_ratio)
        self.min_reward = self.reward_min = _check_number("min_reward", min_reward)
        self.least_losses_ratio = _check_number("least_losses_ratio", least_losses_ratio)
        self.reward_illegal_ambiguous = _check_number(
            "reward_illegal_ambiguous", reward_illegal_ambiguous
        )

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        costs, hours = self._costs, self._hours
        capacity = float(self._pmax.sum())
        worst = (self.worst_losses_ratio + self.alpha_redisp) * capacity
        self.max_regret = worst * float(costs.max()) * hours
        least_loads = capacity * self.min_load_ratio
        least_losses = self.least_losses_ratio * least_loads * hours
        positive = costs[costs > 0.0]
        min_regret = least_losses * (float(positive.min()) if len(positive) else 0.0)
        self.reward_max = (self.max_regret - min_regret) / least_loads
        # the redispatch term of a step without redispatch (a signed zero, as computed)
        self._no_redispatch = self.alpha_redisp * (0.0 * hours)

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        if any_true(terminated) or any_true(inputs.is_illegal) or any_true(inputs.is_ambiguous):
            refused = _refused(inputs)
            with np.errstate(divide="ignore", invalid="ignore"):  # game-over rows: zero flows
                value = self._value(inputs)
            value = np.where(refused, self.reward_illegal_ambiguous, value)
            return np.where(inputs.done & (terminated | refused), self.min_reward, value)[()]
        return self._value(inputs)[()]

    def _value(self, inputs: RewardInputs) -> np.ndarray:
        if any_true(inputs.actual_dispatch):
            redispatched = _sum(np.abs(inputs.actual_dispatch), axis=-1) * self._hours
            redispatch_term = self.alpha_redisp * redispatched
        else:  # the usual step: the same zero, without computing it
            redispatch_term = self._no_redispatch
        regret = (self._losses_mwh(inputs) + redispatch_term) * self._marginal_cost(inputs.gen_p)
        return (self.max_regret - regret) / _sum(inputs.load_p, axis=-1)


class EconomicReward(_Priced):
    """How cheap this step's production is: ``1 - cost / worst``, ``cost`` the generators'
    output priced at their marginal costs and ``worst`` every generator at ``pmax``, clipped to
    [0, 1]; 0 on a game over or a refused action."""

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        self.worst_cost = float((self._costs * self._pmax).sum()) * self._hours

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        cost = (inputs.gen_p * self._costs).sum(axis=-1) * self._hours
        value = np.clip((self.worst_cost - cost) / self.worst_cost, 0.0, 1.0)
        return np.where(terminated | _refused(inputs), 0.0, value)[()]


class L2RPNSandBoxScore(_Priced):
    """The operation cost of the step (a score to minimise, not a reward): losses and
    redispatched energy priced at the marginal cost, weighted by ``alpha_loss`` and
    ``alpha_redisp``; ``reward_min`` (1) on a game over. Storage and curtailment cost 0."""

    def __init__(
        self,
        alpha_redisp: float = 1.0,
        alpha_loss: float = 1.0,
        alpha_storage: float = 1.0,
        alpha_curtailment: float = 1.0,
        reward_max: float = 1000.0,
        gen_cost_per_MW: Any = None,
        gen_pmax: Any = None,
    ) -> None:
        super().__init__(gen_cost_per_MW, gen_pmax)
        self.alpha_redisp = _check_number("alpha_redisp", alpha_redisp)
        self.alpha_loss = _check_number("alpha_loss", alpha_loss)
        self.alpha_storage = _check_number("alpha_storage", alpha_storage)
        self.alpha_curtailment = _check_number("alpha_curtailment", alpha_curtailment)
        self.reward_min = 1.0
        self.reward_max = _check_number("reward_max", reward_max)

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        with np.errstate(invalid="ignore"):  # game-over rows: zero flows, no price
            price = self._marginal_cost(inputs.gen_p)
            redispatched = np.abs(inputs.actual_dispatch).sum(axis=-1) * self._hours
            cost = (
                self.alpha_loss * self._losses_mwh(inputs) + self.alpha_redisp * redispatched
            ) * price
        return np.where(terminated, self.reward_min, cost)[()]


class DistanceReward(Grid2opReward):
    """``1 - k / n``, ``k`` the element ends not on bus bar 1 (disconnected ones included) of
    the ``n``: the distance to the all-on-bus-1 topology; 0 on a game over or a refused
    action."""

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        topo = inputs.topo
        value = 1.0 - (topo != 1).sum(axis=-1) / topo.shape[-1]
        return np.where(terminated | _refused(inputs), 0.0, value)[()]


class GameplayReward(Grid2opReward):
    """-1 on a game over, -0.5 for a refused action, else 1."""

    reward_min = -1.0

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        return np.where(terminated, -1.0, np.where(_refused(inputs), -0.5, 1.0))[()]


class BridgeReward(Grid2opReward):
    """Penalises bridges (branches whose loss would split the grid) of the graph whose
    vertices are the substations' bus bars and whose edges are the connected branches
    (parallel branches are one edge, as in grid2op's ``networkx.Graph``): their count clipped
    to [``min_pen_lte``, ``max_pen_gte``], mapped linearly to [1, 0]; 0 on a game over or a
    refused action. Counting bridges is a graph search per env."""

    def __init__(self, min_pen_lte: float = 0.0, max_pen_gte: float = 1.0) -> None:
        self.min_pen_lte = _check_number("min_pen_lte", min_pen_lte)
        self.max_pen_gte = _check_number("max_pen_gte", max_pen_gte)
        if self.max_pen_gte <= self.min_pen_lte:
            raise ValueError("max_pen_gte must be above min_pen_lte")

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        m, layout = context.model, context.topology
        self._n_sub = int(m.n_sub)
        self._sub_or = np.asarray(m.branch_or_sub, dtype=np.int64)
        self._sub_ex = np.asarray(m.branch_ex_sub, dtype=np.int64)
        self._pos_or, self._pos_ex = layout.pos_or, layout.pos_ex

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        topo = np.asarray(inputs.topo)
        rows = topo.reshape(-1, topo.shape[-1])
        counts = np.array([self._bridges(row) for row in rows], dtype=np.float64)
        counts = np.clip(counts, self.min_pen_lte, self.max_pen_gte)
        value = 1.0 - (counts - self.min_pen_lte) / (self.max_pen_gte - self.min_pen_lte)
        value = value.reshape(topo.shape[:-1])
        return np.where(terminated | _refused(inputs), 0.0, value)[()]

    def _bridges(self, topo: np.ndarray) -> int:
        bus_or, bus_ex = topo[self._pos_or], topo[self._pos_ex]
        on = (bus_or > 0) & (bus_ex > 0)
        u = self._sub_or[on] + (bus_or[on] - 1) * self._n_sub
        v = self._sub_ex[on] + (bus_ex[on] - 1) * self._n_sub
        return count_bridges(
            {(min(a, b), max(a, b)) for a, b in zip(u.tolist(), v.tolist(), strict=True)}
        )


def count_bridges(edges: set[tuple[int, int]]) -> int:
    """Bridges of the simple undirected graph of ``edges`` (Tarjan's low-link, iterative)."""
    adjacency: dict[int, list[tuple[int, int]]] = {}
    for k, (a, b) in enumerate(edges):
        adjacency.setdefault(a, []).append((b, k))
        adjacency.setdefault(b, []).append((a, k))
    order: dict[int, int] = {}
    low: dict[int, int] = {}
    bridges = 0
    for root in adjacency:
        if root in order:
            continue
        order[root] = low[root] = len(order)
        stack = [(root, -1, iter(adjacency[root]))]
        while stack:
            vertex, via, neighbours = stack[-1]
            for other, edge in neighbours:
                if edge == via:
                    continue
                if other in order:
                    low[vertex] = min(low[vertex], order[other])
                else:
                    order[other] = low[other] = len(order)
                    stack.append((other, edge, iter(adjacency[other])))
                    break
            else:
                stack.pop()
                if stack:
                    parent = stack[-1][0]
                    low[parent] = min(low[parent], low[vertex])
                    if low[vertex] > order[parent]:
                        bridges += 1
    return bridges


class N1Reward(Grid2opReward):
    """The highest flow over its thermal limit (limits under 1 A taken as 1 A) with branch
    ``l_id`` out, from the state the step reached (an AC power flow of that outage, from the
    state's solution: :meth:`~grid_vec.core.contingency.OutageFlows.currents`); -1 where that
    outage cuts a load or a generator off or its power flow diverges; ``reward_min`` (0) at the
    end of an episode. grid2op leaves ``reward_min`` and ``reward_max`` at 0. Each step costs
    one extra power flow per env; several watched branches are several rewards
    (``other_rewards={f"n1_{l}": N1Reward(l_id=l) for l in lines}``), as in grid2op.

    Raises:
        ValueError: ``l_id`` is not a branch of the env's grid (when the env is built).
    """

    reward_max = 0.0

    def __init__(self, l_id: int = 0) -> None:
        if isinstance(l_id, bool) or not isinstance(l_id, (int, np.integer)):
            raise ValueError(f"l_id must be a branch index, got {l_id!r}")
        self.l_id = int(l_id)

    def initialize(self, context: RewardContext) -> None:
        super().initialize(context)
        n = context.model.n_branch
        if not 0 <= self.l_id < n:
            raise ValueError(
                f"N1Reward: l_id must be a branch index in [0, {n - 1}], got {self.l_id}"
            )
        self._inv_limit = 1.0 / np.maximum(context.thermal_limit, 1.0)

    def __call__(self, inputs: RewardInputs, terminated: Any) -> Any:
        currents = inputs.outages.currents(self.l_id)
        worst = _max(currents * self._inv_limit, axis=-1)  # NaN rows stay NaN
        value = np.where(np.isnan(worst), -1.0, worst)
        return np.where(inputs.done, self.reward_min, value)[()]

    def __repr__(self) -> str:
        return f"N1Reward(l_id={self.l_id})"


GRID2OP_REWARDS: dict[str, type[Grid2opReward]] = {
    cls.__name__: cls
    for cls in (
        FlatReward,
        ConstantReward,
        IncreasingFlatReward,
        EpisodeDurationReward,
        L2RPNReward,
        LinesCapacityReward,
        CloseToOverflowReward,
        LinesReconnectedReward,
        RedispReward,
        EconomicReward,
        DistanceReward,
        GameplayReward,
        BridgeReward,
        L2RPNSandBoxScore,
        N1Reward,
    )
}
