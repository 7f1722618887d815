"""Where a Runner plays its episodes: the executor interface and the local executor.

The :class:`~grid_vec.runner.Runner` plans a run (episode seeds and options, resume, progress
bars) and hands the episodes to play to an executor. :class:`VectorEnvExecutor`, the default,
plays them on one vector env in this process. Other executors live with the code they need
(the Ray one in :mod:`grid_vec.integrations.ray`) and implement :class:`EpisodeExecutor`, so
``runner/`` never imports them.

Autoreset modes of the local executor's vector env: ``DISABLED`` (recommended: nothing is reset
behind the Runner's back) and ``NEXT_STEP`` (the loop resets a finished sub-env itself before
the automatic reset would happen). ``SAME_STEP`` is refused: it resets with no seed before the
Runner can choose one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, VectorEnv

from grid_vec.runner.agents import agent_kind, check_spaces, do_nothing_of
from grid_vec.runner.episode_loop import EpisodeLoop
from grid_vec.runner.episodes import EpisodeSpec, run_identity
from grid_vec.runner.results import EpisodeResult


def build_vector_env(env_fns: Sequence[Callable[[], gym.Env]]) -> VectorEnv:
    """Build a vector env in ``DISABLED`` autoreset mode over ``env_fns``.

    Args:
        env_fns: the factories of the sub-envs.

    Returns:
        grid_vec's :class:`~grid_vec.vector.GridVecEnv` when it is available, else
        gymnasium's ``AsyncVectorEnv``.
    """
    try:
        from grid_vec.vector import GridVecEnv  # type: ignore[attr-defined]
    except ImportError:
        return AsyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.DISABLED)
    return GridVecEnv(list(env_fns), autoreset_mode=AutoresetMode.DISABLED)


def is_env_fns(value: Any) -> bool:
    """Whether ``value`` is a non-empty sequence of env factories (callables)."""
    return isinstance(value, Sequence) and len(value) > 0 and all(callable(f) for f in value)


class EpisodeExecutor(ABC):
    """Plays the episodes a :class:`~grid_vec.runner.Runner` hands it.

    An executor serves one Runner: the Runner calls :meth:`start` once, then :meth:`play` once
    per :meth:`~grid_vec.runner.Runner.run` that has episodes left to play, then :meth:`close`.
    Episode ``i`` must give the result a local run gives for the same
    :class:`~grid_vec.runner.EpisodeSpec`, whatever the executor and its layout.
    """

    @property
    def env(self) -> VectorEnv | None:
        """The vector env the episodes are played on in this process, or None (remote)."""
        return None

    @abstractmethod
    def start(
        self, env: VectorEnv | Sequence[Callable[[], gym.Env]], agent: Any, idle_action: Any
    ) -> None:
        """Get ready to play episodes of ``env`` with ``agent``.

        Args:
            env: what the Runner was given: a vector env or a sequence of env factories.
            agent: a batched policy or a per-episode agent (see :mod:`grid_vec.runner.agents`).
            idle_action: the action of sub-envs with no episode left, or None for
                :func:`~grid_vec.runner.agents.do_nothing_of`.

        Raises:
            TypeError, ValueError: ``env``, ``agent`` or ``idle_action`` cannot be used here;
                the executor has released what it acquired.
            RuntimeError: the executor was already started (one executor per Runner).
        """

    @abstractmethod
    def play(
        self,
        specs: list[EpisodeSpec],
        max_iter: int | None,
        root: Path | None,
        ep_bar: Any,
        step_bar: Any,
    ) -> dict[int, EpisodeResult]:
        """Play ``specs`` and record them under ``root``.

        Args:
            specs: the episodes to play, each with its index, seeds and reset options.
            max_iter: the cap of each episode in time steps (see :meth:`Runner.run`), or None.
            root: an existing, writable run directory where each episode is written, in the
                layout of :mod:`grid_vec.runner.recording`, as it ends; None records nothing.
            ep_bar: progress in episodes (anything with ``update(n)``).
            step_bar: progress in steps (anything with ``update(n)``).

        Returns:
            The result of each episode, by episode index.

        Raises:
            Exception: an error of the env or the agent, with its own type.
        """

    def run_identity(self) -> dict[str, Any]:
        """The metadata entries a resumed run must find unchanged in recorded episodes.

        Returns:
            Entries shared by the run's episodes (which env, which agent); empty when the
            executor cannot tell them without building the env.
        """
        return {}

    def close(self) -> None:  # noqa: B027  (nothing to release by default)
        """Release what :meth:`start` acquired (idempotent)."""


class VectorEnvExecutor(EpisodeExecutor):
    """The default executor: episodes played over the sub-envs of one vector env.

    Parallelism comes from the vector env: each sub-env takes the next episode as soon as its
    current one ends. Given env factories, it builds the vector env with
    :func:`build_vector_env` and closes it in :meth:`close`; a vector env it was given is
    left open.
    """

    def __init__(self) -> None:
        self._env: VectorEnv | None = None
        self._owns_env = False
        self.agent: Any = None
        self.kind = ""
        self.idle_action: Any = None
        self.autoreset_mode = AutoresetMode.DISABLED
        self._has: dict[str, bool] | None = None  # probed after a first reset (see probe)

    @property
    def env(self) -> VectorEnv | None:
        """The vector env the episodes are played on (None before :meth:`start`)."""
        return self._env

    def start(
        self, env: VectorEnv | Sequence[Callable[[], gym.Env]], agent: Any, idle_action: Any
    ) -> None:
        """Take (or build) the vector env and check it against ``agent`` and ``idle_action``.

        Args:
            env: a gymnasium ``VectorEnv`` in autoreset mode DISABLED or NEXT_STEP, or a
                non-empty sequence of env factories.
            agent: a batched policy or a per-episode agent; a batched policy with a ``bind``
                method is bound to the vector env.
            idle_action: an action of the env's single action space, or None.

        Raises:
            TypeError: ``env`` is neither; ``agent`` is not an agent.
            ValueError: the autoreset mode is SAME_STEP; the spaces do not match the agent;
                ``idle_action`` is not in the action space.
            RuntimeError: the executor was already started.
        """
        if self._env is not None:
            raise RuntimeError("this executor already serves a Runner; make one per Runner")
        kind = agent_kind(agent)
        if isinstance(env, VectorEnv):
            self._env, self._owns_env = env, False
        elif is_env_fns(env):
            self._env, self._owns_env = build_vector_env(env), True
        else:
            raise TypeError(
                f"env must be a gymnasium VectorEnv or a non-empty sequence of env factories, "
                f"got {env!r}"
            )
        self.agent, self.kind = agent, kind
        try:
            self._check_env()
            check_spaces(agent, self._env)
            if kind == "batch" and callable(getattr(agent, "bind", None)):
                agent.bind(self._env)
            space = self._env.single_action_space
            self.idle_action = do_nothing_of(self._env) if idle_action is None else idle_action
            if not space.contains(self.idle_action):
                raise ValueError(f"idle_action {self.idle_action!r} is not in {space}")
        except BaseException:
            self.close()
            raise

    def _check_env(self) -> None:
        assert self._env is not None
        mode = self._env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            raise ValueError(
                "the Runner needs a vector env with autoreset_mode DISABLED (recommended) or "
                "NEXT_STEP; SAME_STEP resets sub-envs without the episode's seed"
            )

    def probe(self) -> dict[str, bool]:
        """Which optional grid attributes every sub-env offers.

        Asked after a reset, as a property may need one; ``has_wrapper_attr`` never raises in
        a gymnasium env.

        Returns:
            ``{"scenario_info": ..., "timings": ..., "parameters": ...}``.
        """
        if self._has is None:
            assert self._env is not None
            self._has = {}
            for name in ("scenario_info", "timings", "parameters"):
                try:
                    self._has[name] = all(self._env.call("has_wrapper_attr", name))
                except (AttributeError, NotImplementedError, TypeError):
                    self._has[name] = False
        return self._has

    def play(
        self,
        specs: list[EpisodeSpec],
        max_iter: int | None,
        root: Path | None,
        ep_bar: Any,
        step_bar: Any,
    ) -> dict[int, EpisodeResult]:
        """Play ``specs`` over the sub-envs (see :meth:`EpisodeExecutor.play`).

        Raises:
            RuntimeError: :meth:`start` was not called.
            Exception: an error of the env or the agent, with its own type.
        """
        if self._env is None:
            raise RuntimeError("start() the executor before play()")
        return EpisodeLoop(self, max_iter, root, ep_bar, step_bar).play(list(specs))

    def run_identity(self) -> dict[str, Any]:
        """Which env (id and spaces) and which agent (see :meth:`EpisodeExecutor.run_identity`)."""
        return {} if self._env is None else run_identity(self._env, self.agent)

    def close(self) -> None:
        """Close the vector env if this executor built it (idempotent)."""
        if self._owns_env and self._env is not None and not getattr(self._env, "closed", False):
            self._env.close()
