"""The Runner: evaluate an agent over many episodes on any gymnasium vector env.

The Runner plans a run (each episode's seeds and reset options), resumes recorded runs and
shows progress; an executor plays the episodes: by default a
:class:`~grid_vec.runner.executor.VectorEnvExecutor` over one vector env, where episode ``i``
depends only on its env seed, agent seed and reset options, never on the number of sub-envs
or the schedule. Other executors (Ray actors: :class:`grid_vec.integrations.ray.RayExecutor`)
give the same results.

Crashes: an episode lost to a crash of the machinery is played again from its start, never
recorded as a shortened (truncated) episode. The Ray executor replays the episodes of an actor
that died; locally, over a GridVecEnv with ``restart_on_crash=True``, an episode whose
sub-env's worker crashed (and came back restarted, ``infos["worker_restarted"]``) is played
again, so the results are those of a run without the crash. An episode lost
:data:`~grid_vec.runner.episode_loop.MAX_LOSSES` times crashes its worker itself: the run
stops with an :class:`~grid_vec.runner.episode_loop.EpisodeLostError` naming the episode,
its sub-env and its scenario.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv

from grid_vec.runner.agents import agent_kind
from grid_vec.runner.episodes import EpisodeSpec, check_max_iter, episode_identity, plan_episodes
from grid_vec.runner.executor import EpisodeExecutor, VectorEnvExecutor
from grid_vec.runner.progress import make_bars
from grid_vec.runner.recording import finished_episodes, prepare_run_dir, remove_partial_episodes
from grid_vec.runner.results import EpisodeResult
from grid_vec.runner.resume import discard_episodes, plan_resume

_log = logging.getLogger(__name__)


class Runner:
    """Runs an agent over episodes of an env, optionally recording them.

    Args:
        env: a gymnasium ``VectorEnv`` (its autoreset mode must be DISABLED or NEXT_STEP), or
            a non-empty sequence of env factories, from which the executor builds (and later
            closes) what it plays on.
        agent: a batched policy or a per-episode agent (see :mod:`grid_vec.runner.agents`).
        seed: master seed from which the default per-episode env and agent seeds derive.
        idle_action: the action played by sub-envs that have no episode left (default:
            :func:`~grid_vec.runner.agents.do_nothing_of`).
        executor: where the episodes are played: an unstarted :class:`EpisodeExecutor`, one per
            Runner, e.g. ``grid_vec.integrations.ray.RayExecutor(num_actors=64)`` (extra
            ``ray``); None plays them here on a
            :class:`~grid_vec.runner.executor.VectorEnvExecutor`.

    Raises:
        TypeError: ``env`` or ``agent`` is of the wrong kind; ``executor`` is not an
            :class:`EpisodeExecutor` (a string such as ``"ray"`` included).
        ValueError: ``seed`` is negative; the autoreset mode, the spaces or ``idle_action``
            do not fit.
    """

    def __init__(
        self,
        env: VectorEnv | Sequence[Callable[[], gym.Env]],
        agent: Any,
        *,
        seed: int = 0,
        idle_action: Any = None,
        executor: EpisodeExecutor | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if isinstance(executor, str):
            raise TypeError(
                f"executor={executor!r}: pass an executor object, e.g. "
                f"executor=grid_vec.integrations.ray.RayExecutor(address=..., num_actors=...) "
                f"for Ray, or leave it None to play here"
            )
        if executor is not None and not isinstance(executor, EpisodeExecutor):
            raise TypeError(f"executor must be an EpisodeExecutor or None, got {executor!r}")
        agent_kind(agent)  # a TypeError for what is no agent, before anything starts
        self.agent = agent
        self.seed = int(seed)
        self.executor = VectorEnvExecutor() if executor is None else executor
        self.executor.start(env, agent, idle_action)

    @property
    def env(self) -> VectorEnv | None:
        """The vector env the episodes are played on here; None when they are played remotely."""
        return self.executor.env

    def close(self) -> None:
        """Close the executor: the vector env if the Runner built it, Ray actors... Idempotent."""
        self.executor.close()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        nb_episode: int,
        *,
        max_iter: int | None = None,
        env_seeds: Sequence[int] | None = None,
        agent_seeds: Sequence[int] | None = None,
        episode_id: Sequence[Any] | None = None,
        reset_options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
        pbar: Any = False,
        path_save: str | Path | None = None,
        resume: bool = False,
    ) -> list[EpisodeResult]:
        """Play ``nb_episode`` episodes; one result per episode, in episode order.

        Args:
            nb_episode: how many episodes (numbered from 0).
            max_iter: the cap of each episode in time steps (the Runner truncates it), or
                None. A time step is a call of ``step`` plus the steps the env played on its
                own in it (``info["skipped_steps"]``, grid_vec's heuristics); the Runner cuts
                at the first call that reaches the cap, so an env that plays several steps a
                call may pass it: give such an env its own cap as well (grid_vec's envs take
                ``reset_options={"max_steps": max_iter}``, as ``grid-vec run`` does).
            env_seeds: one env seed per episode; default: derived from the master seed.
            agent_seeds: one agent seed per episode; default: derived from the master seed.
            episode_id: one scenario id per episode, passed to its reset as
                ``options["scenario_id"]`` (grid envs pick their scenario with it).
            reset_options: one options dict for all episodes, or one (or None) per episode.
            pbar: progress bars (see :func:`grid_vec.runner.progress.make_bars`).
            path_save: the directory every episode is recorded under, or None.
            resume: keep the episodes already recorded under ``path_save`` (their settings
                must match) and play only the others; damaged ones are played again.

        Returns:
            One :class:`~grid_vec.runner.EpisodeResult` per episode, in episode order.

        Raises:
            ValueError: an argument is out of range or of the wrong length; ``resume`` without
                ``path_save``; ``path_save`` is not a writable directory or already holds
                episodes while ``resume`` is False.
            ResumeError: a recorded episode was played with other settings.
            EpisodeLostError: an episode was lost to worker crashes ``MAX_LOSSES`` times
                (see the module's notes on crashes).
            Exception: an error of the env or the agent, with its own type.
        """
        specs = plan_episodes(
            nb_episode, env_seeds, agent_seeds, episode_id, reset_options, self.seed
        )
        check_max_iter(max_iter)
        if resume and path_save is None:
            raise ValueError("resume=True needs path_save (the directory to resume)")
        root = None if path_save is None else prepare_run_dir(path_save)
        known = {} if root is None else self._recorded(root, specs, max_iter, resume)
        bars = make_bars(pbar, nb_episode)
        try:
            bars[0].update(len(known))
            todo = [s for s in specs if s.index not in known]
            played = self.executor.play(todo, max_iter, root, bars[0], bars[1]) if todo else {}
        finally:
            if bars[2]:
                bars[0].close()
                bars[1].close()
        return [known[s.index] if s.index in known else played[s.index] for s in specs]

    def _recorded(
        self, root: Path, specs: list[EpisodeSpec], max_iter: int | None, resume: bool
    ) -> dict[int, EpisodeResult]:
        """Results of the episodes of ``specs`` already recorded under ``root``; damaged
        recordings are deleted, to be played again."""
        remove_partial_episodes(root)
        on_disk = finished_episodes(root)
        clash = [s.index for s in specs if s.index in on_disk]
        if not clash:
            return {}
        if not resume:
            raise ValueError(
                f"path_save {str(root)!r} already holds episodes {clash[:10]}; pass "
                f"resume=True to keep them or choose another directory"
            )
        run = self.executor.run_identity()
        expected = {s.index: {**run, **episode_identity(s, max_iter)} for s in specs}
        plan = plan_resume(root, expected)
        for index, reason in plan.damaged.items():
            _log.warning("episode %d is damaged, playing it again: %s", index, reason)
        discard_episodes(root, plan.damaged)
        return plan.kept
