"""One shared-memory block holding the actions, observations, rewards and flags of every env.

The block is a ``multiprocessing`` ``RawArray``: its backing file in ``/dev/shm`` is unlinked
the moment it is created, so nothing is left there after a close, a crash or a garbage
collection. Spaces made of ``Box``, ``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` leaves
(possibly nested in ``Dict``/``Tuple``) get one array per leaf; any other space returns
``None`` from :func:`flat_leaves` and travels pickled instead.
"""

from __future__ import annotations

import ctypes
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


def _layout(num_envs: int, obs_leaves: list, act_leaves: list) -> tuple[dict[str, list], int]:
    slots: dict[str, list[_Slot]] = {"obs": [], "act": [], "flags": []}
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
    return slots, max(offset, _ALIGN)


class SharedBlock:
    """Typed numpy views over one shared buffer; picklable into a spawned worker.

    ``obs`` and ``act`` hold one array of shape ``(num_envs, *leaf_shape)`` per flat leaf
    (empty when that space takes the pickled path); ``rewards`` (float64), ``terminated`` and
    ``truncated`` (bool) have shape ``(num_envs,)``.
    """

    def __init__(
        self,
        num_envs: int,
        obs_space: spaces.Space | None,
        act_space: spaces.Space | None,
        ctx: Any,
    ) -> None:
        obs_leaves = (flat_leaves(obs_space) or []) if obs_space is not None else []
        act_leaves = (flat_leaves(act_space) or []) if act_space is not None else []
        self._slots, size = _layout(num_envs, obs_leaves, act_leaves)
        self._raw = ctx.RawArray(ctypes.c_uint8, size)
        self._attach()

    def _attach(self) -> None:
        buf = np.frombuffer(self._raw, dtype=np.uint8)

        def view(slot: _Slot) -> np.ndarray:
            nbytes = int(np.prod(slot.shape, dtype=np.int64)) * slot.dtype.itemsize
            chunk = buf[slot.offset : slot.offset + nbytes]
            return chunk.view(slot.dtype).reshape(slot.shape)

        self.obs = [view(s) for s in self._slots["obs"]]
        self.act = [view(s) for s in self._slots["act"]]
        self.rewards, self.terminated, self.truncated = (view(s) for s in self._slots["flags"])

    def __getstate__(self) -> dict[str, Any]:
        return {"_slots": self._slots, "_raw": self._raw}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._attach()


def check_leaf_actions(leaf: spaces.Space, value: Any, count: int) -> np.ndarray:
    """``value`` as an array of ``count`` actions of the flat ``leaf``; ValueError if invalid."""
    arr = np.asarray(value)
    shape = (count, *_leaf_shape(leaf))
    if arr.shape != shape:
        raise ValueError(f"actions for {leaf} must have shape {shape}, got {arr.shape}")
    kind = arr.dtype.kind
    if isinstance(leaf, spaces.Box):
        allowed = "iuf" if leaf.dtype.kind == "f" else "iu"
        if kind not in allowed or not (np.all(arr >= leaf.low) and np.all(arr <= leaf.high)):
            raise ValueError(
                f"actions {arr!r} (dtype {arr.dtype}) are outside {leaf}: "
                f"allowed dtype kinds {allowed!r}, bounds [low, high] without NaN"
            )
        return arr
    if isinstance(leaf, spaces.MultiBinary):
        ok = kind in "iub" and _within(arr, 0, 2)
        allowed_text = "integers 0 or 1"
    else:
        start = leaf.start
        stop = leaf.start + (leaf.n if isinstance(leaf, spaces.Discrete) else leaf.nvec)
        ok = kind in "iu" and _within(arr, start, stop)
        allowed_text = f"integers in [{start}, {stop})"
    if not ok:
        raise ValueError(f"actions {arr!r} (dtype {arr.dtype}) are outside {leaf}: {allowed_text}")
    return arr


def _within(arr: np.ndarray, start: Any, stop: Any) -> bool:
    """All of ``arr`` in ``[start, stop)``; plain Python for the small batches of a step."""
    if arr.size <= 32 and np.ndim(start) == 0 and np.ndim(stop) == 0:
        values = arr.ravel().tolist()
        return not values or (min(values) >= start and max(values) < stop)
    return bool(np.all((arr >= start) & (arr < stop)))
