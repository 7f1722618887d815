"""The Runner: evaluate an agent over many episodes on any gymnasium vector env.

Parallelism comes from the vector env. Each sub-env takes the next episode as soon as its
current one ends (a partial reset with ``options["reset_mask"]`` carrying that episode's seed
and options), so episode ``i`` depends only on its env seed, agent seed and reset options —
never on the number of sub-envs or the schedule.

Autoreset modes: ``DISABLED`` (recommended: nothing is reset behind the Runner's back) and
``NEXT_STEP`` (the Runner resets a finished sub-env itself before the automatic reset would
happen). ``SAME_STEP`` is refused: it resets with no seed before the Runner can choose one.
Sub-envs with no episode left keep stepping with a neutral action (``idle_action``) until the
last episode ends; their steps are discarded.
"""

from __future__ import annotations

import copy
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from grid_vec.runner.agents import agent_kind, check_spaces, default_action
from grid_vec.runner.episodes import (
    EpisodeSpec,
    check_max_iter,
    env_spec,
    episode_identity,
    plan_episodes,
    run_identity,
)
from grid_vec.runner.progress import make_bars
from grid_vec.runner.recording import (
    FORMAT,
    EpisodeRecorder,
    EpisodeWriter,
    finished_episodes,
    info_columns,
    info_row,
    package_versions,
    prepare_run_dir,
    remove_partial_episodes,
)
from grid_vec.runner.results import EpisodeResult, EpisodeTimings, jsonable
from grid_vec.runner.resume import discard_episodes, plan_resume

_log = logging.getLogger(__name__)

_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def build_vector_env(env_fns: Sequence[Callable[[], gym.Env]]) -> VectorEnv:
    """A vector env in ``DISABLED`` autoreset mode over ``env_fns``: grid_vec's GridVecEnv
    when it is available, else gymnasium's AsyncVectorEnv."""
    try:
        from grid_vec.vector import GridVecEnv  # type: ignore[attr-defined]
    except ImportError:
        return AsyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.DISABLED)
    return GridVecEnv(list(env_fns), autoreset_mode=AutoresetMode.DISABLED)


