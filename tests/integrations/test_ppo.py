"""The PPO pieces the training examples share (grid_vec.integrations.ppo)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs the sb3 extra (torch)")

from grid_vec.integrations.ppo import advantages, clipped_loss  # noqa: E402


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
