"""Subjects: the ways of running a grid env that the benchmark times side by side.

A subject opens a :class:`Session` (``num_envs`` envs of a workload, reset with a fixed seed)
whose :meth:`Session.runner` gives ``run(k)``: ``k`` batch steps with the chosen actions,
returning the env steps done. Episodes that end are reset inside the timed steps by every
subject alike (vector autoreset, or an explicit ``reset`` for single envs).
"""

from __future__ import annotations

import importlib.util
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from grid_vec.bench.workloads import (
    ACTION_ROWS,
    SANDBOX,
    Workload,
    action_table,
    sandbox_path,
)


class Session(Protocol):
    """``num_envs`` running envs of one subject; :meth:`close` releases them."""

    num_envs: int

    def runner(self, mode: str) -> Callable[[int], int]:
        """``run(k)``: ``k`` batch steps with ``mode`` actions, returning the env steps done."""
        ...

    def close(self) -> None: ...


class VectorSession:
    """Any gymnasium ``VectorEnv`` stepped with a batch of actions per call."""

    def __init__(self, envs: Any, seed: int) -> None:
        self.envs, self.num_envs, self.seed = envs, envs.num_envs, seed
        self.n_actions = int(envs.single_action_space.n)
        envs.reset(seed=seed)

    def runner(self, mode: str) -> Callable[[int], int]:
        table = action_table(self.n_actions, self.num_envs, mode, self.seed)
        step, turn = self.envs.step, [0]

        def run(k: int) -> int:
            t = turn[0]
            for i in range(t, t + k):
                step(table[i % ACTION_ROWS])
            turn[0] = t + k
            return k * self.num_envs

        return run

    def close(self) -> None:
        self.envs.close()


class PoolSession(VectorSession):
    """GridVecEnv pool mode: every env sent once, then each ``recv`` of the first
    ``batch_size`` ready envs is answered by sending their next actions."""

    def __init__(self, envs: Any, seed: int) -> None:
        super().__init__(envs, seed)
        envs.send(np.zeros(self.num_envs, np.int64), list(range(self.num_envs)))

    def runner(self, mode: str) -> Callable[[int], int]:
        table = action_table(self.n_actions, self.num_envs, mode, self.seed)
        recv, send, turn = self.envs.recv, self.envs.send, [0]

        def run(k: int) -> int:
            t, done = turn[0], 0
            for i in range(t, t + k):
                ids = recv()[-1]
                send(table[i % ACTION_ROWS][: len(ids)], ids)
                done += len(ids)
            turn[0] = t + k
            return done

        return run


class SingleSession:
    """One gymnasium env; an episode that ends is reset within the timed steps."""

    def __init__(self, env: Any, seed: int) -> None:
        self.env, self.num_envs, self.seed = env, 1, seed
        self.n_actions = int(env.action_space.n)
        env.reset(seed=seed)

    def runner(self, mode: str) -> Callable[[int], int]:
        table = action_table(self.n_actions, 1, mode, self.seed)[:, 0].tolist()
        env, turn = self.env, [0]

        def run(k: int) -> int:
            t = turn[0]
            for i in range(t, t + k):
                _, _, terminated, truncated, _ = env.step(table[i % ACTION_ROWS])
                if terminated or truncated:
                    env.reset()
            turn[0] = t + k
            return k

        return run

    def close(self) -> None:
        self.env.close()


class SB3Session(VectorSession):
    """Stable-Baselines3 ``VecEnv`` (resets ended envs within the step itself)."""

    def __init__(self, venv: Any, seed: int) -> None:
        self.envs, self.num_envs, self.seed = venv, venv.num_envs, seed
        self.n_actions = int(venv.action_space.n)
        venv.seed(seed)
        venv.reset()


class Grid2opSession:
    """grid2op single env or ``SingleEnvMultiProcess`` (do-nothing only: grid2op's action
    space is not grid_vec's, so random actions would not be the same work)."""

    def __init__(self, backend: str, num_envs: int, multi: bool, seed: int) -> None:
        import grid2op

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.env = grid2op.make(str(sandbox_path()), backend=_grid2op_backend(backend))
        self.env.seed(seed)
        self.num_envs, self.seed, self.n_actions = num_envs, seed, 1
        self.multi = None
        self._do_nothing = self.env.action_space()
        if multi:
            from grid2op.Environment import SingleEnvMultiProcess

            self.multi = SingleEnvMultiProcess(env=self.env, nb_env=num_envs)
            self.multi.reset()
        else:
            self.env.reset()

    def runner(self, mode: str) -> Callable[[int], int]:
        if mode != "do-nothing":
            raise ValueError(f"grid2op subjects only run do-nothing actions, not {mode!r}")
        n, act = self.num_envs, self._do_nothing
        if self.multi is not None:
            step, actions = self.multi.step, [act] * n

            def run_multi(k: int) -> int:
                for _ in range(k):
                    step(actions)
                return k * n

            return run_multi
        env = self.env

        def run(k: int) -> int:
            for _ in range(k):
                if env.step(act)[2]:
                    env.reset()
            return k

        return run

    def close(self) -> None:
        if self.multi is not None:
            self.multi.close()
        self.env.close()


def _grid2op_backend(name: str) -> Any:
    if name == "lightsim2grid":
        from lightsim2grid import LightSimBackend

        return LightSimBackend()
    from grid2op.Backend import PandaPowerBackend

    return PandaPowerBackend()