class Runner:
    """Runs ``agent`` over episodes of ``env``.

    ``env``: a gymnasium ``VectorEnv`` (its autoreset mode must be DISABLED or NEXT_STEP), or
    a sequence of env factories, from which the Runner builds (and later closes) a vector env
    with :func:`build_vector_env`. ``agent``: a batched policy or a per-episode agent (see
    :mod:`grid_vec.runner.agents`). ``seed``: master seed from which default per-episode env
    and agent seeds derive. ``idle_action``: the action played by sub-envs that have no
    episode left (default: :func:`~grid_vec.runner.agents.default_action`).

    ``executor="ray"`` plays the episodes on ``num_actors`` Ray actors (default: one per CPU
    of the cluster at ``ray_address``, or of a local Ray instance when it is None) with the
    same results as a local run; ``env`` must then be picklable env factories and ``env`` is
    None on the Runner (see :mod:`grid_vec.integrations.ray`, extra ``ray``).
    """

    def __init__(
        self,
        env: VectorEnv | Sequence[Callable[[], gym.Env]],
        agent: Any,
        *,
        seed: int = 0,
        idle_action: Any = None,
        executor: str = "local",
        ray_address: str | None = None,
        num_actors: int | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.agent = agent
        self.kind = agent_kind(agent)
        self._pool = _episode_pool(executor, env, agent, idle_action, ray_address, num_actors)
        if self._pool is not None:
            self.env, self._owns_env, self.seed = None, False, int(seed)
            return
        if isinstance(env, VectorEnv):
            self.env, self._owns_env = env, False
        elif isinstance(env, Sequence) and env and all(callable(f) for f in env):
            self.env, self._owns_env = build_vector_env(env), True
        else:
            raise TypeError(
                f"env must be a gymnasium VectorEnv or a non-empty sequence of env factories, "
                f"got {env!r}"
            )
        try:
            self._check_env()
            check_spaces(agent, self.env)
            if self.kind == "batch" and callable(getattr(agent, "bind", None)):
                agent.bind(self.env)
        except BaseException:
            self.close()
            raise
        self.seed = int(seed)
        space = self.env.single_action_space
        self.idle_action = default_action(space) if idle_action is None else idle_action
        if not space.contains(self.idle_action):
            self.close()
            raise ValueError(f"idle_action {self.idle_action!r} is not in {space}")
        self._has: dict[str, bool] | None = None  # probed after a first reset (see _probe)

    def _check_env(self) -> None:
        mode = self.env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            raise ValueError(
                "the Runner needs a vector env with autoreset_mode DISABLED (recommended) or "
                "NEXT_STEP; SAME_STEP resets sub-envs without the episode's seed"
            )

    def _probe(self) -> dict[str, bool]:
        """Which optional grid attributes every sub-env offers (``has_wrapper_attr`` never
        raises in a gymnasium env; asked after a reset, as a property may need one)."""
        if self._has is None:
            self._has = {}
            for name in ("scenario_info", "timings", "parameters"):
                try:
                    self._has[name] = all(self.env.call("has_wrapper_attr", name))
                except (AttributeError, NotImplementedError, TypeError):
                    self._has[name] = False
        return self._has

    def close(self) -> None:
        """Close the vector env if the Runner built it (the Ray actors under executor="ray")."""
        if self._pool is not None:
            self._pool.close()
        if self._owns_env and not getattr(self.env, "closed", False):
            self.env.close()

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

        ``max_iter`` caps the steps of each episode (the Runner truncates it). ``env_seeds``
        and ``agent_seeds`` default to seeds derived from the master seed. ``episode_id[i]``
        is passed to the reset of episode ``i`` as ``options["scenario_id"]`` (grid envs pick
        their scenario with it); ``reset_options`` is one dict for all episodes or one per
        episode. ``pbar``: see :func:`grid_vec.runner.progress.make_bars`. ``path_save``
        records every episode there; with ``resume=True`` episodes already recorded are
        loaded instead of played (their seeds and options must match).
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
            if not todo:
                played = {}
            elif self._pool is not None:
                played = self._pool.play(todo, max_iter, root, bars[0], bars[1])
            else:
                played = _EpisodeLoop(self, max_iter, root, bars[0], bars[1]).play(todo)
        finally:
            if bars[2]:
                bars[0].close()
                bars[1].close()
        return [known[s.index] if s.index in known else played[s.index] for s in specs]

    def play_specs(
        self,
        specs: Sequence[EpisodeSpec],
        *,
        max_iter: int | None = None,
        path_save: str | Path | None = None,
    ) -> dict[int, EpisodeResult]:
        """Play exactly ``specs`` (their own indices, seeds and options) on this Runner's
        vector env, recording them under ``path_save``; results by episode index. The
        building block of executors: each Ray actor plays its share of a run with it."""
        if self._pool is not None:
            raise ValueError("play_specs runs on the local vector env; use run() with a pool")
        check_max_iter(max_iter)
        root = None if path_save is None else prepare_run_dir(path_save)
        no_bar, _, _ = make_bars(False, len(specs))
        return _EpisodeLoop(self, max_iter, root, no_bar, no_bar).play(list(specs))

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
        run = {} if self._pool is not None else run_identity(self.env, self.agent)
        expected = {s.index: {**run, **episode_identity(s, max_iter)} for s in specs}
        plan = plan_resume(root, expected)
        for index, reason in plan.damaged.items():
            _log.warning("episode %d is damaged, playing it again: %s", index, reason)
        discard_episodes(root, plan.damaged)
        return plan.kept


class _EpisodeLoop:
    """The step loop of one :meth:`Runner.run` call."""

    def __init__(
        self, runner: Runner, max_iter: int | None, root: Path | None, ep_bar: Any, step_bar: Any
    ) -> None:
        self.runner = runner
        self.env = env = runner.env
        self.max_iter = max_iter
        self.root = root
        self.ep_bar, self.step_bar = ep_bar, step_bar
        n = env.num_envs
        self.n = n
        self.specs: list[EpisodeSpec | None] = [None] * n
        self.active = np.zeros(n, dtype=bool)
        self.n_active = 0
        # Every active episode takes part in every batch step, so per-episode steps and times
        # are differences of run-wide clocks (steps, agent s, env s) taken at start and end.
        self.clock = np.zeros(3)
        self.clock_start = np.zeros((n, 3))
        self.agent_reset_time = np.zeros(n)
        self.cum = np.zeros(n)
        self.start_time = np.zeros(n)
        self.last_reward = np.zeros(n)
        self.scenario: list[tuple[Any, Any, Any]] = [(None, None, None)] * n
        self.timing_start: list[dict[str, Any] | None] = [None] * n
        self.results: dict[int, EpisodeResult] = {}
        self.obs_space = env.single_observation_space
        self.act_space = env.single_action_space
        self.agents = (
            [copy.deepcopy(runner.agent) for _ in range(n)] if runner.kind == "episode" else []
        )
        self.act_buffer = create_empty_array(self.act_space, n)
        self.recorders = (
            [EpisodeRecorder(self.obs_space, self.act_space) for _ in range(n)] if root else []
        )
        self.run_meta: dict[str, Any] | None = None
        self.writer: EpisodeWriter | None = None

    def play(self, specs: list[EpisodeSpec]) -> dict[int, EpisodeResult]:
        """Play ``specs`` over the sub-envs; results by episode index."""
        self.writer = None if self.root is None else EpisodeWriter(self.root)
        try:
            self._play(deque(specs))
        except BaseException:
            if self.writer is not None:
                self.writer.close(check=False)  # keep the episodes that did finish
            raise
        if self.writer is not None:
            self.writer.close()
        return self.results

    def _play(self, queue: deque[EpisodeSpec]) -> None:
        for i in range(self.n):
            self.specs[i] = queue.popleft() if queue else None
        obs = self._reset(None, list(range(self.n)), None)
        env, max_iter, step_bar, clock = self.env, self.max_iter, self.step_bar, self.clock
        while self.n_active:
            t0 = time.perf_counter()
            actions = self._actions(obs)
            t1 = time.perf_counter()
            obs, rewards, terminated, truncated, infos = env.step(actions)
            t2 = time.perf_counter()
            clock += (1.0, t1 - t0, t2 - t1)
            self.cum += rewards  # idle sub-envs accumulate too; their sums are never read
            self.last_reward[:] = rewards
            if self.recorders:
                self._record(actions, obs, rewards, terminated, truncated, infos, t1 - t0, t2 - t1)
            step_bar.update(self.n_active)
            ended = terminated | truncated
            cut = None
            if max_iter is not None:
                cut = self.active & ~ended & (clock[0] - self.clock_start[:, 0] >= max_iter)
            if ended.any() or (cut is not None and cut.any()):
                finished = self.active & (ended if cut is None else ended | cut)
                restart = finished | (~self.active & ended)
                obs = self._turnover(obs, queue, restart, finished, terminated, truncated, cut)

    def _actions(self, obs: Any) -> Any:
        runner = self.runner
        if runner.kind == "batch":
            return runner.agent(obs)
        rows = self._rows(self.obs_space, obs)
        items = [
            agent.act(rows[i], float(self.last_reward[i]), False)
            if self.active[i]
            else runner.idle_action
            for i, agent in enumerate(self.agents)
        ]
        return concatenate(self.act_space, items, self.act_buffer)

    def _record(self, actions, obs, rewards, terminated, truncated, infos, agent_s, env_s):
        obs_rows = self._rows(self.obs_space, obs)
        act_rows = self._rows(self.act_space, actions)
        columns = info_columns(infos)
        for i in np.flatnonzero(self.active):
            self.recorders[i].add(
                act_rows[i],
                obs_rows[i],
                float(rewards[i]),
                bool(terminated[i]),
                bool(truncated[i]),
                info_row(columns, i),
                env_s,
                agent_s,
            )

    def _turnover(self, obs, queue, restart, finished, terminated, truncated, cut) -> Any:
        """End the finished episodes, hand out the next ones, reset the sub-envs that ended."""
        snapshot = self._timings()
        for i in np.flatnonzero(finished):
            by_runner = cut is not None and bool(cut[i])
            self._finish(
                i, bool(terminated[i]), bool(truncated[i]) or by_runner, by_runner, snapshot
            )
        slots = list(np.flatnonzero(restart))
        for i in slots:
            self.specs[i] = queue.popleft() if queue else None
        if not any(spec is not None for spec in self.specs):
            return obs
        return self._reset(obs, slots, snapshot)

    def _reset(self, obs: Any, slots: list[int], snapshot: Any) -> Any:
        """Reset ``slots``, grouped by reset options (one vector reset per group); the first
        reset of a run (``obs`` None) resets every sub-env."""
        groups: list[tuple[dict[str, Any] | None, list[int]]] = []
        for i in slots:
            spec = self.specs[i]
            options = None if spec is None else spec.options
            for group_options, members in groups:
                if group_options == options:
                    members.append(i)
                    break
            else:
                groups.append((options, [i]))
        for options, members in groups:
            seeds: list[int | None] = [None] * self.n
            for i in slots:
                spec = self.specs[i]
                seeds[i] = None if spec is None else spec.env_seed
            call_options = dict(options or {})
            if obs is not None:
                mask = np.zeros(self.n, dtype=bool)
                mask[members] = True
                call_options["reset_mask"] = mask
            obs, infos = self.env.reset(seed=seeds, options=call_options or None)
            if snapshot is None:  # first reset of the run
                snapshot = self._timings()
            has = self.runner._probe()
            scenarios = self.env.get_attr("scenario_info") if has["scenario_info"] else None
            rows = self._rows(self.obs_space, obs)
            for i in members:
                if self.specs[i] is not None:
                    self._start(i, rows[i], infos, scenarios, snapshot)
        return obs

    def _start(self, i: int, obs: Any, infos: dict, scenarios: Any, snapshot: Any) -> None:
        spec = self.specs[i]
        assert spec is not None
        self.active[i] = True
        self.n_active += 1
        self.clock_start[i] = self.clock
        self.agent_reset_time[i] = 0.0
        self.cum[i] = 0.0
        self.last_reward[i] = 0.0
        self.start_time[i] = time.perf_counter()
        info = info_row(info_columns(infos), i)
        scenario_id, name, length = info.get("scenario_id"), info.get("scenario_name"), None
        if scenarios is not None:
            current = scenarios[i]
            scenario_id = getattr(current, "id", None) if scenario_id is None else scenario_id
            name = getattr(current, "name", None) if name is None else name
            length = getattr(current, "length", None)
        self.scenario[i] = (jsonable(scenario_id), None if name is None else str(name), length)
        self.timing_start[i] = None if snapshot is None else snapshot[i]
        if self.agents:
            t0 = time.perf_counter()
            self.agents[i].seed(spec.agent_seed)
            self.agents[i].reset(obs)
            self.agent_reset_time[i] = time.perf_counter() - t0
        if self.recorders:
            self.recorders[i].start(obs)

    def _finish(
        self, i: int, terminated: bool, truncated: bool, by_runner: bool, snapshot: Any
    ) -> None:
        spec = self.specs[i]
        assert spec is not None
        self.active[i] = False
        self.n_active -= 1
        steps, agent_s, env_s = self.clock - self.clock_start[i]
        scenario_id, name, length = self.scenario[i]
        max_steps = length
        if self.max_iter is not None:
            max_steps = self.max_iter if length is None else min(length, self.max_iter)
        detail = _timing_delta(self.timing_start[i], None if snapshot is None else snapshot[i])
        result = EpisodeResult(
            episode=spec.index,
            scenario_id=scenario_id,
            scenario_name=name,
            cum_reward=float(self.cum[i]),
            steps=int(steps),
            max_steps=None if max_steps is None else int(max_steps),
            terminated=terminated,
            truncated=truncated,
            env_seed=spec.env_seed,
            agent_seed=spec.agent_seed,
            timings=EpisodeTimings(
                agent=float(agent_s + self.agent_reset_time[i]),
                env=float(env_s),
                total=time.perf_counter() - float(self.start_time[i]),
                powerflow=detail.get("powerflow"),
                env_detail=detail,
            ),
        )
        self.results[spec.index] = result
        if self.writer is not None:
            if self.run_meta is None:
                self.run_meta = self._run_meta()
            recorder = self.recorders[i]
            if by_runner:
                recorder.mark_truncated()
            arrays, skipped = recorder.arrays()
            recorder.clear()
            meta = {
                "format": FORMAT,
                "episode": spec.index,
                **episode_identity(spec, self.max_iter),
                "scenario": {"id": scenario_id, "name": name, "length": length},
                **self.run_meta,
                "arrays": {k: [list(v.shape), v.dtype.str] for k, v in arrays.items()},
                "skipped_info": skipped,
                "result": result.to_dict(),
            }
            self.writer.submit(spec.index, arrays, meta)
        self.ep_bar.update(1)

    def _rows(self, space: spaces.Space, batch: Any) -> Any:
        if isinstance(space, _ARRAY_SPACES) and isinstance(batch, np.ndarray):
            return batch
        return list(iterate(space, batch))

    def _timings(self) -> tuple[dict[str, Any], ...] | None:
        return self.env.call("timings") if self.runner._probe()["timings"] else None

    def _run_meta(self) -> dict[str, Any]:
        env = self.env
        parameters = env.get_attr("parameters")[0] if self.runner._probe()["parameters"] else None
        return {
            **run_identity(env, self.runner.agent),
            "env_kwargs": jsonable(getattr(env_spec(env), "kwargs", None)),
            "num_envs": env.num_envs,
            "autoreset_mode": self.runner.autoreset_mode.value,
            "parameters": jsonable(parameters),
            "versions": package_versions(),
        }


def _timing_delta(start: dict[str, Any] | None, end: dict[str, Any] | None) -> dict[str, float]:
    if not isinstance(start, dict) or not isinstance(end, dict):
        return {}
    return {
        k: float(end[k]) - float(start[k])
        for k in end
        if k in start and isinstance(end[k], (int, float, np.number))
    }


def _episode_pool(
    executor: str,
    env: Any,
    agent: Any,
    idle_action: Any,
    ray_address: str | None,
    num_actors: int | None,
) -> Any:
    """The Ray episode pool for ``executor="ray"``, None for ``"local"`` (imports Ray only
    when asked, so ``import grid_vec`` never does)."""
    if executor == "local":
        if ray_address is not None or num_actors is not None:
            raise ValueError("ray_address and num_actors need executor='ray'")
        return None
    if executor != "ray":
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    try:
        from grid_vec.integrations.ray import RayEpisodePool
    except ImportError as exc:
        raise ImportError("executor='ray' needs Ray: pip install 'grid_vec[ray]'") from exc
    return RayEpisodePool(
        env, agent, idle_action=idle_action, address=ray_address, num_actors=num_actors
    )
