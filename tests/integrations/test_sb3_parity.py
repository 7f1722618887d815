"""The adapter step for step against SB3's own SubprocVecEnv and DummyVecEnv."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sb3_envs
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from grid_vec.env.make import env_factory
from grid_vec.vector import GridVecEnv

# before anything that needs stable-baselines3, grid_vec.integrations.sb3 included
pytest.importorskip("stable_baselines3", reason="needs the sb3 extra")

from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from grid_vec.integrations.sb3 import SB3VecEnv

pytestmark = pytest.mark.sb3

SAME, DISABLED = AutoresetMode.SAME_STEP, AutoresetMode.DISABLED


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Equal values through dicts, lists, tuples and arrays (scalar types may differ)."""
    if isinstance(a, dict) or isinstance(b, dict):
        assert isinstance(a, dict) and isinstance(b, dict), path
        assert set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def play(venv, seed: int, actions: np.ndarray, options: Any = None) -> list[tuple]:
    """Everything SB3 sees over a scripted run: reset, then one record per step.

    Records keep the returned objects themselves: a vector env reusing its buffers would
    change earlier records and fail the comparison.
    """
    venv.seed(seed)
    venv.set_options(options)
    records: list[tuple] = [(venv.reset(), list(venv.reset_infos))]
    for a in actions:
        obs, rewards, dones, infos = venv.step(a)
        records.append(
            (obs, rewards.astype(np.float32), dones, list(infos), list(venv.reset_infos))
        )
    venv.close()
    return records


def check_runs(ours: list[tuple], theirs: list[tuple]) -> dict[str, int]:
    """Compare two runs; count the episode ends seen, by kind."""
    ends = {"terminated": 0, "truncated": 0}
    assert len(ours) == len(theirs)
    for t, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
        assert_same(mine, ref, f"record {t}")
        if t:
            for i in np.flatnonzero(ref[2]):
                assert "terminal_observation" in ref[3][i]
                ends["truncated" if ref[3][i]["TimeLimit.truncated"] else "terminated"] += 1
    return ends


def drift_actions(n_envs: int, steps: int = 40) -> np.ndarray:
    return np.random.default_rng(1).integers(0, 2, size=(steps, n_envs))


@pytest.fixture(scope="module")
def drift_reference() -> list[tuple]:
    fns = [sb3_envs.drift_env] * 3
    return play(DummyVecEnv(fns), 11, drift_actions(3))


@pytest.mark.parametrize(
    "build",
    [
        lambda fns: GridVecEnv(fns, autoreset_mode=SAME),
        lambda fns: GridVecEnv(fns, autoreset_mode=DISABLED, envs_per_worker=3),
        lambda fns: SyncVectorEnv(fns, autoreset_mode=SAME),
        lambda fns: SyncVectorEnv(fns, autoreset_mode=DISABLED),
        lambda fns: GridVecEnv(fns, autoreset_mode=DISABLED, copy=False),
        lambda fns: SyncVectorEnv(fns, autoreset_mode=SAME, copy=False),
        lambda fns: AsyncVectorEnv(fns, autoreset_mode=SAME, context="spawn"),
    ],
    ids=[
        "grid-same",
        "grid-disabled",
        "sync-same",
        "sync-disabled",
        "grid-disabled-nocopy",
        "sync-same-nocopy",
        "async-same",
    ],
)
def test_drift_matches_dummy_vec_env(build, drift_reference, no_leftovers):
    fns = [sb3_envs.drift_env] * 3
    ends = check_runs(play(SB3VecEnv(build(fns)), 11, drift_actions(3)), drift_reference)
    assert ends["terminated"] > 2 and ends["truncated"] > 2, ends


def test_drift_matches_subproc_vec_env_with_options(no_leftovers):
    fns = [sb3_envs.drift_env] * 2
    options = [{"start": 1.4}, {}]
    actions = drift_actions(2, 25)
    ours = play(SB3VecEnv(GridVecEnv(fns, autoreset_mode=SAME)), 5, actions, options)
    theirs = play(SubprocVecEnv(fns, start_method="spawn"), 5, actions, options)
    assert ours[0][0][0, 0] == pytest.approx(1.4)
    ends = check_runs(ours, theirs)
    assert ends["terminated"] and ends["truncated"], ends


def test_case14_matches_subproc_vec_env(no_leftovers):
    """GridEnv episodes ending by game over and by max_iter, same seeds and actions."""
    fns = [env_factory("case14", max_iter=12)] * 3
    rng = np.random.default_rng(0)
    actions = np.where(rng.random((30, 3)) < 0.85, 0, rng.integers(1, 126, size=(30, 3)))
    ours = play(SB3VecEnv(GridVecEnv(fns, autoreset_mode=SAME)), 21, actions)
    theirs = play(SubprocVecEnv(fns, start_method="spawn"), 21, actions)
    ends = check_runs(ours, theirs)
    assert ends["terminated"] and ends["truncated"], ends
