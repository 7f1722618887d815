"""PPO on a grid_vec task: one file, CleanRL-style, PyTorch on the CPU; action masks over a
``Discrete`` action space, a diagonal Gaussian over a ``Box`` (``Case14Redispatch-v0``), both
over a combined ``Dict(topology=Discrete, continuous=Box)`` one (``Case118Combined-v0``).

Trains on the task's training scenarios with the batched vector env in pool mode (every
sub-env in one process; ``--num-envs`` 64 played as a pool, the policy deciding for the first
``--pool`` 16 whose turn ended: ``send`` / ``recv``, which keeps the one core busy where a
lockstep step of every env waits for the longest turn of the heuristics; ``--pool 0`` for
lockstep steps, ``--vectorization multiprocess`` with it for GridVecEnv workers), then
scores the trained policy on the task's test split with the Runner
(:func:`grid_vec.runner.evaluate.evaluate_task`) beside the do-nothing baseline.

    pip install -e '.[sb3]'      # torch
    python examples/ppo_task.py --task grid_vec/Case14Topology-v0 --minutes 25

What it does, and why:

* the env asks for a decision only when the grid needs one (the task's heuristics), so one
  agent step may cover hundreds of time steps; the return is the task's reward summed;
* illegal actions are masked out of the policy with the env's ``info["action_mask"]``, in
  training and at evaluation (the highest logit among the legal actions);
* the policy's action head is the task's (:data:`TASK_DEFAULTS`: ``moves`` on
  Case118Combined), else the first of :data:`grid_vec.integrations.action_heads.HEADS` that
  plays the task's space, or ``--head``: over a combined space ``hybrid`` (a masked
  categorical over the topology set and a diagonal Gaussian over the redispatch, one action
  of both: its log-probability and entropy the sums of the two parts') or ``moves`` (one
  masked categorical over the topology set and the expert's redispatch moves, each
  generator's ramp times ``±0.5`` and ``±1``: one or the other per decision, as the expert
  plays). A continuous value inside ``--deadband`` (unit scale; 0.25 over a combined space)
  plays no new redispatch: a redispatch stays in the target dispatch, and the small values
  of a mean near 0 would add up decision after decision (a hybrid policy without it, after
  128 decisions of PPO, survived 130.9 time steps of Case118Combined's validation split
  against do-nothing's 693.4);
* ``--observation graph`` trains the GNN of :mod:`grid_vec.integrations.torch_policy` on graph
  observations (:mod:`grid_vec.env.graph`) instead of the MLP on the flat vector;
* the policy starts close to do-nothing (a bias on action 0's logit, ``--noop-bias``): most
  topology actions end an episode quickly, and an agent exploring uniformly would learn
  only from short episodes; over a ``Box`` the Gaussian's mean starts at the bounds' centre
  (no redispatch) with a small spread (``--log-std-init``, unit scale: the half-width of the
  bounds is 1), as a redispatch played stays in the target dispatch and random ones add up;
  its entropy bonus defaults to 0 (``--ent-coef``), as CleanRL's continuous PPO;
* the discount is per decision: over a ``Discrete`` space ``--gamma`` defaults to 0.995 (a
  decision covers ~4 time steps of Case14Topology, an episode up to ~500 decisions; 0.995
  scored 84.1 on the validation split against 73.5 for 0.99 and 67.6 for 0.998), over a Box
  to CleanRL's 0.99;
* where the task ships the list of its training scenarios do-nothing loses early
  (:mod:`grid_vec.env.curriculum`: Case14Topology, Case14Redispatch-v1, Case118Topology), it
  trains only on those lost before ``--hard-below`` 600 time steps (0: every scenario): every
  episode then meets a tight peak early (Case14Topology's validation split, seeds 1 / 2: 87.8 / 96.1
  against 68.6 / 86.9 without; Case14Redispatch-v1's, seed 1: 1361.1 time steps against
  1144.2; Case118Topology's, seed 1, 30 min: 721.7 against 492.1; the runs of a seed side by
  side); Case14Topology on every one do-nothing loses (``--hard-below 2016``, its
  :data:`TASK_DEFAULTS`: the later peaks too); the splits it is scored on are played whole;
* over a ``Discrete`` space the learning rate starts at 6e-4 and decays linearly to 0 over
  the budget (``--anneal-lr``, CleanRL's): with a constant one the policy saved is the last
  of a run whose updates still swing it, and the score depends on where the budget cuts.
  Case14Topology's validation split, seeds 1 / 2 / 3: 99.9 / 100.0 / 98.4 (3e-4 annealed:
  92.1 / 91.9 / 93.4; 3e-4 constant, the default before: 87.8 / 96.1 / 69.3). Over a
  ``Box``, CleanRL's 3e-4, constant unless asked (``--lr``, ``--anneal-lr``);
* the budget is wall-clock minutes (``--minutes``), or a number of decisions
  (``--decisions``): a wall-clock budget ends where the machine's speed and load put it, so
  two runs of one seed train for different numbers of updates and differ (Case14Topology,
  seed 1, 10 minutes, two runs on this machine: test scores 95.2 and 92.0); with
  ``--decisions`` one seed trains the same policy on any machine;
* observations are normalised with running statistics (frozen for evaluation) and the
  rewards scaled by ``--reward-scale``;
* ``--bc-from RUN`` starts from behaviour cloning: the policy is first fitted to the
  decisions an expert recorded (``grid-vec run --env TASK --agent expert --save RUN``, read
  by :func:`grid_vec.runner.imitation.load_pairs`) for ``--bc-epochs``, the acting
  decisions weighted as much as the do-nothing ones in all (an expert acts rarely: ~1-2% of
  its decisions on case118); the loss is the head's: cross-entropy on a discrete part, the
  squared error of the mean on a continuous one (its spread left to PPO); then PPO trains on
  for the budget (``--minutes 0``: the clone alone is saved and scored); docs/tasks.md
  ("The combined space learnt from the expert") compares the heads' clones on
  Case118Combined.

Writes ``<out>/ppo.pt`` (the trained policy: ``grid-vec eval TASK --agent <out>/ppo.pt``
scores it again, loading it without unpickling), ``<out>/curve.csv`` (wall-clock seconds,
decisions, time steps, mean time steps survived by the training episodes ended since the
last line) and ``<out>/result.json`` (the
test scores of PPO and do-nothing, the settings). Ctrl-C saves ``<out>/ppo.pt`` as trained so
far, prints the command that scores it and exits with status 130 (no traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import grid_vec
from grid_vec.env.curriculum import difficulty_path, hard_training_scenarios
from grid_vec.integrations.action_heads import HEADS, head_of, policy_and_value
from grid_vec.integrations.checkpoint import save_checkpoint
from grid_vec.integrations.observation_norm import ObservationNorm
from grid_vec.integrations.ppo import (
    PoolRollout,
    SaveOnInterrupt,
    TrainingCurve,
    add_ppo_arguments,
    advantages,
    anneal_learning_rate,
    batch_rows,
    clipped_loss,
    score_command,
    update,
)
from grid_vec.integrations.torch_policy import Architecture, TorchPolicy, build_network
from grid_vec.runner.evaluate import evaluate_task, format_scores

# Settings whose default depends on the action space, by the policy's action head
# (grid_vec.integrations.action_heads.HEADS): over a Discrete space gamma 0.995 and a learning
# rate of 6e-4 annealed (chosen on Case14Topology's validation split), an entropy bonus of
# 0.01; over a Box CleanRL's 0.99, 3e-4 constant, none, and over a combined space too (its
# Gaussian part: an entropy bonus would widen its noise). The deadband (unit scale) of the
# continuous part: none over a Box (as before it existed), 0.25 over a combined space, whose
# expert's redispatch moves are 0.5 or 1 of a generator's ramp (chosen on the validation
# split, docs/tasks.md).
SPACE_DEFAULTS = {
    "gamma": {"categorical": 0.995, "gaussian": 0.99, "hybrid": 0.99, "moves": 0.995},
    "lr": {"categorical": 6e-4, "gaussian": 3e-4, "hybrid": 3e-4, "moves": 6e-4},
    "anneal_lr": {"categorical": True, "gaussian": False, "hybrid": False, "moves": True},
    "ent_coef": {"categorical": 0.01, "gaussian": 0.0, "hybrid": 0.0, "moves": 0.01},
    "deadband": {"categorical": 0.0, "gaussian": 0.0, "hybrid": 0.25, "moves": 0.0},
}

# Settings chosen for one task on its validation split, over its action head's (docs/tasks.md,
# "Defaults per task"). Case14Topology trains on every training scenario do-nothing loses
# (validation, seeds 1 / 2 / 3 at 1.6 M decisions: 100.0 / 93.3 / 93.4, against 92.1 / 96.2 /
# 93.4 on those lost before 600 time steps); Case118Combined plays the `moves` head (its
# clone survived 1,096.1 time steps of the validation split, the `hybrid` head's 810.4).
# Elsewhere the curriculum keeps the scenarios lost before 600 time steps where the task
# ships a difficulty file, and every scenario where it does not.
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "grid_vec/Case14Topology-v0": {"hard_below": 2016},
    "grid_vec/Case118Combined-v0": {"head": "moves"},
}
CURRICULUM_BELOW = 600  # --hard-below where a task ships a difficulty file and sets none


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The example's settings: ``argv`` (None: the command line's), then the task's defaults
    (:data:`TASK_DEFAULTS`, the curriculum's); the action head's come once the head is known
    (:func:`apply_head_defaults`)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--minutes", type=float, default=25.0, help="training wall-clock budget")
    p.add_argument(
        "--decisions",
        type=int,
        default=None,
        help="a training budget of this many decisions instead of --minutes: the same seed "
        "then trains the same policy on any machine (a wall-clock budget cuts where the "
        "machine's speed puts it)",
    )
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument(
        "--num-steps",
        type=int,
        default=64,
        help="batches per rollout: a rollout is NUM_STEPS x POOL decisions (lockstep: "
        "NUM_STEPS x NUM_ENVS)",
    )
    p.add_argument("--vectorization", default="batched", choices=["batched", "multiprocess"])
    p.add_argument(
        "--pool",
        type=int,
        default=16,
        help="(batched) play NUM_ENVS envs as a pool and decide for the first POOL "
        "whose turn ended (send/recv); 0: lockstep steps of every env",
    )
    add_ppo_arguments(p)
    p.add_argument(
        "--noop-bias", type=float, default=3.0, help="(Discrete, or a combined space's topology)"
    )
    p.add_argument(
        "--log-std-init",
        type=float,
        default=-2.5,
        help="(Box) the Gaussian's initial log standard deviation, in half-widths of the bounds",
    )
    p.add_argument(
        "--deadband",
        type=float,
        help="(Box, combined) the unit-scale values of the continuous part inside "
        "(-DEADBAND, DEADBAND) play 0, no new redispatch (default: 0 over a Box, 0.25 over "
        "a combined space)",
    )
    p.add_argument(
        "--head",
        default="",
        choices=["", *HEADS],
        help="the policy's action head (default: the task's, TASK_DEFAULTS: moves on "
        "Case118Combined; else the first that plays the task's space): "
        "over a combined space 'hybrid' (a categorical over the topology set and a Gaussian "
        "over the redispatch) or 'moves' (one categorical over the topology set and the "
        "expert's redispatch moves)",
    )
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument(
        "--observation",
        default="flat",
        choices=["flat", "graph"],
        help="flat: the MLP on the flat observation; graph: the GNN on graph observations",
    )
    p.add_argument("--rounds", type=int, default=3, help="(graph) rounds of message passing")
    p.add_argument(
        "--hard-below",
        type=int,
        default=None,
        help="train only on the training scenarios do-nothing loses before this many time "
        "steps (grid_vec.env.curriculum); default: the task's (TASK_DEFAULTS: 2016 on "
        "Case14Topology, every scenario do-nothing loses), else 600 where the task ships a "
        "difficulty file (Case14Redispatch-v1, Case118Topology), else 0: every training "
        "scenario",
    )
    p.add_argument(
        "--difficulty",
        default=None,
        help="the difficulty file to read instead of the task's own (written by grid-vec "
        "eval TASK --split train --agent do-nothing --by-scenario --json FILE)",
    )
    p.add_argument(
        "--bc-from",
        default=None,
        help="a run of an expert's decisions to clone before PPO (grid-vec run --env TASK "
        "--agent expert --save RUN)",
    )
    p.add_argument("--bc-epochs", type=int, default=20, help="passes over the cloned decisions")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--out", default="runs/ppo")
    # the defaults that depend on the action space: SPACE_DEFAULTS, by apply_head_defaults()
    p.set_defaults(**dict.fromkeys(SPACE_DEFAULTS))
    args = p.parse_args(argv)
    for name, value in TASK_DEFAULTS.get(args.task, {}).items():
        if getattr(args, name) in (None, ""):  # not given
            setattr(args, name, value)
    if args.hard_below is None:
        shipped = difficulty_path(args.task).is_file()
        args.hard_below = CURRICULUM_BELOW if shipped or args.difficulty else 0
    return args


def apply_head_defaults(args: argparse.Namespace, head: str) -> None:
    """Fill in the settings left to the action head (:data:`SPACE_DEFAULTS`)."""
    for name, by_head in SPACE_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, by_head[head])


def training_scenarios(args: argparse.Namespace) -> set[str] | None:
    """The names of the training scenarios the curriculum keeps (``--hard-below``), or None
    for every one; says how many it keeps. Exits with one line on a bad difficulty file."""
    if args.hard_below == 0:
        return None
    # the file numbers scenarios within the split; the env's filter takes their names
    names = grid_vec.make(args.task, split="train").unwrapped.source.names
    try:
        file = None if args.difficulty is None else Path(args.difficulty)
        ids = hard_training_scenarios(args.task, args.hard_below, file, len(names))
    except ValueError as exc:
        raise SystemExit(f"--hard-below: {exc}") from None
    if not ids:
        raise SystemExit(
            f"--hard-below {args.hard_below}: no scenario of the training split's "
            f"{len(names)} is that hard in the difficulty file"
        )
    print(
        f"curriculum: training on the {len(ids)} of {len(names)} training scenarios "
        f"do-nothing loses before {args.hard_below} time steps"
    )
    return {names[i] for i in ids}


def stacked(steps: list[Any]) -> Any:
    """The per-step normalised observations of a rollout as one ``(T, n, ...)`` batch."""
    if isinstance(steps[0], dict):
        return {key: torch.stack([x[key] for x in steps]) for key in steps[0]}
    return torch.stack(steps)


def flattened(x: Any) -> Any:
    """``(T, n, ...)`` -> ``(T * n, ...)``, per key for a graph."""
    if isinstance(x, dict):
        return {key: v.reshape(-1, *v.shape[2:]) for key, v in x.items()}
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])  # (T, n, 0) masks of a Box too


class Progress:
    """Decisions and time steps played, and the time steps each training episode survived
    (the learning curve's)."""

    def __init__(self, n: int, curve: TrainingCurve) -> None:
        self.curve, self.decisions, self.time_steps = curve, 0, 0
        self.survived = np.zeros(n, dtype=np.int64)

    def played(self, env_ids: np.ndarray, infos: dict[str, Any], done: np.ndarray) -> None:
        k = len(env_ids)
        skipped = infos.get("skipped_steps", np.zeros(k, dtype=np.int64))
        self.survived[env_ids] += 1 + skipped
        self.decisions += k
        self.time_steps += int(k + skipped.sum())
        for i in env_ids[done].tolist():
            self.curve.episode_ended(self.survived[i])
            self.survived[i] = 0


def masks_of(arch: Architecture, infos: dict[str, Any], k: int) -> torch.Tensor:
    """The action masks of ``k`` envs' infos over the policy's discrete part (``(k, 0)`` for
    a Box policy: none)."""
    if not arch.mask_width:
        return torch.zeros((k, 0), dtype=torch.bool)
    return torch.as_tensor(arch.action_masks(infos, k))


class LockstepCollector:
    """A rollout of ``num_steps`` lockstep steps of every env (``step``)."""

    def __init__(self, envs: Any, obs: Any, infos: dict[str, Any], arch: Architecture) -> None:
        self.envs, self.obs, self.n, self.arch = envs, obs, envs.num_envs, arch
        self.mask = masks_of(arch, infos, self.n)
        self.done = np.zeros(self.n, dtype=bool)
        self.ids = np.arange(self.n)

    def __call__(
        self, agent: Any, norm: ObservationNorm, args: argparse.Namespace, progress: Progress
    ) -> dict[str, Any]:
        T, n = args.num_steps, self.n
        buf_obs: list[Any] = [None] * T
        buf_mask: list[torch.Tensor] = [self.mask] * T
        buf_act: list[torch.Tensor] = [torch.zeros(0)] * T
        buf_logp, buf_val = torch.zeros((T, n)), torch.zeros((T, n))
        buf_rew, buf_done = torch.zeros((T, n)), torch.zeros((T, n))
        for t in range(T):
            x = norm(self.obs)
            with torch.no_grad():
                dist, buf_val[t] = policy_and_value(agent, x, self.mask)
                action = dist.sample()
                buf_logp[t] = dist.log_prob(action)
            buf_obs[t], buf_mask[t], buf_act[t] = x, self.mask, action
            buf_done[t] = torch.as_tensor(self.done, dtype=torch.float32)
            self.obs, reward, terminated, truncated, infos = self.envs.step(
                self.arch.env_actions(action)
            )
            buf_rew[t] = torch.as_tensor(reward * args.reward_scale, dtype=torch.float32)
            self.done = terminated | truncated
            progress.played(self.ids, infos, self.done)
            self.mask = masks_of(self.arch, infos, n)
        with torch.no_grad():
            next_value = agent.value(norm(self.obs))
        # GAE; a finished episode does not bootstrap (its next obs is the reset's)
        adv = advantages(
            buf_rew, buf_val, buf_done, next_value, torch.as_tensor(self.done, dtype=torch.float32),
            args.gamma, args.gae_lambda,
        )  # fmt: skip
        return {
            "obs": flattened(stacked(buf_obs)),
            "mask": flattened(torch.stack(buf_mask)),
            "action": flattened(torch.stack(buf_act)),
            "log_prob": buf_logp.reshape(-1),
            "advantage": adv.reshape(-1),
            "returns": (adv + buf_val).reshape(-1),
        }


class PoolCollector:
    """A rollout of ``num_steps`` pool batches (``send`` / ``recv`` of the first ``--pool``
    envs whose turn ended: :class:`~grid_vec.integrations.ppo.PoolRollout`)."""

    def __init__(self, envs: Any, obs: Any, infos: dict[str, Any], arch: Architecture) -> None:
        self.envs, self.arch = envs, arch
        self.rollout = PoolRollout(envs.num_envs)
        # the reset's observations: the first decision of every env
        self.first: tuple[Any, torch.Tensor] | None = (obs, masks_of(arch, infos, envs.num_envs))

    def __call__(
        self, agent: Any, norm: ObservationNorm, args: argparse.Namespace, progress: Progress
    ) -> dict[str, Any]:
        rollout = self.rollout
        size = args.num_steps * self.envs.batch_size
        while rollout.complete_count() < size:
            if self.first is not None:  # every env at once
                (obs, mask), ids = self.first, np.arange(self.envs.num_envs)
                self.first = None
            else:
                batch = self.envs.recv()
                ids, obs = batch.env_ids, batch.observations
                done = batch.terminations | batch.truncations
                rollout.outcomes(ids, batch.rewards * args.reward_scale, done)
                progress.played(ids, batch.infos, done)
                mask = masks_of(self.arch, batch.infos, len(ids))
            x = norm(obs)
            with torch.no_grad():
                dist, value = policy_and_value(agent, x, mask)
                action = dist.sample()
                log_prob = dist.log_prob(action)
            rollout.decide(ids, obs=x, mask=mask, action=action, log_prob=log_prob, value=value)
            self.envs.send(self.arch.env_actions(action), ids)
        return rollout.batch(args.gamma, args.gae_lambda)


def clone(
    agent: Any,
    norm: ObservationNorm,
    arch: Architecture,
    action_space: Any,
    args: argparse.Namespace,
) -> None:
    """Behaviour cloning: fit the policy to an expert's recorded decisions (the observation
    statistics fitted on them first), the acting decisions weighted as much as the
    do-nothing ones in all; the loss is the policy's head's (cross-entropy on a discrete
    part, the squared error of the mean on a continuous one:
    :meth:`~grid_vec.integrations.action_heads.ActionHead.clone_loss`)."""
    from grid_vec.runner.imitation import load_pairs

    head = head_of(arch)
    try:
        pairs = load_pairs(args.bc_from, action_space)
    except ValueError as exc:  # a run of another space, or damaged: one line
        raise SystemExit(f"--bc-from: {exc}") from None
    if not len(pairs):
        raise SystemExit(f"--bc-from: {args.bc_from} holds no decision to clone")
    x = norm(pairs.observations).float()  # fits the statistics on the expert's states
    targets = head.network_actions(pairs.actions, arch)
    acting = torch.as_tensor(head.acting(pairs.actions))
    weights = torch.where(acting, (~acting).sum() / max(int(acting.sum()), 1), 1.0)
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-3)
    order = torch.Generator().manual_seed(args.seed)
    for _ in range(args.bc_epochs):
        for batch in torch.randperm(len(x), generator=order).split(256):
            loss = head.clone_loss(agent.logits(x[batch]), targets[batch], arch)
            loss = (loss * weights[batch]).sum() / weights[batch].sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        agree = head.agrees(agent.logits(x), targets, arch).float()
    print(
        f"cloned {len(x)} decisions of {args.bc_from} ({int(acting.sum())} acting): the "
        f"policy agrees with {agree.mean():.1%} of them, {agree[acting].mean():.1%} of the "
        "acting ones",
        flush=True,
    )


