"""MAPPO on the multi-agent view of a grid_vec task: one agent per substation, plain PyTorch.

Trains on the task's training scenarios with :func:`grid_vec.marl.vector_env` (N envs of
the agents in one batched core, arrays ``(num_envs, num_agents, ...)``), then scores the
trained agents on the task's test split with the Runner, exactly as the single-agent
examples are scored (:class:`grid_vec.marl.MultiAgentPolicy` plays them on single-agent
GridEnvs), beside do-nothing.

    pip install -e '.[sb3]'      # torch
    python examples/mappo_task.py --task grid_vec/Case14Topology-v0 --minutes 10 --seed 1

What it does, and why (MAPPO as Yu et al. 2022 describe it, for the grid):

* **decentralised actors, one set of weights**: every agent's actor is the same MLP, fed its
  own observation (its substation's elements and flows, :mod:`grid_vec.marl.agents`) and a
  one-hot of its index; its choices (leave the substation as it is, or one of its
  configurations) are masked with the agent's legal choices;
* **a centralised critic**: one value per env, from the global state (the flat
  observation); the reward is shared (the task's), so one advantage serves every agent of
  an env, and each agent's clipped policy loss uses it;
* the env asks for a decision only when the grid needs one (the task's heuristics), and the
  joint action is resolved by the view's rule (at most ``max_sub_changed`` substations act:
  the most loaded);
* each actor starts close to "unchanged" (a bias on choice 0, ``--noop-bias``, 5: with seven
  agents of about twenty choices each, all seven leave their substations as they are at
  about half the decisions at first): topology changes end episodes early, and agents
  exploring uniformly would change substations at every decision.

Writes ``<out>/curve.csv`` (wall-clock seconds, decisions, time steps, mean time steps
survived by the training episodes ended since the last line), ``<out>/mappo.pt`` (the trained
agents and their observation statistics: tensors, numbers and strings, read back without
unpickling; ``python examples/mappo_task.py --score <out>/mappo.pt`` scores them again) and
``<out>/result.json`` (the test scores of MAPPO and do-nothing, the settings). Ctrl-C saves
``<out>/mappo.pt`` as trained so far, prints the command that scores it and exits with status
130 (no traceback).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from grid_vec.integrations.ppo import (
    SaveOnInterrupt,
    TrainingCurve,
    add_ppo_arguments,
    advantages,
    anneal_learning_rate,
    clipped_loss,
    update,
)
from grid_vec.integrations.torch_policy import ObservationNorm
from grid_vec.marl import MultiAgentPolicy, vector_env
from grid_vec.runner.evaluate import evaluate_task, format_scores


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--scope", default="substations")
    p.add_argument("--minutes", type=float, default=10.0, help="training wall-clock budget")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=64, help="decisions per env per rollout")
    add_ppo_arguments(p)
    p.add_argument("--noop-bias", type=float, default=5.0)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument(
        "--loss-on-played",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="leave out of the policy loss the agents' parts the joint action did not play "
        "(deferred or refused)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--out", default="runs/mappo")
    p.add_argument(
        "--score",
        metavar="CHECKPOINT",
        default=None,
        help="score the agents a run of this script saved (<out>/mappo.pt) on --eval-split "
        "instead of training (their task, scope and width are the file's)",
    )
    return p.parse_args()


CHECKPOINT_FORMAT = "mappo_task/1"


def mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
        nn.Linear(hidden, n_out),
    )  # fmt: skip


class Mappo(nn.Module):
    """The shared actor (agent observation + agent one-hot -> choice logits) and the
    centralised critic (state -> value)."""

    def __init__(self, n_obs: int, n_agents: int, n_choices: int, n_state: int, args) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.actor = mlp(n_obs + n_agents, args.hidden, n_choices)
        self.critic = mlp(n_state, 2 * args.hidden, 1)
        with torch.no_grad():  # start close to "unchanged"
            self.actor[-1].weight.mul_(0.01)
            self.actor[-1].bias.zero_()
            self.actor[-1].bias[0] = args.noop_bias

    def distribution(self, obs: torch.Tensor, mask: torch.Tensor) -> Categorical:
        """``obs`` (..., A, W) and ``mask`` (..., A, C): each agent's masked choices."""
        ids = torch.eye(self.n_agents).expand(*obs.shape[:-1], self.n_agents)
        logits = self.actor(torch.cat([obs, ids], dim=-1))
        return Categorical(logits=logits.masked_fill(~mask, -1e9))

    def value(self, state: torch.Tensor) -> torch.Tensor:
        return self.critic(state).squeeze(-1)


