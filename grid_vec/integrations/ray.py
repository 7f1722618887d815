"""The Runner on Ray: episodes played by Ray actors
(``Runner(env_fns, agent, executor=RayExecutor(...))``).

Each actor holds a local :class:`~grid_vec.runner.VectorEnvExecutor` over the run's env
factories, hosted in-process as a GridVecEnv worker hosts its slice
(:func:`~grid_vec.vector.local_slice.slice_vector_env`: GridEnvs of one factory repeated are
the rows of one batch of the engine, stepped in one call; other envs a gymnasium
``SyncVectorEnv``; one CPU per actor), and plays the episodes it is handed with their own
seeds and options, so a result is the one a local run gives: episode ``i`` depends only on its
seeds and scenario, never on which actor played it.

Recording needs no shared file system: an actor records its episodes in a private temporary
directory and returns the finished files (bytes); the driver writes them under ``path_save``
atomically, exactly as a local run lays them out.

Failures: when an actor dies (killed, out of memory, node lost) the episodes it held go back
to the queue and a fresh actor replaces it; after ``max_actor_failures`` deaths the run stops
with an error naming the episodes left. An exception raised by the env or the agent is a bug,
not a failure of the machine: it is raised at once with its original type.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import ray
from gymnasium.vector import AutoresetMode
from ray.exceptions import RayActorError

from grid_vec.runner.episodes import EpisodeSpec
from grid_vec.runner.executor import EpisodeExecutor, VectorEnvExecutor, is_env_fns
from grid_vec.runner.progress import NoBar
from grid_vec.runner.recording import ARRAYS_FILE, META_FILE, episode_dirname, finished_episodes
from grid_vec.runner.results import EpisodeResult
from grid_vec.vector.local_slice import slice_vector_env

IN_FLIGHT_PER_ACTOR = 2  # a second task waits in the actor's queue: no idle gap between tasks


def check_address(address: str | None) -> None:
    """Raise TypeError unless ``address`` is a str or None (checked before Ray starts)."""
    if address is not None and not isinstance(address, str):
        raise TypeError(f"ray_address must be a str or None, got {address!r}")


def connect(address: str | None = None) -> bool:
    """Join a Ray cluster, or start a local Ray instance; nothing when Ray is initialised.

    Args:
        address: the cluster (``"auto"``, ``"ray://host:10001"``...), or None for a local
            instance.

    Returns:
        True when this call started or joined Ray (the caller then shuts it down).

    Raises:
        TypeError: ``address`` is not a str or None.
    """
    check_address(address)
    if ray.is_initialized():
        return False
    if address is None:
        ray.init(include_dashboard=False)
    else:
        ray.init(address=address)
    return True


class _EpisodeActor:
    """A Ray actor playing chunks of episodes with a local executor."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], agent: Any, idle_action: Any):
        self._env_fns = list(env_fns)
        self._agent = agent
        self._idle_action = idle_action
        self._executor: VectorEnvExecutor | None = None

    def setup(self) -> None:
        """Build the vector env and start the executor (raises its argument errors)."""
        env = slice_vector_env(self._env_fns, AutoresetMode.DISABLED)
        executor = VectorEnvExecutor()
        try:
            executor.start(env, self._agent, self._idle_action)
        except BaseException:
            env.close()
            raise
        self._executor = executor

    def play(
        self, specs: list[EpisodeSpec], max_iter: int | None, record: bool
    ) -> tuple[dict[int, EpisodeResult], dict[int, dict[str, bytes]]]:
        """Results of ``specs`` and, with ``record``, the files of each recorded episode."""
        assert self._executor is not None, "setup() first"
        bar = NoBar()
        if not record:
            return self._executor.play(specs, max_iter, None, bar, bar), {}
        tmp = Path(tempfile.mkdtemp(prefix="grid_vec-ray-"))
        try:
            results = self._executor.play(specs, max_iter, tmp, bar, bar)
            files = {
                index: {name: (path / name).read_bytes() for name in (ARRAYS_FILE, META_FILE)}
                for index, path in finished_episodes(tmp).items()
            }
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return results, files

    def pid(self) -> int:
        """The actor's process id (tests kill it)."""
        return os.getpid()