def train(agent: Any, optimizer: Any, data: dict[str, Any], args: argparse.Namespace) -> None:
    """PPO's epochs of minibatch updates on a rollout."""
    size = len(data["action"])
    mb = size // args.minibatches
    for _ in range(args.epochs):
        order = torch.randperm(size)
        for k in range(0, size, mb):
            idx = order[k : k + mb]
            x = batch_rows(data["obs"], idx)
            dist, value = policy_and_value(agent, x, data["mask"][idx])
            pg = clipped_loss(
                dist.log_prob(data["action"][idx]), data["log_prob"][idx],
                data["advantage"][idx], args.clip,
            )  # fmt: skip
            v_loss = 0.5 * (value - data["returns"][idx]).pow(2).mean()
            update(optimizer, agent, pg, v_loss, dist.entropy().mean(), args)


def main() -> None:
    with SaveOnInterrupt("ppo_task") as interrupt:
        train_and_score(parse_args(), interrupt)


def train_and_score(args: argparse.Namespace, interrupt: SaveOnInterrupt) -> None:
    """Train, save the policy, score it; on Ctrl-C (``interrupt``) the policy as trained so
    far is saved the same way."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    # the networks are small and the env steps in this thread: a second torch thread only
    # spins against the env for the machine's cores
    torch.set_num_threads(args.torch_threads)
    if args.decisions is not None and args.decisions < 1:
        raise SystemExit(f"--decisions must be a positive number, got {args.decisions}")
    if args.pool and args.vectorization != "batched":
        raise SystemExit("--pool plays the batched vector env: pass --pool 0 with multiprocess")
    hard = training_scenarios(args)
    envs = grid_vec.make_vec(
        args.task,
        args.num_envs,
        vectorization=args.vectorization,
        autoreset_mode="SameStep",
        split="train",
        observation=args.observation,
        vector_kwargs={"batch_size": args.pool} if args.pool else None,
    )
    if hard is not None:
        envs.set_scenario_filter(lambda name: name in hard)
    n = args.num_envs
    norm = ObservationNorm.for_space(envs.single_observation_space)
    try:
        arch = Architecture.for_space(
            "gnn" if args.observation == "graph" else "mlp",
            envs.single_action_space,
            head=args.head,
            hidden=args.hidden,
            n_obs=int(np.prod(envs.single_observation_space.shape or (0,))),
            rounds=args.rounds,
            noop_bias=args.noop_bias,
            log_std_init=args.log_std_init,
        )
    except ValueError as exc:  # a MultiDiscrete or another Dict action space: one line
        envs.close()
        raise SystemExit(f"{args.task}: {exc}") from None
    apply_head_defaults(args, arch.head)
    try:  # the deadband: a field of the architecture, which the checkpoint keeps
        arch = dataclasses.replace(arch, deadband=args.deadband if arch.continuous else 0.0)
    except ValueError as exc:
        envs.close()
        raise SystemExit(f"--deadband: {exc}") from None
    agent = build_network(arch)
    if args.bc_from is not None:
        clone(agent, norm, arch, envs.single_action_space, args)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    # each sub-env starts on a random training scenario (seeded): no two play in step
    obs, infos = envs.reset(seed=[int(s) for s in rng.integers(0, 2**31, n)])
    progress = Progress(n, TrainingCurve(out / "curve.csv"))
    collector = PoolCollector if args.pool else LockstepCollector
    collect = collector(envs, obs, infos, arch)
    start = time.perf_counter()

    def save() -> str:
        """Write the checkpoint; the line saying where it is and the command scoring it."""
        checkpoint = save_checkpoint(
            out / "ppo.pt", agent, arch, norm, task=args.task, observation=args.observation
        )
        # the split this script scores on (grid-vec eval's default is the test split)
        split = () if args.eval_split == "test" else ("--split", args.eval_split)
        return f"saved {checkpoint}; score it with: {score_command(args.task, checkpoint, *split)}"

    def save_interrupted() -> str:
        seconds = time.perf_counter() - start
        return f"after {progress.decisions} decisions ({seconds:.0f} s of training): {save()}"

    interrupt.save = save_interrupted

    def spent() -> tuple[float, float]:
        """The budget used so far and the whole budget (decisions, or seconds)."""
        if args.decisions is not None:
            return progress.decisions, args.decisions
        return time.perf_counter() - start, args.minutes * 60

    while spent()[0] < spent()[1]:
        data = collect(agent, norm, args, progress)
        anneal_learning_rate(optimizer, args, *spent())
        train(agent, optimizer, data, args)
        progress.curve.line(time.perf_counter() - start, progress.decisions, progress.time_steps)
    agent_steps, time_steps = progress.decisions, progress.time_steps
    progress.curve.close()
    envs.close()
    train_seconds = time.perf_counter() - start

    saved = save()
    interrupt.save = lambda: f"while scoring: {saved}"  # the checkpoint is already there
    print(saved, flush=True)
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
