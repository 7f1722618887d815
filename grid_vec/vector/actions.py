"""Checking a batch of actions and choosing how it travels to the workers.

Every sub-env receives exactly the element that ``gymnasium.vector.utils.iterate`` yields
for it, as under ``AsyncVectorEnv`` (an env may depend on its type: ``time.sleep`` refuses a
``numpy.float32``). The shared block reproduces that element only when the batch is a numpy
array of the space's own dtype, leaf by leaf; any other batch (a list, another dtype, a
space without a fixed layout) travels pickled, one iterated element per sub-env.

When every sub-env is a GridEnv, the whole batch also goes through the GridEnvs' own check
(:func:`grid_env_check`) before anything is sent: a batch that one of them would refuse is
refused whole, whatever its dtype or layout, so no sub-env plays a step of it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, create_shared_memory, iterate

from grid_vec.vector.errors import naming_env
from grid_vec.vector.shared_buffers import LeafActionCheck, flat_leaves, split


def is_custom_space(space: spaces.Space) -> bool:
    """Whether ``space`` is, or holds, a space that gymnasium's vector utilities do not know.

    Such a space (a user's ``Space`` subclass) cannot have shared memory, and its
    ``contains`` is not called on actions: ``AsyncVectorEnv`` never calls it, and a user's
    ``contains`` may refuse what its env accepts.
    """
    if create_shared_memory.dispatch(type(space)) is create_shared_memory.dispatch(object):
        return True
    if isinstance(space, spaces.Dict):
        return any(is_custom_space(sub) for sub in space.spaces.values())
    if isinstance(space, (spaces.Tuple, spaces.OneOf)):
        return any(is_custom_space(sub) for sub in space.spaces)
    if isinstance(space, spaces.Sequence):
        return is_custom_space(space.feature_space)
    if isinstance(space, spaces.Graph):
        return any(is_custom_space(s) for s in (space.node_space, space.edge_space) if s)
    return False


def grid_env_check(env: Any) -> Callable[[Any], Any]:
    """The check a GridEnv's batch makes of a batch of actions for its action space
    (``batch_actions`` of :mod:`grid_vec.env.action_input`, the one the batched vector env
    and a worker's shared batch run), for ``env``, a GridEnv. It raises ``ValueError``."""
    from grid_vec.env.action_input import batch_actions  # loaded already with the env

    return functools.partial(batch_actions, env.batch_row[0])


def _as_handed_over(check: LeafActionCheck, value: Any, arr: np.ndarray) -> bool:
    """Whether the block reproduces the elements AsyncVectorEnv hands over for ``value``
    (checked as ``arr``): a numpy array of the leaf's own dtype and shape."""
    return (
        type(value) is np.ndarray and value.dtype == check.leaf.dtype and value.shape == arr.shape
    )


def _put(view: np.ndarray, arr: np.ndarray, ids: list[int] | None) -> None:
    """Write checked actions to the block's ``view``: every row, or the rows ``ids``."""
    if ids is None:
        view[...] = arr
    else:
        view[ids] = arr


class ActionRouter:
    """Validates batches of actions and writes them to the shared block or returns them.

    Args:
        single_space: the action space of one sub-env.
        num_envs: the number of sub-envs.
        views: the shared block's action arrays, one per flat leaf of ``single_space``
            (empty when the space has no fixed layout: every batch then travels pickled).

    ``env_check`` (None: none) is the sub-envs' own check of a whole batch
    (:func:`grid_env_check`), run before anything else.
    """

    def __init__(self, single_space: spaces.Space, num_envs: int, views: list[np.ndarray]):
        self.space = single_space
        self.num_envs = num_envs
        self.views = views
        self.checks = [LeafActionCheck(leaf) for leaf in flat_leaves(single_space) or []]
        self.single_leaf = len(self.checks) == 1 and self.checks[0].leaf is single_space
        self.custom = is_custom_space(single_space)
        self.batched = batch_space(single_space, num_envs)
        self.env_check: Callable[[Any], Any] | None = None

    def write(self, actions: Any, ids: list[int] | None) -> list[Any] | None:
        """Check a batch of actions; write it to the shared block, or return it per sub-env.

        Args:
            actions: one action per sub-env, batched as in ``action_space``.
            ids: the sub-envs the actions are for (pool mode), or None for all of them.

        Returns:
            None when the actions are in the shared block; else the element for each sub-env
            of ``ids`` (or of all), in order, to send pickled.

        Raises:
            ValueError: an action is outside the space (or refused by ``env_check``: then,
                when one sub-env's action is, its message and ``env_index`` name it), or the
                batch does not hold one action per sub-env.
        """
        if self.env_check is not None:
            try:
                self.env_check(actions)
            except ValueError as exc:
                raise naming_env(exc, range(self.num_envs) if ids is None else ids) from None
        count = self.num_envs if ids is None else len(ids)
        if not self.checks:
            return self._per_env(actions, count)
        if self.single_leaf:  # the hot path of a Box or Discrete action: no list to build
            check = self.checks[0]
            arr = check(actions, count)
            if not _as_handed_over(check, actions, arr):
                return self._iterate(actions, count)
            _put(self.views[0], arr, ids)
            return None
        values = self._split(actions)
        arrays = [check(v, count) for check, v in zip(self.checks, values, strict=True)]
        if not all(
            _as_handed_over(check, v, arr)
            for check, v, arr in zip(self.checks, values, arrays, strict=True)
        ):
            return self._iterate(actions, count)
        for view, arr in zip(self.views, arrays, strict=True):
            _put(view, arr, ids)
        return None

    def _split(self, actions: Any) -> list[Any]:
        try:
            return split(self.space, actions)
        except ValueError as exc:
            raise ValueError(f"actions do not match {self.space}: {exc}") from None

    def _iterate(self, actions: Any, count: int) -> list[Any]:
        """The elements ``iterate`` yields, as AsyncVectorEnv hands them over."""
        batched = self.batched if count == self.num_envs else batch_space(self.space, count)
        per_env = list(iterate(batched, actions))
        if len(per_env) != count:
            raise ValueError(f"expected {count} actions, one per sub-env, got {len(per_env)}")
        return per_env

    def _per_env(self, actions: Any, count: int) -> list[Any]:
        per_env = self._iterate(actions, count)
        if not self.custom:
            for j, action in enumerate(per_env):
                if not self.space.contains(action):
                    raise ValueError(f"action {action!r} for env {j} is outside {self.space}")
        return per_env
