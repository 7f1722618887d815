"""Scores of agents on a named task: every scenario of a split played once by the Runner.

The score is in the spirit of the L2RPN competitions' (survive, and operate cheaply), kept
readable: per episode, the **survival fraction** is the time steps played (those the env
played on its own under the task's heuristics included, ``EpisodeResult.env_steps``) over
the steps the scenario has (1 for an episode no game over ended); the task's **score** is
100 times the mean survival fraction; the **operational cost** is the energy lost or
redispatched (MWh, the ``operational_cost`` reward of :mod:`grid_vec.core.rewards.builtin`, summed
over the steps played), reported per step played so that an agent surviving longer is not
charged more for it.

``grid-vec eval TASK --agent do_nothing|random|greedy|expert`` prints the table; the
baselines (:data:`BASELINES`, a registry):

* ``do_nothing``: always action 0 (the env's heuristics still play: reconnections, recovery);
* ``random``: a uniformly drawn action of the task's action space at each decision point;
* ``greedy`` (tasks with catalog actions: ``"discrete"``, ``"combined"``): greedy-by-simulate
  over the task's topology actions, ranking by the lowest simulated maximum line loading
  (:class:`~grid_vec.runner.agents.GreedyAgent`, ``rank="max_rho"``);
* ``expert`` (played only when asked for): the search expert,
  :class:`~grid_vec.runner.expert.ExpertAgent` (acts from a max rho of 1.0, over the
  task's topology set and redispatch moves; reverts toward the reference topology).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from grid_vec.runner.agents import DoNothingAgent, GreedyAgent, RandomAgent
from grid_vec.runner.candidates import topology_space
from grid_vec.runner.expert import ExpertAgent
from grid_vec.runner.results import EpisodeResult
from grid_vec.runner.runner import Runner

COST = "operational_cost"  # the other reward the scores sum


@dataclass(frozen=True)
class Baseline:
    """A baseline agent of the named tasks.

    Args:
        build: the agent, from the task's single action space.
        needs_catalog: it plays catalog actions (a ``Discrete`` part of the space).
        default: ``grid-vec eval`` plays it when no ``--agent`` is given.
    """

    build: Callable[[spaces.Space], Any]
    needs_catalog: bool = False
    default: bool = True


def _greedy(action_space: spaces.Space) -> GreedyAgent:
    if topology_space(action_space) is None:
        raise ValueError(
            f"the greedy baseline tries every catalog action of the task's Discrete part; "
            f"this task's action space is {action_space}"
        )
    return GreedyAgent(rank="max_rho")


# the registry of baselines, by the name evaluate_task takes (the CLI writes do-nothing)
BASELINES: dict[str, Baseline] = {
    "do_nothing": Baseline(lambda space: DoNothingAgent()),
    "random": Baseline(RandomAgent),
    "greedy": Baseline(_greedy, needs_catalog=True),
    # a search per decision over the set and the redispatch moves: asked for by name
    "expert": Baseline(lambda space: ExpertAgent(), default=False),
}


def survival_fraction(survived: np.ndarray, playable: np.ndarray, ended: np.ndarray) -> float:
    """The L2RPN-style survival fraction of a set of episodes (the score over 100).

    Args:
        survived: the time steps each episode played.
        playable: the time steps each episode's scenario offers (its rows but the reset's).
        ended: whether a game over ended each episode (one that did not counts 1).

    Returns:
        The mean over episodes of ``min(survived / playable, 1)``, 1 for an episode no game
        over ended.
    """
    fraction = np.minimum(np.asarray(survived) / np.asarray(playable), 1.0)
    return float(np.mean(np.where(np.asarray(ended, dtype=bool), fraction, 1.0)))


@dataclass(frozen=True)
class TaskScore:
    """The episodes of one agent on one split of a task, and their summary figures."""

    task: str
    split: str
    agent: str
    episodes: tuple[EpisodeResult, ...]

    @property
    def survival(self) -> np.ndarray:
        """Time steps played per episode (skipped steps included)."""
        steps = [r.steps if r.env_steps is None else r.env_steps for r in self.episodes]
        return np.array(steps)

    @property
    def mean_survival(self) -> float:
        """Mean time steps played per episode."""
        return float(self.survival.mean())

    @property
    def survival_fraction(self) -> float:
        """Mean over episodes of the fraction of the scenario survived: 1 for an episode not
        ended by a game over, else its time steps played over the scenario's (its rows but
        the first, the reset's)."""
        playable = np.array([max((r.max_steps or 2) - 1, 1) for r in self.episodes])
        ended = np.array([r.terminated for r in self.episodes])
        return survival_fraction(self.survival, playable, ended)

    @property
    def score(self) -> float:
        """100 times the mean survival fraction."""
        return 100.0 * self.survival_fraction

    @property
    def cost_per_step(self) -> float:
        """Operational cost (MWh lost or redispatched) per time step played, all episodes."""
        cost = sum(r.other_rewards.get(COST, 0.0) for r in self.episodes)
        return float(cost / max(int(self.survival.sum()), 1))

    def row(self, by_scenario: bool = False) -> dict[str, Any]:
        """The summary as a JSON-ready dict; ``by_scenario`` adds each episode's scenario
        (an index, or a dataset chronic's name), time steps survived and whether a game over
        ended it."""
        summary = {
            "task": self.task,
            "split": self.split,
            "agent": self.agent,
            "episodes": len(self.episodes),
            "mean_survival": self.mean_survival,
            "survival_fraction": self.survival_fraction,
            "score": self.score,
            "cost_per_step_mwh": self.cost_per_step,
            "full_episodes": int(sum(not r.terminated for r in self.episodes)),
        }
        if by_scenario:
            summary["scenarios"] = [_json_id(r.scenario_id) for r in self.episodes]
            summary["survival"] = self.survival.tolist()
            summary["terminated"] = [bool(r.terminated) for r in self.episodes]
        return summary


