"""Worker process: owns a slice of sub-envs and serves the commands of ``protocol``.

Its :class:`Server` also serves the slice GridVecEnv steps in its own process
(:mod:`parent_slice`), one message at a time, so that both run the same engine.

Imports only the standard library, numpy, gymnasium and cloudpickle (through ``protocol``),
so a worker stays small whatever the parent imported. :mod:`launch` starts it in a fresh
interpreter running :func:`main`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import pickle
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import Env, spaces
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector.vector_env import AutoresetMode

from grid_vec.vector import protocol as p
from grid_vec.vector.declared import is_grid_env, makes_batch_rows
from grid_vec.vector.doorbell import Doorbell, WorkerBell, spin
from grid_vec.vector.errors import ProtocolError, error_entry, naming_env
from grid_vec.vector.infos import RESTARTED, BatchedInfo, InfoPacker, InfoSchema, batch_infos
from grid_vec.vector.shared_buffers import SharedBlock, join, split


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs besides its pipes and factories: what to build and where to
    write (the first message, BUILD, carries it)."""

    env_ids: tuple[int, ...]
    block: SharedBlock
    obs_space: spaces.Space  # single observation space used to batch observations
    act_space: spaces.Space
    obs_shared: bool  # observations travel through the block (else pickled in replies)
    autoreset_mode: AutoresetMode
    observation_mode: Any  # "same", "different" or a (batched, single) tuple of spaces
    # the shared slots that signal commands and replies of the hot path (None: the parent's
    # own slice, served in the parent's process without pipes, see :mod:`parent_slice`)
    doorbell: Doorbell | None
    spin_s: float  # seconds to spin on the doorbell for the next command before sleeping
    # the layout of the block's info records (``block.info``): a GridEnv's fixed-layout infos
    info_schema: InfoSchema | None = None
    # pid of the parent to die with (Linux), or None: the worker then notices a dead parent
    # only as end-of-file on its command pipe, between commands
    parent_pid: int | None = None


