"""Rewards of a GridEnv, chosen by name.

Every reward is a callable ``reward(state, terminated) -> float`` reading the step's
:class:`RewardInputs`; on a game over each gives its minimum.

* ``"flat"`` (alias ``"survival"``): 1 per step played without game over, else 0;
* ``"line_margin"``: mean over branches of ``max(0, 1 - rho)`` (a disconnected branch counts
  0), in [0, 1]: rewards keeping head-room on every branch (close to grid2op's
  ``LinesCapacityReward``);
* ``"redispatch_cost"``: ``1 - (losses + redispatch_weight * |redispatched MW|) / total load``,
  clipped to [0, 1]: survival that pays for losses and for moving generators (in the spirit
  of grid2op's ``RedispReward``; no per-generator prices are needed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class RewardInputs:
    """What a reward may read about the step just played (arrays are the env's own)."""

    rho: np.ndarray
    line_status: np.ndarray
    load_p: np.ndarray
    gen_p: np.ndarray
    actual_dispatch: np.ndarray


RewardFn = Callable[[RewardInputs, bool], float]


def flat_reward(state: RewardInputs, terminated: bool) -> float:
    """1 per step survived."""
    return 0.0 if terminated else 1.0


def line_margin_reward(state: RewardInputs, terminated: bool) -> float:
    """Mean head-room of the branches."""
    if terminated:
        return 0.0
    margin = np.maximum(1.0 - state.rho, 0.0) * state.line_status
    return float(margin.mean())


class RedispatchCostReward:
    """Survival minus the relative cost of losses and redispatching."""

    def __init__(self, redispatch_weight: float = 2.0) -> None:
        if not np.isfinite(redispatch_weight) or redispatch_weight < 0:
            raise ValueError(f"redispatch_weight must be finite and >= 0, got {redispatch_weight}")
        self.redispatch_weight = float(redispatch_weight)

    def __call__(self, state: RewardInputs, terminated: bool) -> float:
        if terminated:
            return 0.0
        total_load = float(state.load_p.sum())
        losses = float(state.gen_p.sum()) - total_load
        moved = float(np.abs(state.actual_dispatch).sum())
        cost = (max(losses, 0.0) + self.redispatch_weight * moved) / max(total_load, 1e-6)
        return float(min(max(1.0 - cost, 0.0), 1.0))


REWARDS: dict[str, Callable[[], RewardFn]] = {
    "flat": lambda: flat_reward,
    "survival": lambda: flat_reward,
    "line_margin": lambda: line_margin_reward,
    "redispatch_cost": RedispatchCostReward,
}


def make_reward(spec: str | RewardFn, *, argument: str = "reward") -> RewardFn:
    """A reward from its name or a callable ``(RewardInputs, terminated) -> float``."""
    if callable(spec):
        return spec
    if isinstance(spec, str) and spec in REWARDS:
        return REWARDS[spec]()
    raise ValueError(
        f"{argument}: unknown reward {spec!r}; allowed names: {', '.join(REWARDS)} (or a callable)"
    )
