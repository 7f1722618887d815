"""Batched info dicts built in the workers, placed into the vector env's infos by the parent.

gymnasium merges sub-env infos one env at a time in the parent (``VectorEnv._add_info``):
with many envs that serial work dominates. A worker instead merges the infos of its own
contiguous slice of envs (the same ``_add_info`` rules, so the result is identical) and the
parent only copies each slice's arrays into place. When every env of a slice says the same
keys with values of fixed numeric layouts (the usual step), the slice travels as raw records
instead (``InfoSchema``, ``InfoPacker``): no pickling on either side.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from gymnasium.vector.vector_env import VectorEnv

RESTARTED = "worker_restarted"
"""Info key of a sub-env reset by a restart of its crashed worker during a step (its episode
is lost; the step reports it truncated): True, in the batched infos with its ``_`` mask."""


class BatchedInfo(dict):
    """Infos of a worker's whole slice, already in gymnasium's batched form.

    Pickles its numeric arrays as raw bytes and its object arrays as lists: numpy's own array
    pickling costs several microseconds per array, and a slice's infos hold a dozen or more.
    ``numpy_scalars`` names the columns (key paths) batched from numpy float64 or int64
    scalars, which their arrays cannot tell from Python floats and ints: placed into an
    object column (an earlier env's value was an object) they stay numpy scalars, as
    ``_add_info`` keeps them.
    """

    numpy_scalars: frozenset[tuple] = frozenset()

    def __reduce__(self) -> tuple[Any, tuple[list, frozenset]]:
        return _unpack_batched, (_pack(self), self.numpy_scalars)


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


def _unpack_batched(
    packed: list[tuple[Any, str, Any, Any]], numpy_scalars: frozenset
) -> BatchedInfo:
    return _batched(_unpack(packed), numpy_scalars)


def _batched(infos: dict[str, Any], numpy_scalars: frozenset | set) -> BatchedInfo:
    batched = BatchedInfo(infos)
    if numpy_scalars:
        batched.numpy_scalars = frozenset(numpy_scalars)
    return batched


_AMBIGUOUS = (np.float64, np.int64)  # numpy scalar types whose dtype Python's float/int share


class InfoBatch:
    """An object ``VectorEnv._add_info`` can work on, for a batch of ``num_envs`` envs."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


class _Mixed(Exception):
    """A key whose values in a slice are of several kinds."""


def batch_infos(
    infos: dict[int, dict[str, Any]], num_envs: int
) -> BatchedInfo | dict[int, dict[str, Any]]:
    """Merge per-env infos (local index -> info) of a slice of ``num_envs`` envs.

    The result is what ``_add_info`` gives env after env, built key by key: the values of a
    key of one type (arrays: one shape and dtype) fill their column in one assignment.
    When a key's values are of several types, ``_add_info`` casts them to the type of the
    first env that has the key in the *whole* batch, which a slice cannot know: then (and
    when merging fails) ``infos`` come back as they are, for the parent to merge env after
    env.
    """
    numpy_scalars: set[tuple] = set()
    try:
        return _batched(_batch_by_key(infos, num_envs, (), numpy_scalars), numpy_scalars)
    except Exception:
        return infos


def _batch_by_key(
    infos: dict[int, dict[str, Any]], num_envs: int, path: tuple, numpy_scalars: set[tuple]
) -> dict[str, Any]:
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
    batch = InfoBatch(num_envs)
    merged: dict[str, Any] = {}
    for key, (ks, values) in columns.items():
        if key == "final_obs":  # kept as objects, whatever their kind
            for k, value in zip(ks, values, strict=True):
                merged = batch._add_info(merged, {key: value}, k)
            continue
        if len(ks) == num_envs:  # every env of the slice (rows 0 .. num_envs - 1)
            mask = np.ones(num_envs, dtype=np.bool_)
        else:
            mask = np.zeros(num_envs, dtype=np.bool_)
            mask[ks] = True
        column = _column(ks, values, num_envs, (*path, key), numpy_scalars)
        merged[key], merged[f"_{key}"] = column, mask
    return merged


def _column(
    rows: list[int], values: list[Any], num_envs: int, path: tuple, numpy_scalars: set[tuple]
) -> Any:
    """The batched ``values`` (of envs ``rows``) of the key at ``path`` as ``_add_info``
    builds them; raises ``_Mixed`` when they are of several kinds."""
    kinds = set(map(type, values))
    if len(kinds) != 1:
        raise _Mixed
    kind = kinds.pop()
    if kind is dict:
        return _batch_by_key(dict(zip(rows, values, strict=True)), num_envs, path, numpy_scalars)
    every = len(rows) == num_envs  # rows 0 .. num_envs - 1: no gaps to fill
    if kind in (int, float, bool) or issubclass(kind, np.number):
        if kind in _AMBIGUOUS:
            numpy_scalars.add(path)
        if every:
            return np.array(values, dtype=kind)
        array = np.zeros(num_envs, dtype=kind)
        array[rows] = values
        return array
    if kind is np.ndarray:
        first = values[0]
        if any(v.shape != first.shape or v.dtype != first.dtype for v in values):
            raise _Mixed
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
    dst: dict[str, Any], src: dict[str, Any], start: int, num_envs: int, path: tuple = ()
) -> dict[str, Any]:
    """Copy a slice's batched infos ``src`` (its top level a ``BatchedInfo``) into ``dst``
    (``num_envs`` rows) at ``start``; ``path``: the keys of ``src`` within the top level."""
    numpy_scalars = getattr(src, "numpy_scalars", None)
    for key, value in src.items():
        if isinstance(key, str) and key.startswith("_") and key[1:] in src:
            continue  # a mask: copied with its key below
        if isinstance(value, dict) != isinstance(dst.get(key, value), dict):
            raise TypeError(
                f"info key {key!r} holds a dict in some sub-envs and not in others: "
                "GridVecEnv cannot batch it"
            )
        has = src[f"_{key}"]
        rows = slice(start, start + len(has))
        if isinstance(value, dict):
            nested = _batched(value, numpy_scalars) if numpy_scalars else value
            dst[key] = place_infos(dst.get(key, {}), nested, start, num_envs, (*path, key))
        else:
            array = dst.get(key)
            if array is None:
                fill = None if value.dtype == object else 0
                array = np.full((num_envs, *value.shape[1:]), fill, dtype=value.dtype)
            if array.dtype == object and value.dtype != object:
                # an earlier env's value of this key was an object: store objects too
                value = _as_objects(value, numpy=(*path, key) in (numpy_scalars or ()))
            if value.dtype == object and array.dtype != object:
                for k in np.flatnonzero(has):  # objects into a numeric column: env by env
                    array[start + k] = value[k]
            else:
                if array.ndim > value.ndim:  # scalars into array rows: each fills its row
                    value = value.reshape(value.shape + (1,) * (array.ndim - value.ndim))
                if has.all():
                    array[rows] = value
                else:  # only the envs that have the key: the others keep what is there
                    array[rows][has] = value[has]
            dst[key] = array
        mask = dst.get(f"_{key}")
        if mask is None:
            mask = np.zeros(num_envs, dtype=np.bool_)
        mask[rows] |= has
        dst[f"_{key}"] = mask
    return dst


