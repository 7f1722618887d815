"""Reduced action sets (``action_subset``): action k of the env is catalog action
subset[k] in every path (step, simulate, masks, descriptions, vector envs), and bad subsets
are refused."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.actions import KIND_LINE, KIND_SUB
from grid_vec.env.grid_env import GridEnv


def _subset(case14) -> list[int]:
    catalog = GridEnv(case14, SyntheticSource(case14, seed=0, length=8)).catalog
    lines = np.flatnonzero(catalog.kind == KIND_LINE)[[2, 7, 15]]
    subs = np.flatnonzero(catalog.kind == KIND_SUB)[[0, 3, 9, 30, 60]]
    return [0, *subs.tolist(), *lines.tolist()]


def _env(case14, subset=None, mask=True) -> GridEnv:
    return GridEnv(
        case14,
        SyntheticSource(case14, seed=0, length=60),
        action_mask=mask,
        action_subset=subset,
        other_rewards=["line_margin"],
    )


def test_action_k_plays_catalog_action_subset_k_with_the_mask_sliced(case14):
    subset = _subset(case14)
    small, full = _env(case14, subset), _env(case14)
    assert small.action_space.n == len(subset)
    rng = np.random.default_rng(0)
    played = set()
    for seed in range(6):
        obs, info = small.reset(seed=seed)
        full_obs, full_info = full.reset(seed=seed)
        assert np.array_equal(obs, full_obs)
        assert np.array_equal(info["action_mask"], full_info["action_mask"][subset])
        for _ in range(60):
            k = int(rng.integers(len(subset)))
            sim, sim_full = small.simulate(k), full.simulate(subset[k])
            assert np.array_equal(sim[0], sim_full[0]) and sim[1:3] == sim_full[1:3]
            obs, reward, terminated, truncated, info = small.step(k)
            f_obs, f_reward, f_term, f_trunc, f_info = full.step(subset[k])
            assert np.array_equal(obs, f_obs) and reward == f_reward
            assert (terminated, truncated) == (f_term, f_trunc)
            assert info["is_illegal"] == f_info["is_illegal"]
            assert np.array_equal(info["action_mask"], f_info["action_mask"][subset])
            played.add(k)
            if terminated or truncated:
                break
    assert len(played) == len(subset)  # every action of the subset was played
    assert small.describe_action(1) == full.describe_action(subset[1])


def test_a_vector_env_takes_the_subsets_actions_and_refuses_others(case14):
    subset = [0, 21, 46, 3]
    for vectorization in ("batched", "multiprocess"):
        envs = grid_vec.make_vec(
            "case14", 2, vectorization=vectorization, action_subset=subset, action_mask=True
        )
        try:
            assert envs.single_action_space.n == 4
            envs.reset(seed=0)
            _, _, _, _, infos = envs.step(np.array([1, 3]))
            assert infos["action_mask"].shape == (2, 4)
            with pytest.raises(ValueError):
                envs.step(np.array([4, 0]))
        finally:
            envs.close()


@pytest.mark.parametrize(
    "subset", [[], [3, 0], [0, 5, 5], [0, -1], [0, 10_000], [[0, 1]], [0.0, 1.0]]
)
def test_a_bad_subset_is_refused(case14, subset):
    with pytest.raises(ValueError, match="action_subset"):
        _env(case14, subset)


def test_a_subset_needs_discrete_actions(case14):
    with pytest.raises(ValueError, match="action_subset"):
        GridEnv(
            case14,
            SyntheticSource(case14, seed=0, length=8),
            action_type="redispatch",
            action_subset=[0, 1],
        )
