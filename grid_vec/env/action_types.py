"""The action types' gymnasium face: one record per type in one registry, :data:`ACTION_TYPES`
(``GridEnv(action_type=...)``; ``env.action_kind`` is its env's).

A record (:class:`ActionType`) is the core's record of the type (``kind``, an
:class:`~grid_vec.core.action_kinds.ActionKind`: its name, its words and the parts its
actions have) with the form of its actions, which follows from those parts alone
(:func:`_form_of`): its gymnasium space, the check of one env's action and of a batch of
them (into the :class:`~grid_vec.core.records.ActionBatch` the core plays), an action's
parts (catalog index, general topology action, continuous part) and its do-nothing action.
The forms:

* :class:`CatalogActions`: ``Discrete`` over the topology catalog (``"discrete"``);
* :class:`ContinuousActions`: the ``Box`` of the continuous layout (one control alone, or
  ``"continuous"``: every control);
* :class:`CombinedActions`: ``Dict(topology=Discrete, continuous=Box)`` (``"combined"``);
* :class:`SetBusActions`: ``Dict(set_bus=MultiDiscrete, set_line_status=MultiDiscrete)``,
  grid2op's general topology action, with ``continuous=Box`` when the type has a continuous
  part (``"set_bus"``, ``"set_bus_continuous"``).

The continuous part's layout (bounds, check, split) is :mod:`grid_vec.core.continuous`'s;
the entries the envs call (one env's action, a batch's, a look-ahead's) are
:mod:`grid_vec.env.action_input`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from grid_vec.core.action_kinds import ACTION_KINDS, ActionKind, action_kind
from grid_vec.core.continuous import ContinuousLayout, RefusedActions
from grid_vec.core.records import ActionBatch
from grid_vec.core.state import any_true

if TYPE_CHECKING:
    from grid_vec.core.batch import GridBatch

__all__ = [
    "ACTION_TYPES",
    "SET_BUS_CONTINUOUS_KEYS",
    "SET_BUS_KEYS",
    "ActionParts",
    "ActionType",
    "CatalogActions",
    "CombinedActions",
    "ContinuousActions",
    "SetBusActions",
    "action_type",
    "box",
    "set_bus_space",
]

# the keys of a general topology action (action type "set_bus"), grid2op's
SET_BUS_KEYS = ("set_bus", "set_line_status")
# with the continuous controls in the same step (action type "set_bus_continuous")
SET_BUS_CONTINUOUS_KEYS = (*SET_BUS_KEYS, "continuous")
_SET_BUS_RANGES = {"set_bus": (-1, 2), "set_line_status": (-1, 1)}

# an action's parts: the catalog index, the general topology action (set_bus,
# set_line_status), the continuous action; None where the action type has no such part
ActionParts = tuple[int | None, tuple[Any, Any] | None, Any]


def box(layout: ContinuousLayout) -> spaces.Box:
    """The ``Box`` of a continuous layout (its bounds copied: the space owns them)."""
    return spaces.Box(low=layout.low.copy(), high=layout.high.copy(), dtype=np.float32)


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


@dataclass(frozen=True)
class ActionType:
    """An action type: the core's record of it and the form of its actions (a subclass per
    form; the registry picks it from the parts, :func:`_form_of`).

    Every method takes the env's batched core (``GridBatch``), which holds what a space is
    sized by: ``n_actions`` (the catalog, or its subset), the ``continuous`` layout,
    ``topology.n_elem`` and ``model.n_branch``.

    Args:
        kind: the core's record: name, words, catalog / general topology / continuous parts.
    """

    kind: ActionKind

    @property
    def name(self) -> str:
        """The ``action_type`` a user gives."""
        return self.kind.name

    @property
    def words(self) -> str:
        """What an action of it is, in one line."""
        return self.kind.words

    def space(self, batch: GridBatch) -> spaces.Space:
        """One env's action space."""
        raise NotImplementedError

    def parse_one(self, batch: GridBatch, action: Any) -> ActionBatch:
        """Check one env's action (``GridEnv.step``'s): the batch's form of it, one row.

        Raises:
            ValueError: an action outside the space (:class:`RefusedActions` for values
                outside its bounds).
        """
        raise NotImplementedError

    def parse_batch(self, batch: GridBatch, actions: Any) -> ActionBatch:
        """Check the actions of ``k`` envs (a leading ``k`` axis on every leaf).

        Raises:
            RefusedActions: actions outside the space (naming the rows refused).
            ValueError: actions of the wrong shape, type or keys.
        """
        raise NotImplementedError

    def parts(self, batch: GridBatch, action: Any) -> ActionParts:
        """A checked action's parts: the catalog index (of the whole catalog), the general
        topology action (``set_bus``, ``set_line_status``), the continuous action; None
        where the type has no such part."""
        raise NotImplementedError

    def do_nothing(self, batch: GridBatch) -> Any:
        """The action of the space that changes nothing: catalog action 0, the continuous
        part at every control's do-nothing value (a curtailment left unchanged, not
        curtailed to 0), a general topology action of zeros (every element and status
        unchanged)."""
        raise NotImplementedError