def _env_values(column: np.ndarray, *, numpy: bool) -> list[Any]:
    """The values of a numeric column as the envs gave them: one array per row for array
    values; numpy scalars if ``numpy`` or if the dtype is not one of Python's bool, int and
    float; else Python scalars."""
    if column.ndim > 1:
        return [row.copy() for row in column]
    if not numpy and column.dtype in (np.bool_, np.int64, np.float64):
        return column.tolist()
    return list(column)


def _as_objects(column: np.ndarray, *, numpy: bool) -> np.ndarray:
    """A numeric column as ``_add_info`` stores its values in an object array."""
    objects = np.empty(len(column), dtype=object)
    for i, value in enumerate(_env_values(column, numpy=numpy)):
        objects[i] = value  # one by one: arrays stay single objects
    return objects


def merge_slices(slices: list[tuple[int, Any]], num_envs: int) -> dict[str, Any]:
    """The infos of a whole batch from the infos of its workers' slices, in env order:
    ``(first env id, ColumnBatch | BatchedInfo | {local index: info})`` per slice."""
    if not slices:  # no worker sent infos: the common step of envs whose infos are empty
        return {}
    schema = getattr(slices[0][1], "schema", None)
    if schema is not None and all(getattr(part, "schema", None) is schema for _, part in slices):
        raw = b"".join(part.raw for _, part in slices)
        if len(raw) == num_envs * schema.dtype.itemsize:
            # every slice in one schema: the workers' records, in env order, are every env's
            return schema.unpack(np.frombuffer(raw, schema.dtype))
    batch = InfoBatch(num_envs)
    merged: dict[str, Any] = {}
    for start, part in slices:
        if isinstance(part, ColumnBatch):
            part = part.batched()
        if isinstance(part, BatchedInfo):
            merged = place_infos(merged, part, start, num_envs)
        else:
            for k, info in part.items():
                merged = batch._add_info(merged, info, start + k)
    return merged


