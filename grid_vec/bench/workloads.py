"""Workloads: which env every subject runs (embedded grids, grid2op's sandbox folder, and a
trivial env whose steps cost nothing, so that only the vectorisation overhead is timed)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

ACTIONS = ("do-nothing", "random")
ACTION_ROWS = (
    256  # rows of an action table: batches of actions drawn once per session, cycled through
)


def action_table(n_actions: int, num_envs: int, mode: str, seed: int) -> np.ndarray:
    """``(256, num_envs)`` int64 actions: all 0 (do-nothing) or uniform over ``n_actions``."""
    if mode not in ACTIONS:
        raise ValueError(f"actions must be one of {ACTIONS}, got {mode!r}")
    if mode == "do-nothing":
        return np.zeros((ACTION_ROWS, num_envs), np.int64)
    return np.random.default_rng(seed).integers(0, n_actions, (ACTION_ROWS, num_envs), np.int64)


SANDBOX = "l2rpn_case14_sandbox"


class TrivialEnv(gym.Env):
    """Returns one preallocated observation (Box(550,) float32) for any action: every
    microsecond spent stepping it is the vector env's own overhead."""

    def __init__(self, obs_size: int = 550) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._obs = np.zeros(obs_size, np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self._obs, {}

    def step(self, action):
        return self._obs, 0.0, False, False, {}


@dataclass(frozen=True)
class Workload:
    """A named env to step: ``kind`` is ``"grid"`` (a GridEnv, possibly also run by grid2op when
    ``grid2op_folder``) or ``"trivial"``."""

    name: str
    kind: str
    description: str
    grid2op_folder: bool = False

    def env_factory(self) -> Callable[[], gym.Env]:
        """A picklable zero-argument factory of this workload's env (compiled once)."""
        return _factory(self.name)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("case14", "grid", "embedded IEEE case14, synthetic scenarios"),
        Workload("case118", "grid", "embedded IEEE case118, synthetic scenarios"),
        Workload(
            SANDBOX,
            "grid",
            "grid2op's l2rpn_case14_sandbox folder (same data for grid_vec and grid2op)",
            grid2op_folder=True,
        ),
        Workload("trivial", "trivial", "Box(550) observation, no work: pure vector overhead"),
    )
}


def sandbox_path() -> Path:
    """The l2rpn_case14_sandbox folder shipped inside the grid2op package (ImportError without)."""
    import grid2op

    path = Path(grid2op.__file__).parent / "data" / SANDBOX
    if not path.is_dir():
        raise ImportError(f"grid2op {grid2op.__version__} ships no {SANDBOX} folder at {path}")
    return path


@functools.cache
def _factory(name: str) -> Callable[[], gym.Env]:
    if name == "trivial":
        return TrivialEnv
    from grid_vec.env.make import env_factory

    return env_factory(sandbox_path() if name == SANDBOX else name)
