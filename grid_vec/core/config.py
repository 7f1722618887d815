"""How a batch plays the game: one validated record of every setting (as gymnax's
``EnvParams``), built once from the keywords of :class:`~grid_vec.env.grid_env.GridEnv` (and
so of :func:`grid_vec.make`) and handed whole to :class:`~grid_vec.core.batch.GridBatch`.

A setting's check lives here, once: what a user may pass (names of rewards, sequences of
limits, ``None`` for a default) becomes what the core plays (reward functions, float
arrays, the generators' limits), or a ``TypeError`` / ``ValueError`` naming the keyword.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grid_vec.chronics.scenario import ScenarioSource
from grid_vec.core.action_kinds import ACTION_KINDS, ActionKind, action_kind, names_of
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import REDISPATCH
from grid_vec.core.rewards.base import RewardFn
from grid_vec.core.rewards.registry import dataset_reward, make_reward
from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.rules.heuristics import Heuristics
from grid_vec.core.rules.opponent import Opponent
from grid_vec.core.rules.storage import StorageUnits
from grid_vec.grid.model import GridModel

# the action types a setting needs, read from their records (core/action_kinds.py): those
# whose agent picks catalog actions (a subset or a safe mask needs a catalog), those with a
# redispatch part (the dispatch recovery plays one), and those whose agent can play every
# catalog action, so that the catalog's legal mask tells it something (the general topology
# action plays a configuration as set_bus; the multi-agent view's substation agents read
# their part of it, grid_vec.marl)
_CATALOG_KINDS = tuple(kind for kind in ACTION_KINDS.values() if kind.catalog)
_DISPATCH_KINDS = tuple(kind for kind in ACTION_KINDS.values() if REDISPATCH in kind.controls)
_MASK_KINDS = tuple(kind for kind in ACTION_KINDS.values() if kind.topology)


@dataclass(frozen=True, eq=False)
class GameConfig:
    """Every setting of a batch's game, checked (build one with :meth:`build`).

    Attributes:
        backend: the power-flow backend's name (:data:`grid_vec.grid.BACKENDS`).
        parameters: the rules' parameters.
        thermal_limit: (n_branch,) amperes, finite and > 0.
        reward_fn: the reward.
        other_rewards: further rewards by name (given in the infos).
        opponent: who attacks (bound to the grid's branches), or None.
        max_iter: steps an episode may last at most (None: the scenario's length).
        action_type: one of :data:`~grid_vec.core.action_kinds.ACTION_KINDS`.
        chunk_size: scenario rows read at a time (None: the source's default).
        dispatch_limits: the generators' characteristics the dispatch rules use.
        maintenance: play the scenarios' planned outages.
        observation_attributes: the observation's attributes (None: the default ones).
        storage_units: the storage units' characteristics (None: the grid has none).
        action_mask: give the legal catalog actions with every result.
        heuristics: the steps the env plays on its own, or None.
        action_subset: the catalog actions the agent picks from (None: all of them).
        safe_mask_rho: give, with every result, the agent actions whose simulated step
            stays below this max rho (None: no such mask).
    """

    backend: str
    parameters: Parameters
    thermal_limit: np.ndarray
    reward_fn: RewardFn
    other_rewards: dict[str, RewardFn]
    opponent: Opponent | None
    max_iter: int | None
    action_type: str
    chunk_size: int | None
    dispatch_limits: GeneratorLimits
    maintenance: bool
    observation_attributes: tuple[str, ...] | None
    storage_units: StorageUnits | None
    action_mask: bool
    heuristics: Heuristics | None
    action_subset: tuple[int, ...] | None
    safe_mask_rho: float | None

    @property
    def action_kind(self) -> ActionKind:
        """The record of :attr:`action_type` (the parts of its actions)."""
        return ACTION_KINDS[self.action_type]

    @classmethod
    def build(
        cls,
        model: GridModel,
        source: ScenarioSource,
        *,
        backend: str = "lightsim2grid",
        parameters: Parameters | None = None,
        thermal_limits: Sequence[float] | np.ndarray | None = None,
        reward: str | RewardFn | None = None,
        other_rewards: Sequence[str] | dict[str, str | RewardFn] = (),
        opponent: Opponent | None = None,
        max_iter: int | None = None,
        action_type: str = "discrete",
        chunk_size: int | None = None,
        gen_ramp: Sequence[float] | np.ndarray | None = None,
        dispatch_limits: GeneratorLimits | None = None,
        maintenance: bool = True,
        observation_attributes: Sequence[str] | None = None,
        storage_units: StorageUnits | None = None,
        action_mask: bool = False,
        heuristics: Heuristics | None = None,
        action_subset: Sequence[int] | None = None,
        safe_mask_rho: float | None = None,
    ) -> GameConfig:
        """The settings of :class:`~grid_vec.env.grid_env.GridEnv`'s keywords, checked.

        Args:
            model: the compiled grid.
            source: the scenarios (a dataset folder's may name the default reward).
            backend, parameters, opponent, max_iter, action_type, chunk_size,
                dispatch_limits, maintenance, observation_attributes, storage_units,
                action_mask, heuristics, action_subset, safe_mask_rho: see the attributes
                (``parameters`` None: grid2op's defaults).
            thermal_limits: amperes per branch (None: the grid's).
            reward: a reward name, object or callable (None: the dataset's, else
                ``"flat"``).
            other_rewards: a list of reward names, or a dict name -> reward.
            gen_ramp: MW per step per generator, both ways, when ``dispatch_limits`` is None
                (None: 5% of each ``pmax``).

        Returns:
            The checked settings (the opponent bound to the grid's branches).

        Raises:
            TypeError: a setting of the wrong type.
            ValueError: a setting out of its domain (an unknown action type, a limit per
                branch of the wrong shape or not > 0, a mask or subset without a catalog).
        """
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        kind = action_kind(action_type)
        if parameters is None:
            parameters = Parameters()
        elif not isinstance(parameters, Parameters):
            raise TypeError(f"parameters must be a Parameters, got {type(parameters).__name__}")
        if opponent is not None:
            if not isinstance(opponent, Opponent) or type(opponent) is Opponent:
                raise TypeError(
                    "opponent must be a RandomLineOpponent, a WeightedRandomOpponent, a "
                    f"GeometricOpponent or None, got {type(opponent).__name__}"
                )
            opponent.bind(model.branch_names)
        _check_bool(maintenance, "maintenance")
        if dispatch_limits is None:
            dispatch_limits = GeneratorLimits.of_model(model, _check_ramp(gen_ramp, model))
        else:
            _check_type(dispatch_limits, GeneratorLimits, "dispatch_limits")
        if storage_units is not None:
            _check_type(storage_units, StorageUnits, "storage_units")
        _check_bool(action_mask, "action_mask")
        if action_mask and not kind.topology:
            raise ValueError(
                "action_mask needs a catalog of topology actions: action_type "
                f"{names_of(_MASK_KINDS)}, got {action_type!r}"
            )
        if heuristics is not None and not isinstance(heuristics, Heuristics):
            raise TypeError(
                f"heuristics must be a Heuristics or None, got {type(heuristics).__name__}"
            )
        recovers_dispatch = heuristics is not None and heuristics.recover_dispatch
        if recovers_dispatch and REDISPATCH not in kind.controls:
            raise ValueError(
                "heuristics.recover_dispatch needs an action type with redispatch "
                f"({', '.join(repr(k.name) for k in _DISPATCH_KINDS)}), got {action_type!r}"
            )
        if action_subset is not None and not kind.catalog:
            raise ValueError(
                "action_subset needs a catalog of discrete actions: action_type "
                f"{names_of(_CATALOG_KINDS)}, got {action_type!r}"
            )
        if safe_mask_rho is not None:
            if isinstance(safe_mask_rho, bool) or not isinstance(safe_mask_rho, (int, float)):
                raise TypeError(f"safe_mask_rho must be a number or None, got {safe_mask_rho!r}")
            if not (np.isfinite(safe_mask_rho) and safe_mask_rho > 0):
                raise ValueError(f"safe_mask_rho must be finite and > 0, got {safe_mask_rho!r}")
            if not kind.catalog:
                raise ValueError(
                    "safe_mask_rho needs a catalog of discrete actions: action_type "
                    f"{names_of(_CATALOG_KINDS)}, got {action_type!r}"
                )
            safe_mask_rho = float(safe_mask_rho)
        return cls(
            backend=backend,
            parameters=parameters,
            thermal_limit=_check_limits(thermal_limits, model),
            reward_fn=make_reward((dataset_reward(source) or "flat") if reward is None else reward),
            other_rewards=_other_rewards(other_rewards),
            opponent=opponent,
            max_iter=max_iter,
            action_type=action_type,
            chunk_size=chunk_size,
            dispatch_limits=dispatch_limits,
            maintenance=maintenance,
            observation_attributes=(
                None if observation_attributes is None else tuple(observation_attributes)
            ),
            storage_units=storage_units,
            action_mask=action_mask,
            heuristics=heuristics,
            action_subset=None if action_subset is None else tuple(action_subset),
            safe_mask_rho=safe_mask_rho,
        )


def _check_bool(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def _check_type(value: Any, kind: type, name: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")


def _check_limits(limits: Any, model: GridModel) -> np.ndarray:
    if limits is None:
        return np.asarray(model.thermal_limit_a, dtype=np.float64).copy()
    arr = np.asarray(limits, dtype=np.float64)
    if arr.shape != (model.n_branch,):
        raise ValueError(
            f"thermal_limits must have one value per branch ({model.n_branch}), got shape "
            f"{arr.shape}"
        )
    if not np.isfinite(arr).all() or (arr <= 0).any():
        bad = int(np.flatnonzero(~np.isfinite(arr) | (arr <= 0))[0])
        raise ValueError(
            f"thermal_limits must be finite and > 0 amperes; branch {bad} "
            f"({model.branch_names[bad]}) has {arr[bad]}"
        )
    return arr


def _check_ramp(ramp: Any, model: GridModel) -> np.ndarray:
    if ramp is None:
        return 0.05 * np.asarray(model.gen_pmax, dtype=np.float64)
    arr = np.asarray(ramp, dtype=np.float64)
    if arr.shape != (model.n_gen,) or not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(
            f"gen_ramp must be {model.n_gen} finite values >= 0 (MW per step), got {ramp!r}"
        )
    return arr


def _other_rewards(spec: Any) -> dict[str, RewardFn]:
    if isinstance(spec, dict):
        return {str(k): make_reward(v, argument=f"other_rewards[{k!r}]") for k, v in spec.items()}
    if isinstance(spec, str):
        raise TypeError("other_rewards must be a list of names or a dict name -> reward, not a str")
    return {name: make_reward(name, argument="other_rewards") for name in spec}
