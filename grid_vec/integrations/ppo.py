"""The pieces of PPO the training examples share (``examples/ppo_task.py``,
``examples/mappo_task.py``): the hyper-parameters, generalised advantage estimation, the
clipped loss, the update step and the learning curve, written once (plain torch; the ``sb3``
extra installs it).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch


def add_ppo_arguments(parser: argparse.ArgumentParser) -> None:
    """PPO's hyper-parameters as command-line options (CleanRL's defaults)."""
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--vf-coef", type=float, default=0.5)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--reward-scale", type=float, default=0.01)


def advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    starts: torch.Tensor,
    next_value: torch.Tensor,
    next_start: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """Generalised advantage estimates of a rollout.

    Args:
        rewards, values: ``(T, n)``, the reward of each step and the value of its state.
        starts: ``(T, n)`` float, 1 where step ``t``'s state began an episode (the previous
            step ended one: no bootstrap across it).
        next_value: ``(n,)`` the value of the state after the rollout.
        next_start: ``(n,)`` float, 1 where that state begins an episode.
        gamma, lam: the discount and GAE's lambda.

    Returns:
        ``(T, n)`` advantages (returns are ``advantages + values``).
    """
    steps = len(rewards)
    out = torch.zeros_like(rewards)
    last = torch.zeros_like(next_value)
    for t in reversed(range(steps)):
        not_done = 1.0 - (next_start if t == steps - 1 else starts[t + 1])
        nxt = next_value if t == steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nxt * not_done - values[t]
        last = delta + gamma * lam * not_done * last
        out[t] = last
    return out


def clipped_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantage: torch.Tensor,
    clip: float,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """PPO's clipped surrogate loss (to minimise), the advantages normalised over the
    minibatch; ``advantage`` broadcasts against the log-probabilities (one per env for
    several agents' actions); ``weight`` (the log-probabilities' shape, 0 or 1) leaves out
    the actions that had no effect (an agent's part the joint action did not play)."""
    adv = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    while adv.dim() < log_prob.dim():
        adv = adv.unsqueeze(-1)
    ratio = (log_prob - old_log_prob).exp()
    loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
    if weight is None:
        return loss.mean()
    return (loss * weight).sum() / weight.sum().clamp(min=1.0)


def update(
    optimizer: torch.optim.Optimizer,
    model: torch.nn.Module,
    policy_loss: torch.Tensor,
    value_loss: torch.Tensor,
    entropy: torch.Tensor,
    args: argparse.Namespace,
) -> None:
    """One gradient step on PPO's loss (``args``: :func:`add_ppo_arguments`'s options)."""
    loss = policy_loss - args.ent_coef * entropy + args.vf_coef * value_loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
    optimizer.step()


class TrainingCurve:
    """The learning curve a training example writes as it goes: one CSV line per rollout
    (wall-clock seconds, decisions, time steps, the episodes ended since the last line and
    their mean time steps survived), echoed on the terminal.

    Args:
        path: the CSV file (overwritten).
    """

    def __init__(self, path: Any) -> None:
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._file.write("seconds,decisions,time_steps,episodes,mean_survival\n")
        self._ended: list[int] = []

    def episode_ended(self, survived: int) -> None:
        """An episode ended after ``survived`` time steps."""
        self._ended.append(int(survived))

    def line(self, seconds: float, decisions: int, time_steps: int) -> None:
        """Write the rollout's line."""
        ended = self._ended
        mean = float(np.mean(ended)) if ended else float("nan")
        self._file.write(f"{seconds:.1f},{decisions},{time_steps},{len(ended)},{mean:.1f}\n")
        self._file.flush()
        print(
            f"{seconds:7.0f}s  decisions {decisions:8d}  time steps {time_steps:9d}  "
            f"episodes {len(ended):4d}  mean survival {mean:7.1f}"
        )
        self._ended = []

    def close(self) -> None:
        self._file.close()