class AgentNorm:
    """Running normalisation of the agents' observations (statistics pooled over agents)
    and of the state."""

    def __init__(self, n_obs: int, n_state: int) -> None:
        self.obs = ObservationNorm({"flat": n_obs})
        self.state = ObservationNorm({"flat": n_state})

    def __call__(self, observations: np.ndarray, state: np.ndarray) -> tuple:
        n, a, w = observations.shape
        x = self.obs(observations.reshape(n * a, w)).reshape(n, a, w)
        return x, self.state(state)

    def freeze(self) -> None:
        self.obs.frozen = self.state.frozen = True

    def statistics(self) -> dict[str, Any]:
        """Both statistics as tensors and numbers (for a checkpoint)."""
        return {"obs": self.obs.state(), "state": self.state.state()}

    @classmethod
    def from_statistics(cls, statistics: Any, n_obs: int, n_state: int) -> AgentNorm:
        """The frozen statistics of :meth:`statistics`, checked (ValueError: not so)."""
        if not isinstance(statistics, dict):
            raise ValueError("observation statistics: not a dict")
        norm = cls(n_obs, n_state)
        norm.obs = ObservationNorm.from_state(statistics.get("obs"), {"flat": n_obs})
        norm.state = ObservationNorm.from_state(statistics.get("state"), {"flat": n_state})
        return norm


def main() -> None:
    with SaveOnInterrupt("mappo_task") as interrupt:
        args = parse_args()
        if args.score is not None:
            model, norm, layout = load(Path(args.score), args)
            print(format_scores(score(args, model, norm, layout)))
            return
        train_and_score(args, interrupt)


def agents_env(args: argparse.Namespace, num_envs: int) -> Any:
    """The task's multi-agent vector env of the training scenarios."""
    return vector_env(args.task, num_envs, args.scope, split="train")


def save(path: Path, model: Mappo, norm: AgentNorm, args: argparse.Namespace) -> str:
    """Write the agents and their statistics; the line saying where they are and the command
    that scores them."""
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "task": args.task,
            "scope": args.scope,
            "hidden": args.hidden,
            "network": model.state_dict(),
            "norm": norm.statistics(),
        },
        path,
    )
    # the split this script scores on (--score's default is the test split too)
    split = () if args.eval_split == "test" else ("--eval-split", args.eval_split)
    command = shlex.join(["python", sys.argv[0], "--score", str(path), *split])
    return f"saved {path}; score it with: {command}"


def load(path: Path, args: argparse.Namespace) -> tuple[Mappo, AgentNorm, Any]:
    """The agents of a checkpoint :func:`save` wrote (``args`` takes its task, scope and
    width); exits with one line when the file is not one."""
    try:
        # tensors, numbers and strings only: weights_only unpickles no object
        checkpoint = torch.load(path, weights_only=True)
    except (OSError, RuntimeError) as exc:  # missing, or not a torch file
        raise SystemExit(f"--score {path}: {exc}") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise SystemExit(f"--score {path}: not a checkpoint of mappo_task.py")
    args.task, args.scope, args.hidden = (checkpoint[k] for k in ("task", "scope", "hidden"))
    envs = agents_env(args, 1)
    layout = envs.layout
    n_state = int(np.prod(envs.vec_env.single_observation_space.shape))
    envs.close()
    model = Mappo(
        layout.observation_size, layout.num_agents, int(layout.n_choices.max()), n_state, args
    )
    try:
        model.load_state_dict(checkpoint["network"])
        norm = AgentNorm.from_statistics(checkpoint["norm"], layout.observation_size, n_state)
    except (KeyError, RuntimeError, ValueError) as exc:  # another layout, damaged statistics
        raise SystemExit(f"--score {path}: {exc}") from None
    return model, norm, layout


def score(args: argparse.Namespace, model: Mappo, norm: AgentNorm, layout: Any) -> list[Any]:
    """The scores of the agents (greedy choices, statistics frozen) and of do-nothing on
    ``--eval-split``."""
    norm.freeze()

    def greedy(observations: np.ndarray, masks: np.ndarray, state: np.ndarray) -> np.ndarray:
        x, _ = norm(observations, state)
        with torch.no_grad():
            return model.distribution(x, torch.as_tensor(masks)).probs.argmax(-1).numpy()

    policy = MultiAgentPolicy(layout, greedy)
    return [
        evaluate_task(
            args.task,
            policy,
            agent_name="mappo",
            split=args.eval_split,
            env_kwargs=policy.env_kwargs,
            pbar="auto",
        ),
        evaluate_task(args.task, "do_nothing", split=args.eval_split, pbar="auto"),
    ]


