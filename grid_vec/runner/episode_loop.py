"""The local step loop: a run's episodes played over the sub-envs of one vector env.

Each sub-env takes the next episode as soon as its current one ends (a partial reset with
``options["reset_mask"]`` carrying that episode's seed and options), so episode ``i`` depends
only on its env seed, agent seed and reset options, never on the number of sub-envs or the
schedule. Sub-envs with no episode left keep stepping with the idle action until the last
episode ends; their steps are discarded.

An episode lost to a crash (a GridVecEnv with ``restart_on_crash=True`` restarted the worker
of its sub-env, which came back reset: ``infos["worker_restarted"]``) is played again from
its start, as the Ray executor replays the episodes of an actor that died: since it depends
only on its seeds and options, its result is the one a run without the crash gives, where
recording it truncated would report a shortened episode as a result. An episode lost
:data:`MAX_LOSSES` times (a crash it causes itself, not a failure of the machine) stops the
run with an error naming it, its sub-env and its scenario.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from grid_vec.runner.agents import merge_rows, takes_infos
from grid_vec.runner.episodes import EpisodeSpec, env_spec, episode_identity, run_identity
from grid_vec.runner.recording import (
    FORMAT,
    EpisodeRecorder,
    EpisodeWriter,
    info_columns,
    info_row,
    package_versions,
)
from grid_vec.runner.results import EpisodeResult, EpisodeTimings, jsonable
from grid_vec.vector.infos import RESTARTED


class LoopHost(Protocol):
    """What the loop reads of the local executor that runs it
    (:class:`~grid_vec.runner.executor.VectorEnvExecutor` is one): written here so that this
    module, which the executor calls, needs no import of it."""

    env: VectorEnv | None
    agent: Any
    kind: str  # "batch" or "episode" (:func:`~grid_vec.runner.agents.agent_kind`)
    idle_action: Any
    autoreset_mode: AutoresetMode

    def probe(self) -> dict[str, bool]: ...


_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

MAX_LOSSES = 3
"""Times one episode may be lost to a crash of its sub-env's worker; the last loss raises."""


class EpisodeLostError(RuntimeError):
    """An episode was lost to crashes of its sub-env's worker :data:`MAX_LOSSES` times."""


