"""Worker-side info batching: the same result as gymnasium's ``_add_info``, env after env,
for any mix of value kinds, whether a batch's slices travel batched, as raw records or as
they are; and a pickle round trip that gives the same (writable) arrays."""

from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
import pytest
from gymnasium.vector.vector_env import VectorEnv

from grid_vec.vector.infos import (
    BatchedInfo,
    ColumnBatch,
    InfoPacker,
    InfoSchema,
    batch_infos,
    merge_slices,
)

VALUES: list[Any] = [
    1, 2.5, True, None, "text", np.float32(3.1), np.int8(2), np.bool_(True), np.zeros(3),
    np.ones(3, np.float32), np.zeros(2), {}, {"a": 1}, {"a": 2.0, "b": "x"}, (1, 2), [3],
    np.float64(1.7), {"a": 1.5},
]  # fmt: skip


class _Reference:
    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def _reference(infos: dict[int, dict], num_envs: int) -> Any:
    batch, merged = _Reference(num_envs), {}
    try:
        for k in sorted(infos):
            merged = batch._add_info(merged, infos[k], k)
    except Exception as exc:
        return type(exc)
    return merged


def _assert_same(got: Any, want: Any) -> None:
    assert type(got) is type(want) or (type(got) is BatchedInfo and type(want) is dict)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _assert_same(got[key], want[key])
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype == object:
            for a, b in zip(got, want, strict=True):
                assert a is b or (type(a) is type(b) and np.array_equal(a, b))
        else:
            np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def _random_infos(rng: random.Random) -> tuple[dict[int, dict], int]:
    num_envs = rng.randint(1, 6)
    kinds = VALUES[: rng.choice([3, 8, len(VALUES)])]  # sometimes few kinds: uniform columns
    infos = {}
    for k in range(num_envs):
        if rng.random() < 0.2:
            continue  # an env with nothing to say
        keys = rng.sample(["a", "b", "c", "d", "final_obs"], rng.randint(0, 4))
        infos[k] = {key: rng.choice(kinds) for key in keys}
    return infos, num_envs


@pytest.mark.parametrize("seed", range(4))
def test_batch_infos_equals_add_info_env_after_env(seed: int) -> None:
    rng = random.Random(seed)
    batched = 0
    for _ in range(500):
        infos, num_envs = _random_infos(rng)
        want = _reference(infos, num_envs)
        got = batch_infos(infos, num_envs)
        if type(got) is not BatchedInfo:  # mixed kinds: merged env after env by the parent
            assert got is infos
            continue
        batched += 1
        _assert_same(got, want)
        back = pickle.loads(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(back) is BatchedInfo
        _assert_same(back, want)
        _assert_writable(back)
    assert batched > 100  # most slices are batched in the worker


def _dict_and_not(infos: Any) -> bool:
    """Whether a key holds a dict in some of ``infos`` and something else in others."""
    infos = list(infos)
    for key in {key for info in infos for key in info}:
        values = [info[key] for info in infos if key in info]
        nested = [isinstance(v, dict) for v in values]
        if any(nested) and not all(nested):
            return True
        if all(nested) and _dict_and_not(values):
            return True
    return False


def _slice_infos(infos: dict[int, dict], start: int, stop: int, schemas: dict) -> Any:
    """What a worker carrying envs ``start .. stop - 1`` sends: raw records when every env
    of the slice fits one layout, else ``batch_infos``' result."""
    local = {k - start: infos[k] for k in range(start, stop) if k in infos}
    packed = InfoPacker(stop - start).pack(list(local.values()))
    if packed is not None:
        schema, raw = packed
        return ColumnBatch(schemas.setdefault(schema, schema), raw)
    return batch_infos(local, stop - start)


@pytest.mark.parametrize("seed", range(4))
def test_merged_slices_equal_add_info_over_the_whole_batch(seed: int) -> None:
    """A key's type is set by the first env of the whole batch that has it: slices merged in
    the parent give exactly that, whatever kinds each slice holds."""
    rng = random.Random(100 + seed)
    kinds = [VALUES[i] for i in (0, 1, 2, 5, 6, 8, 9, 12, 16, 17)]  # records-friendly kinds
    paths = {"records": 0, "batched": 0, "as is": 0}
    for _ in range(300):
        num_envs = rng.randint(1, 8)
        pool = kinds if rng.random() < 0.8 else VALUES
        keys = rng.sample(["a", "b", "c", "final_obs"], rng.randint(1, 3))
        uniform = {key: rng.choice(pool) for key in keys}
        infos = {}
        for k in range(num_envs):
            if rng.random() < 0.1:
                continue
            infos[k] = {
                key: (value if rng.random() < 0.8 else rng.choice(pool))
                for key, value in uniform.items()
            }
        cuts = sorted(rng.sample(range(1, num_envs), rng.randint(0, num_envs - 1)))
        bounds = list(zip([0, *cuts], [*cuts, num_envs], strict=True))
        schemas: dict[InfoSchema, InfoSchema] = {}
        slices = [(a, _slice_infos(infos, a, b, schemas)) for a, b in bounds]
        for _, part in slices:
            kind = {ColumnBatch: "records", BatchedInfo: "batched"}.get(type(part), "as is")
            paths[kind] += 1
        want = _reference(infos, num_envs)
        if _dict_and_not(infos.values()):
            continue  # gymnasium stores such values under int keys or fails: not a contract
        if isinstance(want, type):  # gymnasium cannot merge them: neither can we
            with pytest.raises((want, TypeError, ValueError)):
                merge_slices(slices, num_envs)
            continue
        _assert_same(merge_slices(slices, num_envs), want)
    assert min(paths.values()) > 20, paths


def _assert_writable(infos: dict) -> None:
    for value in infos.values():
        if isinstance(value, dict):
            _assert_writable(value)
        elif isinstance(value, np.ndarray):
            assert value.flags.writeable


def test_packer_leaves_what_has_no_fixed_layout_to_the_pickled_path():
    packer = InfoPacker(2)
    assert packer.pack([{"a": 1}]) is None  # not the whole slice
    assert packer.pack([{"a": 1}, ["not", "a", "dict"]]) is None
    assert packer.pack([{"a": "text"}, {"a": "text"}]) is None  # no numeric layout
    assert packer.pack([{"a": 1}, {"a": 2.0}]) is None  # two kinds
    schema, raw = packer.pack([{"a": 1, "b": {"c": np.zeros(2)}}, {"a": 2, "b": {"c": np.ones(2)}}])
    assert schema is not None and len(raw) == 2 * schema.dtype.itemsize
    again, _ = packer.pack([{"a": 3, "b": {"c": np.ones(2)}}, {"a": 4, "b": {"c": np.ones(2)}}])
    assert again is None  # same layout: the schema is not sent again
    rows = schema.rows(np.frombuffer(raw, schema.dtype))
    assert type(rows[1]["a"]) is int and rows[1]["b"]["c"].tolist() == [1.0, 1.0]
