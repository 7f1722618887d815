"""Small deterministic envs for the vector tests (pickled by value into spawned workers)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from typing import ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class CountEnv(gym.Env):
    """Box obs from the env's RNG and a counter; ends (terminated) after ``episode_len`` steps.

    Truncates instead when ``truncate`` is set. Infos: ``t`` on odd steps, nested ``extra`` on
    every third step, nothing otherwise; reset info holds the seed it received.
    """

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, episode_len: int = 4, truncate: bool = False, obs_size: int = 3):
        self.observation_space = spaces.Box(-10.0, 10.0, (obs_size,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.episode_len = episode_len
        self.truncate = truncate
        self.render_mode = "rgb_array"
        self.t = 0
        self.tag = "init"

    def _obs(self) -> np.ndarray:
        noise = self.np_random.uniform(-1, 1, self.observation_space.shape)
        return (noise + self.t).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        info = {"seed": -1 if seed is None else seed}
        if options and "start" in options:
            self.t = int(options["start"])
        return self._obs(), info

    def step(self, action):
        self.t += 1
        done = self.t >= self.episode_len
        reward = float(action) + self.np_random.normal()
        info: dict = {}
        if self.t % 2:
            info["t"] = self.t
        if self.t % 3 == 0:
            info["extra"] = {"action": int(action), "vec": np.full(2, self.t, np.float32)}
        return self._obs(), reward, done and not self.truncate, done and self.truncate, info

    def render(self):
        return np.full((2, 2, 3), self.t, dtype=np.uint8)

    def add(self, a, b=0):
        return self.t + a + b

    def loaded_modules(self) -> list[str]:
        return sorted(m for m in ("pandapower", "lightsim2grid", "torch") if m in sys.modules)

    def pid(self) -> int:
        return os.getpid()

    def generator(self):
        return (i for i in range(3))


class StatusEnv(gym.Env):
    """Step infos of one fixed layout, as a grid env gives (bools, ints, floats, numpy scalars,
    arrays, a nested dict), so that GridVecEnv sends them as raw records. From step
    ``change_at`` of an episode on, ``level`` turns float64 (a new layout); ``extra`` appears
    on steps divisible by 5 (a slice that does not fit any layout)."""

    def __init__(self, episode_len: int = 6, change_at: int = 4):
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.episode_len = episode_len
        self.change_at = change_at
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {"episode": "start"}

    def step(self, action):
        self.t += 1
        value = float(self.np_random.normal())
        level_kind = np.float64 if self.t >= self.change_at else np.float32
        info = {
            "ok": value > 0,
            "count": self.t,
            "value": value,
            "level": level_kind(value),
            "mask": np.array([value > 0, action == 1, self.t % 2 == 0]),
            "detail": {"action": int(action), "pair": np.full(2, value)},
        }
        if self.t % 5 == 0:
            info["extra"] = "five"
        done = self.t >= self.episode_len
        return np.full(2, value, np.float32), value, done, False, info


class NestedEnv(gym.Env):
    """Dict observation of every flat leaf kind, Tuple action of Discrete and Box."""

    def __init__(self, episode_len: int = 3):
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-1.0, 1.0, (2,), np.float64),
                "count": spaces.Discrete(10),
                "bits": spaces.MultiBinary(3),
                "pair": spaces.Tuple((spaces.MultiDiscrete([2, 3]), spaces.Discrete(4, start=1))),
            }
        )
        self.action_space = spaces.Tuple(
            (spaces.Discrete(2), spaces.Box(-1.0, 1.0, (2,), np.float32))
        )
        self.episode_len = episode_len
        self.t = 0

    def _obs(self):
        rng = self.np_random
        return {
            "pos": rng.uniform(-1, 1, 2),
            "count": self.t,
            "bits": rng.integers(0, 2, 3).astype(np.int8),
            "pair": (rng.integers(0, [2, 3]), 1 + self.t % 4),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        choice, push = action
        reward = float(choice) + float(np.sum(push))
        done = self.t >= self.episode_len
        return self._obs(), reward, done, False, {"push": np.asarray(push, np.float32)}


class DictActionEnv(gym.Env):
    """Tuple observation, Dict action of MultiDiscrete and MultiBinary."""

    def __init__(self):
        self.observation_space = spaces.Tuple(
            (spaces.Box(0, 5, (2, 2), np.int32), spaces.Discrete(3))
        )
        self.action_space = spaces.Dict(
            {"md": spaces.MultiDiscrete([3, 2]), "mb": spaces.MultiBinary(2)}
        )
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return (self.np_random.integers(0, 5, (2, 2)).astype(np.int32), 0), {}

    def step(self, action):
        self.t += 1
        total = int(np.sum(action["md"]) + np.sum(action["mb"]))
        obs = (np.full((2, 2), min(total, 5), np.int32), self.t % 3)
        return obs, float(total), self.t >= 5, False, {}


class TextEnv(gym.Env):
    """A Text observation: no fixed-size layout, so it takes the pickled path."""

    def __init__(self):
        self.observation_space = spaces.Text(max_length=8)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return "start", {}

    def step(self, action):
        self.t += 1
        return "ab"[int(action)] * self.t, 1.0, self.t >= 3, False, {}


class FaultyEnv(CountEnv):
    """CountEnv that misbehaves at step ``at`` (raise, kill, segfault, hang) or reset ``at``."""

    def __init__(self, fault: str = "raise", at: int = 2, episode_len: int = 100):
        super().__init__(episode_len=episode_len)
        self.fault, self.at = fault, at
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.fault == "kill_on_reset" and self.resets == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.t + 1 == self.at:
            if self.fault == "raise":
                raise ValueError(f"faulty step at t={self.at}")
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "segfault":
                ctypes.string_at(0)
            if self.fault == "hang":
                time.sleep(60)
        return super().step(action)


class SlowEnv(CountEnv):
    """CountEnv whose steps sleep ``delay`` seconds (varied step times for pool mode)."""

    def __init__(self, delay: float = 0.0):
        super().__init__(episode_len=1000)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


class OtherSpaceEnv(CountEnv):
    """CountEnv with a differently bounded observation space (same shape and dtype)."""

    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Box(-5.0, 5.0, (3,), np.float32)


class BadInitEnv(CountEnv):
    def __init__(self):
        if os.environ.get("GRID_VEC_TEST_PARENT") != str(os.getpid()):
            raise RuntimeError("cannot build in a worker")
        super().__init__()


class OtherActionEnv(CountEnv):
    """CountEnv with four actions instead of three."""

    def __init__(self):
        super().__init__()
        self.action_space = spaces.Discrete(4)


class TextActionEnv(CountEnv):
    """CountEnv with a Text action: actions travel pickled through the command pipe, so a long
    one is larger than the pipe buffer."""

    def __init__(self, max_length: int = 300_000):
        super().__init__()
        self.action_space = spaces.Text(max_length=max_length, charset="ab")

    def step(self, action):
        return super().step(len(action) % 3)


class RelapseEnv(CountEnv):
    """CountEnv whose faults are switched by files in ``flags`` (a directory), so that a test
    decides when a restarted worker fails again: ``step`` kills the worker at its next step,
    ``reset`` at its next reset, and ``init`` makes the factory raise."""

    def __init__(self, flags: str):
        self.flags = flags
        if self._flag("init"):
            raise RuntimeError("RelapseEnv cannot be built: the init flag is set")
        super().__init__(episode_len=100)

    def _flag(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.flags, name))

    def reset(self, *, seed=None, options=None):
        if self._flag("reset"):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self._flag("step"):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().step(action)


class LongStepEnv(CountEnv):
    """CountEnv whose step writes a file named after its pid in ``marks`` (a directory), then
    sleeps ``seconds``: a test knows when the worker is inside a long step."""

    def __init__(self, marks: str, seconds: float = 120.0):
        super().__init__()
        self.marks, self.seconds = marks, seconds

    def step(self, action):
        with open(os.path.join(self.marks, str(os.getpid())), "w") as f:
            f.write("stepping")
        time.sleep(self.seconds)
        return super().step(action)


class EchoActionEnv(gym.Env):
    """Keeps the action of its latest step (``last_action``) as received, type and all; sleeps
    ``action`` seconds when ``sleep`` is set (``time.sleep`` refuses numpy.float32)."""

    def __init__(self, action_space: spaces.Space | None = None, sleep: bool = False):
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = action_space or spaces.Box(0.0, 1.0, (), np.float32)
        self.sleep = sleep
        self.last_action = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.last_action = action
        if self.sleep:
            time.sleep(action)
        return np.zeros(2, np.float32), 0.0, False, False, {}


class StrSpace(spaces.Space):
    """A user's space gymnasium's vector utilities do not know: its env's values are strings,
    which its ``contains`` (made for ints) cannot compare."""

    def sample(self, mask=None, probability=None):
        return int(self.np_random.integers(0, 10))

    def contains(self, x):
        return 0 <= x <= 10

    def __eq__(self, other):
        # by name: pickled by value, the class in a worker is another object than here
        return type(other).__qualname__ == "StrSpace"


class StrSpaceEnv(gym.Env):
    """Observations and actions of :class:`StrSpace`: strings."""

    def __init__(self):
        self.observation_space = StrSpace()
        self.action_space = StrSpace()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "reset", {}

    def step(self, action):
        return f"step({action:s})", 0.0, False, False, {}


class RaisingEnv(gym.Env):
    """Raises in ``reset`` when seeded with 1, and in ``step`` for an action >= 1."""

    def __init__(self):
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed == 1:
            raise ValueError("error in reset")
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if action >= 1:
            raise ValueError(f"error in step with {action}")
        return np.zeros(2, np.float32), 0.0, False, False, {}


class QuietEnv(CountEnv):
    """CountEnv whose steps give no info: a worker of QuietEnvs answers a step with a bare OK
    (nothing to send but the shared block)."""

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {}


class PausingEnv(CountEnv):
    """CountEnv that sleeps ``pause`` seconds in every third step (longer than a short spin)."""

    def __init__(self, pause: float = 0.003, episode_len: int = 5):
        super().__init__(episode_len=episode_len)
        self.pause = pause

    def step(self, action):
        if self.t % 3 == 1:
            time.sleep(self.pause)
        return super().step(action)