class CatalogActions(ActionType):
    """``Discrete(n_actions)``: an index into the topology catalog (or its subset)."""

    def space(self, batch: GridBatch) -> spaces.Space:
        return spaces.Discrete(batch.n_actions)

    def parse_one(self, batch: GridBatch, action: Any) -> ActionBatch:
        return ActionBatch(np.array([_index(batch.n_actions, action)], dtype=np.int64))

    def parse_batch(self, batch: GridBatch, actions: Any) -> ActionBatch:
        return ActionBatch(_indices(batch.n_actions, actions))

    def parts(self, batch: GridBatch, action: Any) -> ActionParts:
        return batch.catalog_index(action), None, None

    def do_nothing(self, batch: GridBatch) -> Any:
        return np.int64(0)


class ContinuousActions(ActionType):
    """The ``Box`` of the continuous layout: the columns of the type's controls."""

    def space(self, batch: GridBatch) -> spaces.Space:
        return box(batch.continuous)

    def parse_one(self, batch: GridBatch, action: Any) -> ActionBatch:
        return _continuous_one(batch.continuous, action, self.name)

    def parse_batch(self, batch: GridBatch, actions: Any) -> ActionBatch:
        return _continuous_batch(batch.continuous, actions)

    def parts(self, batch: GridBatch, action: Any) -> ActionParts:
        return None, None, action

    def do_nothing(self, batch: GridBatch) -> Any:
        return batch.continuous.do_nothing()


class CombinedActions(ActionType):
    """``Dict(topology=Discrete, continuous=Box)``: a catalog action and a continuous one,
    played in the same step."""

    def space(self, batch: GridBatch) -> spaces.Space:
        return spaces.Dict(
            {"topology": spaces.Discrete(batch.n_actions), "continuous": box(batch.continuous)}
        )

    def parse_one(self, batch: GridBatch, action: Any) -> ActionBatch:
        if not isinstance(action, dict) or set(action) != {"topology", "continuous"}:
            raise ValueError(
                "combined action must be a dict with keys 'topology' (a catalog index) and "
                f"'continuous' (a float array), got {action!r}"
            )
        index = _index(batch.n_actions, action["topology"])
        continuous = _continuous_one(batch.continuous, action["continuous"], "continuous")
        return replace(continuous, topology=np.array([index], dtype=np.int64))

    def parse_batch(self, batch: GridBatch, actions: Any) -> ActionBatch:
        if not isinstance(actions, dict) or set(actions) != {"topology", "continuous"}:
            keys = f" with keys {sorted(actions, key=str)}" if isinstance(actions, dict) else ""
            raise ValueError(
                "combined actions must be a dict with keys 'topology' and 'continuous', got "
                f"{type(actions).__name__}{keys}"
            )
        topology = _indices(batch.n_actions, actions["topology"])
        continuous = _continuous_batch(batch.continuous, actions["continuous"])
        if len(topology) != len(np.asarray(actions["continuous"])):
            raise ValueError("combined actions: as many 'topology' as 'continuous' rows")
        return replace(continuous, topology=topology)

    def parts(self, batch: GridBatch, action: Any) -> ActionParts:
        return batch.catalog_index(action["topology"]), None, action["continuous"]

    def do_nothing(self, batch: GridBatch) -> Any:
        # in the space's key order (gymnasium's Dict sorts its keys)
        return {"continuous": batch.continuous.do_nothing(), "topology": np.int64(0)}


class SetBusActions(ActionType):
    """``Dict(set_bus=MultiDiscrete, set_line_status=MultiDiscrete)``, grid2op's general
    topology action, with ``continuous=Box`` when the type has a continuous part."""

    def space(self, batch: GridBatch) -> spaces.Space:
        return set_bus_space(batch.topology.n_elem, batch.model.n_branch, batch.continuous)

    def parse_one(self, batch: GridBatch, action: Any) -> ActionBatch:
        return _set_bus_actions(_set_bus_sizes(batch), action, None, batch.continuous)

    def parse_batch(self, batch: GridBatch, actions: Any) -> ActionBatch:
        return _set_bus_actions(_set_bus_sizes(batch), actions, -1, batch.continuous)

    def parts(self, batch: GridBatch, action: Any) -> ActionParts:
        return None, (action["set_bus"], action["set_line_status"]), action.get("continuous")

    def do_nothing(self, batch: GridBatch) -> Any:
        # in the space's key order (gymnasium's Dict sorts its keys)
        layout = batch.continuous
        action = {} if layout is None else {"continuous": layout.do_nothing()}
        return {
            **action,
            "set_bus": np.zeros(batch.topology.n_elem, dtype=np.int64),
            "set_line_status": np.zeros(batch.model.n_branch, dtype=np.int64),
        }