class EpisodeLoop:
    """The step loop of one :meth:`VectorEnvExecutor.play` call: hands episodes to sub-envs as
    they free up, steps them all in lockstep and records what they play.

    Args:
        executor: the started local executor (its vector env, agent, idle action).
        max_iter: the cap of each episode in time steps (see :meth:`Runner.run`), or None.
        root: the run directory episodes are recorded under, or None.
        ep_bar: progress in episodes (anything with ``update(n)``).
        step_bar: progress in steps (anything with ``update(n)``).
    """

    def __init__(
        self,
        executor: LoopHost,
        max_iter: int | None,
        root: Path | None,
        ep_bar: Any,
        step_bar: Any,
    ) -> None:
        self.executor = executor
        self.env = env = executor.env
        # a batched policy that asks for the infos gets those that came with its observations
        self.takes_infos = executor.kind == "batch" and takes_infos(executor.agent)
        self.last_infos: dict[str, Any] = {}
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
        self.env_steps = np.zeros(n, dtype=np.int64)  # time steps, skipped ones included
        self.other_sums: dict[str, np.ndarray] = {}  # info["other_rewards"] summed
        # branches tripped (None until an env reports info["tripped_branches"]) and the
        # game-over reason of each sub-env's last step
        self.trips: np.ndarray | None = None
        self.reasons: list[str | None] = [None] * n
        self.start_time = np.zeros(n)
        self.last_reward = np.zeros(n)
        self.scenario: list[tuple[Any, Any, Any]] = [(None, None, None)] * n
        self.timing_start: list[dict[str, Any] | None] = [None] * n
        self.results: dict[int, EpisodeResult] = {}
        self.losses: dict[int, int] = {}  # episode index: times lost to a worker's crash
        self.obs_space = env.single_observation_space
        self.act_space = env.single_action_space
        self.batched_spaces: dict[int, spaces.Space] = {}  # by id of the single space
        self.agents = (
            [copy.deepcopy(executor.agent) for _ in range(n)] if executor.kind == "episode" else []
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
            self.last_infos = infos
            t2 = time.perf_counter()
            clock += (1.0, t1 - t0, t2 - t1)
            if isinstance(infos, dict) and RESTARTED in infos:
                self._requeue_lost(infos, queue)  # their sub-envs come back truncated: reset
            self.cum += rewards  # idle sub-envs accumulate too; their sums are never read
            self.env_steps += 1
            skipped = infos.get("skipped_steps") if isinstance(infos, dict) else None
            if skipped is not None:
                self.env_steps += np.asarray(skipped, dtype=np.int64)
            others = infos.get("other_rewards") if isinstance(infos, dict) else None
            if isinstance(others, dict):
                for name, values in others.items():
                    if not name.startswith("_"):
                        sums = self.other_sums.setdefault(name, np.zeros(self.n))
                        sums += np.asarray(values, dtype=np.float64)
            self.last_reward[:] = rewards
            if isinstance(infos, dict):
                self._note_ending(infos, terminated)
            if self.recorders:
                self._record(actions, obs, rewards, terminated, truncated, infos, t1 - t0, t2 - t1)
            step_bar.update(self.n_active)
            ended = terminated | truncated
            cut = None
            if max_iter is not None:  # time steps, those the env played on its own included
                cut = self.active & ~ended & (self.env_steps >= max_iter)
            if ended.any() or (cut is not None and cut.any()):
                finished = self.active & (ended if cut is None else ended | cut)
                restart = finished | (~self.active & ended)
                obs = self._turnover(obs, queue, restart, finished, terminated, truncated, cut)

    def _note_ending(self, infos: dict[str, Any], terminated: np.ndarray) -> None:
        """Count the branches tripped this step and keep the game-over reasons of the
        sub-envs that terminated (what the results table says of how an episode ended)."""
        tripped = infos.get("tripped_branches")
        if isinstance(tripped, np.ndarray) and tripped.ndim == 2 and len(tripped) == self.n:
            if self.trips is None:
                self.trips = np.zeros(self.n, dtype=np.int64)
            self.trips += np.count_nonzero(tripped, axis=1)
        reasons = infos.get("game_over_reason")
        if reasons is None or not terminated.any():
            return
        present = np.asarray(infos.get("_game_over_reason", np.ones(self.n, bool)), dtype=bool)
        for i in np.flatnonzero(terminated & present).tolist():
            self.reasons[i] = str(reasons[i])

    def _requeue_lost(self, infos: dict[str, Any], queue: deque[EpisodeSpec]) -> None:
        """Put the episodes lost to a worker's crash this step back at the head of the queue.

        Raises:
            EpisodeLostError: an episode lost for the :data:`MAX_LOSSES`-th time.
        """
        lost = np.asarray(infos[RESTARTED], dtype=bool)
        lost &= np.asarray(infos.get(f"_{RESTARTED}", True), dtype=bool) & self.active
        for i in np.flatnonzero(lost).tolist():
            spec = self.specs[i]
            assert spec is not None
            losses = self.losses[spec.index] = self.losses.get(spec.index, 0) + 1
            if losses >= MAX_LOSSES:
                scenario_id, name, _ = self.scenario[i]
                raise EpisodeLostError(
                    f"episode {spec.index} (scenario {name or scenario_id!r}, env seed "
                    f"{spec.env_seed}) was lost {losses} times to a crash of the worker of "
                    f"sub-env {i}; the env or the agent crashes it, see the worker's stderr"
                )
            self.active[i] = False
            self.n_active -= 1
            self.specs[i] = None
            queue.appendleft(spec)
            if self.recorders:
                self.recorders[i].clear()

    def _actions(self, obs: Any) -> Any:
        executor = self.executor
        if executor.kind == "batch":
            if self.takes_infos:
                return executor.agent(obs, self.last_infos)
            return executor.agent(obs)
        rows = self._rows(self.obs_space, obs)
        items = [
            agent.act(rows[i], float(self.last_reward[i]), False)
            if self.active[i]
            else executor.idle_action
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
        seeds: list[int | None] = [None] * self.n
        for i in slots:
            spec = self.specs[i]
            seeds[i] = None if spec is None else spec.env_seed
        for options, members in groups:
            call_options = dict(options or {})
            if obs is not None:
                mask = np.zeros(self.n, dtype=bool)
                mask[members] = True
                call_options["reset_mask"] = mask
            obs, infos = self.env.reset(seed=seeds, options=call_options or None)
            if self.takes_infos:
                self.last_infos = merge_rows(self.last_infos, infos, members)
            if snapshot is None:  # first reset of the run
                snapshot = self._timings()
            has = self.executor.probe()
            scenarios = self.env.get_attr("scenario_info") if has["scenario_info"] else None
            rows = self._rows(self.obs_space, obs)
            columns = info_columns(infos)
            for i in members:
                if self.specs[i] is not None:
                    self._start(i, rows[i], columns, scenarios, snapshot)
        return obs

    def _start(self, i: int, obs: Any, columns: Any, scenarios: Any, snapshot: Any) -> None:
        spec = self.specs[i]
        assert spec is not None
        self.active[i] = True
        self.n_active += 1
        self.clock_start[i] = self.clock
        self.agent_reset_time[i] = 0.0
        self.cum[i] = 0.0
        self.env_steps[i] = 0
        self.reasons[i] = None
        if self.trips is not None:
            self.trips[i] = 0
        for sums in self.other_sums.values():
            sums[i] = 0.0
        self.last_reward[i] = 0.0
        self.start_time[i] = time.perf_counter()
        info = info_row(columns, i)
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
            env_steps=int(self.env_steps[i]),
            other_rewards={name: float(sums[i]) for name, sums in self.other_sums.items()},
            game_over_reason=self.reasons[i] if terminated else None,
            trips=None if self.trips is None else int(self.trips[i]),
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
        # gymnasium iterates a batch by its batched space: a Dict's Discrete part is batched
        # as a MultiDiscrete (a "combined" action), which the single space cannot iterate
        batched = self.batched_spaces.get(id(space))
        if batched is None:
            batched = self.batched_spaces[id(space)] = batch_space(space, self.n)
        return list(iterate(batched, batch))

    def _timings(self) -> tuple[dict[str, Any], ...] | None:
        return self.env.call("timings") if self.executor.probe()["timings"] else None

    def _run_meta(self) -> dict[str, Any]:
        env = self.env
        parameters = env.get_attr("parameters")[0] if self.executor.probe()["parameters"] else None
        return {
            **run_identity(env, self.executor.agent),
            "env_kwargs": jsonable(getattr(env_spec(env), "kwargs", None)),
            "num_envs": env.num_envs,
            "autoreset_mode": self.executor.autoreset_mode.value,
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
