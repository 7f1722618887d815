"""One shared-memory block holding the actions, observations, rewards and flags of every env.

The block is an anonymous file mapped in every process: a ``memfd`` on Linux (elsewhere a
temporary file unlinked the moment it is created), handed to the workers as a descriptor. It
has no name in ``/dev/shm`` or anywhere else, so nothing is left behind after a close, a crash
or a garbage collection: the memory goes with the last descriptor and mapping.

Spaces made of ``Box``, ``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` leaves
(possibly nested in ``Dict``/``Tuple``) get one array per leaf; any other space returns
``None`` from :func:`flat_leaves` and travels pickled instead.
"""

from __future__ import annotations

import math
import mmap
import os
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

FLAT_LEAF_TYPES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
_ALIGN = 64


def flat_leaves(space: spaces.Space) -> list[spaces.Space] | None:
    """Leaves of ``space`` in traversal order, or None if a leaf has no fixed-size layout."""
    if isinstance(space, FLAT_LEAF_TYPES):
        return [space]
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        subspaces = space.spaces.values() if isinstance(space, spaces.Dict) else space.spaces
        out: list[spaces.Space] = []
        for sub in subspaces:
            leaves = flat_leaves(sub)
            if leaves is None:
                return None
            out.extend(leaves)
        return out
    return None


def split(space: spaces.Space, value: Any) -> list[Any]:
    """The leaf values of one (single or batched) element of ``space``, in leaf order."""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping with keys {list(space.spaces)}, got {value!r}")
        out = []
        for key, sub in space.spaces.items():
            if key not in value:
                raise ValueError(f"missing key {key!r}; expected keys {list(space.spaces)}")
            out.extend(split(sub, value[key]))
        return out
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, Sequence) or len(value) != len(space.spaces):
            raise ValueError(f"expected a sequence of {len(space.spaces)} items, got {value!r}")
        out = []
        for sub, item in zip(space.spaces, value, strict=True):
            out.extend(split(sub, item))
        return out
    return [value]


def join(space: spaces.Space, leaves: list[Any]) -> Any:
    """Rebuild the Dict/Tuple structure of ``space`` around ``leaves`` (inverse of split)."""
    it = iter(leaves)

    def build(sub: spaces.Space) -> Any:
        if isinstance(sub, spaces.Dict):
            return {key: build(s) for key, s in sub.spaces.items()}
        if isinstance(sub, spaces.Tuple):
            return tuple(build(s) for s in sub.spaces)
        return next(it)

    return build(space)


def _leaf_shape(leaf: spaces.Space) -> tuple[int, ...]:
    if isinstance(leaf, spaces.MultiDiscrete):
        return tuple(leaf.nvec.shape)
    return tuple(leaf.shape)


@dataclass(frozen=True)
class _Slot:
    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype


def _layout(
    num_envs: int, obs_leaves: list, act_leaves: list, info_dtype: np.dtype | None
) -> tuple[dict[str, list], int]:
    slots: dict[str, list[_Slot]] = {"obs": [], "act": [], "flags": [], "info": []}
    offset = 0

    def add(group: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        nonlocal offset
        slots[group].append(_Slot(offset, shape, np.dtype(dtype)))
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        offset += -(-nbytes // _ALIGN) * _ALIGN

    for leaf in obs_leaves:
        add("obs", (num_envs, *_leaf_shape(leaf)), leaf.dtype)
    for leaf in act_leaves:
        add("act", (num_envs, *_leaf_shape(leaf)), leaf.dtype)
    add("flags", (num_envs,), np.float64)
    add("flags", (num_envs,), np.bool_)
    add("flags", (num_envs,), np.bool_)
    if info_dtype is not None:
        add("info", (num_envs,), info_dtype)
    return slots, max(offset, _ALIGN)


# descriptors a worker received under other numbers than its parent's (a worker the parent
# did not start itself: a Ray actor, which receives them over a Unix socket), by the parent's
# number: a block or doorbell pickled by the parent maps the worker's own descriptor
_ADOPTED: dict[int, int] = {}


def adopt_descriptors(numbers: dict[int, int]) -> None:
    """Record that the parent's descriptors ``numbers`` (keys) are this process's values.

    Args:
        numbers: the parent's descriptor number -> this process's, for the shared block and
            the doorbell handed over.
    """
    _ADOPTED.update(numbers)


def local_descriptor(fd: int) -> int:
    """This process's descriptor for the parent's ``fd`` (the same number when inherited)."""
    return _ADOPTED.get(fd, fd)


def anonymous_file(size: int) -> int:
    """A descriptor of ``size`` zero bytes that no path names (not inherited by children
    unless handed over explicitly)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("grid_vec_block")
    else:
        fd, path = tempfile.mkstemp(prefix="grid_vec_block_")
        os.unlink(path)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


class SharedBlock:
    """Typed numpy views over one shared buffer.

    ``obs`` and ``act`` hold one array of shape ``(num_envs, *leaf_shape)`` per flat leaf
    (empty when that space takes the pickled path); ``rewards`` (float64), ``terminated`` and
    ``truncated`` (bool) have shape ``(num_envs,)``; ``info`` (None without ``info_dtype``)
    holds one record of ``info_dtype`` per env: the infos of fixed layout, written by the
    workers as they write observations (see :mod:`grid_vec.vector.slice_engine`). ``fd`` is
    the descriptor of the buffer: a pickled block maps it again, so it unpickles only in a
    process that inherited ``fd`` under the same number (a worker, see :mod:`launch`) or
    received it and said under which (:func:`adopt_descriptors`).
    """

    def __init__(
        self,
        num_envs: int,
        obs_space: spaces.Space | None,
        act_space: spaces.Space | None,
        info_dtype: np.dtype | None = None,
    ) -> None:
        obs_leaves = (flat_leaves(obs_space) or []) if obs_space is not None else []
        act_leaves = (flat_leaves(act_space) or []) if act_space is not None else []
        self._slots, self._size = _layout(num_envs, obs_leaves, act_leaves, info_dtype)
        self.fd = anonymous_file(self._size)
        self._attach()

    def _attach(self) -> None:
        weakref.finalize(self, os.close, self.fd)
        buf = np.frombuffer(mmap.mmap(self.fd, self._size), dtype=np.uint8)

        def view(slot: _Slot) -> np.ndarray:
            nbytes = int(np.prod(slot.shape, dtype=np.int64)) * slot.dtype.itemsize
            chunk = buf[slot.offset : slot.offset + nbytes]
            return chunk.view(slot.dtype).reshape(slot.shape)

        self.obs = [view(s) for s in self._slots["obs"]]
        self.act = [view(s) for s in self._slots["act"]]
        self.rewards, self.terminated, self.truncated = (view(s) for s in self._slots["flags"])
        self.info = view(self._slots["info"][0]) if self._slots["info"] else None

    def __getstate__(self) -> dict[str, Any]:
        return {"_slots": self._slots, "_size": self._size, "fd": self.fd}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.fd = local_descriptor(self.fd)
        self._attach()


class LeafActionCheck:
    """Validates batches of actions for one flat leaf space (bounds precomputed once)."""

    def __init__(self, leaf: spaces.Space) -> None:
        if not isinstance(leaf, FLAT_LEAF_TYPES):
            raise TypeError(f"expected one of {FLAT_LEAF_TYPES}, got {leaf}")
        self.leaf = leaf
        self.tail = _leaf_shape(leaf)
        self.is_box = isinstance(leaf, spaces.Box)
        if self.is_box:
            # values outside [low, high] go on to the env, as AsyncVectorEnv sends them (envs
            # commonly clip, and policies sample beyond the bounds); NaN is never an action
            self.kinds = "iuf" if leaf.dtype.kind == "f" else "iu"
            self.allowed = f"dtype kinds {self.kinds!r}, no NaN"
        elif isinstance(leaf, spaces.MultiBinary):
            self.kinds, self.start, self.stop = "iub", 0, 2
            self.allowed = "integers 0 or 1"
        else:
            self.kinds, self.start = "iu", leaf.start
            self.stop = leaf.start + (leaf.n if isinstance(leaf, spaces.Discrete) else leaf.nvec)
            self.allowed = f"integers in [{self.start}, {self.stop})"
        self.scalar_bounds = not self.is_box and np.ndim(self.start) == np.ndim(self.stop) == 0
        if self.scalar_bounds:
            self.start, self.stop = int(self.start), int(self.stop)

    def __call__(self, value: Any, count: int) -> np.ndarray:
        """``value`` as an array of ``count`` actions; ValueError naming what is allowed.

        A flat batch ``(count,)`` for a leaf of one element (a ``Box`` of shape ``(1,)``,
        whose actions AsyncVectorEnv hands over element by element) is checked reshaped: the
        returned array's shape then differs from ``value``'s.
        """
        arr = np.asarray(value)
        shape = (count, *self.tail)
        if arr.shape != shape:
            if not (arr.shape == (count,) and math.prod(self.tail) == 1):
                raise ValueError(
                    f"actions for {self.leaf} must have shape {shape}, got {arr.shape}"
                )
            arr = arr.reshape(shape)
        if arr.dtype.kind not in self.kinds or not self._in_bounds(arr):
            raise ValueError(
                f"actions {arr!r} (dtype {arr.dtype}) are outside {self.leaf}: {self.allowed}"
            )
        return arr

    def _in_bounds(self, arr: np.ndarray) -> bool:
        if self.is_box:
            return arr.dtype.kind != "f" or not np.isnan(arr).any()
        if self.scalar_bounds and arr.size <= 32:  # plain Python is faster on small batches
            values = (arr if arr.ndim == 1 else arr.ravel()).tolist()
            return not values or (min(values) >= self.start and max(values) < self.stop)
        return bool(np.all((arr >= self.start) & (arr < self.stop)))
