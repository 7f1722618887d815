"""Workloads: which env every subject runs (embedded grids, grid2op's sandbox folder, and a
trivial env whose steps cost nothing, so that only the vectorisation overhead is timed)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def random_set_bus(
    layout: Any, n_branch: int, line_status: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """A random general topology action (action type ``"set_bus"``), as an agent exploring
    grid2op's action space sends them: one or two substations reconfigured (25 of 70), a
    few element ends set, branch ends taken off too (10), a branch status set either way
    (13), a disconnected branch put back by its status, through an end or both (15), or an
    ambiguous mix (7: off by its status and on by an end, or off at one end and on at the
    other). Without a disconnected branch to put back, a status is set instead.

    Args:
        layout: the env's :class:`~grid_vec.core.topology.TopologyLayout`.
        n_branch: the grid's branches.
        line_status: ``(n_branch,)`` the branches' status now.
        rng: where the draws come from.

    Returns:
        ``{"set_bus": (n_elem,) int64, "set_line_status": (n_branch,) int64}``.
    """
    set_bus = np.zeros(layout.n_elem, dtype=np.int64)
    status = np.zeros(n_branch, dtype=np.int64)
    kind = rng.random() * 0.7
    off = np.flatnonzero(~np.asarray(line_status, dtype=bool))
    branch_ends = set(layout.pos_or.tolist()) | set(layout.pos_ex.tolist())
    if kind < 0.25:  # one substation (two: refused when max_sub_changed is 1)
        n_sub = len(layout.sub_start) - 1
        for sub in rng.choice(n_sub, 1 + int(rng.random() < 0.2), replace=False):
            lo, hi = layout.sub_start[sub], layout.sub_start[sub + 1]
            set_bus[lo:hi] = rng.integers(1, 3, hi - lo)
    elif kind < 0.35:  # a few ends, some of them branch ends taken off
        for pos in rng.choice(layout.n_elem, int(rng.integers(1, 4)), replace=False):
            set_bus[pos] = rng.choice([-1, 1, 2] if int(pos) in branch_ends else [1, 2])
    elif kind < 0.48 or not len(off):  # a branch status, either way
        status[int(rng.integers(n_branch))] = rng.choice([-1, 1])
    elif kind < 0.63:  # a disconnected branch put back: by its status, through an end, both
        branch = int(rng.choice(off))
        how = rng.integers(4)
        if how in (0, 1):
            status[branch] = 1
        if how in (1, 2):
            set_bus[layout.pos_or[branch]] = rng.integers(1, 3)
        if how == 3:
            set_bus[layout.pos_or[branch]], set_bus[layout.pos_ex[branch]] = rng.integers(1, 3, 2)
    else:  # ambiguous
        branch = int(rng.integers(n_branch))
        if rng.random() < 0.5:
            status[branch] = -1
            set_bus[layout.pos_ex[branch]] = 2
        else:
            set_bus[layout.pos_or[branch]] = -1
            set_bus[layout.pos_ex[branch]] = 1
    return {"set_bus": set_bus, "set_line_status": status}


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


def grid_target(grid: str) -> str:
    """What ``make`` / ``make_vec`` are given for a grid name (grid2op's bundled sandbox by
    its path)."""
    return str(sandbox_path()) if grid == SANDBOX else grid


WARM_STEPS = 20
"""Steps a timed vector env plays before its clock starts."""


def timed_steps(env: Any, n: int, actions: str, seconds: float) -> float:
    """Env-steps/s of the vector env ``env`` (``n`` envs, reset here with seed 0) over
    ``seconds`` of a seeded action table of ``actions``, after :data:`WARM_STEPS` steps;
    resets included (the env's autoreset)."""
    table = action_table(env.single_action_space.n, n, actions, seed=0)
    env.reset(seed=0)
    for i in range(WARM_STEPS):
        env.step(table[i % len(table)])
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        env.step(table[steps % len(table)])
        steps += 1
    return steps * n / (time.perf_counter() - start)


@functools.cache
def _factory(name: str) -> Callable[[], gym.Env]:
    if name == "trivial":
        return TrivialEnv
    from grid_vec.env.make import env_factory

    return env_factory(sandbox_path() if name == SANDBOX else name)
