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
* illegal actions are masked out of the policy with the env's ``info["action_mask"]``, in
  training and at evaluation (the highest logit among the legal actions);
* ``--observation graph`` trains the GNN of :mod:`grid_vec.integrations.torch_policy` on graph
  observations (:mod:`grid_vec.env.graph`) instead of the MLP on the flat vector;
* the policy starts close to do-nothing (a bias on action 0's logit, ``--noop-bias``): most
  topology actions end an episode quickly, and an agent exploring uniformly would learn
  only from short episodes;
* observations are normalised with running statistics (frozen for evaluation) and the
  rewards scaled by ``--reward-scale``.

Writes ``<out>/ppo.pt`` (the trained policy: ``grid-vec eval TASK --agent <out>/ppo.pt``
scores it again, loading it without unpickling), ``<out>/curve.csv`` (wall-clock seconds,
decisions, time steps, mean time steps survived by the training episodes ended since the
last line) and ``<out>/result.json`` (the
test scores of PPO and do-nothing, the settings).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import grid_vec
from grid_vec.integrations.ppo import (
    TrainingCurve,
    add_ppo_arguments,
    advantages,
    clipped_loss,
    update,
)
from grid_vec.integrations.torch_policy import (
    Architecture,
    ObservationNorm,
    TorchPolicy,
    action_masks,
    build_network,
    policy_distribution,
    save_checkpoint,
)
from grid_vec.runner.evaluate import evaluate_task, format_scores


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--minutes", type=float, default=25.0, help="training wall-clock budget")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=64, help="agent steps per env per rollout")
    p.add_argument("--vectorization", default="batched", choices=["batched", "multiprocess"])
    add_ppo_arguments(p)
    p.add_argument("--noop-bias", type=float, default=3.0)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument(
        "--observation",
        default="flat",
        choices=["flat", "graph"],
        help="flat: the MLP on the flat observation; graph: the GNN on graph observations",
    )
    p.add_argument("--rounds", type=int, default=3, help="(graph) rounds of message passing")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--out", default="runs/ppo")
    return p.parse_args()


def stacked(steps: list[Any]) -> Any:
    """The per-step normalised observations of a rollout as one ``(T, n, ...)`` batch."""
    if isinstance(steps[0], dict):
        return {key: torch.stack([x[key] for x in steps]) for key in steps[0]}
    return torch.stack(steps)


def flattened(x: Any) -> Any:
    """``(T, n, ...)`` -> ``(T * n, ...)``, per key for a graph."""
    if isinstance(x, dict):
        return {key: v.reshape(-1, *v.shape[2:]) for key, v in x.items()}
    return x.reshape(-1, *x.shape[2:])


def rows(x: Any, idx: torch.Tensor) -> Any:
    """The rows ``idx`` of a batch (per key for a graph)."""
    return {key: v[idx] for key, v in x.items()} if isinstance(x, dict) else x[idx]


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    # the networks are small and the env steps in this thread: a second torch thread only
    # spins against the env for the machine's cores
    torch.set_num_threads(args.torch_threads)
    envs = grid_vec.make_vec(
        args.task,
        args.num_envs,
        vectorization=args.vectorization,
        autoreset_mode="SameStep",
        split="train",
        observation=args.observation,
    )
    n, n_actions = args.num_envs, envs.single_action_space.n
    norm = ObservationNorm.for_space(envs.single_observation_space)
    arch = Architecture(
        kind="gnn" if args.observation == "graph" else "mlp",
        n_actions=n_actions,
        hidden=args.hidden,
        n_obs=int(np.prod(envs.single_observation_space.shape or (0,))),
        rounds=args.rounds,
        noop_bias=args.noop_bias,
    )
    agent = build_network(arch)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    # each sub-env starts on a random training scenario (seeded): no two play in step
    obs, infos = envs.reset(seed=[int(s) for s in rng.integers(0, 2**31, n)])
    mask = action_masks(infos, n, n_actions)
    done = np.zeros(n, dtype=bool)
    T = args.num_steps
    buf_obs: list[Any] = [None] * T
    buf_mask = torch.zeros((T, n, n_actions), dtype=torch.bool)
    buf_act, buf_logp = torch.zeros((T, n), dtype=torch.long), torch.zeros((T, n))
    buf_rew, buf_done, buf_val = torch.zeros((T, n)), torch.zeros((T, n)), torch.zeros((T, n))

    start, agent_steps, time_steps = time.perf_counter(), 0, 0
    survived = np.zeros(n, dtype=np.int64)
    curve = TrainingCurve(out / "curve.csv")
    budget = args.minutes * 60
    while time.perf_counter() - start < budget:
        for t in range(T):
            x = norm(obs)
            m = torch.as_tensor(mask)
            with torch.no_grad():
                dist = policy_distribution(agent, x, m)
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
                curve.episode_ended(survived[i])
                survived[i] = 0
            mask = action_masks(infos, n, n_actions)
        with torch.no_grad():
            next_value = agent.value(norm(obs))
        # GAE; a finished episode does not bootstrap (its next obs is the reset's)
        adv = advantages(
            buf_rew, buf_val, buf_done, next_value, torch.as_tensor(done, dtype=torch.float32),
            args.gamma, args.gae_lambda,
        )  # fmt: skip
        returns = adv + buf_val
        b_obs, b_mask = flattened(stacked(buf_obs)), buf_mask.reshape(T * n, -1)
        b_act, b_logp = buf_act.reshape(-1), buf_logp.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), returns.reshape(-1)
        size = T * n
        mb = size // args.minibatches
        for _ in range(args.epochs):
            order = torch.randperm(size)
            for k in range(0, size, mb):
                idx = order[k : k + mb]
                dist = policy_distribution(agent, rows(b_obs, idx), b_mask[idx])
                pg = clipped_loss(dist.log_prob(b_act[idx]), b_logp[idx], b_adv[idx], args.clip)
                v_loss = 0.5 * (agent.value(rows(b_obs, idx)) - b_ret[idx]).pow(2).mean()
                update(optimizer, agent, pg, v_loss, dist.entropy().mean(), args)
        curve.line(time.perf_counter() - start, agent_steps, time_steps)
    curve.close()
    envs.close()
    train_seconds = time.perf_counter() - start

    checkpoint = save_checkpoint(
        out / "ppo.pt", agent, arch, norm, task=args.task, observation=args.observation
    )
    print(f"saved {checkpoint}: grid-vec eval {args.task} --agent {checkpoint}")
    scores = [
        evaluate_task(
            args.task,
            TorchPolicy(agent, norm),
            agent_name="ppo-gnn" if args.observation == "graph" else "ppo",
            split=args.eval_split,
            pbar="auto",
            env_kwargs={"observation": args.observation},
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
