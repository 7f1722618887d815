"""Worker-side info batching: the same result as gymnasium's ``_add_info``, env after env,
for any mix of value kinds, and a pickle round trip that gives the same (writable) arrays."""

from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
import pytest
from gymnasium.vector.vector_env import VectorEnv

from grid_vec.vector.infos import BatchedInfo, batch_infos

VALUES: list[Any] = [
    1, 2.5, True, None, "text", np.float32(3), np.int8(2), np.bool_(True), np.zeros(3),
    np.ones(3, np.float32), np.zeros(2), {}, {"a": 1}, {"a": 2.0, "b": "x"}, (1, 2), [3],
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
    for _ in range(500):
        infos, num_envs = _random_infos(rng)
        want = _reference(infos, num_envs)
        if isinstance(want, type):  # _add_info raises: batch_infos raises the same error
            with pytest.raises(want):
                batch_infos(infos, num_envs)
            continue
        got = batch_infos(infos, num_envs)
        _assert_same(got, want)
        back = pickle.loads(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(back) is BatchedInfo
        _assert_same(back, want)
        _assert_writable(back)


def _assert_writable(infos: dict) -> None:
    for value in infos.values():
        if isinstance(value, dict):
            _assert_writable(value)
        elif isinstance(value, np.ndarray):
            assert value.flags.writeable
