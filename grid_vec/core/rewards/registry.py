"""Every reward by name: :data:`REGISTRY`, and :func:`make_reward`, the one way a name (or a
class, or a callable) becomes the reward an env plays.

A new reward is a module of this package and one line of :data:`REGISTRY` (its import with
it): a name to a reward callable (shared by the envs) or to a reward class (built with its
defaults for each env).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from grid_vec.chronics.folder_config import FolderConfig
from grid_vec.core.rewards import builtin
from grid_vec.core.rewards.base import RewardFn
from grid_vec.core.rewards.grid2op import GRID2OP_REWARDS

REGISTRY: dict[str, RewardFn | type] = {
    "flat": builtin.flat_reward,
    "survival": builtin.flat_reward,
    "line_margin": builtin.line_margin_reward,
    "redispatch_cost": builtin.RedispatchCostReward,
    "operational_cost": builtin.operational_cost,
    **GRID2OP_REWARDS,  # grid2op's, under grid2op's names and with grid2op's formulas
}


def reward_names() -> list[str]:
    """Every reward name :func:`make_reward` accepts."""
    return list(REGISTRY)


def make_reward(spec: str | RewardFn | type, *, argument: str = "reward") -> RewardFn:
    """The reward an env plays.

    Args:
        spec: a name of :data:`REGISTRY`, a reward class (built with its defaults) or a
            callable ``(RewardInputs, terminated) -> float`` (copied when it has an
            ``initialize`` method, so that each env initializes its own).
        argument: the argument ``spec`` came in, for the error message.

    Returns:
        The reward.

    Raises:
        ValueError: an unknown name, or a spec that is not callable.
    """
    entry: Any = REGISTRY.get(spec) if isinstance(spec, str) else spec
    if isinstance(entry, type):  # a reward class, as grid2op takes them: built with defaults
        return entry()
    if callable(entry) and not isinstance(spec, str):
        return copy.copy(entry) if hasattr(entry, "initialize") else entry
    if callable(entry):
        return entry
    raise ValueError(
        f"{argument}: unknown reward {spec!r}; allowed names: {', '.join(reward_names())} "
        "(or a callable)"
    )


def dataset_reward(source: Any) -> str | None:
    """The reward class a dataset folder's ``config.py`` names (``"reward_class"``), when
    grid_vec has it under that name.

    Args:
        source: the scenario source (a dataset folder's holds its ``config``).

    Returns:
        The name, None otherwise (no folder, no such entry, or a class grid_vec does not
        implement: then with a warning).
    """
    config = getattr(source, "config", None)  # a dataset folder's config.py, read
    if not isinstance(config, FolderConfig) or config.path is None:
        return None
    path, name = config.path, config.reward_class
    if name is not None and name not in GRID2OP_REWARDS:
        warnings.warn(
            f"{path}: reward_class {name} is not one of grid_vec's grid2op rewards "
            f"({', '.join(sorted(GRID2OP_REWARDS))}): the env plays 'flat'; pass reward= to "
            "choose another",
            stacklevel=4,
        )
        return None
    return name
