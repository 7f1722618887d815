"""RayVecEnv: a gymnasium ``VectorEnv`` whose sub-envs live in Ray actors, possibly on
other machines.

Each actor holds ``envs_per_actor`` sub-envs in a gymnasium ``SyncVectorEnv`` with the same
autoreset mode, so the semantics (NEXT_STEP, SAME_STEP, DISABLED with ``reset_mask``, seeds,
infos) are gymnasium's. A step costs one Ray round trip per actor (about a millisecond), so
it pays off when a sub-env step costs more than that — large grids, the pandapower backend,
many sub-envs per actor — or when the sub-envs need more machines than one. On one machine
with a fast env, GridVecEnv (shared memory, ~20 µs per step) is the right tool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate
from ray.exceptions import RayActorError

from grid_vec.integrations.ray import connect
from grid_vec.runner.executor import is_env_fns
from grid_vec.vector.errors import WorkerCrashedError
from grid_vec.vector.infos import place_infos


class _SubEnvs:
    """A Ray actor holding a slice of the sub-envs."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], mode: AutoresetMode) -> None:
        self.envs = SyncVectorEnv(list(env_fns), autoreset_mode=mode)

    def spaces(self) -> tuple[gym.Space, gym.Space, Any]:
        env = self.envs
        return env.single_observation_space, env.single_action_space, env.get_attr("spec")[0]

    def reset(self, seeds: list[int | None], options: dict[str, Any] | None) -> tuple:
        return self.envs.reset(seed=seeds, options=options)

    def step(self, actions: Any) -> tuple:
        return self.envs.step(actions)

    def call(self, name: str, args: tuple, kwargs: dict) -> tuple:
        return self.envs.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> tuple:
        return self.envs.get_attr(name)

    def set_attr(self, name: str, values: list[Any]) -> None:
        self.envs.set_attr(name, values)

    def close(self) -> None:
        self.envs.close()


_RemoteSubEnvs = ray.remote(num_cpus=1)(_SubEnvs)


