"""PettingZoo's ``ParallelEnv`` over one GridEnv: every agent acts at each decision point.

Build one with :func:`grid_vec.marl.parallel_env`. The env is the batch of one of
:mod:`grid_vec.marl.agents`: each step resolves the agents' actions into one grid2op action
(:meth:`~grid_vec.marl.agents.MultiAgentLayout.joint_actions`) and plays it with
``GridEnv.step`` (under the task's heuristics a step returns at the next decision point, as
GridEnv's does).

Per agent: the observation is ``{"observation": Box(W), "action_mask": int8 (C,)}`` for a
substation agent (``action_mask``: its legal choices, PettingZoo's convention) and
``{"observation": Box(W)}`` for a generator agent; the action a ``Discrete(C)`` choice (0
leaves the substation as it is, ``k`` plays its ``k``-th configuration of the catalog) or a
``Box(1,)`` redispatch in MW; the info ``refused`` / ``deferred`` (what the joint action's rule
did with the agent's part) and ``env``, the GridEnv step's info (one dict, shared). A game
over terminates every agent, the end of the scenario truncates every agent; ``state()`` is
the GridEnv's flat observation, for a centralised critic.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from grid_vec.core.reset_options import RESET_OPTIONS
from grid_vec.marl.agents import KIND_SUBSTATION, MultiAgentLayout, check_reward

try:
    from pettingzoo import ParallelEnv
except ImportError as error:  # pragma: no cover - the extra's absence is tested by import
    raise ImportError(
        "grid_vec.marl.parallel needs the marl extra (pettingzoo): pip install 'grid_vec[marl]'"
    ) from error


class GridParallelEnv(ParallelEnv):
    """A PettingZoo ``ParallelEnv`` whose agents share one GridEnv (see the module
    docstring).

    Args:
        env: a GridEnv of action type ``"set_bus"`` (or ``"set_bus_continuous"`` when the
            layout has generator agents), with ``action_mask=True``.
        layout: the agents (:meth:`MultiAgentLayout.of`).
        reward: ``"shared"`` or ``"local"`` (:data:`grid_vec.marl.agents.REWARDS`).

    Raises:
        ValueError: an env without the catalog's mask, an unknown reward.
    """

    metadata = {"name": "grid_vec_parallel_v0", "render_modes": []}  # noqa: RUF012

    def __init__(self, env: Any, layout: MultiAgentLayout, reward: str = "shared") -> None:
        if not env.config.action_mask:
            raise ValueError("the multi-agent view needs a GridEnv made with action_mask=True")
        self.env = env
        self.layout = layout
        self.reward_name = reward
        self._reward = check_reward(reward)
        self.possible_agents = list(layout.names)
        self.agents: list[str] = []
        self._index = {name: i for i, name in enumerate(layout.names)}
        self._obs: np.ndarray | None = None
        self._mask: np.ndarray | None = None

    @functools.cache  # noqa: B019 - PettingZoo wants the same object
    def observation_space(self, agent: str) -> spaces.Dict:
        i = self._agent(agent)
        box = spaces.Box(-np.inf, np.inf, (self.layout.observation_size,), np.float32)
        if self.layout.kind[i] != KIND_SUBSTATION:
            return spaces.Dict({"observation": box})
        n = int(self.layout.n_choices[i])
        return spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (n,), np.int8)})

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Space:
        i = self._agent(agent)
        if self.layout.kind[i] == KIND_SUBSTATION:
            return spaces.Discrete(int(self.layout.n_choices[i]))
        low, high = self.layout.low[i : i + 1], self.layout.high[i : i + 1]
        return spaces.Box(low, high, (1,), np.float32)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict], dict[str, dict]]:
        """Start an episode (``seed`` and ``options`` as ``GridEnv.reset``'s; an option
        GridEnv does not know is ignored with a warning).

        Returns:
            Each agent's observation and info.
        """
        if options:
            unknown = sorted(set(options) - set(RESET_OPTIONS))
            if unknown:
                # PettingZoo's API test passes options of its own: warned of, not refused
                warnings.warn(
                    f"reset options {unknown} ignored; GridEnv's: {list(RESET_OPTIONS)}",
                    stacklevel=2,
                )
            options = {key: value for key, value in options.items() if key in RESET_OPTIONS}
        obs, info = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        none = np.zeros((1, self.layout.num_agents), dtype=bool)
        return self._agent_obs(obs, info), self._agent_infos(info, none, none)

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict, dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict]]:
        """Play the agents' joint action (an agent left out leaves its part unchanged).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, keyed by agent.

        Raises:
            ValueError: an unknown agent, or an action of another type or shape than its
                space's (a substation agent's an int, a generator agent's a float array of
                shape ``(1,)``, as a single-agent GridEnv takes them) or outside it, naming
                the agent.
            RuntimeError: no episode under way.
        """
        if not self.agents or self._obs is None:
            raise RuntimeError("no episode under way: call reset() first")
        if not isinstance(actions, dict):
            raise ValueError(
                f"actions must be a dict of agent name to action, got {type(actions).__name__}"
            )
        row = np.zeros((1, self.layout.num_agents), dtype=np.float64)
        for name, action in actions.items():
            i = self._agent(name)
            row[0, i] = self.layout.agent_action(i, action)  # its type, as GridEnv's own
        checked = self.layout.check_actions(row)  # its range
        rho = self._obs[None, self.layout.obs_slices["rho"]]
        # the rules in force now (set_parameters may have changed them since the layout)
        limit = self.env.parameters.max_sub_changed
        joint = self.layout.joint_actions(checked, self._mask[None], rho, limit)
        obs, reward, terminated, truncated, info = self.env.step(joint.env_action(0))
        rewards = self._reward(self.layout, np.array([reward]), obs[None], np.array([terminated]))
        out_obs = self._agent_obs(obs, info)
        names = self.agents
        infos = self._agent_infos(info, joint.refused, joint.deferred)
        if terminated or truncated:
            self.agents = []
        return (
            out_obs,
            {name: float(rewards[0, self._index[name]]) for name in names},
            dict.fromkeys(names, bool(terminated)),
            dict.fromkeys(names, bool(truncated)),
            infos,
        )

    def state(self) -> np.ndarray:
        """The GridEnv's flat observation of the current state."""
        if self._obs is None:
            raise RuntimeError("no episode under way: call reset() first")
        return self._obs.copy()

    def close(self) -> None:
        self.env.close()

    # --- internals ----------------------------------------------------------------------

    def _agent(self, name: str) -> int:
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown agent {name!r}; agents: {self.possible_agents}") from None

    def _agent_obs(self, obs: np.ndarray, info: dict) -> dict[str, dict]:
        self._obs = obs
        self._mask = np.asarray(info["action_mask"], dtype=bool)
        local = self.layout.observe(obs[None])[0]
        masks = self.layout.masks(self._mask[None])[0].astype(np.int8)
        out = {}
        for i, name in enumerate(self.possible_agents):
            entry = {"observation": local[i]}
            if self.layout.kind[i] == KIND_SUBSTATION:
                entry["action_mask"] = masks[i, : self.layout.n_choices[i]]
            out[name] = entry
        return out

    def _agent_infos(
        self, info: dict, refused: np.ndarray, deferred: np.ndarray
    ) -> dict[str, dict]:
        return {
            name: {"refused": bool(refused[0, i]), "deferred": bool(deferred[0, i]), "env": info}
            for i, name in enumerate(self.possible_agents)
        }
