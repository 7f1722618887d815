"""The pieces of PPO the training examples share (``examples/ppo_task.py``,
``examples/mappo_task.py``, ``examples/sb3_task.py``): the hyper-parameters, generalised
advantage estimation, the clipped loss, the update step, the learning curve and what a Ctrl-C
does (the training so far saved, never lost), written once (plain torch; the ``sb3`` extra
installs it).
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np
import torch

from grid_vec.cli import EXIT_INTERRUPTED  # the status of an interrupted grid-vec command


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
    parser.add_argument(
        "--anneal-lr",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="decay the learning rate linearly to 0 over the training budget (CleanRL's "
        "anneal_lr over its step budget): the last updates move the policy little, so the "
        "policy saved is not caught mid-swing",
    )


def anneal_learning_rate(
    optimizer: torch.optim.Optimizer, args: argparse.Namespace, elapsed: float, budget: float
) -> float:
    """Sets the optimizer's learning rate for the next update: ``args.lr`` scaled by the
    budget left (``--anneal-lr``), else ``args.lr`` unchanged.

    Args:
        optimizer: the optimizer whose parameter groups are set.
        args: :func:`add_ppo_arguments`'s options (``lr``, ``anneal_lr``).
        elapsed: the budget used so far: seconds of training, or decisions played.
        budget: the whole training budget in the same unit (> 0).

    Returns:
        The learning rate set.
    """
    lr = args.lr * max(0.0, 1.0 - elapsed / budget) if args.anneal_lr else args.lr
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr


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
        # flushed: in a log (stdout a file or a pipe) a line only the buffer holds is no news
        print(
            f"{seconds:7.0f}s  decisions {decisions:8d}  time steps {time_steps:9d}  "
            f"episodes {len(ended):4d}  mean survival {mean:7.1f}",
            flush=True,
        )
        self._ended = []

    def close(self) -> None:
        self._file.close()


def score_command(task: str, checkpoint: Any, *options: str) -> str:
    """The ``grid-vec eval`` command line that scores a trained agent's file on its task
    (quoted for a shell: a path may hold spaces)."""
    return shlex.join(["grid-vec", "eval", task, "--agent", str(checkpoint), *options])


class SaveOnInterrupt:
    """What a Ctrl-C does to a training example: the training so far is saved as at the end
    of training, one line on stderr says where and how to score it, and the script exits
    with status :data:`EXIT_INTERRUPTED` (130) without a traceback, instead of losing
    minutes of training to a KeyboardInterrupt.

    Wrap the whole script in it, and set :attr:`save` as soon as there is something to keep:
    a function that writes the checkpoint and returns the end of the line (``"after 512
    decisions (9 s of training): saved ...; score it with: ..."``). Before that, a Ctrl-C says
    that nothing was saved; once the final checkpoint is written, set it to a function that
    only says where that one is.

    Args:
        prog: the script's name, that begins the line.
    """

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.save: Callable[[], str] | None = None

    def __enter__(self) -> SaveOnInterrupt:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None or not issubclass(kind, KeyboardInterrupt):
            return
        if threading.current_thread() is threading.main_thread():
            # a second Ctrl-C must not cut the checkpoint being written short; the process is
            # on its way out, so SIGINT stays ignored until it exits
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        said = "before any training: nothing saved" if self.save is None else self.save()
        sys.stdout.flush()  # the training's last lines before this one
        print(f"{self.prog}: interrupted {said}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED)


def chain_advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    ends: np.ndarray,
    complete: np.ndarray,
    env_ids: np.ndarray,
    gamma: float,
    lam: float,
) -> np.ndarray:
    """Generalised advantage estimates of decisions made in a pool, one chain per env.

    A pool (``send`` / ``recv``) hands out a different set of envs each time, so a rollout
    is a list of decisions, each env's in the order made: each completed decision
    bootstraps from its env's next one, and the last one of each env, whose outcome has
    not come yet, is not scored (it waits for the next rollout).

    Args:
        rewards, values, ends: ``(S,)`` each decision's reward, its state's value and
            whether its episode ended there (no bootstrap across it).
        complete: ``(S,)`` bool, the decisions whose outcome (reward, end) has come.
        env_ids: ``(S,)`` the env of each decision.
        gamma, lam: the discount and GAE's lambda.

    Returns:
        ``(S,)`` advantages (0 for the decisions not complete; returns are advantages +
        values).
    """
    out = np.zeros(len(rewards))
    for env in np.unique(env_ids):
        last, next_value = 0.0, 0.0
        for j in np.flatnonzero(env_ids == env)[::-1].tolist():
            if not complete[j]:  # the env's latest decision: the bootstrap of the one before
                last, next_value = 0.0, float(values[j])
                continue
            going = 0.0 if ends[j] else 1.0
            delta = rewards[j] + gamma * next_value * going - values[j]
            last = delta + gamma * lam * going * last
            out[j], next_value = last, float(values[j])
    return out


class PoolRollout:
    """The decisions PPO makes on a pool (a vector env's ``send`` / ``recv``), in the order
    made: each env's decision waits for the env's next batch, which brings its reward and
    whether its episode ended; the decisions still waiting at the end of a rollout are kept
    for the next one.

    Args:
        num_envs: the pool's envs.
    """

    def __init__(self, num_envs: int) -> None:
        self.waiting = np.full(num_envs, -1, dtype=np.int64)  # each env's open decision
        self._clear()

    def _clear(self) -> None:
        self.chunks: dict[str, list[Any]] = {k: [] for k in _DECISION_FIELDS}
        self.env_ids: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.ends: list[bool] = []
        self.complete: list[bool] = []

    def __len__(self) -> int:
        return len(self.rewards)

    def outcomes(self, env_ids: np.ndarray, rewards: np.ndarray, ends: np.ndarray) -> None:
        """The batch a ``recv`` returned: the outcome of each env's open decision."""
        for env, reward, end in zip(env_ids.tolist(), rewards.tolist(), ends.tolist(), strict=True):
            j = int(self.waiting[env])
            if j >= 0:
                self.rewards[j], self.ends[j], self.complete[j] = reward, bool(end), True

    def decide(self, env_ids: np.ndarray, **decision: Any) -> None:
        """The decisions made for a batch (``obs``, ``mask``, ``action``, ``log_prob``,
        ``value``: tensors with one row per env of ``env_ids``; ``obs`` a dict of them for
        graph observations)."""
        first = len(self)
        for key in _DECISION_FIELDS:
            self.chunks[key].append(decision[key])
        self.env_ids.append(np.asarray(env_ids, dtype=np.int64))
        k = len(env_ids)
        self.rewards += [0.0] * k
        self.ends += [False] * k
        self.complete += [False] * k
        self.waiting[env_ids] = np.arange(first, first + k)

    def complete_count(self) -> int:
        """How many decisions have their outcome."""
        return int(sum(self.complete))

    def batch(self, gamma: float, lam: float) -> dict[str, Any]:
        """The completed decisions as one training batch (``advantage`` and ``returns``
        added), then only the open ones kept, for the next rollout."""
        data = {key: _cat(chunks) for key, chunks in self.chunks.items()}
        env_ids = np.concatenate(self.env_ids)
        complete = np.array(self.complete)
        adv = chain_advantages(
            np.array(self.rewards), data["value"].numpy().astype(np.float64),
            np.array(self.ends), complete, env_ids, gamma, lam,
        )  # fmt: skip
        done = torch.as_tensor(np.flatnonzero(complete))
        out = {key: batch_rows(value, done) for key, value in data.items()}
        out["advantage"] = torch.as_tensor(adv[complete], dtype=torch.float32)
        out["returns"] = out["advantage"] + out["value"]
        open_ = np.flatnonzero(~complete)
        self._clear()
        self.waiting[:] = -1
        if len(open_):
            for key in _DECISION_FIELDS:
                self.chunks[key].append(batch_rows(data[key], torch.as_tensor(open_)))
            self.env_ids.append(env_ids[open_])
            n = len(open_)
            self.rewards, self.ends, self.complete = [0.0] * n, [False] * n, [False] * n
            self.waiting[env_ids[open_]] = np.arange(n)
        return out


_DECISION_FIELDS = ("obs", "mask", "action", "log_prob", "value")


def _cat(chunks: list[Any]) -> Any:
    """Chunks of rows as one batch (per key for graph observations)."""
    if isinstance(chunks[0], dict):
        return {key: torch.cat([c[key] for c in chunks]) for key in chunks[0]}
    return torch.cat(chunks)


def batch_rows(x: Any, idx: torch.Tensor) -> Any:
    """The rows ``idx`` of a batch (per key for graph observations)."""
    return {key: v[idx] for key, v in x.items()} if isinstance(x, dict) else x[idx]
