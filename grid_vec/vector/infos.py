"""Batched info dicts built in the workers, placed into the vector env's infos by the parent.

gymnasium merges sub-env infos one env at a time in the parent (``VectorEnv._add_info``):
with many envs that serial work dominates. A worker instead merges the infos of its own
contiguous slice of envs (the same ``_add_info`` rules, so the result is identical) and the
parent only copies each slice's arrays into place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector.vector_env import VectorEnv


class BatchedInfo(dict):
    """Infos of a worker's whole slice, already in gymnasium's batched form.

    Pickles its numeric arrays as raw bytes and its object arrays as lists: numpy's own array
    pickling costs several microseconds per array, and a slice's infos hold a dozen or more.
    """

    def __reduce__(self) -> tuple[Any, tuple[list]]:
        return _unpack_batched, (_pack(self),)


_DICT, _OBJECTS, _AS_IS = "dict", "objects", "as-is"  # tags; any other tag is a dtype string


def _pack(infos: dict[str, Any]) -> list[tuple[Any, str, Any, Any]]:
    """``(key, tag, shape, data)`` per entry (bytearrays unpickle writable, without a copy)."""
    packed = []
    for key, value in infos.items():
        if type(value) is dict:
            packed.append((key, _DICT, None, _pack(value)))
        elif type(value) is not np.ndarray:
            packed.append((key, _AS_IS, None, value))
        elif value.dtype.kind in "biufc":
            data = bytearray(np.ascontiguousarray(value))
            packed.append((key, value.dtype.str, value.shape, data))
        elif value.dtype == object and value.ndim == 1:
            packed.append((key, _OBJECTS, None, value.tolist()))
        else:
            packed.append((key, _AS_IS, None, value))
    return packed


def _unpack(packed: list[tuple[Any, str, Any, Any]]) -> dict[str, Any]:
    infos: dict[str, Any] = {}
    for key, tag, shape, data in packed:
        if tag == _DICT:
            infos[key] = _unpack(data)
        elif tag == _AS_IS:
            infos[key] = data
        elif tag == _OBJECTS:
            array = np.empty(len(data), dtype=object)
            for i, item in enumerate(data):  # item by item: sequences stay single objects
                array[i] = item
            infos[key] = array
        else:
            infos[key] = np.frombuffer(data, dtype=tag).reshape(shape)
    return infos


def _unpack_batched(packed: list[tuple[Any, str, Any, Any]]) -> BatchedInfo:
    return BatchedInfo(_unpack(packed))


class _SliceBatch:
    """An object ``VectorEnv._add_info`` can work on, sized to one worker's slice."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def batch_infos(infos: dict[int, dict[str, Any]], num_envs: int) -> BatchedInfo:
    """Merge per-env infos (local index -> info) of a slice of ``num_envs`` envs.

    The result is what ``_add_info`` gives env after env, built key by key: the values of
    a key of one type (arrays: one shape and dtype) fill their column in one assignment;
    other keys go through ``_add_info`` itself. Infos that ``_add_info`` cannot merge are
    merged by it env after env, so that it raises its own error.
    """
    try:
        return _batch_by_key(infos, num_envs)
    except Exception:
        batch = _SliceBatch(num_envs)
        merged: dict[str, Any] = {}
        for k in sorted(infos):
            merged = batch._add_info(merged, infos[k], k)
        return BatchedInfo(merged)


def _batch_by_key(infos: dict[int, dict[str, Any]], num_envs: int) -> BatchedInfo:
    rows = sorted(infos)
    dicts = [infos[k] for k in rows]
    keys = dicts[0].keys() if dicts else {}.keys()
    if all(d.keys() == keys for d in dicts):  # the usual case: every env says the same keys
        columns = {key: (rows, [d[key] for d in dicts]) for key in keys}
    else:
        columns = {}
        for k, d in zip(rows, dicts, strict=True):
            for key, value in d.items():
                ks, values = columns.setdefault(key, ([], []))
                ks.append(k)
                values.append(value)
    batch = _SliceBatch(num_envs)
    merged: dict[str, Any] = {}
    for key, (ks, values) in columns.items():
        array = None if key == "final_obs" else _column(ks, values, num_envs)
        if array is None:
            for k, value in zip(ks, values, strict=True):
                merged = batch._add_info(merged, {key: value}, k)
            continue
        if len(ks) == num_envs:  # every env of the slice (rows 0 .. num_envs - 1)
            mask = np.ones(num_envs, dtype=np.bool_)
        else:
            mask = np.zeros(num_envs, dtype=np.bool_)
            mask[ks] = True
        merged[key], merged[f"_{key}"] = array, mask
    return BatchedInfo(merged)


def _column(rows: list[int], values: list[Any], num_envs: int) -> Any:
    """The batched ``values`` (of envs ``rows``) of one key as ``_add_info`` builds them, or
    None when they are of mixed kinds (left to ``_add_info``)."""
    kinds = set(map(type, values))
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is dict:
        return dict(_batch_by_key(dict(zip(rows, values, strict=True)), num_envs))
    every = len(rows) == num_envs  # rows 0 .. num_envs - 1: no gaps to fill
    if kind in (int, float, bool) or issubclass(kind, np.number):
        if every:
            return np.array(values, dtype=kind)
        array = np.zeros(num_envs, dtype=kind)
        array[rows] = values
        return array
    if kind is np.ndarray:
        first = values[0]
        if any(v.shape != first.shape or v.dtype != first.dtype for v in values):
            return None
        if every:
            return np.stack(values)
        array = np.zeros((num_envs, *first.shape), dtype=first.dtype)
        array[rows] = values
        return array
    array = np.full(num_envs, fill_value=None, dtype=object)
    for k, value in zip(rows, values, strict=True):
        array[k] = value
    return array


def place_infos(
    dst: dict[str, Any], src: dict[str, Any], start: int, num_envs: int
) -> dict[str, Any]:
    """Copy a slice's batched infos ``src`` into ``dst`` (``num_envs`` rows) at ``start``."""
    for key, value in src.items():
        if key.startswith("_") and key[1:] in src:
            continue  # a mask: copied with its key below
        if isinstance(value, dict):
            dst[key] = place_infos(dst.get(key, {}), value, start, num_envs)
        else:
            array = dst.get(key)
            if array is None:
                fill = None if value.dtype == object else 0
                array = np.full((num_envs, *value.shape[1:]), fill, dtype=value.dtype)
            array[start : start + len(value)] = value
            dst[key] = array
        mask = dst.get(f"_{key}")
        if mask is None:
            mask = np.zeros(num_envs, dtype=np.bool_)
        mask[start : start + len(src[f"_{key}"])] = src[f"_{key}"]
        dst[f"_{key}"] = mask
    return dst


def unbatch_info(src: dict[str, Any], index: int) -> dict[str, Any]:
    """The info of row ``index`` of batched infos (entries whose mask is set)."""
    info: dict[str, Any] = {}
    for key, value in src.items():
        if key.startswith("_") and key[1:] in src:
            continue
        if src[f"_{key}"][index]:
            info[key] = unbatch_info(value, index) if isinstance(value, dict) else value[index]
    return info
