"""The batched core's vector envs against gymnasium's SyncVectorEnv over single GridEnvs:
every output equal, step after step (shared by the action-mask and heuristics tests)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.env.make import GridEnvFactory
from grid_vec.vector.batched import BatchedGridVecEnv
from grid_vec.vector.vec_env import GridVecEnv


def factory(model, length: int = 40, **kwargs: Any) -> GridEnvFactory:
    """One picklable factory of case14 GridEnvs, as ``make_vec`` hands it to every env."""
    source = SyntheticSource(model, seed=0, length=length)
    return GridEnvFactory(model, source, kwargs, EnvSpec("grid_vec/test-case14"))


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Exact equality of batched outputs (dicts of arrays, masks, object arrays)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {set(a) ^ set(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
        return
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (
        f"{where}: {a.dtype}{a.shape} {b.dtype}{b.shape}"
    )
    if a.dtype == object:
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if isinstance(x, (dict, np.ndarray)):  # final infos and observations
                assert_same(x, y, where)
            else:
                assert x == y, f"{where}: {x!r} != {y!r}"
    else:
        assert np.array_equal(a, b), f"{where}: {a} != {b}"


def compare(
    env_factory: GridEnvFactory,
    n: int,
    kind: str,
    mode: AutoresetMode,
    steps: int,
    policy: Any,
) -> list[dict[str, Any]]:
    """Play ``policy(rng, n) -> actions`` on ``n`` envs of ``env_factory`` in a vector env of
    ``kind`` (``"batched"``, or ``"workers"``: two GridVecEnv workers each hosting a batch)
    and in SyncVectorEnv; assert every output equal; return the reference's step infos."""
    if kind == "batched":
        ours = BatchedGridVecEnv.from_factory(env_factory, n, autoreset_mode=mode)
    else:
        ours = GridVecEnv([env_factory] * n, envs_per_worker=math.ceil(n / 2), autoreset_mode=mode)
    reference = SyncVectorEnv([env_factory] * n, autoreset_mode=mode)
    infos = []
    try:
        out, ref = ours.reset(seed=7), reference.reset(seed=7)
        assert_same(out, ref, "reset")
        rng = np.random.default_rng(n)
        for t in range(steps):
            actions = policy(rng, n)
            out, ref = ours.step(actions), reference.step(actions)
            for name, x, y in zip(
                ("obs", "reward", "term", "trunc", "info"), out, ref, strict=True
            ):
                assert_same(x, y, f"step {t} {name}")
            infos.append(ref[4])
    finally:
        ours.close()
        reference.close()
    return infos
