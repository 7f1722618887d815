"""The opponent of a grid2op-format folder: its ``config.py`` entries mapped to grid_vec's.

:func:`grid_vec.chronics.folder_config.read_folder_config` reads the entries as data
(class names as strings); here they become an :class:`~grid_vec.core.rules.opponent.Opponent`, as
grid2op's ``make`` would build it:

* no ``opponent_class``, ``BaseOpponent``, a ``NeverAttackBudget`` (grid2op's default budget
  class) or a ``DontAct`` action class: no opponent (grid2op's never attacks);
* ``RandomLineOpponent`` / ``WeightedRandomOpponent`` / ``GeometricOpponent`` with
  ``BaseActionBudget`` (1 per attacked line and step): grid_vec's class of that name, with
  the folder's cooldown, duration, budgets and ``kwargs_opponent`` (``lines_attacked``;
  ``rho_normalization`` and ``attack_period`` for the weighted one;
  ``attack_every_xxx_hour``, ``average_attack_duration_hour``,
  ``minimum_attack_duration_hour`` and ``pmax_pmin_ratio`` for the geometric one, which
  also takes the folder's step duration). Missing numbers take grid2op's defaults;
* any other class (``GeometricOpponentMultiArea``, ``FromEpisodeDataOpponent``, a class of
  the dataset's own, another budget class): a
  :class:`UnsupportedOpponentWarning` and no opponent. The grid still plays; the warning
  says that the game differs from grid2op's and how to choose (``opponent=None`` to silence
  it, ``opponent=<an Opponent>`` to play another).

A malformed value (a negative budget, a line name not on the grid, ...) is a
:class:`~grid_vec.chronics.untrusted.FolderFormatError` naming ``config.py`` and the key.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from grid_vec.chronics.folder_config import FolderConfig
from grid_vec.chronics.opponent_config import OpponentConfig
from grid_vec.chronics.untrusted import FolderFormatError, short
from grid_vec.core.rules.opponent import (
    GeometricOpponent,
    Opponent,
    RandomLineOpponent,
    WeightedRandomOpponent,
)

# GeometricOpponent's kwargs_opponent numbers and grid2op's defaults
GEOMETRIC = {
    "attack_every_xxx_hour": 24,
    "average_attack_duration_hour": 4,
    "minimum_attack_duration_hour": 2,
    "pmax_pmin_ratio": 4,
}
NO_ATTACK = {"opponent_class": "BaseOpponent", "opponent_budget_class": "NeverAttackBudget"}
# grid2op's BaseEnv defaults for what a config leaves out
DEFAULTS = {
    "opponent_attack_cooldown": 99999,
    "opponent_attack_duration": 0,
    "opponent_budget_per_ts": 0.0,
    "opponent_init_budget": 0.0,
    "opponent_budget_class": "NeverAttackBudget",
}


class UnsupportedOpponentWarning(UserWarning):
    """A folder configures an opponent grid_vec does not play: the env has none."""


def folder_opponent(
    config: FolderConfig, branch_names: np.ndarray, step_seconds: float = 300.0
) -> Opponent | None:
    """The opponent a folder's ``config.py`` configures (None: none, or none grid_vec plays);
    ``step_seconds``: the folder's step duration (a GeometricOpponent's hours are steps).

    Args:
        config: the folder's ``config.py``, read
            (:func:`~grid_vec.chronics.folder_config.read_folder_config`).
        branch_names: the grid's branches (the attacked lines are named).
        step_seconds: the folder's step duration.

    Raises:
        FolderFormatError: a malformed opponent entry (naming the key).
    """
    if config.opponent is None:  # no config.py
        return None
    return opponent_of(config.opponent, branch_names, step_seconds)


def opponent_of(
    config: OpponentConfig, branch_names: np.ndarray, step_seconds: float = 300.0
) -> Opponent | None:
    """``config`` mapped by the rules of the module docstring."""
    values = {**DEFAULTS, **config.values}
    name = values.get("opponent_class")
    if name is None or name == NO_ATTACK["opponent_class"]:
        return None
    budget_class = values["opponent_budget_class"]
    if budget_class == NO_ATTACK["opponent_budget_class"]:
        return None
    if values.get("opponent_action_class") == "DontAct":
        return None
    if name not in OPPONENTS or budget_class != "BaseActionBudget":
        what = (
            f"opponent_class {name!r}"
            if name not in OPPONENTS
            else f"opponent_budget_class {budget_class!r}"
        )
        warnings.warn(
            f"{config.path}: {what} is not supported by grid_vec (supported: "
            f"{', '.join(OPPONENTS)} with BaseActionBudget): this env plays without an "
            "opponent, unlike grid2op. Pass opponent=None to play without one knowingly, or "
            "opponent=<a grid_vec Opponent> to play another.",
            UnsupportedOpponentWarning,
            stacklevel=6,
        )
        return None
    kwargs = values.get("kwargs_opponent") or {}
    if not isinstance(kwargs, dict):
        raise FolderFormatError(f"{config.where('kwargs_opponent')}: expected a dict")
    lines = _line_names(config, kwargs.get("lines_attacked", []), branch_names)
    if not lines:
        warnings.warn(
            f"{config.path}: kwargs_opponent has no lines_attacked: the opponent never "
            "attacks (as grid2op's), so this env has none",
            UnsupportedOpponentWarning,
            stacklevel=6,
        )
        return None
    args: dict[str, Any] = {
        "budget_per_step": _number(config, values, "opponent_budget_per_ts"),
        "initial_budget": _number(config, values, "opponent_init_budget"),
        "attack_duration": _int(config, values, "opponent_attack_duration"),
        "attack_cooldown": _int(config, values, "opponent_attack_cooldown"),
        "attack_cost": 1.0,  # BaseActionBudget: one per line attacked, each step
    }
    cls, extra = OPPONENTS[name]
    args.update(extra(config, kwargs, step_seconds))
    try:
        return cls(lines, **args)
    except ValueError as e:
        raise FolderFormatError(f"{config.path}: the opponent's entries: {e}") from None


def _no_arguments(config: OpponentConfig, kwargs: dict, step_seconds: float) -> dict[str, Any]:
    return {}


def _weighted_arguments(
    config: OpponentConfig, kwargs: dict, step_seconds: float
) -> dict[str, Any]:
    norm = kwargs.get("rho_normalization", [])
    if not isinstance(norm, list):
        raise FolderFormatError(
            f"{config.where('kwargs_opponent')}['rho_normalization']: expected a list"
        )
    period = _int(config, kwargs, "attack_period", 12 * 24, "kwargs_opponent")
    return {"rho_normalization": norm, "attack_period": period}


def _geometric_arguments(
    config: OpponentConfig, kwargs: dict, step_seconds: float
) -> dict[str, Any]:
    args: dict[str, Any] = {
        key: _number(config, {key: kwargs.get(key, default)}, key, "kwargs_opponent")
        for key, default in GEOMETRIC.items()
    }
    args["step_seconds"] = step_seconds
    return args


# grid2op's class name -> grid_vec's class and the reader of its own kwargs_opponent entries
# (besides the budgets every class takes): a new opponent is its class and one line here
OPPONENTS: dict[str, tuple[type[Opponent], Callable[..., dict[str, Any]]]] = {
    "RandomLineOpponent": (RandomLineOpponent, _no_arguments),
    "WeightedRandomOpponent": (WeightedRandomOpponent, _weighted_arguments),
    "GeometricOpponent": (GeometricOpponent, _geometric_arguments),
}


def _line_names(config: OpponentConfig, value: Any, branch_names: np.ndarray) -> list[str]:
    where = f"{config.where('kwargs_opponent')}['lines_attacked']"
    if not isinstance(value, list):
        raise FolderFormatError(f"{where}: expected a list of line names, got {short(value)}")
    known = set(map(str, branch_names))
    for i, line in enumerate(value):
        if not isinstance(line, str):
            raise FolderFormatError(f"{where}[{i}]: expected a line name, got {short(line)}")
        if line not in known:
            raise FolderFormatError(f"{where}[{i}]: no branch named {short(line)} on the grid")
    return list(value)


def _number(config: OpponentConfig, values: dict, key: str, parent: str = "") -> float:
    v = values[key]
    where = f"{config.where(parent)}[{key!r}]" if parent else config.where(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
        raise FolderFormatError(f"{where}: expected a number >= 0, got {short(v)}")
    return float(v)


def _int(config: OpponentConfig, values: dict, key: str, default: int = 0, parent: str = "") -> int:
    v = values.get(key, default)
    where = f"{config.where(parent)}[{key!r}]" if parent else config.where(key)
    if isinstance(v, float) and v.is_integer():
        v = int(v)  # grid2op casts these to int
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise FolderFormatError(f"{where}: expected an int >= 0, got {short(v)}")
    return v
