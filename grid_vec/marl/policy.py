"""The agents' policy played where a single-agent vector env is expected (the Runner).

:class:`MultiAgentPolicy` turns a function of the agents' batch (their observations, masks
and the global state) into a batched policy of the flat observations of GridEnvs made with
:meth:`MultiAgentPolicy.env_kwargs`: the Runner, ``evaluate_task`` and the task scores then
play and score a multi-agent policy exactly as they score a single-agent one (the same
scenarios, the same survival fraction), so the two stand side by side in one table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grid_vec.marl.agents import MultiAgentLayout, env_settings

# fn(observations (N, A, W), action masks (N, A, C), state (N, size)) -> actions (N, A)
ChooseFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class MultiAgentPolicy:
    """A batched policy (``policy(obs, infos) -> actions``) of GridEnvs whose agents are
    ``layout``'s, each decision made by ``choose`` and resolved into one joint action per env
    (:meth:`MultiAgentLayout.joint_actions`).

    Args:
        layout: the agents.
        choose: the agents' actions from their observations, masks and the state.
    """

    takes_infos = True  # the Runner hands it the infos: the catalog's mask

    def __init__(self, layout: MultiAgentLayout, choose: ChooseFn) -> None:
        self.layout = layout
        self.choose = choose

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """The GridEnv settings the policy's envs need (``evaluate_task``'s
        ``env_kwargs``)."""
        return env_settings(bool((self.layout.generator >= 0).any()))

    def __call__(self, obs: np.ndarray, infos: dict[str, Any] | None = None) -> dict:
        """The joint actions of a batch of flat observations.

        Raises:
            ValueError: infos without the catalog's ``action_mask``.
        """
        obs = np.asarray(obs)
        if not infos or "action_mask" not in infos:
            raise ValueError(
                "the policy reads the catalog's action_mask: make the envs with "
                "MultiAgentPolicy.env_kwargs"
            )
        catalog_mask = np.asarray(infos["action_mask"], dtype=bool)
        layout = self.layout
        actions = layout.check_actions(
            self.choose(layout.observe(obs), layout.masks(catalog_mask), obs)
        )
        rho = obs[:, layout.obs_slices["rho"]]
        return layout.joint_actions(actions, catalog_mask, rho).env_actions()
