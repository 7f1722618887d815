"""Helpers for differential tests: deep equality of vector-env outputs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import Env
from gymnasium.vector import AsyncVectorEnv

from grid_vec.vector import GridVecEnv


@contextlib.contextmanager
def both(
    env_fns: Sequence[Callable[[], Env]], **kwargs: Any
) -> Iterator[tuple[AsyncVectorEnv, GridVecEnv]]:
    """The reference AsyncVectorEnv and a GridVecEnv (two workers) over the same factories."""
    ref = AsyncVectorEnv(env_fns, context="fork", **kwargs)
    ours = GridVecEnv(env_fns, envs_per_worker=2, **kwargs)
    try:
        yield ref, ours
    finally:
        ref.close()
        ours.close()


def assert_same(a: Any, b: Any, where: str = "out") -> None:
    """Equal structure, types, dtypes and values (NaN-free data)."""
    if isinstance(a, dict):
        assert isinstance(b, dict), f"{where}: {type(b)} is not a dict"
        assert set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
        assert len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{where}: {type(b)} is not an array"
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        )
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a.ravel(), b.ravel(), strict=True)):
                assert_same(x, y, f"{where}.flat[{i}]")
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"