# ------------------------------------------------------------------------------ subjects
def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _grid_vec_env(workload: Workload, n: int, seed: int, **kwargs: Any) -> Session:
    from grid_vec.vector import GridVecEnv

    envs = GridVecEnv([workload.env_factory()] * n, **kwargs)
    try:
        return PoolSession(envs, seed) if "batch_size" in kwargs else VectorSession(envs, seed)
    except BaseException:
        envs.close()
        raise


def _open_grid_env(workload: Workload, n: int, seed: int) -> Session:
    return SingleSession(workload.env_factory()(), seed)


def _open_grid_vec(workload: Workload, n: int, seed: int) -> Session:
    return _grid_vec_env(workload, n, seed)


def _open_grid_vec_1(workload: Workload, n: int, seed: int) -> Session:
    return _grid_vec_env(workload, n, seed, envs_per_worker=1)


def _open_pool(workload: Workload, n: int, seed: int) -> Session:
    return _grid_vec_env(workload, n, seed, batch_size=max(1, n // 2))


def _open_gym(kind: str) -> Callable[[Workload, int, int], Session]:
    def open_(workload: Workload, n: int, seed: int) -> Session:
        from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

        cls = AsyncVectorEnv if kind == "async" else SyncVectorEnv
        envs = cls([workload.env_factory()] * n)
        try:
            return VectorSession(envs, seed)
        except BaseException:
            envs.close()
            raise

    return open_


def _open_sb3(workload: Workload, n: int, seed: int) -> Session:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = SubprocVecEnv([workload.env_factory()] * n)
    try:
        return SB3Session(venv, seed)
    except BaseException:
        venv.close()
        raise


def _open_lightenv(workload: Workload, n: int, seed: int) -> Session:
    from grid_vec.bench.lightenv import LightEnvSession

    return LightEnvSession(workload.env_factory()(), seed)


def _lightenv_missing() -> str | None:
    """None when lightsim2grid has a LightEnv, else what is missing."""
    try:
        import grid_vec.bench.lightenv  # noqa: F401
    except ImportError:
        return "lightsim2grid_cpp.LightEnv"
    return None


def _open_grid2op(backend: str, multi: bool) -> Callable[[Workload, int, int], Session]:
    def open_(workload: Workload, n: int, seed: int) -> Session:
        return Grid2opSession(backend, n, multi, seed)

    return open_


@dataclass(frozen=True)
class Subject:
    """One way of running envs.

    ``reference``: the grid_vec subject whose steps/s are divided by this one's in the ratios
    (None for the references themselves). ``single``: runs one env only. ``processes``: how
    many processes it starts for ``num_envs`` envs (scales the start-up cost estimate).
    ``check``: beyond ``requires``, returns what is missing (None when nothing is).
    """

    name: str
    open: Callable[[Workload, int, int], Session]
    workloads: frozenset[str]
    requires: tuple[str, ...] = ()
    reference: str | None = "GridVecEnv"
    single: bool = False
    random_actions: bool = True
    processes: Callable[[int], int] = lambda n: n
    check: Callable[[], str | None] | None = None

    def missing(self) -> str | None:
        """The first required module that cannot be imported (or what ``check`` says is
        missing), or None."""
        module = next((m for m in self.requires if importlib.util.find_spec(m) is None), None)
        if module is None and self.check is not None:
            return self.check()
        return module


def _grid_vec_workers(n: int) -> int:
    return math.ceil(n / math.ceil(n / _usable_cores()))


_GRIDS = frozenset({"case14", "case118"})
_VECTOR = _GRIDS | {"trivial"}
_SANDBOX = frozenset({SANDBOX})
_G2O = ("grid2op", "lightsim2grid")

# grid2op subjects: label -> grid2op backend, in table order
_GRID2OP_BACKENDS = (("LightSim", "lightsim2grid"), ("PandaPower", "pandapower"))

SUBJECTS: dict[str, Subject] = {
    s.name: s
    for s in (
        Subject(
            "GridEnv",
            _open_grid_env,
            _GRIDS | _SANDBOX,
            reference=None,
            single=True,
            processes=lambda n: 0,
        ),
        Subject(
            "LightEnv",
            _open_lightenv,
            _GRIDS | _SANDBOX,
            reference="GridEnv",
            single=True,
            processes=lambda n: 0,
            check=_lightenv_missing,
        ),
        Subject(
            "GridVecEnv",
            _open_grid_vec,
            _VECTOR | _SANDBOX,
            reference=None,
            processes=_grid_vec_workers,
        ),
        Subject("GridVecEnv 1/worker", _open_grid_vec_1, _VECTOR),
        Subject("GridVecEnv pool", _open_pool, _GRIDS, processes=_grid_vec_workers),
        Subject("SyncVectorEnv", _open_gym("sync"), _VECTOR, processes=lambda n: 0),
        Subject("AsyncVectorEnv", _open_gym("async"), _VECTOR),
        Subject("SB3 SubprocVecEnv", _open_sb3, _VECTOR, requires=("stable_baselines3",)),
        *(
            Subject(
                f"grid2op {label}",
                _open_grid2op(backend, multi=False),
                _SANDBOX,
                requires=_G2O,
                reference="GridEnv",
                single=True,
                random_actions=False,
                processes=lambda n: 0,
            )
            for label, backend in _GRID2OP_BACKENDS
        ),
        *(
            Subject(
                f"grid2op multi {label}",
                _open_grid2op(backend, multi=True),
                _SANDBOX,
                requires=_G2O,
                random_actions=False,
            )
            for label, backend in _GRID2OP_BACKENDS
        ),
    )
}
