"""Actions as users hand them to GridEnvs, checked and turned into what the batched core
plays: catalog indices, and redispatch in MW per generator.

One env's action is checked by ``GridEnv``; a batch of them (a vector env's) here, once for
all envs, so that the in-process batched vector env and the workers of GridVecEnv accept and
refuse the same actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


def check_ramp_limits(space: Any, actions: np.ndarray, what: str) -> None:
    """Redispatch MW (one action or a batch) must be finite and within the action space's
    ramp limits, give or take 1e-5 MW.

    Raises:
        ValueError: naming ``what`` (e.g. "redispatch action") and the values.
    """
    if not np.isfinite(actions).all():
        raise ValueError(f"{what} must be finite, got {actions}")
    tol = 1e-5
    if (actions < space.low - tol).any() or (actions > space.high + tol).any():
        raise ValueError(f"{what} outside the ramp limits [{space.low}, {space.high}]: {actions}")


def redispatch_mw(batch: Any, actions: np.ndarray) -> np.ndarray:
    """(k, n_gen) MW from (k, n_redispatchable) redispatch actions of ``batch`` (a
    ``GridBatch``)."""
    mw = np.zeros((len(actions), batch.model.n_gen))
    mw[:, batch.redispatchable] = actions
    return mw


def batch_actions(
    batch: Any, space: spaces.Space, actions: Any
) -> tuple[np.ndarray, np.ndarray | None]:
    """Check the actions of ``k`` envs of ``batch`` (one env's action ``space``: the
    ``Discrete`` catalog or the redispatch ``Box``).

    Args:
        batch: the ``GridBatch`` the envs are rows of.
        space: one env's action space.
        actions: ``k`` ints, or a ``(k, n_redispatchable)`` float array.

    Returns:
        ``(catalog indices, redispatch MW or None)``, as ``GridBatch.step`` takes them.

    Raises:
        ValueError: actions of the wrong shape or type, or outside ``space``.
    """
    arr = np.asarray(actions)
    k = len(arr) if arr.ndim else -1
    if isinstance(space, spaces.Discrete):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be ints in [0, {space.n - 1}], one per env, got {arr.dtype} of "
                f"shape {arr.shape}"
            )
        if k and (arr.min() < 0 or arr.max() >= space.n):
            raise ValueError(f"actions must be ints in [0, {space.n - 1}], got {arr}")
        return arr.astype(np.int64, copy=False), None
    if arr.ndim != 1 + len(space.shape) or arr.shape[1:] != space.shape or arr.dtype.kind != "f":
        raise ValueError(
            f"redispatch actions must be floats of shape (k, {space.shape[0]}), got "
            f"{arr.dtype} of shape {arr.shape}"
        )
    check_ramp_limits(space, arr, "redispatch actions")
    return np.zeros(k, dtype=np.int64), redispatch_mw(batch, arr)
