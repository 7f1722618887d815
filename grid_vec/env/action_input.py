"""Actions as users hand them to GridEnvs, checked against the env's gymnasium action space
and turned into what the batched core plays (:class:`~grid_vec.core.records.ActionBatch`:
catalog indices, redispatch MW and curtailment limits per generator, storage MW per unit).

The action types and the layout of their continuous part (bounds, check, split) are
:mod:`grid_vec.core.continuous`'s; this module builds the ``Box`` on a layout and checks
actions against the spaces. One env's action is checked by ``GridEnv``; a batch of them (a
vector env's) here, once for all envs, so that the in-process batched vector env and the
workers of GridVecEnv accept and refuse the same actions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from gymnasium import spaces

from grid_vec.core.continuous import ACTION_TYPES, ContinuousLayout, RefusedActions
from grid_vec.core.records import ActionBatch

__all__ = [
    "ACTION_TYPES",
    "DECLARES_DO_NOTHING",
    "SET_BUS_CONTINUOUS_KEYS",
    "SET_BUS_KEYS",
    "ActionBatch",
    "RefusedActions",
    "batch_actions",
    "box",
    "do_nothing_action",
    "horizon_actions",
    "one_action",
    "set_bus_space",
]

# the keys of a general topology action (action type "set_bus"), grid2op's
SET_BUS_KEYS = ("set_bus", "set_line_status")
# with the continuous controls in the same step (action type "set_bus_continuous")
SET_BUS_CONTINUOUS_KEYS = (*SET_BUS_KEYS, "continuous")
_SET_BUS_RANGES = {"set_bus": (-1, 2), "set_line_status": (-1, 1)}


def box(layout: ContinuousLayout) -> spaces.Box:
    """The ``Box`` of a continuous layout (its bounds copied: the space owns them)."""
    return spaces.Box(low=layout.low.copy(), high=layout.high.copy(), dtype=np.float32)


DECLARES_DO_NOTHING = "grid_vec.do_nothing_action"
"""The metadata key of an env class whose envs have a ``do_nothing_action`` attribute."""


def do_nothing_action(space: spaces.Space, continuous: ContinuousLayout | None) -> Any:
    """The action of a GridEnv's ``space`` that changes nothing: catalog action 0, the
    continuous part at every control's do-nothing value (a curtailment left unchanged, not
    curtailed to 0), a general topology action of zeros (every element and status
    unchanged).

    Args:
        space: the env's action space (built by this module).
        continuous: the env's continuous layout (None: it has no continuous part).

    Returns:
        An action ``space`` contains.
    """
    if isinstance(space, spaces.Discrete):
        return np.int64(space.start)
    if isinstance(space, spaces.Box):
        assert continuous is not None, "a Box action space has a continuous layout"
        return continuous.do_nothing()
    assert isinstance(space, spaces.Dict), space
    return {
        key: np.int64(part.start)
        if isinstance(part, spaces.Discrete)
        else np.zeros(part.shape, dtype=part.dtype)
        if isinstance(part, spaces.MultiDiscrete)
        else do_nothing_action(part, continuous)
        for key, part in space.items()
    }


def set_bus_space(
    n_elem: int, n_branch: int, continuous: ContinuousLayout | None = None
) -> spaces.Dict:
    """The space of the general topology action: ``set_bus``, a bus bar per element end of
    the topology vector (-1 off, 0 unchanged, 1, 2), and ``set_line_status``, a status per
    branch (-1 off, 0 unchanged, +1 on); with a ``continuous`` layout, its ``Box`` too
    (action type ``"set_bus_continuous"``)."""
    parts: dict[str, spaces.Space] = {
        "set_bus": spaces.MultiDiscrete(np.full(n_elem, 4), start=np.full(n_elem, -1)),
        "set_line_status": spaces.MultiDiscrete(np.full(n_branch, 3), start=np.full(n_branch, -1)),
    }
    if continuous is not None:
        parts["continuous"] = box(continuous)
    return spaces.Dict(parts)


def _set_bus_actions(
    sizes: dict[str, int], actions: Any, k: int | None, continuous: ContinuousLayout | None = None
) -> ActionBatch:
    """Check general topology actions (``sizes``: each key's width; ``k`` not None: a batch
    of rows, None: one env's action, without the row axis), with their continuous part when
    the layout ``continuous`` is given."""
    keys = SET_BUS_KEYS if continuous is None else SET_BUS_CONTINUOUS_KEYS
    if not isinstance(actions, dict) or set(actions) != set(keys):
        given = f" with keys {sorted(actions, key=str)}" if isinstance(actions, dict) else ""
        more = "" if continuous is None else " and 'continuous' (a float array)"
        raise ValueError(
            "set_bus actions must be a dict with keys 'set_bus' (a bus bar per element of the "
            f"topology vector) and 'set_line_status' (a status per branch){more}, got "
            f"{type(actions).__name__}{given}"
        )
    arrays = []
    for key in SET_BUS_KEYS:
        arr = np.asarray(actions[key])
        size = sizes[key]
        shape = (size,) if k is None else (len(arr) if arr.ndim else -1, size)
        if arr.shape != shape or arr.dtype.kind not in "iu" or (k is not None and not len(arr)):
            want = f"({size},)" if k is None else f"(k, {size})"
            raise ValueError(
                f"{key} must be ints of shape {want}, got {arr.dtype} of shape {arr.shape}"
            )
        low, high = _SET_BUS_RANGES[key]
        outside = (arr < low) | (arr > high)
        if outside.any():
            raise RefusedActions(
                f"{key} values must be in [{low}, {high}], got {arr[outside][:5].tolist()}",
                outside[None] if k is None else outside,
            )
        arrays.append(arr.reshape(-1, size).astype(np.int8))
    set_bus, set_status = arrays
    if len(set_bus) != len(set_status):
        raise ValueError("set_bus actions: as many 'set_bus' as 'set_line_status' rows")
    batch = ActionBatch(np.zeros(len(set_bus), dtype=np.int64), set_bus, set_status)
    if continuous is None:
        return batch
    arr = np.asarray(actions["continuous"])
    shape = (continuous.size,) if k is None else (len(set_bus), continuous.size)
    if arr.shape != shape or arr.dtype.kind != "f":
        raise ValueError(
            f"continuous must be floats of shape {shape}, got {arr.dtype} of shape {arr.shape}"
        )
    continuous.check(arr, "continuous actions")
    return replace(batch, **continuous.split(arr.reshape(-1, continuous.size)))


def batch_actions(
    layout: ContinuousLayout | None, space: spaces.Space, actions: Any
) -> ActionBatch:
    """Check the actions of ``k`` envs (one env's action ``space``: the ``Discrete`` catalog,
    a continuous ``Box`` or the combined ``Dict``). The one check of a batch: the batched
    vector env, a GridVecEnv worker's shared batch and GridVecEnv itself (the whole batch,
    before any env steps) run it.

    Args:
        layout: the continuous layout of the envs' batch (``GridBatch.continuous``; None for
            ``"discrete"``).
        space: one env's action space.
        actions: ``k`` ints, a ``(k, size)`` float array, a dict of both (``topology``,
            ``continuous``), or a dict of ``(k, n_elem)`` and ``(k, n_branch)`` ints
            (``set_bus``, ``set_line_status``).

    Returns:
        The actions as ``GridBatch.step`` takes them (agent action indices, redispatch MW,
        curtailment limits, storage MW; None where the action type has no such control).

    Raises:
        RefusedActions: actions outside ``space`` (naming the rows refused).
        ValueError: actions of the wrong shape, type or keys.
    """
    if isinstance(space, spaces.Dict) and set(space.spaces) >= set(SET_BUS_KEYS):
        sizes = {key: space[key].shape[0] for key in SET_BUS_KEYS}
        with_continuous = layout if "continuous" in space.spaces else None
        return _set_bus_actions(sizes, actions, -1, with_continuous)
    if isinstance(space, spaces.Dict):
        if not isinstance(actions, dict) or set(actions) != {"topology", "continuous"}:
            keys = f" with keys {sorted(actions, key=str)}" if isinstance(actions, dict) else ""
            raise ValueError(
                "combined actions must be a dict with keys 'topology' and 'continuous', got "
                f"{type(actions).__name__}{keys}"
            )
        topology = batch_actions(layout, space["topology"], actions["topology"])
        continuous = batch_actions(layout, space["continuous"], actions["continuous"])
        if len(topology.topology) != len(np.asarray(actions["continuous"])):
            raise ValueError("combined actions: as many 'topology' as 'continuous' rows")
        return replace(continuous, topology=topology.topology)
    arr = np.asarray(actions)
    k = len(arr) if arr.ndim else -1
    if isinstance(space, spaces.Discrete):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be ints in [0, {space.n - 1}], one per env, got {arr.dtype} of "
                f"shape {arr.shape}"
            )
        if k and (arr.min() < 0 or arr.max() >= space.n):
            raise RefusedActions(
                f"actions must be ints in [0, {space.n - 1}], got {arr}",
                (arr < 0) | (arr >= space.n),
            )
        return ActionBatch(arr.astype(np.int64, copy=False))
    if arr.ndim != 1 + len(space.shape) or arr.shape[1:] != space.shape or arr.dtype.kind != "f":
        raise ValueError(
            f"continuous actions must be floats of shape (k, {space.shape[0]}), got "
            f"{arr.dtype} of shape {arr.shape}"
        )
    layout.check(arr, "continuous actions")
    return ActionBatch(np.zeros(k, dtype=np.int64), **layout.split(arr))


def horizon_actions(
    layout: ContinuousLayout | None, space: spaces.Space, candidates: Any, horizon: int
) -> list[ActionBatch]:
    """Check ``K`` candidates of a look-ahead of ``horizon`` steps: for one step, ``K``
    actions as :func:`batch_actions` takes them; for more, each leaf with a horizon axis
    after ``K`` (``(K, H)`` ints, ``(K, H, size)`` floats, or a dict of both).

    Args:
        layout: as for :func:`batch_actions`.
        space: one env's action space.
        candidates: the candidates.
        horizon: the steps ahead (an int >= 1).

    Returns:
        Per step, the ``K`` checked actions of that step.

    Raises:
        ValueError: a horizon that is not an int >= 1, candidates without the horizon axis,
            or actions :func:`batch_actions` refuses (naming the step).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be an int >= 1, got {horizon!r}")
    if horizon == 1:
        return [batch_actions(layout, space, candidates)]
    leaves = candidates if isinstance(candidates, dict) else {"": candidates}
    arrays = {key: np.asarray(leaf) for key, leaf in leaves.items()}
    shapes = [a.shape for a in arrays.values()]
    if any(len(shape) < 2 or shape[1] != horizon for shape in shapes):
        raise ValueError(
            f"horizon={horizon} needs candidates shaped (K, {horizon}, ...): each candidate's "
            f"action at each step; got shapes {shapes}"
        )
    steps = []
    for h in range(horizon):
        at = {key: a[:, h] for key, a in arrays.items()}
        try:
            steps.append(
                batch_actions(layout, space, at if isinstance(candidates, dict) else at[""])
            )
        except RefusedActions as exc:  # still naming the candidates refused
            refused = np.zeros(shapes[0][0], dtype=bool)
            refused[list(exc.rows)] = True
            raise RefusedActions(f"step {h + 1} of the horizon: {exc}", refused) from None
        except ValueError as exc:
            raise ValueError(f"step {h + 1} of the horizon: {exc}") from None
    return steps


