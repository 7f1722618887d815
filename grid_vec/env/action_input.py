"""Actions as users hand them to GridEnvs, checked against the env's gymnasium action space
and turned into what the batched core plays (:class:`~grid_vec.core.records.ActionBatch`:
catalog indices, redispatch MW and curtailment limits per generator, storage MW per unit).

Each entry reads the record of the batch's action type (:mod:`grid_vec.env.action_types`:
its space, its checks, its do-nothing action); the layout of the continuous part (bounds,
check, split) is :mod:`grid_vec.core.continuous`'s. One env's action is checked by
``GridEnv``; a batch of them (a vector env's) here, once for all envs, so that the
in-process batched vector env and the workers of GridVecEnv accept and refuse the same
actions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from grid_vec.core.continuous import RefusedActions
from grid_vec.core.records import ActionBatch
from grid_vec.env.action_types import (
    ACTION_TYPES,
    SET_BUS_CONTINUOUS_KEYS,
    SET_BUS_KEYS,
    box,
    set_bus_space,
)

if TYPE_CHECKING:
    from grid_vec.core.batch import GridBatch

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

DECLARES_DO_NOTHING = "grid_vec.do_nothing_action"
"""The metadata key of an env class whose envs have a ``do_nothing_action`` attribute."""


def do_nothing_action(batch: GridBatch) -> Any:
    """The action of the action space of ``batch``'s envs that changes nothing: catalog
    action 0, the continuous part at every control's do-nothing value (a curtailment left
    unchanged, not curtailed to 0), a general topology action of zeros (every element and
    status unchanged).

    Args:
        batch: the envs' batched core (``env.batch_row[0]``).

    Returns:
        An action the envs' space contains.
    """
    return ACTION_TYPES[batch.action_type].do_nothing(batch)


def one_action(batch: GridBatch, action: Any) -> ActionBatch:
    """Check one env's action (``GridEnv.step``'s); the batch's form of it, for one row.

    Args:
        batch: the env's batched core.
        action: an action of the env's space.

    Returns:
        The action as ``GridBatch.step`` takes it (one row).

    Raises:
        ValueError: an action outside the env's action space.
    """
    return ACTION_TYPES[batch.action_type].parse_one(batch, action)


def batch_actions(batch: GridBatch, actions: Any) -> ActionBatch:
    """Check the actions of ``k`` envs of ``batch`` (each of its action type's space: the
    ``Discrete`` catalog, a continuous ``Box``, the combined ``Dict``, the general topology
    action). The one check of a batch: the batched vector env, a GridVecEnv worker's shared
    batch and GridVecEnv itself (the whole batch, before any env steps) run it.

    Args:
        batch: the envs' batched core (its action type, catalog, continuous layout).
        actions: ``k`` ints, a ``(k, size)`` float array, a dict of both (``topology``,
            ``continuous``), or a dict of ``(k, n_elem)`` and ``(k, n_branch)`` ints
            (``set_bus``, ``set_line_status``, and ``continuous`` with
            ``"set_bus_continuous"``).

    Returns:
        The actions as ``GridBatch.step`` takes them (agent action indices, redispatch MW,
        curtailment limits, storage MW; None where the action type has no such control).

    Raises:
        RefusedActions: actions outside the space (naming the rows refused).
        ValueError: actions of the wrong shape, type or keys.
    """
    return ACTION_TYPES[batch.action_type].parse_batch(batch, actions)


def horizon_actions(batch: GridBatch, candidates: Any, horizon: int) -> list[ActionBatch]:
    """Check ``K`` candidates of a look-ahead of ``horizon`` steps: for one step, ``K``
    actions as :func:`batch_actions` takes them; for more, each leaf with a horizon axis
    after ``K`` (``(K, H)`` ints, ``(K, H, size)`` floats, or a dict of both).

    Args:
        batch: as for :func:`batch_actions`.
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
        return [batch_actions(batch, candidates)]
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
            steps.append(batch_actions(batch, at if isinstance(candidates, dict) else at[""]))
        except RefusedActions as exc:  # still naming the candidates refused
            refused = np.zeros(shapes[0][0], dtype=bool)
            refused[list(exc.rows)] = True
            raise RefusedActions(f"step {h + 1} of the horizon: {exc}", refused) from None
        except ValueError as exc:
            raise ValueError(f"step {h + 1} of the horizon: {exc}") from None
    return steps