def train_and_score(args: argparse.Namespace, interrupt: SaveOnInterrupt) -> None:
    """Train, save the agents, score them; on Ctrl-C (``interrupt``) the agents as trained so
    far are saved the same way."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    envs = agents_env(args, args.num_envs)
    layout = envs.layout
    n, a = args.num_envs, envs.num_agents
    if (layout.n_choices == 0).any():
        raise SystemExit("this example trains substation agents (discrete choices) only")
    c = int(layout.n_choices.max())
    result = envs.reset(seed=[int(s) for s in rng.integers(0, 2**31, n)])
    n_state = result.state.shape[1]
    norm = AgentNorm(layout.observation_size, n_state)
    model = Mappo(layout.observation_size, a, c, n_state, args)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-5)

    T = args.num_steps
    buf_obs = torch.zeros((T, n, a, layout.observation_size))
    buf_state = torch.zeros((T, n, n_state))
    buf_mask = torch.zeros((T, n, a, c), dtype=torch.bool)
    buf_act = torch.zeros((T, n, a), dtype=torch.long)
    buf_logp = torch.zeros((T, n, a))
    buf_played = torch.ones((T, n, a))  # 0: an agent's part the joint action did not play
    buf_rew, buf_done, buf_val = torch.zeros((T, n)), torch.zeros((T, n)), torch.zeros((T, n))
    done = np.zeros(n, dtype=bool)
    start, decisions, time_steps = time.perf_counter(), 0, 0
    survived = np.zeros(n, dtype=np.int64)
    curve = TrainingCurve(out / "curve.csv")

    def save_interrupted() -> str:
        seconds = time.perf_counter() - start
        return f"after {decisions} decisions ({seconds:.0f} s of training): " + save(
            out / "mappo.pt", model, norm, args
        )

    interrupt.save = save_interrupted
    while time.perf_counter() - start < args.minutes * 60:
        for t in range(T):
            x, s = norm(result.observations, result.state)
            m = torch.as_tensor(result.action_masks)
            with torch.no_grad():
                dist = model.distribution(x, m)
                action = dist.sample()
                buf_logp[t], buf_val[t] = dist.log_prob(action), model.value(s)
            buf_obs[t], buf_state[t], buf_mask[t], buf_act[t] = x, s, m, action
            buf_done[t] = torch.as_tensor(done, dtype=torch.float32)
            result = envs.step(action.numpy())
            if args.loss_on_played:
                buf_played[t] = torch.as_tensor(
                    ~(result.refused | result.deferred), dtype=torch.float32
                )
            skipped = result.infos.get("skipped_steps", np.zeros(n, dtype=np.int64))
            survived += 1 + skipped
            decisions += n
            time_steps += int(n + skipped.sum())
            # the reward is shared: any agent's column is the env's
            buf_rew[t] = torch.as_tensor(result.rewards[:, 0] * args.reward_scale)
            done = result.terminated | result.truncated
            for i in np.flatnonzero(done):
                curve.episode_ended(survived[i])
                survived[i] = 0
        with torch.no_grad():
            next_value = model.value(norm(result.observations, result.state)[1])
        # GAE; a finished episode does not bootstrap (its next obs is the reset's)
        adv = advantages(
            buf_rew, buf_val, buf_done, next_value, torch.as_tensor(done, dtype=torch.float32),
            args.gamma, args.gae_lambda,
        )  # fmt: skip
        returns = (adv + buf_val).reshape(-1)
        b_obs, b_state = buf_obs.reshape(T * n, a, -1), buf_state.reshape(T * n, -1)
        b_mask, b_act = buf_mask.reshape(T * n, a, c), buf_act.reshape(T * n, a)
        b_logp, b_adv = buf_logp.reshape(T * n, a), adv.reshape(-1)
        b_played = buf_played.reshape(T * n, a)
        size, mb = T * n, (T * n) // args.minibatches
        anneal_learning_rate(optimizer, args, time.perf_counter() - start, args.minutes * 60)
        for _ in range(args.epochs):
            order = torch.randperm(size)
            for k in range(0, size, mb):
                idx = order[k : k + mb]
                dist = model.distribution(b_obs[idx], b_mask[idx])
                # one advantage per env, for each of its agents' actions
                pg = clipped_loss(
                    dist.log_prob(b_act[idx]), b_logp[idx], b_adv[idx], args.clip, b_played[idx]
                )
                v_loss = 0.5 * (model.value(b_state[idx]) - returns[idx]).pow(2).mean()
                update(optimizer, model, pg, v_loss, dist.entropy().mean(), args)
        curve.line(time.perf_counter() - start, decisions, time_steps)
    curve.close()
    envs.close()
    train_seconds = time.perf_counter() - start
    saved = save(out / "mappo.pt", model, norm, args)
    interrupt.save = lambda: f"while scoring: {saved}"  # the checkpoint is already there
    print(saved, flush=True)
    scores = score(args, model, norm, layout)
    print(format_scores(scores))
    summary = {
        "settings": vars(args),
        "agents": list(layout.names),
        "train_seconds": train_seconds,
        "decisions": decisions,
        "time_steps": time_steps,
        "scores": [s.row() for s in scores],
    }
    (out / "result.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
