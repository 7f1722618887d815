"""The PPO pieces the training examples share (grid_vec.integrations.ppo)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

from grid_vec.integrations.ppo import (  # noqa: E402
    PoolRollout,
    add_ppo_arguments,
    advantages,
    anneal_learning_rate,
    chain_advantages,
    clipped_loss,
)


def test_advantages_with_lambda_one_are_discounted_returns_minus_values_within_episodes():
    rng = np.random.default_rng(0)
    t, n, gamma = 7, 3, 0.9
    rewards, values = rng.random((t, n)), rng.random((t, n))
    starts = np.zeros((t, n))
    starts[4, 1] = 1.0  # env 1's episode ends after step 3
    next_value, next_start = rng.random(n), np.array([0.0, 0.0, 1.0])
    adv = advantages(
        *(torch.as_tensor(x) for x in (rewards, values, starts, next_value, next_start)),
        gamma=gamma,
        lam=1.0,
    ).numpy()
    for env in range(n):
        for step in range(t):
            ret, discount = 0.0, 1.0
            for k in range(step, t):
                ret += discount * rewards[k, env]
                discount *= gamma
                ended = next_start[env] if k == t - 1 else starts[k + 1, env]
                if ended:
                    break
            else:
                ret += discount * next_value[env]
            assert adv[step, env] == pytest.approx(ret - values[step, env], rel=1e-9)


def test_clipped_loss_clips_the_ratio_and_broadcasts_one_advantage_over_agents():
    adv = torch.tensor([1.0, -1.0])
    old = torch.zeros((2, 3))
    same = clipped_loss(old, old, adv, clip=0.2)
    assert same.item() == pytest.approx(0.0, abs=1e-6)  # normalised advantages, ratio 1
    far = torch.full((2, 3), 1.0)  # ratio e: clipped to 1.2 for the positive advantage
    loss = clipped_loss(far, old, adv, clip=0.2)
    normalised = (adv - adv.mean()) / (adv.std() + 1e-8)
    expected = torch.max(-normalised[:, None] * np.e, -normalised[:, None] * 1.2).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


def _lockstep_case(seed: int):
    rng = np.random.default_rng(seed)
    t, n = 6, 4
    rewards, values = rng.random((t, n)), rng.random((t, n))
    ends = rng.random((t, n)) < 0.2  # step t ended its env's episode
    next_value = rng.random(n)
    return rewards, values, ends, next_value


def test_chain_advantages_of_lockstep_decisions_equal_the_lockstep_estimates():
    rewards, values, ends, next_value = _lockstep_case(1)
    t, n = rewards.shape
    starts = np.zeros((t, n))
    starts[1:] = ends[:-1]
    expected = advantages(
        *(torch.as_tensor(x) for x in (rewards, values, starts, next_value, ends[-1] * 1.0)),
        gamma=0.9,
        lam=0.8,
    ).numpy()
    # the same decisions as a pool's list: step by step, env by env, then each env's open one
    flat = lambda x: np.concatenate([x.reshape(-1), np.zeros(n)])  # noqa: E731
    got = chain_advantages(
        flat(rewards), np.concatenate([values.reshape(-1), next_value]), flat(ends) > 0,
        np.concatenate([np.ones(t * n, dtype=bool), np.zeros(n, dtype=bool)]),
        np.tile(np.arange(n), t + 1), 0.9, 0.8,
    )  # fmt: skip
    np.testing.assert_allclose(got[: t * n], expected.reshape(-1), rtol=1e-12)
    assert not got[t * n :].any()


def test_pool_rollout_matches_outcomes_to_decisions_and_keeps_the_open_ones():
    rollout = PoolRollout(num_envs=3)

    def decide(ids, value):
        k = len(ids)
        rollout.decide(
            np.array(ids), obs=torch.full((k, 2), float(value)), mask=torch.ones(k, 2, dtype=bool),
            action=torch.zeros(k, dtype=torch.long), log_prob=torch.zeros(k),
            value=torch.full((k,), float(value)),
        )  # fmt: skip

    decide([0, 1, 2], 1.0)  # every env's first decision
    rollout.outcomes(np.array([2, 0]), np.array([5.0, 7.0]), np.array([False, True]))
    decide([2, 0], 2.0)
    rollout.outcomes(np.array([2]), np.array([3.0]), np.array([False]))
    decide([2], 3.0)
    assert rollout.complete_count() == 3
    data = rollout.batch(gamma=1.0, lam=1.0)
    # env 0: 7 then its episode ended; env 2: 5 + 3 + the open decision's value 3
    assert data["advantage"].tolist() == pytest.approx(
        [7.0 - 1.0, 5.0 + 3.0 + 3.0 - 1.0, 3.0 + 3.0 - 2.0]
    )
    assert data["obs"][:, 0].tolist() == [1.0, 1.0, 2.0]
    # the open decisions (env 1's first, env 0's second, env 2's third) wait for their outcomes
    assert len(rollout) == 3 and rollout.complete_count() == 0
    rollout.outcomes(np.array([1]), np.array([4.0]), np.array([True]))
    assert rollout.complete_count() == 1


def test_anneal_learning_rate_decays_linearly_with_the_budget_only_when_asked():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0)
    parser = argparse.ArgumentParser()
    add_ppo_arguments(parser)
    annealed = parser.parse_args(["--lr", "0.4", "--anneal-lr"])
    assert anneal_learning_rate(optimizer, annealed, 0.0, 600.0) == pytest.approx(0.4)
    assert anneal_learning_rate(optimizer, annealed, 150.0, 600.0) == pytest.approx(0.3)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.3)
    # past the budget (the last rollout overruns it): zero, never negative
    assert anneal_learning_rate(optimizer, annealed, 700.0, 600.0) == 0.0
    constant = parser.parse_args(["--lr", "0.4"])
    assert anneal_learning_rate(optimizer, constant, 450.0, 600.0) == pytest.approx(0.4)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.4)
