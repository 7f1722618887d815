"""``safe_mask_rho``: ``info["safe_mask"]`` marks the agent actions whose simulated next step
(simulate_candidates from the state returned) is legal, unambiguous, no game over and below
the threshold, at every reset and step, in single and vector envs alike; the simulations
cost the agent no simulate budget and leave the trajectory untouched."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import grid_vec
from grid_vec.core.actions import KIND_SUB
from grid_vec.core.parameters import Parameters

THRESHOLD = 0.9
# substation cooldowns make some actions illegal after a configuration is played
RULES = Parameters(nb_timestep_cooldown_sub=3, max_simulate_per_step=1)


def _expected(env) -> np.ndarray:
    """The mask from first principles: every agent action through simulate_candidates (with a
    budget-free copy of the env's rules)."""
    found = env.unwrapped.simulate_candidates(np.arange(env.action_space.n))
    refused = found.illegal | found.ambiguous | found.terminated
    return ~refused & (found.max_rho < THRESHOLD)


def _env(**kwargs):
    return grid_vec.make("case14", parameters=RULES, safe_mask_rho=THRESHOLD, **kwargs)


def _reference(**kwargs):
    """The same env without the mask and without a simulate limit (to compute it)."""
    return grid_vec.make("case14", parameters=Parameters(nb_timestep_cooldown_sub=3), **kwargs)


def test_the_mask_is_what_simulating_every_action_gives_at_every_step():
    env, ref = _env(), _reference()
    _, info = env.reset(seed=3, options={"scenario_id": 1})
    ref.reset(seed=3, options={"scenario_id": 1})
    sub_action = int(np.flatnonzero(env.unwrapped.catalog.kind == KIND_SUB)[0])
    masks = [info["safe_mask"]]
    np.testing.assert_array_equal(info["safe_mask"], _expected(ref))
    for t, action in enumerate([0, sub_action, 0, 0]):
        _, _, terminated, truncated, info = env.step(action)
        ref.step(action)
        assert not (terminated or truncated)
        np.testing.assert_array_equal(info["safe_mask"], _expected(ref), err_msg=f"step {t}")
        masks.append(info["safe_mask"])
    assert info["safe_mask"].dtype == bool and info["safe_mask"].shape == (env.action_space.n,)
    # the configuration's cooldown makes its substation's actions unsafe (illegal) for a while
    after = masks[2]
    same_sub = env.unwrapped.catalog.target == env.unwrapped.catalog.target[sub_action]
    assert not after[same_sub & (env.unwrapped.catalog.kind == KIND_SUB)].any()
    assert any(m.any() for m in masks) and not all(m.all() for m in masks)


def test_the_mask_spends_no_simulate_budget_and_changes_no_trajectory():
    """max_simulate_per_step=1: the mask's simulations are not the agent's; the agent may still
    simulate once; observations and rewards are bitwise those of an env without the mask."""
    with_mask = _env()
    without = grid_vec.make("case14", parameters=RULES)
    a, _ = with_mask.reset(seed=5, options={"scenario_id": 2})
    b, _ = without.reset(seed=5, options={"scenario_id": 2})
    np.testing.assert_array_equal(a, b)
    sub_action = int(np.flatnonzero(without.unwrapped.catalog.kind == KIND_SUB)[0])
    for action in [0, sub_action, 0, 0, 0]:
        with_mask.unwrapped.simulate(0)  # the agent's one simulate of this step
        a, ra, ta, _, _ = with_mask.step(action)
        b, rb, tb, _, _ = without.step(action)
        np.testing.assert_array_equal(a, b)
        assert (ra, ta) == (rb, tb) and not ta


@pytest.mark.parametrize("vectorization", ["batched", "multiprocess"])
def test_vector_envs_carry_the_single_envs_masks(vectorization):
    n = 3
    batched = grid_vec.make_vec(
        "case14", n, vectorization=vectorization, parameters=RULES, safe_mask_rho=THRESHOLD,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )  # fmt: skip
    singles = [_env() for _ in range(n)]
    _, infos = batched.reset(seed=11)
    for i, env in enumerate(singles):
        _, info = env.reset(seed=11 + i)
        np.testing.assert_array_equal(infos["safe_mask"][i], info["safe_mask"])
    actions = np.array([0, 5, 9])
    for _ in range(3):
        _, _, _, _, infos = batched.step(actions)
        for i, env in enumerate(singles):
            *_, info = env.step(int(actions[i]))
            np.testing.assert_array_equal(infos["safe_mask"][i], info["safe_mask"])
    batched.close()


def test_a_subset_masks_its_own_actions():
    subset = [0, 3, 7, 12]
    env = _env(action_subset=subset)
    _, info = env.reset(seed=0)
    ref = _reference()
    ref.reset(seed=0)
    np.testing.assert_array_equal(info["safe_mask"], _expected(ref)[subset])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"safe_mask_rho": 0.0}, ValueError, "finite and > 0"),
        ({"safe_mask_rho": float("nan")}, ValueError, "finite and > 0"),
        ({"safe_mask_rho": "0.9"}, TypeError, "a number or None"),
        ({"safe_mask_rho": 0.9, "action_type": "redispatch"}, ValueError, "catalog"),
    ],
)
def test_bad_thresholds_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        grid_vec.make("case14", **kwargs)
