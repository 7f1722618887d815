"""RayVecEnv: a gymnasium ``VectorEnv`` whose sub-envs live in Ray actors, possibly on
other machines.

Each actor hosts one slice of ``envs_per_actor`` sub-envs as a GridVecEnv worker hosts its
slice (:mod:`grid_vec.integrations.ray_slice`): GridEnvs of one factory (what ``make_vec``
hands out, ``grid_vec.make_vec(..., vectorization="ray")``) are the rows of one batch of the
engine, stepped by the worker's own engine in one call; other envs are a gymnasium
``SyncVectorEnv``. Either way the semantics (NEXT_STEP, SAME_STEP, DISABLED with
``reset_mask``, seeds, infos) are gymnasium's, and sub-env ``i`` plays what it plays in
``make_vec(..., vectorization="batched")`` and in a GridVecEnv.

The driver talks to each actor over a direct, authenticated TCP connection by default
(``transport="socket"``; Ray places and supervises the actors): a step costs a round trip on
the network instead of Ray's task path (about 0.6 ms per actor on a 2-core VM), or over
Ray's actor calls (``transport="ray"``) where the driver cannot reach the nodes directly.
On one machine, GridVecEnv (shared memory) is the cheaper host; RayVecEnv is for the sub-envs
of more machines than one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate
from ray.exceptions import RayActorError

from grid_vec.integrations.ray import connect
from grid_vec.integrations.ray_launch import RayWorkerLauncher
from grid_vec.integrations.ray_slice import (
    LINKS,
    DriverLink,
    RemoteSliceHost,
    SliceHost,
    alive,
    new_authkey,
)
from grid_vec.runner.executor import is_env_fns
from grid_vec.vector import arguments
from grid_vec.vector import protocol as p
from grid_vec.vector.errors import WorkerCrashedError, reraise
from grid_vec.vector.infos import place_infos
from grid_vec.vector.make_vec import VecRequest
from grid_vec.vector.vec_env import GridVecEnv
from grid_vec.vector.worker import one_batch_factory

NODE_TRANSPORT = "node"
"""``make_vec``'s ``transport`` for actors on this node: GridVecEnv's workers, launched by Ray."""

CLOSE_TIMEOUT_S = 10.0
"""Seconds ``close`` waits for each actor to close its envs before killing it."""


class RayVecEnv(VectorEnv):
    """``len(env_fns)`` sub-envs spread over Ray actors of ``envs_per_actor`` each.

    Same interface as gymnasium's vector envs (and GridVecEnv's generic part): ``reset``,
    ``step``, ``call``, ``get_attr``, ``set_attr``, ``close``, ``autoreset_mode``. A dead
    actor raises :class:`~grid_vec.vector.errors.WorkerCrashedError` naming its sub-envs; a
    sub-env's error is raised here with its own type, its ``env_index`` and a note naming
    the sub-env (as GridVecEnv re-raises a worker's).

    Args:
        env_fns: the sub-envs' factories, picklable and importable on the cluster. One
            factory of GridEnvs repeated (``[factory] * n``, as ``make_vec`` builds it) makes
            each actor's slice one batch of the engine.
        envs_per_actor: how many sub-envs each actor holds (one CPU per actor); None: the
            sub-envs spread evenly over the cluster's CPUs.
        autoreset_mode: gymnasium's autoreset mode of every sub-env.
        ray_address: the cluster to join (None: the running Ray, or a new local instance);
            Ray started or joined here is shut down by ``close``.
        transport: ``"socket"`` (default): a direct TCP connection from this process to
            each actor (its node must accept it); ``"ray"``: Ray actor calls (slower).
        spin_us: (socket link) microseconds the actors spin for the next command and this
            process for their replies, yielding the core at each turn, before sleeping on the
            socket (GridVecEnv's ``spin_us``, and its default): a sleeping process wakes late
            on a VM. On the 2-core VM (2026-12-07, sandbox, 2 actors of 16) 1 ms gave 56,271
            do-nothing and 15,784 random env-steps/s where 0 gave 49,125 and 14,874; 0 sleeps
            at once, for processes that share their cores.
        step_in_driver: host the first slice of ``envs_per_actor`` sub-envs in this process
            and step it while the actors step theirs (as GridVecEnv's ``step_in_parent``):
            one actor fewer, and the driver's core steps envs instead of waiting for replies
            (a dead actor still raises; the driver's slice is not an actor, so it is never
            lost alone). Default (None): on for GridEnvs of one factory (as
            :func:`grid_vec.make_vec` makes them) in several slices; off for other envs. On
            the 2-core VM (2026-12-07, sandbox, 32 envs in slices of 16) the driver's slice
            and one actor stepped 2.1x as fast as two actors on do-nothing, 1.24x on random
            actions (docs/scaling.md).

    Raises:
        TypeError: ``env_fns`` is not a non-empty sequence of callables; ``envs_per_actor``
            is not an int or None; ``step_in_driver`` is not a bool or None.
        ValueError: ``envs_per_actor`` < 1; an unknown autoreset mode or transport;
            ``spin_us`` < 0; sub-envs of two slices have different spaces.
        WorkerCrashedError: an actor died while starting.
        OSError: an actor's socket cannot be reached (``transport="socket"``).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        envs_per_actor: int | None = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        ray_address: str | None = None,
        transport: str = "socket",
        spin_us: float = 1000.0,
        step_in_driver: bool | None = None,
    ) -> None:
        if not is_env_fns(env_fns):
            raise TypeError(f"env_fns must be a non-empty sequence of callables, got {env_fns!r}")
        if envs_per_actor is not None and (
            isinstance(envs_per_actor, bool) or not isinstance(envs_per_actor, int)
        ):
            raise TypeError(f"envs_per_actor must be an int or None, got {envs_per_actor!r}")
        if envs_per_actor is not None and envs_per_actor < 1:
            raise ValueError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
        if transport not in LINKS:
            raise ValueError(f"transport must be one of {tuple(LINKS)}, got {transport!r}")
        if isinstance(spin_us, bool) or not isinstance(spin_us, (int, float)) or spin_us < 0:
            raise ValueError(f"spin_us must be a number >= 0, got {spin_us!r}")
        if step_in_driver is not None and not isinstance(step_in_driver, bool):
            raise TypeError(f"step_in_driver must be a bool or None, got {step_in_driver!r}")
        mode = AutoresetMode(autoreset_mode)
        self.num_envs = len(env_fns)
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode}
        self.transport = transport
        self.closed = True  # until the actors are up
        self._actors: list[Any] = []
        self._links: list[Any] = []
        self._owns_ray = connect(ray_address)
        try:
            if envs_per_actor is None:  # as GridVecEnv spreads its envs over the cores
                cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
                envs_per_actor = math.ceil(self.num_envs / cpus)
            self._slices = [
                range(start, min(start + envs_per_actor, self.num_envs))
                for start in range(0, self.num_envs, envs_per_actor)
            ]
            if step_in_driver is None:
                step_in_driver = len(self._slices) > 1 and one_batch_factory(env_fns)
            self.step_in_driver = step_in_driver
            # the driver's slice is the first: its link steps it in recv(), after every
            # actor got its command (see DriverLink)
            remote = self._slices[1:] if step_in_driver else self._slices
            authkey = new_authkey()
            self._actors = [
                RemoteSliceHost.remote(
                    [env_fns[i] for i in part], mode, part.start, authkey, spin_us * 1e-6
                )
                for part in remote
            ]
            if step_in_driver:
                part = self._slices[0]
                host = SliceHost([env_fns[i] for i in part], mode, part.start, b"")
                self._links.append(DriverLink(host))
            try:
                found = [link.host.spaces() for link in self._links]
                found += ray.get([actor.spaces.remote() for actor in self._actors])
                self._links += [
                    LINKS[transport](actor, authkey, spin_us * 1e-6) for actor in self._actors
                ]
            except RayActorError as exc:
                first = len(self._slices) - len(self._actors)  # the actors' first slice
                dead = [first + i for i, actor in enumerate(self._actors) if not alive(actor)]
                raise self._crashed(dead or list(range(first, len(self._slices))), "died") from exc
        except BaseException:
            self._shutdown()
            raise
        self.closed = False
        obs_space, act_space, self.spec, _ = found[0]
        for index, (other_obs, other_act, _, _) in enumerate(found):
            if other_obs != obs_space or other_act != act_space:
                self.close()
                part = self._slices[index]
                raise ValueError(
                    f"sub-envs {part.start}..{part.stop - 1} have spaces {other_obs}, "
                    f"{other_act}; sub-env 0 has {obs_space}, {act_space}: all sub-envs must "
                    "match"
                )
        self.batched = tuple(bool(entry[3]) for entry in found)
        """Per slice (the driver's first with ``step_in_driver``, then each actor's), whether
        it is stepped as one batch of the engine."""
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self._obs_parts: list[Any] = [None] * len(self._slices)  # each actor's latest batch

    @classmethod
    def from_factory(
        cls, factory: Callable[[], gym.Env], num_envs: int, **kwargs: Any
    ) -> RayVecEnv:
        """``num_envs`` envs of one factory (``grid_vec.env.make.env_factory``'s: each actor
        steps its slice as one batch).

        Args:
            factory: the factory of the sub-envs.
            num_envs: how many.
            **kwargs: the other arguments of the constructor (``envs_per_actor`` defaults
                to None here: the envs spread over the cluster's CPUs).

        Returns:
            The vector env.
        """
        kwargs.setdefault("envs_per_actor", None)
        return cls([factory] * num_envs, **kwargs)

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
            TypeError, ValueError: ``seed`` or ``reset_mask`` of the wrong type or length (a
                mask must be a bool array of ``num_envs`` with a True), as gymnasium says.
            WorkerCrashedError: an actor died.
            Exception: a sub-env's error, with its own type.
        """
        self._check_open()
        seeds = arguments.seed_list(self.num_envs, seed)  # gymnasium's checks, GridVecEnv's
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            mask = arguments.reset_mask(self.num_envs, mask)
        messages = {}
        for index, part in enumerate(self._slices):
            if mask is not None and not mask[part].any():
                continue  # nothing to reset on this actor
            part_options = dict(options)
            if mask is not None:
                part_options["reset_mask"] = mask[part]
            kwargs = {"seed": [seeds[i] for i in part], "options": part_options or None}
            messages[index] = p.encode(p.CALL, ("reset", (), kwargs))
        infos: dict[str, Any] = {}
        for index, (obs, part_infos) in self._exchange(messages).items():
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
        parts = self._split(actions)
        replies = self._exchange({i: p.encode(p.STEP, part) for i, part in enumerate(parts)})
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for index, out in replies.items():
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
        return self._each("call", lambda part: (name, *args), kwargs)

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
        return self._each("get_attr", lambda part: (name,))

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
        self._each("set_attr", lambda part: (name, [values[i] for i in part]))

    def close_extras(self, **kwargs: Any) -> None:
        """Close the sub-envs and end the actors (and Ray, when this env started it)."""
        try:
            for link in self._links:
                try:
                    link.send(p.encode(p.CLOSE))
                except p.PeerGone:
                    continue
            for link in self._links:
                try:
                    link.recv(timeout=CLOSE_TIMEOUT_S)
                except (p.PeerGone, TimeoutError):
                    continue  # a dead or stuck actor: killed below
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        for link in self._links:
            link.close()
        for actor in self._actors:
            ray.kill(actor)
        self._links, self._actors = [], []
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("RayVecEnv is closed")

    def _each(
        self, method: str, args_of: Callable[[range], tuple], kwargs: dict | None = None
    ) -> tuple[Any, ...]:
        """``method`` of every actor's vector env (``args_of`` its slice gives its
        arguments); their results joined in sub-env order."""
        self._check_open()
        messages = {
            index: p.encode(p.CALL, (method, args_of(part), kwargs or {}))
            for index, part in enumerate(self._slices)
        }
        replies = self._exchange(messages)
        return tuple(value for index in messages for value in replies[index] or ())

    def _exchange(self, messages: dict[int, bytes]) -> dict[int, Any]:
        """Send each actor of ``messages`` its message, then read every reply (each one, so
        that the links stay in step whatever an actor answers).

        Returns:
            Each actor's result, by actor index.

        Raises:
            WorkerCrashedError: an actor died (before the sub-envs' errors of the others).
            Exception: a sub-env's error (the highest sub-env's when several raised).
        """
        lost: list[int] = []
        for index, message in messages.items():
            try:
                self._links[index].send(message)
            except p.PeerGone:
                lost.append(index)
        replies: dict[int, Any] = {}
        errors: list = []
        for index in messages:
            if index in lost:
                continue
            try:
                code, payload = self._links[index].recv()
            except p.PeerGone:
                lost.append(index)
                continue
            if code == p.ERROR:
                errors.extend(payload)
            else:
                replies[index] = payload
        if lost:
            raise self._crashed(sorted(lost), "died")
        if errors:
            reraise(errors, owner="RayVecEnv")
        return replies

    def _crashed(self, actors: list[int], what: str) -> WorkerCrashedError:
        env_ids = tuple(i for a in actors for i in self._slices[a])
        return WorkerCrashedError(
            f"Ray actor(s) {actors} holding sub-envs {list(env_ids)} {what}", env_ids
        )

    def _split(self, actions: Any) -> list[Any]:
        """Each actor's rows of ``actions``: slices of an array, else rows regrouped."""
        if isinstance(actions, np.ndarray):
            if len(actions) != self.num_envs:
                raise ValueError(f"actions has {len(actions)} rows, expected {self.num_envs}")
            return [actions[part.start : part.stop] for part in self._slices]
        rows = list(iterate(self.action_space, actions))
        if len(rows) != self.num_envs:
            raise ValueError(f"actions has {len(rows)} rows, expected {self.num_envs}")
        space = self.single_action_space
        return [
            concatenate(space, [rows[i] for i in part], create_empty_array(space, len(part)))
            for part in self._slices
        ]

    def _place(self, index: int, obs: Any, part_infos: dict, infos: dict) -> None:
        self._obs_parts[index] = obs
        part = self._slices[index]
        place_infos(infos, part_infos, part.start, self.num_envs)

    def _observations(self) -> Any:
        """The batch of every actor's latest observations (a new array, as gymnasium's
        vector envs return with ``copy``)."""
        parts = self._obs_parts
        if all(isinstance(part, np.ndarray) for part in parts):
            return np.concatenate(parts)
        space = self.single_observation_space
        rows = [row for part in parts for row in iterate(space, part)]
        return concatenate(space, rows, create_empty_array(space, self.num_envs))