def _form_of(kind: ActionKind) -> type[ActionType]:
    """The form of ``kind``'s actions, from its parts: the general topology action (with its
    continuous part, if any), a catalog index (with a continuous part: combined), or the
    continuous part alone.

    Raises:
        ValueError: a kind whose parts no form holds (none, or a catalog index with the
            general topology action).
    """
    if kind.set_bus and kind.catalog:
        raise ValueError(f"action type {kind.name!r}: no form of a catalog and a set_bus part")
    if kind.set_bus:
        return SetBusActions
    if kind.catalog:
        return CombinedActions if kind.continuous else CatalogActions
    if kind.continuous:
        return ContinuousActions
    raise ValueError(f"action type {kind.name!r} has no part: no catalog, set_bus or control")


# the registry: every action type of the core (core/action_kinds.py), in its order, with the
# form of its actions
ACTION_TYPES: dict[str, ActionType] = {
    name: _form_of(kind)(kind) for name, kind in ACTION_KINDS.items()
}


def action_type(name: str) -> ActionType:
    """The record of the action type ``name``.

    Args:
        name: an ``action_type``.

    Returns:
        Its :class:`ActionType`.

    Raises:
        ValueError: an unknown action type (naming the known ones).
    """
    return ACTION_TYPES[action_kind(name).name]


# --- the checks the forms share ----------------------------------------------------------


def _index(n_catalog: int, action: Any) -> int:
    """Check one catalog index (an int, or a 0-d int array) in ``[0, n_catalog)``."""
    if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
        action = int(action)
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise ValueError(f"action must be an int in [0, {n_catalog - 1}], got {action!r}")
    if not 0 <= action < n_catalog:
        raise ValueError(f"action must be an int in [0, {n_catalog - 1}], got {action}")
    return action


def _indices(n_catalog: int, actions: Any) -> np.ndarray:
    """Check ``k`` catalog indices: (k,) int64."""
    arr = np.asarray(actions)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"actions must be ints in [0, {n_catalog - 1}], one per env, got {arr.dtype} of "
            f"shape {arr.shape}"
        )
    # one reduction: a negative index read as unsigned is larger than any catalog
    if any_true(arr.view(arr.dtype.str.replace("i", "u")) >= n_catalog):
        raise RefusedActions(
            f"actions must be ints in [0, {n_catalog - 1}], got {arr}",
            (arr < 0) | (arr >= n_catalog),
        )
    return arr.astype(np.int64, copy=False)


def _continuous_one(layout: ContinuousLayout, action: Any, what: str) -> ActionBatch:
    """Check one continuous action (``what``: its name in the errors)."""
    if not isinstance(action, np.ndarray) or action.dtype.kind != "f":
        raise ValueError(
            f"{what} action must be a float array of shape ({layout.size},), got "
            f"{type(action).__name__} {getattr(action, 'dtype', '')}"
        )
    if action.shape != (layout.size,):
        raise ValueError(f"{what} action must have shape ({layout.size},), got {action.shape}")
    layout.check(action, f"{what} action")
    return ActionBatch(np.zeros(1, dtype=np.int64), **layout.split(action[None]))


def _continuous_batch(layout: ContinuousLayout, actions: Any) -> ActionBatch:
    """Check ``k`` continuous actions, ``(k, size)`` floats."""
    arr = np.asarray(actions)
    if arr.ndim != 2 or arr.shape[1:] != (layout.size,) or arr.dtype.kind != "f":
        raise ValueError(
            f"continuous actions must be floats of shape (k, {layout.size}), got "
            f"{arr.dtype} of shape {arr.shape}"
        )
    layout.check(arr, "continuous actions")
    return ActionBatch(np.zeros(len(arr), dtype=np.int64), **layout.split(arr))


def _set_bus_sizes(batch: GridBatch) -> dict[str, int]:
    """Each key's width in a general topology action."""
    return {"set_bus": batch.topology.n_elem, "set_line_status": batch.model.n_branch}


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
