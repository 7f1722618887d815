"""The batched core's vector envs (BatchedGridVecEnv, GridVecEnv workers hosting a batch)
against gymnasium's SyncVectorEnv over single GridEnvs: every output equal, step after step;
and scenarios with outages, limits that trip lines. Shared by the batch-equivalence,
action-mask, heuristics and in-place reset tests."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from grid_vec.chronics.outages import Events, MaintenancePlan, outage_window
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.env.make import GridEnvFactory
from grid_vec.vector.batched import BatchedGridVecEnv
from grid_vec.vector.vec_env import GridVecEnv


def factory(model, length: int = 40, source: Any = None, **kwargs: Any) -> GridEnvFactory:
    """One picklable factory of GridEnvs of ``model``, as ``make_vec`` hands it to every env
    (``source``: the scenario source, by default a synthetic one of ``length`` steps)."""
    if source is None:
        source = SyntheticSource(model, seed=0, length=length)
    return GridEnvFactory(model, source, kwargs, EnvSpec("grid_vec/test-case14"))


class OutageSource(SyntheticSource):
    """Synthetic scenarios with planned outages: odd scenarios a maintenance and a hazard
    (as read from files), even ones random maintenance drawn per (seed, scenario)."""

    def info(self, scenario_id):
        # starts late in the evening: the random plan has a day (not the last) to draw on
        return dataclasses.replace(super().info(scenario_id), start=dt.datetime(2019, 1, 7, 23))

    def read(self, scenario_id, start, stop):
        inj = super().read(scenario_id, start, stop)
        if scenario_id % 2 == 0:
            return inj
        n = self.model.n_branch
        one = np.ones(1, dtype=np.int64)
        maintenance = Events((scenario_id % 8) * one, 3 * one, 9 * one)
        hazard = Events(((scenario_id + 3) % 8) * one, 12 * one, 15 * one)
        time, duration, haz = outage_window(maintenance, hazard, n, start, stop)
        return dataclasses.replace(
            inj, maintenance_time=time, maintenance_duration=duration, hazard_duration=haz
        )

    def maintenance_plan(self, scenario_id):
        if scenario_id % 2:
            return None
        return MaintenancePlan(
            np.arange(8), 0.25, 1.0, np.full(12, 0.5), np.full(12, 2), tuple(range(7))
        )


def cascade_limits(model) -> np.ndarray:
    """Limits just above the base flows, some below them: overloads, trips and cascades."""
    env = factory(model)()
    obs, _ = env.reset(seed=0)
    a_or = env.view(obs).a_or.astype(np.float64)
    factors = np.resize([0.97, 1.03, 1.1, 1.25, 5.0], model.n_branch)
    return np.maximum(a_or * factors, 1.0)


def assert_same(a: Any, b: Any, where: str = "", atol: float = 0.0) -> None:
    """Equality of batched outputs (dicts of arrays, masks, object arrays, tuples): exact, or
    floats within ``atol``."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {set(a) ^ set(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}", atol)
        return
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]", atol)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (
        f"{where}: {a.dtype}{a.shape} {b.dtype}{b.shape}"
    )
    if a.dtype == object:
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            if isinstance(x, (dict, np.ndarray)):  # final infos and observations
                assert_same(x, y, where, atol)
            else:
                assert x == y, f"{where}: {x!r} != {y!r}"
    elif atol and a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, atol=atol, rtol=0, err_msg=where)
    else:
        assert np.array_equal(a, b), f"{where}: {a} != {b}"


def vector(kind: str, env_factory: GridEnvFactory, n: int, mode: AutoresetMode) -> Any:
    """``"batched"``: one BatchedGridVecEnv; ``"workers"``: a GridVecEnv of two workers, each
    hosting one batch for its slice of the ``n`` envs."""
    if kind == "batched":
        return BatchedGridVecEnv.from_factory(env_factory, n, autoreset_mode=mode)
    return GridVecEnv([env_factory] * n, envs_per_worker=math.ceil(n / 2), autoreset_mode=mode)


def compare(
    env_factory: GridEnvFactory,
    n: int,
    kind: str,
    mode: AutoresetMode,
    steps: int,
    policy: Callable[..., Any],
    atol: float = 0.0,
) -> tuple[list[dict[str, Any]], int]:
    """Play ``policy(rng, n, vec_env, t) -> actions`` on ``n`` envs of ``env_factory`` in a
    vector env of ``kind`` and in SyncVectorEnv, resetting the ended envs with DISABLED;
    assert every output equal (floats within ``atol``); return the reference's step infos
    and the number of episodes ended."""
    ours = vector(kind, env_factory, n, mode)
    reference = SyncVectorEnv([env_factory] * n, autoreset_mode=mode)
    infos, ends = [], 0
    try:
        out, ref = ours.reset(seed=7), reference.reset(seed=7)
        assert_same(out, ref, "reset", atol)
        rng = np.random.default_rng(n)
        for t in range(steps):
            actions = policy(rng, n, ours, t)
            out, ref = ours.step(actions), reference.step(actions)
            for name, x, y in zip(
                ("obs", "reward", "term", "trunc", "info"), out, ref, strict=True
            ):
                assert_same(x, y, f"step {t} {name}", atol)
            infos.append(ref[4])
            ended = out[2] | out[3]
            ends += int(np.sum(ended))
            if mode == AutoresetMode.DISABLED and ended.any():  # the caller resets
                options = {"reset_mask": ended}
                out, ref = ours.reset(options=options), reference.reset(options=options)
                assert_same(out, ref, f"step {t} reset", atol)
    finally:
        ours.close()
        reference.close()
    return infos, ends
