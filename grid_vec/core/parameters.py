"""Game rules of a GridEnv, with grid2op's defaults (``grid2op.Parameters``).

Field names are snake_case versions of grid2op's upper-case names, so that a grid2op rules
dict (``parameters.json``, a level of ``difficulty_levels.json``) maps one to one
(:meth:`Parameters.from_grid2op_dict`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

# grid2op key -> our field name, for the keys this environment implements.
_GRID2OP_KEYS = {
    "NO_OVERFLOW_DISCONNECTION": "no_overflow_disconnection",
    "NB_TIMESTEP_OVERFLOW_ALLOWED": "nb_timestep_overflow_allowed",
    "NB_TIMESTEP_RECONNECTION": "nb_timestep_reconnection",
    "NB_TIMESTEP_COOLDOWN_LINE": "nb_timestep_cooldown_line",
    "NB_TIMESTEP_COOLDOWN_SUB": "nb_timestep_cooldown_sub",
    "HARD_OVERFLOW_THRESHOLD": "hard_overflow_threshold",
    "SOFT_OVERFLOW_THRESHOLD": "soft_overflow_threshold",
    "MAX_LINE_STATUS_CHANGED": "max_line_status_changed",
    "MAX_SUB_CHANGED": "max_sub_changed",
    "MAX_SIMULATE_PER_STEP": "max_simulate_per_step",
    "MAX_SIMULATE_PER_EPISODE": "max_simulate_per_episode",
    "ENV_DOES_REDISPATCHING": "env_does_redispatching",
    "LIMIT_INFEASIBLE_CURTAILMENT_STORAGE_ACTION": "limit_infeasible_curtailment_storage_action",
    "IGNORE_MIN_UP_DOWN_TIME": "ignore_min_up_down_time",
    "ALLOW_DISPATCH_GEN_SWITCH_OFF": "allow_dispatch_gen_switch_off",
    "INIT_STORAGE_CAPACITY": "init_storage_capacity",
    "ACTIVATE_STORAGE_LOSS": "activate_storage_loss",
}


@dataclass(frozen=True)
class Parameters:
    """Rules of the game; every field mirrors the grid2op parameter of the same name.

    * a branch whose current exceeds ``soft_overflow_threshold`` x its thermal limit for more
      than ``nb_timestep_overflow_allowed`` consecutive steps trips (grid2op's timing: with
      the default 2 it trips on the third overflowed step);
    * above ``hard_overflow_threshold`` x its limit it trips at once;
    * a tripped branch cannot be reconnected for ``nb_timestep_reconnection`` steps;
    * after acting on a branch / substation, it cannot be acted on again for
      ``nb_timestep_cooldown_line`` / ``nb_timestep_cooldown_sub`` steps;
    * at most ``max_line_status_changed`` branches and ``max_sub_changed`` substations per step;
    * ``max_simulate_per_step`` / ``max_simulate_per_episode``: -1 means unlimited;
    * the dispatch rules (:mod:`grid_vec.core.rules.dispatch`): ``env_does_redispatching`` (False:
      the actual dispatch is the target, nothing made up for),
      ``limit_infeasible_curtailment_storage_action`` (shrink a curtailment the generators
      cannot make up for), ``allow_dispatch_gen_switch_off`` (False: redispatching a
      generator scheduled at 0 fails), ``ignore_min_up_down_time`` (only True is played);
    * the storage rules (:mod:`grid_vec.core.rules.storage`): each unit starts an episode charged
      at ``init_storage_capacity`` x its Emax (a ratio in [0, 1]); ``activate_storage_loss``
      (False: no efficiencies, no standing loss).
    """

    no_overflow_disconnection: bool = False
    nb_timestep_overflow_allowed: int = 2
    nb_timestep_reconnection: int = 10
    nb_timestep_cooldown_line: int = 0
    nb_timestep_cooldown_sub: int = 0
    hard_overflow_threshold: float = 2.0
    soft_overflow_threshold: float = 1.0
    max_line_status_changed: int = 1
    max_sub_changed: int = 1
    max_simulate_per_step: int = -1
    max_simulate_per_episode: int = -1
    env_does_redispatching: bool = True
    limit_infeasible_curtailment_storage_action: bool = False
    ignore_min_up_down_time: bool = True
    allow_dispatch_gen_switch_off: bool = True
    init_storage_capacity: float = 0.5
    activate_storage_loss: bool = True

    def __post_init__(self) -> None:
        for name in (
            "no_overflow_disconnection",
            "env_does_redispatching",
            "limit_infeasible_curtailment_storage_action",
            "ignore_min_up_down_time",
            "allow_dispatch_gen_switch_off",
            "activate_storage_loss",
        ):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in (
            "nb_timestep_overflow_allowed",
            "nb_timestep_reconnection",
            "nb_timestep_cooldown_line",
            "nb_timestep_cooldown_sub",
            "max_line_status_changed",
            "max_sub_changed",
        ):
            _check_int(name, getattr(self, name), minimum=0)
        if not self.ignore_min_up_down_time:
            raise ValueError(
                "ignore_min_up_down_time=False (generators' minimum up / down times) is not "
                "played by grid_vec yet"
            )
        for name in ("max_simulate_per_step", "max_simulate_per_episode"):
            _check_int(name, getattr(self, name), minimum=-1)
        for name in ("hard_overflow_threshold", "soft_overflow_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        capacity = self.init_storage_capacity
        if isinstance(capacity, bool) or not isinstance(capacity, (int, float)):
            raise TypeError(f"init_storage_capacity must be a number, got {capacity!r}")
        if not 0.0 <= capacity <= 1.0:  # also refuses NaN
            raise ValueError(f"init_storage_capacity must be in [0, 1], got {capacity!r}")
        if self.hard_overflow_threshold < self.soft_overflow_threshold:
            raise ValueError(
                f"hard_overflow_threshold ({self.hard_overflow_threshold}) must be >= "
                f"soft_overflow_threshold ({self.soft_overflow_threshold})"
            )

    def replace(self, **changes: Any) -> Parameters:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_grid2op_dict(cls, params: dict[str, Any]) -> Parameters:
        """Build from a grid2op rules dict; keys this env does not model are ignored.

        Values may be strings as grid2op writes them ("True", "2"), or native types.
        """
        if not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        kwargs: dict[str, Any] = {}
        defaults = cls()
        for key, field_name in _GRID2OP_KEYS.items():
            if key not in params:
                continue
            kind = type(getattr(defaults, field_name))
            kwargs[field_name] = _convert(key, params[key], kind)
        return cls(**kwargs)

    def to_grid2op_dict(self) -> dict[str, Any]:
        """The grid2op-named dict of these rules (inverse of :meth:`from_grid2op_dict`)."""
        return {key: getattr(self, name) for key, name in _GRID2OP_KEYS.items()}


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _convert(key: str, value: Any, kind: type) -> Any:
    """Convert one params.json value to ``kind``, with an error naming the key."""
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                return lowered in ("true", "1")
            return bool(value)
        if kind is int:
            as_float = float(value)
            if not as_float.is_integer():
                raise ValueError(value)
            return int(as_float)
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"key {key!r}: cannot read {value!r} as {kind.__name__}") from None
