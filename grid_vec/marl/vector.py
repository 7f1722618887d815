"""N multi-agent envs stepped together: arrays shaped ``(num_envs, num_agents, ...)``.

:class:`MultiAgentVecEnv` is the batched form of :class:`~grid_vec.marl.parallel.GridParallelEnv`
for MAPPO-style loops. It drives a vector env of GridEnvs (``make_vec``: the batched core in
this process, or GridVecEnv's workers) whose sub-envs play the joint actions, and turns the
batch's flat observations into the agents' with the same
:class:`~grid_vec.marl.agents.MultiAgentLayout` methods the single env uses, for every env at
once. Sub-envs reset on their own in the step that ends them (gymnasium's ``SAME_STEP``
autoreset): the observation returned is the next episode's first, and ``info`` holds the
ended episode's last under ``final_observation`` / ``final_state``. The joint action's rule
reads ``max_sub_changed`` as it was when the env was made (make a new one after changing the
rules; the single env reads the rules in force at every step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from grid_vec.marl.agents import JointActions, MultiAgentLayout, check_reward


@dataclass(frozen=True)
class MultiAgentStep:
    """What one step of the N multi-agent envs gives.

    Attributes:
        observations: (N, A, W) float32, each agent's observation.
        state: (N, size) float32, each env's flat observation (a centralised critic's input).
        action_masks: (N, A, C) bool, each agent's legal choices (generator agents: all
            False; their action is a redispatch).
        rewards: (N, A) float64 (zeros after a reset).
        terminated, truncated: (N,) bool: the env's episode ended there (its agents with it).
        refused, deferred: (N, A) bool, what the joint action's rule did with each part.
        infos: the vector env's batched infos (``final_observation`` (N, A, W) and
            ``final_state`` (N, size) added where an episode ended, zeros elsewhere).
    """

    observations: np.ndarray
    state: np.ndarray
    action_masks: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    refused: np.ndarray
    deferred: np.ndarray
    infos: dict[str, Any]


class MultiAgentVecEnv:
    """N multi-agent views of GridEnvs, stepped as one batch.

    Build one with :func:`grid_vec.marl.vector_env`.

    Args:
        vec_env: a vector env of GridEnvs of action type ``"set_bus"`` /
            ``"set_bus_continuous"`` with ``action_mask=True``, autoreset ``SAME_STEP``.
        layout: the agents.
        reward: ``"shared"`` or ``"local"``.

    Raises:
        ValueError: a vector env of another autoreset mode, an unknown reward.
    """

    def __init__(self, vec_env: VectorEnv, layout: MultiAgentLayout, reward: str = "shared"):
        mode = vec_env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"the vector env must reset in the same step, got {mode}")
        self.vec_env = vec_env
        self.layout = layout
        self.num_envs = vec_env.num_envs
        self.agents = layout.names
        self.num_agents = layout.num_agents
        self._reward = check_reward(reward)
        self._obs: np.ndarray | None = None
        self._mask: np.ndarray | None = None

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> MultiAgentStep:
        """Reset every env (``seed`` and ``options`` as the vector env's ``reset``).

        Returns:
            The first observations (rewards zero, no flag set).
        """
        obs, infos = self.vec_env.reset(seed=seed, options=options)
        none = np.zeros((self.num_envs, self.num_agents), dtype=bool)
        done = np.zeros(self.num_envs, dtype=bool)
        return self._result(obs, infos, none.astype(np.float64), done, done, none, none)

    def step(self, actions: Any) -> MultiAgentStep:
        """Play one joint action per env.

        Args:
            actions: (N, A), one number per agent: a substation agent's choice (an int), a
                generator agent's redispatch (MW).

        Returns:
            The step's arrays.

        Raises:
            ValueError: a wrong shape or an action outside an agent's space (naming the env
                and the agent).
            RuntimeError: no reset yet.
        """
        joint = self.resolve(actions)
        obs, reward, terminated, truncated, infos = self.vec_env.step(joint.env_actions())
        ended = terminated | truncated
        final_obs = obs
        if ended.any():
            final_obs = obs.copy()
            for i in np.flatnonzero(ended).tolist():
                final_obs[i] = infos["final_obs"][i]
            final_state = np.where(ended[:, None], final_obs, 0.0).astype(np.float32)
            infos["final_state"] = final_state
            infos["final_observation"] = np.where(
                ended[:, None, None], self.layout.observe(final_state), 0.0
            ).astype(np.float32)
        rewards = self._reward(self.layout, reward, final_obs, terminated)
        return self._result(
            obs, infos, rewards, terminated, truncated, joint.refused, joint.deferred
        )

    def resolve(self, actions: Any) -> JointActions:
        """The joint actions the agents' ``actions`` make in the current states (what
        :meth:`step` plays; nothing is played here).

        Raises:
            ValueError, RuntimeError: as :meth:`step`.
        """
        if self._obs is None:
            raise RuntimeError("call reset() first")
        checked = self.layout.check_actions(actions)
        if len(checked) != self.num_envs:
            raise ValueError(f"actions must have {self.num_envs} rows, got {len(checked)}")
        rho = self._obs[:, self.layout.obs_slices["rho"]]
        return self.layout.joint_actions(checked, self._mask, rho)

    def close(self) -> None:
        self.vec_env.close()

    def __enter__(self) -> MultiAgentVecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _result(
        self,
        obs: np.ndarray,
        infos: dict,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        refused: np.ndarray,
        deferred: np.ndarray,
    ) -> MultiAgentStep:
        self._obs = obs
        self._mask = np.asarray(infos["action_mask"], dtype=bool)
        return MultiAgentStep(
            observations=self.layout.observe(obs),
            state=obs,
            action_masks=self.layout.masks(self._mask),
            rewards=rewards,
            terminated=np.asarray(terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            refused=refused,
            deferred=deferred,
            infos=infos,
        )
