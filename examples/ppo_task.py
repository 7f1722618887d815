"""PPO with action masks on a grid_vec task: one file, CleanRL-style, PyTorch on the CPU.

Trains on the task's training scenarios with the batched vector env (every sub-env in one
process: the cheapest per step on a small machine; ``--vectorization multiprocess`` for
GridVecEnv workers), then scores the trained policy on the task's test split with the
Runner (:func:`grid_vec.runner.evaluate.evaluate_task`) beside the do-nothing baseline.

    pip install -e '.[sb3]'      # torch
    python examples/ppo_task.py --task grid_vec/Case14Topology-v0 --minutes 25

What it does, and why:

* the env asks for a decision only when the grid needs one (the task's heuristics), so one
  agent step may cover hundreds of time steps; the return is the task's reward summed;
* illegal actions are masked out of the policy with the env's ``info["action_mask"]``
  (at evaluation the greedy action is taken unmasked, as when the figures of docs/tasks.md were
  measured; the env plays an illegal one as do-nothing. A Runner agent may read the masks:
  give it ``takes_infos = True`` and it is called with the infos);
* the policy starts close to do-nothing (a bias on action 0's logit, ``--noop-bias``): most
  topology actions end an episode quickly, and an agent exploring uniformly would learn
  only from short episodes;
* observations are normalised with running statistics (frozen for evaluation) and the
  rewards scaled by ``--reward-scale``.

Writes ``<out>/curve.csv`` (wall-clock seconds, agent steps, time steps, mean time steps
survived by the training episodes ended since the last line) and ``<out>/result.json`` (the
test scores of PPO and do-nothing, the settings).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import grid_vec
from grid_vec.runner.evaluate import evaluate_task, format_scores


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--minutes", type=float, default=25.0, help="training wall-clock budget")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=64, help="agent steps per env per rollout")
    p.add_argument("--vectorization", default="batched", choices=["batched", "multiprocess"])
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--reward-scale", type=float, default=0.01)
    p.add_argument("--noop-bias", type=float, default=3.0)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--out", default="runs/ppo")
    return p.parse_args()


class RunningNorm:
    """Running mean and variance of observations (Welford, batched)."""

    def __init__(self, size: int) -> None:
        self.mean, self.var, self.count = np.zeros(size), np.ones(size), 1e-4
        self.frozen = False

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if not self.frozen:
            batch_mean, batch_var, n = obs.mean(0), obs.var(0), obs.shape[0]
            delta, total = batch_mean - self.mean, self.count + n
            self.mean = self.mean + delta * n / total
            m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
            self.var, self.count = m2 / total, total
        return np.clip((obs - self.mean) / np.sqrt(self.var + 1e-8), -10, 10).astype(np.float32)


class Agent(nn.Module):
    def __init__(self, n_obs: int, n_actions: int, hidden: int, noop_bias: float) -> None:
        super().__init__()

        def layer(i: int, o: int, std: float = np.sqrt(2)) -> nn.Linear:
            lin = nn.Linear(i, o)
            nn.init.orthogonal_(lin.weight, std)
            nn.init.constant_(lin.bias, 0.0)
            return lin

        body = [layer(n_obs, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh()]
        self.critic = nn.Sequential(*body, layer(hidden, 1, 1.0))
        actor_body = [layer(n_obs, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh()]
        head = layer(hidden, n_actions, 0.01)
        with torch.no_grad():
            head.bias[0] = noop_bias
        self.actor = nn.Sequential(*actor_body, head)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def policy(self, x: torch.Tensor, mask: torch.Tensor | None) -> Categorical:
        logits = self.actor(x)
        if mask is not None:
            logits = logits.masked_fill(~mask, -1e8)
        return Categorical(logits=logits)


class GreedyPolicy:
    """The trained policy as a batched agent of the Runner: argmax of the logits."""

    def __init__(self, agent: Agent, norm: RunningNorm) -> None:
        self.agent, self.norm = agent, norm

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            logits = self.agent.actor(torch.as_tensor(self.norm(np.asarray(obs))))
        return logits.argmax(-1).numpy().astype(np.int64)


def masks_of(infos: dict, n: int, n_actions: int) -> np.ndarray:
    """The action masks of a vector env's infos (all legal where an env gives none)."""
    mask = np.ones((n, n_actions), dtype=bool)
    if "action_mask" in infos:
        present = infos.get("_action_mask", np.ones(n, dtype=bool))
        mask[present] = infos["action_mask"][present]
    return mask


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    envs = grid_vec.make_vec(
        args.task,
        args.num_envs,
        vectorization=args.vectorization,
        autoreset_mode="SameStep",
        split="train",
    )
    n, n_actions = args.num_envs, envs.single_action_space.n
    norm = RunningNorm(envs.single_observation_space.shape[0])
    agent = Agent(norm.mean.size, n_actions, args.hidden, args.noop_bias)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    # each sub-env starts on a random training scenario (seeded): no two play in step
    obs, infos = envs.reset(seed=[int(s) for s in rng.integers(0, 2**31, n)])
    mask = masks_of(infos, n, n_actions)
    done = np.zeros(n, dtype=bool)
    T = args.num_steps
    buf_obs = torch.zeros((T, n, norm.mean.size))
    buf_mask = torch.zeros((T, n, n_actions), dtype=torch.bool)
    buf_act, buf_logp = torch.zeros((T, n), dtype=torch.long), torch.zeros((T, n))
    buf_rew, buf_done, buf_val = torch.zeros((T, n)), torch.zeros((T, n)), torch.zeros((T, n))

    start, agent_steps, time_steps = time.perf_counter(), 0, 0
    survived = np.zeros(n, dtype=np.int64)
    ended: list[int] = []
    curve = open(out / "curve.csv", "w")  # noqa: SIM115 - written through the whole loop
    curve.write("seconds,agent_steps,time_steps,episodes,mean_survival\n")
    budget = args.minutes * 60
    while time.perf_counter() - start < budget:
        for t in range(T):
            x = torch.as_tensor(norm(obs))
            m = torch.as_tensor(mask)
            with torch.no_grad():
                dist = agent.policy(x, m)
                action = dist.sample()
                buf_logp[t], buf_val[t] = dist.log_prob(action), agent.value(x)
            buf_obs[t], buf_mask[t], buf_act[t] = x, m, action
            buf_done[t] = torch.as_tensor(done, dtype=torch.float32)
            obs, reward, terminated, truncated, infos = envs.step(action.numpy())
            skipped = infos.get("skipped_steps", np.zeros(n, dtype=np.int64))
            survived += 1 + skipped
            agent_steps += n
            time_steps += int(n + skipped.sum())
            buf_rew[t] = torch.as_tensor(reward * args.reward_scale, dtype=torch.float32)
            done = terminated | truncated
            for i in np.flatnonzero(done):
                ended.append(int(survived[i]))
                survived[i] = 0
            mask = masks_of(infos, n, n_actions)
        with torch.no_grad():
            next_value = agent.value(torch.as_tensor(norm(obs)))
        # GAE; a finished episode does not bootstrap (its next obs is the reset's)
        adv = torch.zeros((T, n))
        last = torch.zeros(n)
        for t in reversed(range(T)):
            not_done = 1.0 - (
                torch.as_tensor(done, dtype=torch.float32) if t == T - 1 else buf_done[t + 1]
            )
            nxt = next_value if t == T - 1 else buf_val[t + 1]
            delta = buf_rew[t] + args.gamma * nxt * not_done - buf_val[t]
            last = delta + args.gamma * args.gae_lambda * not_done * last
            adv[t] = last
        returns = adv + buf_val
        b_obs, b_mask = buf_obs.reshape(T * n, -1), buf_mask.reshape(T * n, -1)
        b_act, b_logp = buf_act.reshape(-1), buf_logp.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), returns.reshape(-1)
        size = T * n
        mb = size // args.minibatches
        for _ in range(args.epochs):
            order = torch.randperm(size)
            for k in range(0, size, mb):
                idx = order[k : k + mb]
                dist = agent.policy(b_obs[idx], b_mask[idx])
                ratio = (dist.log_prob(b_act[idx]) - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                v_loss = 0.5 * (agent.value(b_obs[idx]) - b_ret[idx]).pow(2).mean()
                loss = pg - args.ent_coef * dist.entropy().mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        seconds = time.perf_counter() - start
        mean = float(np.mean(ended)) if ended else float("nan")
        curve.write(f"{seconds:.1f},{agent_steps},{time_steps},{len(ended)},{mean:.1f}\n")
        curve.flush()
        print(
            f"{seconds:7.0f}s  agent steps {agent_steps:8d}  time steps {time_steps:9d}  "
            f"episodes {len(ended):4d}  mean survival {mean:7.1f}"
        )
        ended = []
    curve.close()
    envs.close()
    train_seconds = time.perf_counter() - start

    norm.frozen = True
    torch.save({"agent": agent.state_dict(), "mean": norm.mean, "var": norm.var}, out / "ppo.pt")
    scores = [
        evaluate_task(
            args.task,
            GreedyPolicy(agent, norm),
            agent_name="ppo",
            split=args.eval_split,
            pbar="auto",
        ),
        evaluate_task(args.task, "do_nothing", split=args.eval_split, pbar="auto"),
    ]
    print(format_scores(scores))
    result = {
        "settings": vars(args),
        "train_seconds": train_seconds,
        "agent_steps": agent_steps,
        "time_steps": time_steps,
        "scores": [s.row() for s in scores],
    }
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