class RayVecEnv(VectorEnv):
    """``len(env_fns)`` sub-envs spread over Ray actors of ``envs_per_actor`` each.

    Same interface as gymnasium's vector envs (and GridVecEnv's generic part): ``reset``,
    ``step``, ``call``, ``get_attr``, ``set_attr``, ``close``, ``autoreset_mode``. A dead
    actor raises :class:`~grid_vec.vector.errors.WorkerCrashedError` naming its sub-envs.

    Args:
        env_fns: the sub-envs' factories, picklable and importable on the cluster.
        envs_per_actor: how many sub-envs each actor holds (one CPU per actor).
        autoreset_mode: gymnasium's autoreset mode of every sub-env.
        ray_address: the cluster to join (None: the running Ray, or a new local instance);
            Ray started or joined here is shut down by ``close``.

    Raises:
        TypeError: ``env_fns`` is not a non-empty sequence of callables; ``envs_per_actor``
            is not an int.
        ValueError: ``envs_per_actor`` < 1; an unknown autoreset mode; sub-envs of two actors
            have different spaces.
        WorkerCrashedError: an actor died while starting.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        envs_per_actor: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        ray_address: str | None = None,
    ) -> None:
        if not is_env_fns(env_fns):
            raise TypeError(f"env_fns must be a non-empty sequence of callables, got {env_fns!r}")
        if isinstance(envs_per_actor, bool) or not isinstance(envs_per_actor, int):
            raise TypeError(f"envs_per_actor must be an int, got {envs_per_actor!r}")
        if envs_per_actor < 1:
            raise ValueError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
        mode = AutoresetMode(autoreset_mode)
        self.num_envs = len(env_fns)
        self.metadata = {"autoreset_mode": mode}
        self.closed = True  # until the actors are up
        self._slices = [
            range(start, min(start + envs_per_actor, self.num_envs))
            for start in range(0, self.num_envs, envs_per_actor)
        ]
        self._owns_ray = connect(ray_address)
        self._actors: list[Any] = []
        try:
            self._actors = [
                _RemoteSubEnvs.remote([env_fns[i] for i in part], mode) for part in self._slices
            ]
            found = self._gather([actor.spaces.remote() for actor in self._actors])
        except BaseException:
            self._shutdown()
            raise
        self.closed = False
        obs_space, act_space, self.spec = found[0]
        for index, (other_obs, other_act, _) in enumerate(found):
            if other_obs != obs_space or other_act != act_space:
                self.close()
                raise ValueError(
                    f"the sub-envs of actor {index} have spaces {other_obs}, {other_act}; "
                    f"actor 0 has {obs_space}, {act_space}: all sub-envs must match"
                )
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self._obs_rows: list[Any] = [None] * self.num_envs

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env, or those of ``options["reset_mask"]``.

        Args:
            seed: None, one int (sub-env ``i`` gets ``seed + i``) or one seed per sub-env.
            options: passed to every reset sub-env; ``"reset_mask"`` (a boolean array of
                ``num_envs``) picks the sub-envs to reset.

        Returns:
            The batched observations (every sub-env's latest) and the batched reset infos.

        Raises:
            RuntimeError: the env is closed.
            ValueError: ``seed`` or ``reset_mask`` has the wrong length or type.
            WorkerCrashedError: an actor died.
        """
        self._check_open()
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed has {len(seeds)} entries, expected {self.num_envs}")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(
                    f"reset_mask must be a boolean array of shape ({self.num_envs},), got {mask!r}"
                )
        jobs = {}
        for index, part in enumerate(self._slices):
            if mask is not None and not mask[part].any():
                continue  # nothing to reset on this actor
            part_options = dict(options)
            if mask is not None:
                part_options["reset_mask"] = mask[part]
            part_seeds = [seeds[i] for i in part]
            jobs[index] = self._actors[index].reset.remote(part_seeds, part_options or None)
        infos: dict[str, Any] = {}
        for index, (obs, part_infos) in zip(jobs, self._gather(list(jobs.values())), strict=True):
            self._place(index, obs, part_infos, infos)
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every sub-env with its row of ``actions``.

        Args:
            actions: a batch of the ``action_space``.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, batched.

        Raises:
            RuntimeError: the env is closed.
            ValueError: ``actions`` does not have ``num_envs`` rows.
            WorkerCrashedError: an actor died.
            Exception: a sub-env's error, with its own type.
        """
        self._check_open()
        rows = list(iterate(self.action_space, actions))
        if len(rows) != self.num_envs:
            raise ValueError(f"actions has {len(rows)} rows, expected {self.num_envs}")
        space = self.single_action_space
        jobs = [
            actor.step.remote(
                concatenate(space, [rows[i] for i in part], create_empty_array(space, len(part)))
            )
            for actor, part in zip(self._actors, self._slices, strict=True)
        ]
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for index, out in enumerate(self._gather(jobs)):
            obs, part_rewards, part_terminated, part_truncated, part_infos = out
            part = self._slices[index]
            rewards[part.start : part.stop] = part_rewards
            terminated[part.start : part.stop] = part_terminated
            truncated[part.start : part.stop] = part_truncated
            self._place(index, obs, part_infos, infos)
        return self._observations(), rewards, terminated, truncated, infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method (or read attribute) ``name`` of every sub-env.

        Args:
            name: looked up through each sub-env's wrappers.
            *args: positional arguments of the call.
            **kwargs: keyword arguments of the call.

        Returns:
            One result per sub-env, in sub-env order.

        Raises:
            RuntimeError: the env is closed.
            WorkerCrashedError: an actor died.
            Exception: a sub-env's error (e.g. AttributeError), with its own type.
        """
        self._check_open()
        jobs = [actor.call.remote(name, args, kwargs) for actor in self._actors]
        return tuple(value for part in self._gather(jobs) for value in part)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every sub-env.

        Args:
            name: looked up through each sub-env's wrappers.

        Returns:
            One value per sub-env, in sub-env order.

        Raises:
            RuntimeError: the env is closed.
            WorkerCrashedError: an actor died.
            AttributeError: a sub-env has no such attribute.
        """
        self._check_open()
        jobs = [actor.get_attr.remote(name) for actor in self._actors]
        return tuple(value for part in self._gather(jobs) for value in part)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every sub-env.

        Args:
            name: set through each sub-env's wrappers (gymnasium's ``set_wrapper_attr``).
            values: one value for all (anything but a list or tuple), or one per sub-env.

        Raises:
            RuntimeError: the env is closed.
            ValueError: ``values`` does not have ``num_envs`` entries.
            WorkerCrashedError: an actor died.
        """
        self._check_open()
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"values has {len(values)} entries, expected {self.num_envs}")
        jobs = [
            actor.set_attr.remote(name, [values[i] for i in part])
            for actor, part in zip(self._actors, self._slices, strict=True)
        ]
        self._gather(jobs)

    def close_extras(self, **kwargs: Any) -> None:
        """Close the sub-envs and end the actors (and Ray, when this env started it)."""
        try:
            ray.wait([actor.close.remote() for actor in self._actors], timeout=10)
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("RayVecEnv is closed")

    def _gather(self, refs: list[Any]) -> list[Any]:
        """ray.get ``refs`` (one per actor, in actor order), a dead actor named."""
        try:
            return ray.get(refs)
        except RayActorError as exc:
            dead = [i for i, actor in enumerate(self._actors) if _is_dead(actor)] or list(
                range(len(self._actors))
            )
            env_ids = tuple(i for a in dead for i in self._slices[a])
            raise WorkerCrashedError(
                f"Ray actor(s) {dead} holding sub-envs {list(env_ids)} died: {exc}", env_ids
            ) from exc

    def _place(self, index: int, obs: Any, part_infos: dict, infos: dict) -> None:
        part = self._slices[index]
        for i, row in zip(part, iterate(self.single_observation_space, obs), strict=True):
            self._obs_rows[i] = row
        place_infos(infos, part_infos, part.start, self.num_envs)

    def _observations(self) -> Any:
        out = create_empty_array(self.single_observation_space, self.num_envs)
        return concatenate(self.single_observation_space, self._obs_rows, out)


def _is_dead(actor: Any) -> bool:
    try:
        ray.get(actor.get_attr.remote("spec"), timeout=5)
    except (RayActorError, ray.exceptions.GetTimeoutError):
        return True
    return False