class Server:
    """The envs of one slice and the handlers of the commands of ``protocol``: run by a worker
    process on its pipes (:meth:`serve`), or by GridVecEnv itself for the parent's own slice
    (:meth:`handle`, one message at a time)."""

    def __init__(
        self, spec: WorkerSpec, envs: list[Env], fd_in: int = -1, fd_out: int = -1
    ) -> None:
        self.spec = spec
        self.envs = envs
        self.local_ids = list(range(len(envs)))
        self.last_obs: list[Any] = [None] * len(envs)
        # views of this worker's rows of the shared block (its env ids are contiguous)
        block, first = spec.block, spec.env_ids[0]
        rows = slice(first, first + len(envs))
        assert spec.env_ids == tuple(range(rows.start, rows.stop))
        self.obs_rows = [view[rows] for view in block.obs]
        self.act_rows = [view[rows] for view in block.act]
        self.rewards, self.terminated, self.truncated = (
            block.rewards[rows],
            block.terminated[rows],
            block.truncated[rows],
        )
        self.single_obs_leaf = len(self.obs_rows) == 1 and spec.obs_shared
        self.act_leaf = self.act_rows[0] if len(self.act_rows) == 1 else None
        self._step_one = {
            AutoresetMode.NEXT_STEP: self._step_next_step,
            AutoresetMode.SAME_STEP: self._step_same_step,
            AutoresetMode.DISABLED: self._step_disabled,
        }[AutoresetMode(spec.autoreset_mode)]
        self.spin_s = spec.spin_s  # 0 where nothing rings (GridVecEnv decides)
        if spec.doorbell is not None:  # a worker process (else no pipe, no doorbell)
            self.bell = WorkerBell(spec.doorbell, fd_in, fd_out)
            self.poller = select.poll()  # built once: the sleep between commands reuses it
            self.poller.register(fd_in, p.POLL_IN)
        self.handlers: dict[int, Callable[[Any], tuple[int, Any]]] = {
            p.STEP: self.step,
            p.STEP_CHECKED: functools.partial(self.step, checked=True),
            p.RESET: self.reset,
            p.CALL: self.call,
            p.SET_ATTR: self.set_attr,
        }
        self.step_infos = InfoPacker(len(envs))
        # GridEnvs that are the rows of one batched core: a lockstep step is one batch step
        self.engine = self._slice_engine()
        self.autoreset = [False] * len(envs) if self.engine is None else self.engine.autoreset
        self.info_rows = self._info_rows(rows)

    def _slice_engine(self) -> Any:
        """The slice engine of GridEnvs that are the rows of one batch, or None (other envs,
        or actions or observations that do not travel as one array each)."""
        if self.act_leaf is None or (self.spec.obs_shared and not self.single_obs_leaf):
            return None
        if _shared_batch(self.envs) is None:
            return None
        from grid_vec.vector.slice_engine import SliceEngine  # the core: loaded with the envs

        obs = self.obs_rows[0] if self.spec.obs_shared else None
        return SliceEngine(
            self.envs,
            AutoresetMode(self.spec.autoreset_mode),
            obs=obs,
            rewards=self.rewards,
            terminated=self.terminated,
            truncated=self.truncated,
        )

    def _info_rows(self, rows: slice) -> np.ndarray | None:
        """This worker's rows of the block's info records, when its envs' fixed-layout infos
        are laid out as the block's (else the infos travel in the reply)."""
        schema, records = self.spec.info_schema, self.spec.block.info
        if self.engine is None or schema is None or records is None:
            return None
        return records[rows] if InfoSchema.of(self.envs[0].fixed_info()) == schema else None

    def next_command(self) -> tuple[int, Any]:
        """Spin on the doorbell for the next command, then sleep on the command pipe.

        Raises:
            PeerGone: the parent closed the command pipe.
        """
        bell = self.bell
        while not bell.pending():
            if self.spin_s > 0 and spin(bell.pending, self.spin_s):
                break
            if bell.sleep():
                self.poller.poll()  # a message, a WAKE, or the end of the pipe
            bell.woke()
            if not bell.pending():  # a stale WAKE (see doorbell), or the end of the pipe
                code, _ = p.read_message(self.bell.fd_in)
                if code != p.WAKE:
                    raise RuntimeError(f"worker got command {code} that was not announced")
        return bell.take()

    def serve(self) -> None:
        """Serve the commands of the pipes until CLOSE or the end of the command pipe."""
        while True:
            try:
                code, payload = self.next_command()
            except p.PeerGone:
                return
            if code == p.CLOSE:
                self.bell.reply(p.encode(p.OK))
                return
            self.bell.reply(self.handle(code, payload))

    def respond(self, code: int, payload: Any) -> tuple[int, Any]:
        """The reply to the command ``code`` (not CLOSE) with its ``payload``: (status,
        result), not encoded."""
        handler = self.handlers.get(code)
        return self.unknown(code) if handler is None else handler(payload)

    def handle(self, code: int, payload: Any) -> bytes:
        """The reply message to the command ``code`` (not CLOSE) with its ``payload``."""
        status, result = self.respond(code, payload)
        try:
            return p.encode(status, result)
        except Exception as exc:  # e.g. a call returned something that cannot be pickled
            return p.encode(p.ERROR, [error_entry(self.spec.env_ids[0], exc)])

    def unknown(self, code: int) -> tuple[int, Any]:
        """The reply to a command outside the protocol: a ProtocolError, not a KeyError that
        would end the worker."""
        try:
            raise ProtocolError(
                f"worker of sub-envs {list(self.spec.env_ids)} received unknown command {code}; "
                "known: " + ", ".join(f"{name}={op}" for name, op in p.COMMANDS.items())
            )
        except ProtocolError as exc:  # raised, so that the entry carries a traceback
            return p.ERROR, [error_entry(None, exc)]

    def _publish(self, k: int, obs: Any, reward: Any, terminated: Any, truncated: Any) -> None:
        if self.single_obs_leaf:
            self.obs_rows[0][k] = obs
        elif self.spec.obs_shared:
            for view, value in zip(self.obs_rows, split(self.spec.obs_space, obs), strict=True):
                view[k] = value
        else:
            self.last_obs[k] = obs
        self.rewards[k] = reward
        self.terminated[k] = terminated
        self.truncated[k] = truncated

    def _action(self, k: int) -> Any:
        if self.act_leaf is not None:  # a single Box/Discrete/... action: no structure to build
            view = self.act_leaf
            return view[k] if view.ndim == 1 else view[k].copy()
        leaves = [view[k] if view.ndim == 1 else view[k].copy() for view in self.act_rows]
        return join(self.spec.act_space, leaves)

    def _step_next_step(self, k: int, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        env = self.envs[k]
        if self.autoreset[k]:
            obs, info = env.reset()
            reward, terminated, truncated = 0, False, False
        else:
            obs, reward, terminated, truncated, info = env.step(action)
        self.autoreset[k] = bool(terminated or truncated)
        return obs, reward, terminated, truncated, info

    def _step_same_step(self, k: int, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        obs, reward, terminated, truncated, info = self.envs[k].step(action)
        if terminated or truncated:
            obs, info = self._reset_now(k, obs, info)
        return obs, reward, terminated, truncated, info

    def _reset_now(self, k: int, final_obs: Any, final_info: dict) -> tuple[Any, dict]:
        """SAME_STEP's autoreset of env ``k`` whose episode just ended: the first observation
        of the next, and the info with the last step's under ``final_*``."""
        obs, reset_info = self.envs[k].reset()
        return obs, {"final_info": final_info, "final_obs": final_obs, **reset_info}

    def _step_disabled(self, k: int, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        return self.envs[k].step(action)

    def _result(
        self, infos: dict[int, dict], ids: Sequence[int], errors: list, *, whole_slice: bool
    ) -> tuple[int, Any]:
        if errors:
            return p.ERROR, errors
        obs = None if self.spec.obs_shared else {k: self.last_obs[k] for k in ids}
        if not infos and obs is None:
            return p.OK, None
        if whole_slice and infos:
            return p.OK_DATA, (batch_infos(infos, len(self.envs)), obs)
        return p.OK_DATA, (infos, obs)

    def step(self, payload: Any, *, checked: bool = False) -> tuple[int, Any]:
        """Step the envs: a lockstep step of a slice engine's envs is one batch step (actions
        ``checked`` by the parent as GridEnvs check them are played unchecked); other envs,
        and pool mode's sends, step one by one."""
        if payload is None and self.engine is not None:
            return self._step_slice(checked)
        if payload is None:
            ids: Sequence[int] = self.local_ids
            actions = None
        else:
            ids, actions = payload
        infos: dict[int, dict] = {}
        errors: list = []
        self._step_each(ids, actions, infos, errors)
        whole_slice = payload is None or list(ids) == self.local_ids  # a pool send of all
        if whole_slice and infos and not errors and self.spec.obs_shared:
            packed = self.step_infos.pack(list(infos.values()))
            if packed is not None:
                schema, raw = packed
                return (p.OK_COLUMNS, raw) if schema is None else (p.OK_SCHEMA, (schema, raw))
        return self._result(infos, ids, errors, whole_slice=payload is None)

    def _step_each(
        self, ids: Sequence[int], actions: Any, infos: dict[int, dict], errors: list
    ) -> None:
        """Step the envs ``ids`` one by one (their actions pickled, or in the block)."""
        for n, k in enumerate(ids):
            try:
                action = self._action(k) if actions is None else actions[n]
                obs, reward, terminated, truncated, info = self._step_one(k, action)
                self._publish(k, obs, reward, terminated, truncated)
            except Exception as exc:
                errors.append(error_entry(self.spec.env_ids[k], exc))
                continue
            if info:
                infos[k] = info

    def _step_slice(self, checked: bool) -> tuple[int, Any]:
        """Step the whole slice through its slice engine: each env gets the transition and
        info its own ``step`` would give. The infos stay columns: records in the block when
        they hold their fixed layout only (the reply is then a bare ``OK_BLOCK``), else the
        batched infos. Envs whose episode is over (``DISABLED``) step alone: their ``step``
        raises as it should."""
        from grid_vec.vector import slice_engine as se  # loaded already with the envs

        engine, ids = self.engine, self.spec.env_ids
        errors: list = []
        over = engine.batch.game.done & ~engine.autoreset  # NEXT_STEP's autoresets are no error
        rows = engine.all
        if over.any():
            self._step_each(np.flatnonzero(over).tolist(), None, {}, errors)
            rows = np.flatnonzero(~over)
        step = None
        if len(rows):
            try:
                actions = self.act_leaf[rows]  # a copy: the parent writes the next ones
                try:
                    parsed = se.parse(engine.batch, actions, checked=checked)
                except ValueError as exc:  # named as GridVecEnv's own check names it
                    raise naming_env(exc, [ids[k] for k in rows.tolist()]) from None
                step = engine.step(rows, parsed)
            except Exception as exc:  # the batch's envs step together: the first one reports
                errors.append(error_entry(getattr(exc, "env_index", ids[int(rows[0])]), exc))
        if errors:
            return p.ERROR, errors
        obs = None
        if not self.spec.obs_shared:
            for k in rows.tolist():
                self.last_obs[k] = engine.obs[k].copy()
            obs = dict(enumerate(self.last_obs))
        elif step.fixed is not None and self.info_rows is not None:
            self.spec.info_schema.put(self.info_rows, se.info_columns(step.fixed))
            return p.OK_BLOCK, None
        return p.OK_DATA, (BatchedInfo(step.batched_infos()), obs)

    def reset(self, payload: list[tuple[Any, Any, bool] | None]) -> tuple[int, Any]:
        infos: dict[int, dict] = {}
        errors = []
        for k, entry in enumerate(payload):
            if entry is None:
                continue
            seed, options, restarted = entry  # restarted: the episode was lost to a crash
            try:
                obs, info = self.envs[k].reset(seed=seed, options=options)
                self._publish(k, obs, 0.0, False, restarted)
            except Exception as exc:
                errors.append(error_entry(self.spec.env_ids[k], exc))
                continue
            self.autoreset[k] = restarted and self.spec.autoreset_mode == AutoresetMode.NEXT_STEP
            if restarted:
                info = {**info, RESTARTED: True}
            if info:
                infos[k] = info
        return self._result(infos, range(len(payload)), errors, whole_slice=True)

    def call(self, payload: Any) -> tuple[int, Any]:
        name, ids, per_env, args, kwargs = payload
        results, errors = [], []
        for n, k in enumerate(ids):
            try:
                attr = self.envs[k].get_wrapper_attr(name)
                if callable(attr):
                    a, kw = (args[n], kwargs[n]) if per_env else (args, kwargs)
                    attr = attr(*a, **kw)
                results.append(attr)
            except Exception as exc:
                errors.append(error_entry(self.spec.env_ids[k], exc))
        return (p.ERROR, errors) if errors else (p.OK_DATA, results)

    def set_attr(self, payload: Any) -> tuple[int, Any]:
        name, ids, values = payload
        errors = []
        for k, value in zip(ids, values, strict=True):
            try:
                self.envs[k].set_wrapper_attr(name, value)
            except Exception as exc:
                errors.append(error_entry(self.spec.env_ids[k], exc))
        return (p.ERROR, errors) if errors else (p.OK, None)

    def check_spaces(self) -> list[tuple[bool, bool, bool]]:
        """Per env: whether its observation and action spaces fit the vector env's, and
        whether it is a GridEnv (the parent then checks each batch as GridEnvs do)."""
        out = []
        mode = self.spec.observation_mode
        for env in self.envs:
            if mode == "same":
                same_obs = self.spec.obs_space == env.observation_space
            else:
                same_obs = is_space_dtype_shape_equiv(self.spec.obs_space, env.observation_space)
            same_act = self.spec.act_space == env.action_space
            out.append((bool(same_obs), bool(same_act), is_grid_env(env)))
        return out


def build_envs(spec: WorkerSpec, env_fns: list[Callable[[], Env]]) -> tuple[list[Env], bytes]:
    """The envs of a slice, rows of one batch when their factory makes them so.

    Returns:
        The envs, and the ERROR message naming the first env whose factory raised (b"" if
        none did); the envs built before it are returned, for their owner to close.
    """
    envs: list[Env] = []
    try:
        envs.extend(sharing_one_batch(env_fns))
    except Exception as exc:
        return envs, p.encode(p.ERROR, [error_entry(spec.env_ids[0], exc)])
    for env_id, env_fn in zip(spec.env_ids[len(envs) :], env_fns[len(envs) :], strict=True):
        try:
            envs.append(env_fn())
        except Exception as exc:
            return envs, p.encode(p.ERROR, [error_entry(env_id, exc)])
    return envs, b""


def close_envs(envs: list[Env]) -> None:
    """Close every env, printing the errors (the others are still closed)."""
    for env in envs:
        try:
            env.close()
        except Exception:
            traceback.print_exc()


def one_batch_factory(env_fns: Sequence[Callable[[], Any]]) -> bool:
    """Whether every env comes from one and the same factory of GridEnvs that are rows of a
    batch (a ``GridEnvFactory``, as ``make_vec`` hands them out): envs of the project's
    engine, which a slice steps as one batch and the parent may step itself."""
    first = env_fns[0] if env_fns else None
    return makes_batch_rows(first) and all(fn is first for fn in env_fns)


def sharing_one_batch(env_fns: Sequence[Callable[[], Env]]) -> list[Env]:
    """The envs of a slice as the rows of one batched core, when :func:`one_batch_factory`
    holds and there are several; else nothing (the envs are then built one by one).

    The test every host of a slice applies: a GridVecEnv worker, the parent's own slice, a
    RayVecEnv actor (:func:`grid_vec.vector.local_slice.slice_vector_env`).

    Args:
        env_fns: the slice's env factories, as the host unpickled them (one pickle for the
            whole list, so that one factory repeated stays one object).

    Returns:
        The envs, rows ``0 .. n-1`` of one batch, or an empty list.
    """
    if len(env_fns) < 2 or not one_batch_factory(env_fns):
        return []
    return env_fns[0].sharing_one_batch(len(env_fns))


def _shared_batch(envs: list[Env]) -> Any:
    """The batched core whose rows 0..n-1 are exactly ``envs`` (GridEnvs), or None."""
    if not envs or not all(is_grid_env(env) for env in envs):
        return None
    from grid_vec.vector.slice_engine import shared_batch  # loaded already with the envs

    return shared_batch(envs)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux only).

    Without it, a worker inside a long step outlives a SIGKILLed parent until the step ends.
    The parent may have died before the ``prctl`` call: then the parent pid already differs,
    and the worker exits at once.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (an unusual libc): keep the EOF behaviour
        return
    if os.getppid() != parent_pid:
        os._exit(1)


def main(fd_in: int, fd_out: int) -> None:
    """Process entry point (see :mod:`launch`): read the spec and the env factories, build the
    envs, report READY (or the error), then serve commands until CLOSE or end-of-file.

    Args:
        fd_in: read end of the command pipe, inherited from the parent.
        fd_out: write end of the reply pipe, inherited from the parent.
    """
    if threading.current_thread() is threading.main_thread():  # (a Ray actor's may not be)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides how to shut down
    envs: list[Env] = []
    try:
        # spec and factories come as a first message, not with the process arguments: a
        # child that dies while starting cannot leave the parent blocked on a full pipe,
        # since the parent's writes watch the child's sentinel
        code, payload = p.read_message(fd_in)
        if code != p.BUILD:
            raise RuntimeError(f"worker expected its env factories first, got command {code}")
        spec, blob = payload
        if spec.parent_pid is not None:
            _die_with_parent(spec.parent_pid)
        built, error = build_envs(spec, pickle.loads(blob))
        envs.extend(built)
        if error:
            p.write_all(fd_out, error)
            return
        server = Server(spec, envs, fd_in, fd_out)
        p.write_all(fd_out, p.encode(p.READY, server.check_spaces()))
        server.serve()
    except (BrokenPipeError, p.PeerGone):
        pass
    finally:
        close_envs(envs)
