"""Small envs for the Runner tests: a stochastic non-grid env and a grid-like one offering
``simulate``, ``view``, ``timings``, ``scenario_info`` and ``parameters`` like GridEnv."""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ToyEnv(gym.Env):
    """Episode length and rewards depend on the reset seed, the options and the actions.

    Reset option ``scenario_id`` (int) shifts the rewards; other keys are refused like
    GridEnv does. ``step_sleep`` slows each step (for the kill test)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, obs_dim: int = 4, n_actions: int = 3, max_len: int = 12, step_sleep=0.0):
        self.observation_space = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = spaces.Discrete(n_actions)
        self.max_len = max_len
        self.step_sleep = step_sleep
        self._t = 0
        self._length = 1
        self._shift = 0.0
        self._scenario = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        self._scenario = int(options.pop("scenario_id", 0))
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}")
        self._shift = float(self._scenario)
        self._t = 0
        self._length = int(self.np_random.integers(2, self.max_len + 1))
        return self._obs(), {
            "scenario_id": self._scenario,
            "scenario_name": f"toy-{self._scenario}",
        }

    def step(self, action: Any):
        if self.step_sleep:
            time.sleep(self.step_sleep)
        a = int(action)
        self._t += 1
        reward = float(self.np_random.normal() + 0.5 * a + self._shift)
        terminated = bool(self.np_random.random() < 0.05 * a)
        truncated = self._t >= self._length and not terminated
        info = {
            "is_illegal": a == self.action_space.n - 1,
            "other_rewards": {"double": 2.0 * reward},
            "tripped_branches": list(
                range(self._t % 3)
            ),  # ragged: a list, as numpy shapes must agree
        }
        return self._obs(), reward, terminated, truncated, info

    def _obs(self) -> np.ndarray:
        noise = self.np_random.normal(size=self.observation_space.shape)
        return (noise + self._t).astype(np.float32)


@dataclass(frozen=True)
class ToyParameters:
    disconnect_probability: float = 0.3
    cooldown: int = 2


class GridLikeEnv(gym.Env):
    """Branches disconnect at random; action 0 does nothing, action ``k + 1`` reconnects
    branch ``k`` (illegal while its cooldown runs). Reward: share of connected branches.

    Observation layout: ``rho`` (n), ``line_status`` (n), ``time_before_cooldown_line`` (n).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, n_line: int = 4, length: int = 15) -> None:
        self.n_line = n_line
        self.length = length
        self.parameters = ToyParameters()
        self.observation_space = spaces.Box(-np.inf, np.inf, (3 * n_line,), np.float32)
        self.action_space = spaces.Discrete(n_line + 1)
        self._status = np.ones(n_line, dtype=bool)
        self._cooldown = np.zeros(n_line, dtype=np.int64)
        self._rho = np.zeros(n_line)
        self._t = 0
        self._scenario = 0
        self._timings = {"powerflow": 0.0, "steps": 0}

    @property
    def scenario_info(self) -> SimpleNamespace:
        return SimpleNamespace(id=self._scenario, name=f"grid-{self._scenario}", length=self.length)

    def timings(self) -> dict[str, float]:
        return dict(self._timings)

    def view(self, obs: np.ndarray) -> SimpleNamespace:
        n = self.n_line
        return SimpleNamespace(
            rho=obs[..., :n],
            line_status=obs[..., n : 2 * n],
            time_before_cooldown_line=obs[..., 2 * n :],
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        self._scenario = int(options.pop("scenario_id", 0))
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}")
        self._status[:] = True
        self._cooldown[:] = 0
        self._t = 0
        self._rho = self.np_random.uniform(0.2, 0.9, self.n_line)
        return self._obs(), {}

    def _apply(self, action: Any, status: np.ndarray, cooldown: np.ndarray) -> bool:
        a = int(action)
        if a == 0:
            return False
        k = a - 1
        if cooldown[k] > 0 or status[k]:
            return True
        status[k] = True
        cooldown[k] = self.parameters.cooldown
        return False

    def simulate(self, action: Any):
        status, cooldown = self._status.copy(), self._cooldown.copy()
        illegal = self._apply(action, status, cooldown)
        return self._obs(), float(status.mean()), False, {"is_illegal": illegal}

    def step(self, action: Any):
        t0 = time.perf_counter()
        self._t += 1
        self._cooldown = np.maximum(self._cooldown - 1, 0)
        illegal = self._apply(action, self._status, self._cooldown)
        trips = np.flatnonzero(
            self._status
            & (self.np_random.random(self.n_line) < self.parameters.disconnect_probability)
        )
        self._status[trips] = False
        self._cooldown[trips] = self.parameters.cooldown
        self._rho = np.where(self._status, self.np_random.uniform(0.2, 0.9, self.n_line), 0.0)
        self._timings["powerflow"] += time.perf_counter() - t0
        self._timings["steps"] += 1
        reward = float(self._status.mean())
        terminated = not self._status.any()
        truncated = self._t >= self.length and not terminated
        tripped = np.zeros(self.n_line, dtype=bool)
        tripped[trips] = True
        info = {"is_illegal": illegal, "tripped": tripped, "attacked_branch": -1}
        return self._obs(), reward, terminated, truncated, info

    def _obs(self) -> np.ndarray:
        return np.concatenate([self._rho, self._status, self._cooldown]).astype(np.float32)


class StatefulRandomAgent:
    """Per-episode agent drawing actions from its own generator; also keeps a step count
    reset by ``reset``, to show the Runner resets each copy."""

    def __init__(self, n_actions: int) -> None:
        self.action_space = spaces.Discrete(n_actions)
        self._rng = np.random.default_rng(0)
        self._steps = 0

    def seed(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def reset(self, obs: Any) -> None:
        self._steps = 0

    def act(self, obs: Any, reward: float, done: bool) -> int:
        self._steps += 1
        return int(self._rng.integers(self.action_space.n)) if self._steps > 1 else 0