_RemoteEpisodeActor = ray.remote(num_cpus=1)(_EpisodeActor)


def write_episode_files(root: Path, index: int, files: dict[str, bytes]) -> Path:
    """Write one episode's files under ``root`` atomically (temporary directory, rename).

    Args:
        root: the run directory.
        index: the episode index (names its directory).
        files: file name -> content, as an actor recorded them.

    Returns:
        The episode's directory.

    Raises:
        OSError: the files cannot be written.
    """
    final = root / episode_dirname(index)
    tmp = root / f".{episode_dirname(index)}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    os.rename(tmp, final)
    return final


class RayExecutor(EpisodeExecutor):
    """Ray actors playing a Runner's episodes: ``Runner(env_fns, agent, executor=RayExecutor())``.

    The Runner's ``env`` must be picklable env factories; every actor builds all of them, so
    one actor plays ``len(env_fns)`` episodes at a time on one CPU: ``[factory] * n`` of one
    GridEnv factory (``env_factory``'s) is one batch of ``n`` envs of the engine, stepped in
    one call (``grid-vec run --ray --num-envs n``); other factories step one by one in a
    SyncVectorEnv. The agent must be picklable: each actor gets a copy. The results equal a
    local run's for the same seeds.

    Args:
        address: the Ray cluster to join (``"auto"``, ``"ray://host:10001"``...); None starts
            a local Ray instance unless Ray is already initialised. Ray started or joined here
            is shut down by :meth:`close`.
        num_actors: how many actors; default: one per CPU of the cluster.
        max_actor_failures: actor deaths tolerated in one run before it stops.

    Raises:
        TypeError: ``address`` is not a str or None; ``max_actor_failures`` is not an int.
        ValueError: ``num_actors`` is not None or a positive int; ``max_actor_failures`` < 0.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_actors: int | None = None,
        max_actor_failures: int = 3,
    ) -> None:
        check_address(address)
        if num_actors is not None and (
            isinstance(num_actors, bool) or not isinstance(num_actors, int) or num_actors < 1
        ):
            raise ValueError(f"num_actors must be None or a positive int, got {num_actors!r}")
        if isinstance(max_actor_failures, bool) or not isinstance(max_actor_failures, int):
            raise TypeError(f"max_actor_failures must be an int, got {max_actor_failures!r}")
        if max_actor_failures < 0:
            raise ValueError(f"max_actor_failures must be >= 0, got {max_actor_failures}")
        self.address = address
        self.num_actors = num_actors
        self.max_actor_failures = max_actor_failures
        self.chunk_size = 0
        self._args: tuple[list[Callable[[], gym.Env]], Any, Any] | None = None
        self._owns_ray = False
        self.actors: list[Any] = []  # ready
        self._starting: dict[Any, Any] = {}  # setup ref -> replacement actor

    def start(
        self,
        env: gym.vector.VectorEnv | Sequence[Callable[[], gym.Env]],
        agent: Any,
        idle_action: Any,
    ) -> None:
        """Connect to Ray and start the actors; each builds the envs and checks the agent.

        Args:
            env: a non-empty sequence of picklable env factories.
            agent: a picklable batched policy or per-episode agent.
            idle_action: the action of sub-envs with no episode left, or None.

        Raises:
            TypeError: ``env`` is a vector env (it cannot travel to the actors) or not a
                sequence of factories.
            RuntimeError: the executor was already started.
            Exception: an actor's setup error (spaces, idle action...), with its own type;
                the actors are then killed and Ray shut down if started here.
        """
        if self._args is not None:
            raise RuntimeError("this executor already serves a Runner; make one per Runner")
        if isinstance(env, gym.vector.VectorEnv) or not is_env_fns(env):
            raise TypeError(
                f"RayExecutor needs a non-empty sequence of picklable env factories (a "
                f"vector env cannot travel to the actors), got {env!r}"
            )
        self._args = (list(env), agent, idle_action)
        self.chunk_size = len(env)
        self._owns_ray = connect(self.address)
        try:
            num_actors = self.num_actors
            if num_actors is None:
                num_actors = max(1, int(ray.cluster_resources().get("CPU", 1)))
            self.actors = [_RemoteEpisodeActor.remote(*self._args) for _ in range(num_actors)]
            ray.get([actor.setup.remote() for actor in self.actors])
        except BaseException:
            self.close()
            raise

    def _respawn(self, dead: Any) -> None:
        """Drop a dead actor and start a replacement; the others keep playing meanwhile
        (it joins once its setup is done)."""
        if dead in self.actors:
            self.actors.remove(dead)
        assert self._args is not None
        fresh = _RemoteEpisodeActor.remote(*self._args)
        self._starting[fresh.setup.remote()] = fresh

    def play(
        self,
        specs: list[EpisodeSpec],
        max_iter: int | None,
        root: Path | None,
        ep_bar: Any,
        step_bar: Any,
    ) -> dict[int, EpisodeResult]:
        """Play ``specs`` on the actors, writing episodes under ``root`` as they arrive.

        Args:
            specs: the episodes to play (chunks of ``chunk_size`` go to each actor).
            max_iter: the cap of each episode in time steps (see :meth:`Runner.run`), or None.
            root: the run directory, or None to record nothing.
            ep_bar: progress in episodes (anything with ``update(n)``).
            step_bar: progress in steps (anything with ``update(n)``).

        Returns:
            The result of each episode, by episode index.

        Raises:
            RuntimeError: more than ``max_actor_failures`` actors died; it names the episodes
                left unplayed.
            Exception: an error of the env or the agent in an actor, with its own type (not
                retried).
        """
        size = self.chunk_size
        queue = deque(specs[i : i + size] for i in range(0, len(specs), size))
        flying: dict[Any, tuple[Any, list[EpisodeSpec]]] = {}
        results: dict[int, EpisodeResult] = {}
        failures = 0
        while queue or flying:
            for actor in self.actors:
                load = sum(1 for busy, _ in flying.values() if busy is actor)
                for _ in range(min(len(queue), IN_FLIGHT_PER_ACTOR - load)):
                    chunk = queue.popleft()
                    flying[actor.play.remote(chunk, max_iter, root is not None)] = (actor, chunk)
            (ref,), _ = ray.wait([*flying, *self._starting], num_returns=1)
            if ref in self._starting:  # a replacement actor's setup
                actor, chunk = self._starting.pop(ref), None
            else:
                actor, chunk = flying.pop(ref)
            try:
                outcome = ray.get(ref)
            except RayActorError as exc:
                if chunk is not None:
                    queue.appendleft(chunk)  # replayed by another actor
                if chunk is None or actor in self.actors:  # first news of this death
                    failures += 1
                    if failures > self.max_actor_failures:
                        chunks = [*queue, *(c for _, c in flying.values())]
                        left = sorted(s.index for c in chunks for s in c)
                        raise RuntimeError(
                            f"{failures} Ray actors died (max_actor_failures="
                            f"{self.max_actor_failures}); episodes {left} were not played"
                        ) from exc
                    self._respawn(actor)
                continue
            if chunk is None:
                self.actors.append(actor)  # the replacement is ready
                continue
            played, files = outcome
            for index, episode_files in files.items():
                assert root is not None
                write_episode_files(root, index, episode_files)
            results.update(played)
            ep_bar.update(len(played))
            step_bar.update(sum(r.steps for r in played.values()))
        return results

    def close(self) -> None:
        """Kill the actors; shut Ray down when this executor started or joined it. Idempotent."""
        for actor in [*self.actors, *self._starting.values()]:
            ray.kill(actor)
        self.actors, self._starting = [], {}
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
