"""Rewards of a GridEnv, chosen by name.

Every reward is a callable ``reward(state, terminated) -> float`` reading the step's
:class:`RewardInputs` of one env; on a game over each gives its minimum. The built-in rewards
are also *batched* (their ``batched`` attribute is True): given the inputs of a whole batch
(arrays with a leading env axis) and a ``terminated`` array, they return one reward per env
at once; a custom callable is called once per env with that env's rows
(:func:`batch_rewards`).

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

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.rho, self.line_status, self.load_p, self.gen_p, self.actual_dispatch


RewardFn = Callable[[RewardInputs, bool], float]


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


flat_reward.batched = True  # type: ignore[attr-defined]
line_margin_reward.batched = True  # type: ignore[attr-defined]


def batch_rewards(fn: RewardFn, inputs: RewardInputs, terminated: np.ndarray) -> np.ndarray:
    """``fn`` over a batch: one call when it is batched, else one call per env with that
    env's rows. Returns float64 rewards, one per env."""
    if getattr(fn, "batched", False):
        reward = fn(inputs, terminated)
        if type(reward) is np.ndarray and reward.shape == terminated.shape:
            return reward
        return np.full(terminated.shape, reward, dtype=np.float64)
    return np.array(
        [
            float(fn(RewardInputs(*(a[i] for a in inputs.arrays())), bool(terminated[i])))
            for i in range(len(terminated))
        ],
        dtype=np.float64,
    )


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