def _json_id(scenario_id: Any) -> int | str:
    """A scenario id as JSON writes it (an index, or a dataset chronic's name)."""
    return int(scenario_id) if isinstance(scenario_id, (int, np.integer)) else str(scenario_id)


def baseline_agent(name: str, action_space: Any) -> Any:
    """A baseline agent of :data:`BASELINES` for a task's action space.

    Args:
        name: its name in :data:`BASELINES`.
        action_space: the task's single action space.

    Returns:
        The agent.

    Raises:
        ValueError: an unknown name; greedy on a space without catalog actions.
    """
    baseline = BASELINES.get(name)
    if baseline is None:
        raise ValueError(f"agent must be one of {', '.join(BASELINES)}, got {name!r}")
    return baseline.build(action_space)


def evaluate_task(
    task_id: str,
    agent: Any,
    *,
    agent_name: str = "agent",
    split: str = "test",
    num_envs: int = 8,
    vectorization: str = "batched",
    seed: int = 0,
    scenarios: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    pbar: Any = False,
) -> TaskScore:
    """Play every scenario of a task's split once with ``agent`` and score it.

    Args:
        task_id: a named task (:mod:`grid_vec.env.tasks`).
        agent: a batched policy or a per-episode agent, as the Runner takes (a baseline name
            of :data:`BASELINES` is built with :func:`baseline_agent`).
        agent_name: the name the score carries (a baseline's own name when given one).
        split: ``"test"``, ``"validation"`` or ``"train"``.
        num_envs: sub-envs played at once.
        vectorization: ``"batched"`` (one process), ``"multiprocess"`` (GridVecEnv workers) or
            another name of ``make_vec``'s (``"ray"``: Ray actors).
        seed: the Runner's master seed (env and agent seeds derive from it).
        scenarios: play only the first this many scenarios of the split (None: all).
        env_kwargs: settings overriding the task's (e.g. ``action_subset=None``),
            ``data_dir`` for a dataset task, ``observation="graph"`` for an agent of graph
            observations.
        pbar: progress bars, as :meth:`Runner.run` takes.

    Returns:
        The score.

    Raises:
        ValueError: an unknown task, split or baseline name; ``scenarios`` out of range; a
            dataset task whose dataset is missing or too small.
    """
    from grid_vec.env.make import env_factory
    from grid_vec.env.tasks import TASKS
    from grid_vec.vector.make_vec import make_vec

    if task_id not in TASKS:
        raise ValueError(f"unknown task {task_id!r}; tasks: {', '.join(TASKS)}")
    kwargs = {**(env_kwargs or {}), "split": split, "other_rewards": {COST: COST}}
    # a dataset's split: its size (the observation form is the vector env's, not the env's)
    grid_kwargs = {key: value for key, value in kwargs.items() if key != "observation"}
    n_split = len(env_factory(task_id, **grid_kwargs).source)
    n = n_split if scenarios is None else int(scenarios)
    if not 1 <= n <= n_split:
        raise ValueError(f"scenarios must be in [1, {n_split}], got {scenarios}")
    env = make_vec(task_id, min(num_envs, n), vectorization=vectorization, **kwargs)
    if isinstance(agent, str):
        agent_name, agent = agent, baseline_agent(agent, env.single_action_space)
    with Runner(env, agent, seed=seed) as runner:
        results = runner.run(n, episode_id=list(range(n)), pbar=pbar)
    env.close()
    return TaskScore(task_id, split, agent_name, tuple(results))


