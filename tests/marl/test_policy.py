"""MultiAgentPolicy: the agents' policy played by the Runner on single-agent GridEnvs and
scored by evaluate_task beside single-agent policies."""

from __future__ import annotations

import numpy as np
import pytest

from grid_vec.marl import MultiAgentPolicy, vector_env
from grid_vec.runner.evaluate import evaluate_task

TASK = "grid_vec/Case14Topology-v0"


@pytest.fixture(scope="module")
def layout():
    vec = vector_env(TASK, 1, split="train")
    vec.close()
    return vec.layout


def test_agents_leaving_every_substation_unchanged_score_as_do_nothing(layout):
    policy = MultiAgentPolicy(layout, lambda obs, masks, state: np.zeros(obs.shape[:2]))
    ours = evaluate_task(
        TASK, policy, split="validation", scenarios=3, env_kwargs=policy.env_kwargs
    )
    baseline = evaluate_task(TASK, "do_nothing", split="validation", scenarios=3)
    np.testing.assert_array_equal(ours.survival, baseline.survival)
    assert ours.score == baseline.score


def test_the_runner_plays_the_agents_legal_choices_as_joint_actions(layout):
    seen = []

    def choose(obs, masks, state):
        assert obs.shape[1:] == (layout.num_agents, layout.observation_size)
        assert state.shape[0] == obs.shape[0]
        # the last legal configuration of each agent: many changes, all legal
        last = masks.shape[2] - 1 - np.argmax(masks[:, :, ::-1], axis=2)
        seen.append(last)
        return last

    policy = MultiAgentPolicy(layout, choose)
    score = evaluate_task(
        TASK, policy, split="validation", scenarios=2, env_kwargs=policy.env_kwargs
    )
    assert len(score.episodes) == 2 and seen
    assert (np.concatenate(seen) > 0).any()


def test_infos_without_the_catalog_mask_are_refused(layout):
    policy = MultiAgentPolicy(layout, lambda obs, masks, state: np.zeros(obs.shape[:2]))
    with pytest.raises(ValueError, match=r"MultiAgentPolicy\.env_kwargs"):
        policy(np.zeros((1, 410), dtype=np.float32), {})