def one_action(batch: Any, action_type: str, n_catalog: int, action: Any) -> ActionBatch:
    """Check one env's action (``GridEnv.step``'s); the batch's form of it, for one row.

    Raises:
        ValueError: an action outside the env's action space.
    """
    if action_type == "discrete":
        if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            action = int(action)
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action must be an int in [0, {n_catalog - 1}], got {action!r}")
        if not 0 <= action < n_catalog:
            raise ValueError(f"action must be an int in [0, {n_catalog - 1}], got {action}")
        return ActionBatch(np.array([action], dtype=np.int64))
    if action_type == "combined":
        if not isinstance(action, dict) or set(action) != {"topology", "continuous"}:
            raise ValueError(
                "combined action must be a dict with keys 'topology' (a catalog index) and "
                f"'continuous' (a float array), got {action!r}"
            )
        topology = one_action(batch, "discrete", n_catalog, action["topology"])
        continuous = one_action(batch, "continuous", n_catalog, action["continuous"])
        return replace(continuous, topology=topology.topology)
    if action_type in ("set_bus", "set_bus_continuous"):
        sizes = {"set_bus": batch.topology.n_elem, "set_line_status": batch.model.n_branch}
        return _set_bus_actions(sizes, action, None, batch.continuous)
    layout = batch.continuous
    if not isinstance(action, np.ndarray) or action.dtype.kind != "f":
        raise ValueError(
            f"{action_type} action must be a float array of shape ({layout.size},), got "
            f"{type(action).__name__} {getattr(action, 'dtype', '')}"
        )
    if action.shape != (layout.size,):
        raise ValueError(
            f"{action_type} action must have shape ({layout.size},), got {action.shape}"
        )
    layout.check(action, f"{action_type} action")
    return ActionBatch(np.zeros(1, dtype=np.int64), **layout.split(action[None]))