def format_scores(scores: Sequence[TaskScore]) -> str:
    """A Markdown table of scores, one row per agent."""
    lines = [
        "| task | split | agent | episodes | mean survival (steps) | full episodes | score | "
        "cost (MWh/step) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        r = s.row()
        lines.append(
            f"| {r['task']} | {r['split']} | {r['agent']} | {r['episodes']} | "
            f"{r['mean_survival']:.1f} | {r['full_episodes']} | {r['score']:.1f} | "
            f"{r['cost_per_step_mwh']:.3f} |"
        )
    return "\n".join(lines)


def format_by_scenario(scores: Sequence[TaskScore]) -> str:
    """A Markdown table of the time steps each agent survived per scenario (``full`` for an
    episode no game over ended), and the scenarios none of them survived: where a split's
    score is capped whatever these agents do.

    Args:
        scores: the agents' scores on one task and split (their episodes in the same
            scenario order, as :func:`evaluate_task` plays them).

    Returns:
        The table, then one line naming the scenarios every agent lost.

    Raises:
        ValueError: the scores do not cover the same scenarios.
    """
    if not scores:
        return ""
    scenarios = [r.scenario_id for r in scores[0].episodes]
    for s in scores[1:]:
        if [r.scenario_id for r in s.episodes] != scenarios:
            raise ValueError(
                f"agent {s.agent!r} played other scenarios than {scores[0].agent!r}: "
                "compare scores of the same split and --scenarios"
            )
    lines = [
        "| scenario | " + " | ".join(s.agent for s in scores) + " |",
        "|---|" + "---|" * len(scores),
    ]
    lost_by_all = []
    for k, scenario in enumerate(scenarios):
        ended = [s.episodes[k].terminated for s in scores]
        cells = [
            str(int(s.survival[k])) if e else "full" for s, e in zip(scores, ended, strict=True)
        ]
        if all(ended):
            lost_by_all.append(str(scenario))
        name = scores[0].episodes[k].scenario_name
        label = f"{scenario} ({name})" if name and name != str(scenario) else str(scenario)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lost = ", ".join(lost_by_all) if lost_by_all else "none"
    lines.append("")
    lines.append(f"scenarios no agent survived: {len(lost_by_all)} of {len(scenarios)} ({lost})")
    return "\n".join(lines)
