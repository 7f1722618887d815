"""Rewards: what they read (:mod:`~grid_vec.core.rewards.base`), grid_vec's own
(:mod:`~grid_vec.core.rewards.builtin`), grid2op's under grid2op's names
(:mod:`~grid_vec.core.rewards.grid2op`), and every one by name
(:mod:`~grid_vec.core.rewards.registry`: a new reward is a module here and one line of its
``REGISTRY``)."""

from __future__ import annotations

from grid_vec.core.rewards.base import RewardContext, RewardFn, RewardInputs
from grid_vec.core.rewards.registry import REGISTRY, make_reward, reward_names

__all__ = ["REGISTRY", "RewardContext", "RewardFn", "RewardInputs", "make_reward", "reward_names"]
