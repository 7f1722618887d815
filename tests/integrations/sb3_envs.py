"""Env factories for the SB3 adapter tests (pickled by value into spawned workers)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit


class DriftEnv(gym.Env):
    """A point drifting on a line: action 0/1 pushes left/right, noise from the env's RNG.

    Terminated when it leaves [-1.5, 1.5]; the factory adds a TimeLimit for truncations. Infos:
    ``x`` every step, a nested ``every_third`` dict on every third step; the reset info holds
    the seed received. Option ``start`` sets the starting point.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}  # noqa: RUF012

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-5.0, 5.0, (3,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.render_mode = "rgb_array"
        self.x = 0.0
        self.t = 0
        self.label = "drift"

    def _obs(self) -> np.ndarray:
        return np.array([self.x, self.t / 10, self.np_random.uniform()], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float((options or {}).get("start", self.np_random.uniform(-0.5, 0.5)))
        self.t = 0
        return self._obs(), {"seed": -1 if seed is None else seed}

    def step(self, action):
        self.t += 1
        self.x += (float(action) - 0.5) * 0.6 + self.np_random.normal(0.0, 0.6)
        terminated = abs(self.x) > 1.5
        info: dict[str, Any] = {"x": self.x}
        if self.t % 3 == 0:
            info["every_third"] = {"t": self.t}
        return self._obs(), 1.0 - abs(self.x), terminated, False, info

    def render(self) -> np.ndarray:
        return np.full((4, 6, 3), self.t, dtype=np.uint8)

    def scaled(self, factor: float) -> float:
        return self.x * factor


def drift_env(max_steps: int = 7) -> gym.Env:
    return TimeLimit(DriftEnv(), max_episode_steps=max_steps)


class Monitor(gym.Wrapper):
    """A wrapper that shares only its name with SB3's Monitor (a chain's printed names would
    mistake it for one)."""


def namesake_monitored_drift() -> gym.Env:
    return Monitor(drift_env())
