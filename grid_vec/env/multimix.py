"""MultiMixEnv: a grid2op multi-mix folder (one grid2op folder per "mix" of the same grid) as
one gymnasium env, playing one mix per episode as grid2op's ``MultiMixEnvironment`` does.

The mixes share the grid's elements (so the spaces are equal) but not their values (costs,
ramps, scenarios): each mix is its own GridEnv, built when the env is. A reset moves to the
next mix in name order (the first reset plays the second mix, as grid2op's does), or to the
mix ``options["mix"]`` names (a name, an index, or ``"random"``: drawn from the env's RNG).
The reset's seed goes to the mix's own reset, as grid2op passes it on.

A multi-mix env steps one GridEnv at a time: vector envs run it per env (GridVecEnv, or
gymnasium's), not as a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from grid_vec.env.grid_env import GridEnv


class MultiMixEnv(gym.Env):
    """One episode at a time on one of several GridEnvs of the same grid.

    Args:
        mixes: ``(name, GridEnv)`` pairs, in grid2op's order (mix names sorted).

    Raises:
        ValueError: no mix, or mixes whose spaces differ.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, mixes: Sequence[tuple[str, GridEnv]]) -> None:
        if not mixes:
            raise ValueError("a multi-mix env needs at least one mix")
        self.mix_names = tuple(name for name, _ in mixes)
        self.mixes = tuple(env for _, env in mixes)
        first = self.mixes[0]
        for name, env in mixes[1:]:
            if env.observation_space != first.observation_space:
                raise ValueError(f"mix {name!r}: observation space differs from the first mix's")
            if env.action_space != first.action_space:
                raise ValueError(f"mix {name!r}: action space differs from the first mix's")
        self.observation_space = first.observation_space
        self.action_space = first.action_space
        self.mix_index = 0  # grid2op's first reset moves on from 0: it plays mix 1
        self._started = False

    @property
    def current(self) -> GridEnv:
        """The GridEnv of the mix being played."""
        return self.mixes[self.mix_index]

    @property
    def mix_name(self) -> str:
        """The name of the mix being played."""
        return self.mix_names[self.mix_index]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode on the next mix (or the one ``options["mix"]`` names).

        Args:
            seed: seeds this env's RNG (mix draws) and is passed to the mix's reset.
            options: ``mix`` (a name, an index, or ``"random"``), then the options of
                :meth:`GridEnv.reset`.

        Returns:
            The first observation and the mix's reset info, with ``mix`` (its name).

        Raises:
            ValueError: an unknown mix.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        self.mix_index = self._choose(options.pop("mix", None))
        obs, info = self.current.reset(seed=seed, options=options or None)
        self._started = True
        return obs, {**info, "mix": self.mix_name}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one step of the current mix (see :meth:`GridEnv.step`).

        Raises:
            RuntimeError: before the first reset.
        """
        if not self._started:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        return self.current.step(action)

    def close(self) -> None:
        for env in self.mixes:
            env.close()

    # the grid commands reach every mix (grid2op's set_id does the same), so that they hold
    # whichever mix the next reset plays
    def set_scenario_id(self, id_or_name: int | str) -> None:
        """The next reset plays this scenario (id or name) of its mix."""
        self._every_mix("set_scenario_id", id_or_name)

    def set_scenario_filter(self, fn: Callable[[str], bool]) -> None:
        self._every_mix("set_scenario_filter", fn)

    def set_chunk_size(self, n: int | None) -> None:
        self._every_mix("set_chunk_size", n)

    def set_fast_forward(self, max_steps: int | None) -> None:
        self._every_mix("set_fast_forward", max_steps)

    def set_max_iter(self, n: int | None) -> None:
        self._every_mix("set_max_iter", n)

    def set_parameters(self, parameters: Any) -> None:
        self._every_mix("set_parameters", parameters)

    def _every_mix(self, method: str, *args: Any) -> None:
        for env in self.mixes:
            getattr(env, method)(*args)

    def __getattr__(self, name: str) -> Any:
        # anything else (view, simulate, describe_action, scenario_info, timings, parameters,
        # grid2op_layout, ...) is the current mix's
        if name.startswith("_") or name in ("mixes", "mix_index"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def _choose(self, mix: Any) -> int:
        n = len(self.mixes)
        if mix is None:
            return (self.mix_index + 1) % n
        if isinstance(mix, str) and mix == "random":
            return int(self.np_random.integers(n))
        if isinstance(mix, str):
            if mix not in self.mix_names:
                raise ValueError(f"unknown mix {mix!r}; mixes: {', '.join(self.mix_names)}")
            return self.mix_names.index(mix)
        if isinstance(mix, (int, np.integer)) and not isinstance(mix, bool) and 0 <= mix < n:
            return int(mix)
        raise ValueError(f"options['mix'] must be a mix name, an index in [0, {n - 1}] or 'random'")


@dataclass(frozen=True)
class MultiMixFactory:
    """Builds a MultiMixEnv from one GridEnv factory per mix (picklable when they are)."""

    mixes: tuple[tuple[str, Callable[[], GridEnv]], ...]
    spec: EnvSpec

    def __call__(self) -> MultiMixEnv:
        env = MultiMixEnv([(name, factory()) for name, factory in self.mixes])
        env.spec = self.spec
        return env
