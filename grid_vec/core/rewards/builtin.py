"""grid_vec's own rewards (batched: one call for a whole batch).

* ``"flat"`` (alias ``"survival"``): 1 per step played without game over, else 0;
* ``"line_margin"``: mean over branches of ``max(0, 1 - rho)`` (a disconnected branch counts
  0), in [0, 1];
* ``"redispatch_cost"``: ``1 - (losses + redispatch_weight * |redispatched MW|) / total load``,
  clipped to [0, 1] (no per-generator prices are needed);
* ``"operational_cost"``: the energy a step costs to operate (a cost, for the task scores).
"""

from __future__ import annotations

import numpy as np

from grid_vec.core.rewards.base import RewardInputs


def flat_reward(state: RewardInputs, terminated: bool | np.ndarray) -> float | np.ndarray:
    """1 per step survived."""
    if isinstance(terminated, np.ndarray):
        return 1.0 - terminated  # float64: 1 - True is 0
    return 0.0 if terminated else 1.0


def line_margin_reward(state: RewardInputs, terminated: bool | np.ndarray) -> float | np.ndarray:
    """Mean head-room of the branches."""
    margin = (np.maximum(1.0 - state.rho, 0.0) * state.line_status).mean(axis=-1)
    return np.where(terminated, 0.0, margin)[()]


class RedispatchCostReward:
    """Survival minus the relative cost of losses and redispatching."""

    batched = True

    def __init__(self, redispatch_weight: float = 2.0) -> None:
        if not np.isfinite(redispatch_weight) or redispatch_weight < 0:
            raise ValueError(f"redispatch_weight must be finite and >= 0, got {redispatch_weight}")
        self.redispatch_weight = float(redispatch_weight)

    def __call__(self, state: RewardInputs, terminated: bool | np.ndarray) -> float | np.ndarray:
        total_load = state.load_p.sum(axis=-1)
        losses = state.gen_p.sum(axis=-1) - total_load
        moved = np.abs(state.actual_dispatch).sum(axis=-1)
        cost = (np.maximum(losses, 0.0) + self.redispatch_weight * moved) / np.maximum(
            total_load, 1e-6
        )
        return np.where(terminated, 0.0, np.clip(1.0 - cost, 0.0, 1.0))[()]


def operational_cost(state: RewardInputs, terminated: bool | np.ndarray) -> float | np.ndarray:
    """The energy the step costs to operate, MWh: the losses (production minus consumption)
    plus the energy redispatched; 0 on a game over. A cost to minimise, not a reward: the
    task scores (:mod:`grid_vec.runner.evaluate`) sum it, unpriced, as the embedded grids
    have no generator prices."""
    hours = state.context.delta_time_seconds / 3600.0
    losses = state.gen_p.sum(axis=-1) - state.load_p.sum(axis=-1)
    moved = np.abs(state.actual_dispatch).sum(axis=-1)
    return np.where(terminated, 0.0, (np.maximum(losses, 0.0) + moved) * hours)[()]


operational_cost.batched = True  # type: ignore[attr-defined]
flat_reward.batched = True  # type: ignore[attr-defined]
line_margin_reward.batched = True  # type: ignore[attr-defined]