def select_envs(src: dict[str, Any], ids: np.ndarray) -> dict[str, Any]:
    """The batched infos of the envs ``ids`` (in that order) from infos batched over every
    env (keys no env of ``ids`` has are kept, their masks all False)."""
    return {
        key: select_envs(value, ids) if isinstance(value, dict) else value[ids]
        for key, value in src.items()
    }


def unbatch_info(src: dict[str, Any], index: int) -> dict[str, Any]:
    """The info of row ``index`` of batched infos (entries whose mask is set)."""
    info: dict[str, Any] = {}
    for key, value in src.items():
        if key.startswith("_") and key[1:] in src:
            continue
        if src[f"_{key}"][index]:
            info[key] = unbatch_info(value, index) if isinstance(value, dict) else value[index]
    return info


# --- fixed-schema infos: the hot path of a step -------------------------------------------
#
# Most envs say the same keys with values of the same kinds at every step (GridEnv: two bools,
# a mask per branch, an int). For such a slice the worker sends raw records instead of a
# pickle: one record per env, laid out by an ``InfoSchema`` that travels once, when it changes.
# Workers' slices are contiguous and in order, so the parent joins the workers' bytes into the
# records of every env and reads each column out once.

_Path = tuple[Hashable, ...]


@dataclass(frozen=True)
class InfoSchema:
    """The keys (nested dicts as paths) of an info and, per leaf, its scalar type or its array
    shape and dtype: the kinds ``_add_info`` batches into a numeric array."""

    groups: tuple[tuple[_Path, frozenset], ...]  # path of each dict (root first) -> its keys
    leaves: tuple[tuple[_Path, type, tuple[int, ...], str], ...]  # path, kind, shape, dtype

    @classmethod
    def of(cls, info: dict[Any, Any]) -> InfoSchema | None:
        """The schema of ``info``, or None when a value has no fixed numeric layout."""
        groups: list[tuple[_Path, frozenset]] = []
        leaves: list[tuple[_Path, type, tuple[int, ...], str]] = []

        def visit(node: dict, path: _Path) -> bool:
            if not node:
                return False  # an empty dict: _add_info batches it to {}, no leaf to hold it
            groups.append((path, frozenset(node)))
            for key, value in node.items():
                kind = type(value)
                if key == "final_obs":
                    return False  # _add_info keeps final observations as objects
                if kind is dict:
                    if not visit(value, (*path, key)):
                        return False
                elif kind in (bool, int, float) or issubclass(kind, np.number):
                    if np.dtype(kind).kind not in "biufc":
                        return False  # e.g. timedelta64: left to _add_info
                    leaves.append(((*path, key), kind, (), np.dtype(kind).str))
                elif kind is np.ndarray and value.dtype.kind in "biufc":
                    leaves.append(((*path, key), kind, value.shape, value.dtype.str))
                else:
                    return False
            return True

        return cls(tuple(groups), tuple(leaves)) if visit(info, ()) else None

    @cached_property
    def dtype(self) -> np.dtype:
        """One record per env: a field per leaf."""
        return np.dtype(
            [(f"f{n}", dtype, shape) for n, (_, _, shape, dtype) in enumerate(self.leaves)]
        )

    def fill(self, records: np.ndarray, infos: list[dict[Any, Any]]) -> bool:
        """Write ``infos`` (one per record) into ``records``; False if one does not fit."""
        root_keys = self.groups[0][1]
        for info in infos:
            if info.keys() != root_keys:
                return False
        for path, keys in self.groups[1:]:
            for info in infos:
                node = _at(info, path)
                if type(node) is not dict or node.keys() != keys:
                    return False
        for n, (path, kind, shape, dtype) in enumerate(self.leaves):
            if len(path) == 1:
                key = path[0]
                values = [info[key] for info in infos]
            else:
                values = [_at(info, path) for info in infos]
            if kind is np.ndarray:
                if not all(
                    type(v) is np.ndarray and v.shape == shape and v.dtype.str == dtype
                    for v in values
                ):
                    return False
            elif set(map(type, values)) != {kind}:
                return False
            try:
                records[f"f{n}"] = values
            except OverflowError:  # an int beyond int64: left to _add_info
                return False
        return True

    def put(self, records: np.ndarray, columns: dict[Any, Any]) -> None:
        """Write batched ``columns`` (one row per record; nested dicts as the paths of this
        schema) into ``records``: a slice's infos kept columns, no info per env between."""
        for n, (path, _, _, _) in enumerate(self.leaves):
            records[f"f{n}"] = _at(columns, path)

    def unpack(self, records: np.ndarray) -> dict[str, Any]:
        """The batched infos (``_add_info``'s form) of ``records``, one row per env."""
        count = len(records)
        infos: dict[Any, Any] = {}
        for n, (path, _, _, _) in enumerate(self.leaves):
            node = infos
            for key in path[:-1]:
                if key not in node:
                    node[key], node[f"_{key}"] = {}, np.ones(count, dtype=np.bool_)
                node = node[key]
            node[path[-1]] = records[f"f{n}"].copy()
            node[f"_{path[-1]}"] = np.ones(count, dtype=np.bool_)
        return infos

    def rows(self, records: np.ndarray) -> list[dict[Any, Any]]:
        """The info of each record as its env gave it (same keys, same value types)."""
        columns = []
        for n, (path, kind, _, _) in enumerate(self.leaves):
            numpy = kind not in (bool, int, float)
            columns.append((path, _env_values(records[f"f{n}"], numpy=numpy)))
        infos: list[dict[Any, Any]] = []
        for i in range(len(records)):
            info: dict[Any, Any] = {}
            for path, values in columns:
                node = info
                for key in path[:-1]:
                    node = node.setdefault(key, {})
                node[path[-1]] = values[i]
            infos.append(info)
        return infos