def make_ray_vec(request: VecRequest) -> RayVecEnv:
    """``grid_vec.make_vec(..., vectorization="ray")`` (the entry point ``ray`` of
    :data:`grid_vec.vector.make_vec.PLUGIN_GROUP`): ``envs_per_worker`` sub-envs per
    actor (None: spread over the cluster's CPUs), ``vector_kwargs`` the other arguments of
    :class:`RayVecEnv` (``ray_address``, ``transport``). ``transport="node"``: the actors on
    this node, as a :class:`~grid_vec.vector.vec_env.GridVecEnv` whose workers Ray starts
    (:class:`~grid_vec.integrations.ray_launch.RayWorkerLauncher`: its shared memory and
    doorbells, no socket; ``envs_per_worker`` then spread over this node's cores), the
    other ``vector_kwargs`` GridVecEnv's.

    Args:
        request: what ``make_vec`` asks for.

    Returns:
        The vector env.
    """
    kwargs = dict(request.vector_kwargs)
    if kwargs.get("transport") == NODE_TRANSPORT:  # GridVecEnv's workers, launched by Ray
        del kwargs["transport"]
        launcher = RayWorkerLauncher(kwargs.pop("ray_address", None))
        try:
            return GridVecEnv(
                [request.factory] * request.num_envs,
                envs_per_worker=request.envs_per_worker,
                autoreset_mode=request.autoreset_mode,
                worker_launcher=launcher,
                **kwargs,
            )
        except BaseException:
            launcher.close()
            raise
    return RayVecEnv.from_factory(
        request.factory,
        request.num_envs,
        envs_per_actor=request.envs_per_worker,
        autoreset_mode=request.autoreset_mode,
        **kwargs,
    )