def _at(info: dict[Any, Any], path: _Path) -> Any:
    for key in path:
        info = info[key]
    return info


class ColumnBatch(NamedTuple):
    """A slice's infos as raw records of ``schema`` (parent side)."""

    schema: InfoSchema
    raw: bytes

    def records(self) -> np.ndarray:
        return np.frombuffer(self.raw, self.schema.dtype)

    def batched(self) -> BatchedInfo:
        numpy_scalars = {path for path, kind, _, _ in self.schema.leaves if kind in _AMBIGUOUS}
        return _batched(
            self.schema.unpack(np.frombuffer(self.raw, self.schema.dtype)), numpy_scalars
        )


class InfoPacker:
    """Worker side: the step infos of a whole slice as raw records when they fit one schema."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.schema: InfoSchema | None = None
        self._records = np.empty(0)

    def pack(self, infos: list[dict[Any, Any]]) -> tuple[InfoSchema | None, bytes] | None:
        """``(schema if new else None, raw records)``, or None when the infos have no common
        fixed schema (then they travel as a pickle)."""
        if len(infos) != self.num_envs or any(type(info) is not dict for info in infos):
            return None
        new = None
        if self.schema is None or not self.schema.fill(self._records, infos):
            new = InfoSchema.of(infos[0])
            if new is None:
                return None
            records = np.empty(self.num_envs, dtype=new.dtype)
            if not new.fill(records, infos):
                return None
            self.schema, self._records = new, records
        return new, self._records.tobytes()
