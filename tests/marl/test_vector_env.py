"""The batched multi-agent view (grid_vec.marl.vector_env): N envs stepped together equal N
separate ParallelEnvs, with either vectorization, through the autoresets."""

from __future__ import annotations

import numpy as np
import pytest

from grid_vec.marl import vector_env
from grid_vec.marl.agents import KIND_SUBSTATION

TASK = "grid_vec/Case14Topology-v0"


def _random_batch(vec, masks, rng) -> np.ndarray:
    """Legal random actions ``(N, A)``: about one substation agent in three asks a change, the
    generator agents redispatch a little."""
    layout = vec.layout
    actions = np.zeros((vec.num_envs, vec.num_agents))
    for i in range(vec.num_agents):
        if layout.kind[i] == KIND_SUBSTATION:
            for e in range(vec.num_envs):
                if rng.random() < 0.3:
                    actions[e, i] = rng.choice(np.flatnonzero(masks[e, i]))
        else:
            actions[:, i] = rng.uniform(layout.low[i], layout.high[i], vec.num_envs) * 0.3
    return actions


def test_the_batch_equals_separate_parallel_envs_through_autoresets():
    pytest.importorskip("pettingzoo", reason="needs the marl extra (pettingzoo)")
    from grid_vec.marl import parallel_env

    n, scope = 3, "substations_and_generators"
    vec = vector_env(TASK, n, scope, split="train", reward="local")
    singles = [parallel_env(TASK, scope, split="train", reward="local") for _ in range(n)]
    result = vec.reset(seed=10)
    single_obs = [env.reset(seed=10 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    ended = 0
    for step in range(60):
        for e, env in enumerate(singles):
            np.testing.assert_array_equal(result.state[e], env.state(), f"step {step} env {e}")
            for i, name in enumerate(vec.agents):
                np.testing.assert_array_equal(
                    result.observations[e, i], single_obs[e][name]["observation"]
                )
                if "action_mask" in single_obs[e][name]:
                    width = len(single_obs[e][name]["action_mask"])
                    np.testing.assert_array_equal(
                        result.action_masks[e, i, :width], single_obs[e][name]["action_mask"]
                    )
        actions = _random_batch(vec, result.action_masks, rng)
        result = vec.step(actions)
        for e, env in enumerate(singles):
            row = {
                name: (int(a) if vec.layout.kind[i] == KIND_SUBSTATION else np.array([a]))
                for i, (name, a) in enumerate(zip(vec.agents, actions[e], strict=True))
            }
            obs, rewards, terms, truncs, infos = env.step(row)
            np.testing.assert_allclose(
                result.rewards[e], [rewards[a] for a in vec.agents], rtol=1e-12
            )
            assert result.terminated[e] == terms[vec.agents[0]]
            assert result.truncated[e] == truncs[vec.agents[0]]
            np.testing.assert_array_equal(
                result.deferred[e], [infos[a]["deferred"] for a in vec.agents]
            )
            if result.terminated[e] or result.truncated[e]:
                ended += 1
                np.testing.assert_array_equal(result.infos["final_state"][e], env.state())
                np.testing.assert_array_equal(
                    result.infos["final_observation"][e],
                    np.stack([obs[a]["observation"] for a in vec.agents]),
                )
                obs, _ = env.reset()  # the vector env's autoreset: no seed
            single_obs[e] = obs
    assert ended >= 2
    vec.close()


def test_worker_processes_play_what_the_batched_core_plays():
    kwargs = {"split": "validation"}
    batched = vector_env(TASK, 4, **kwargs)
    workers = vector_env(TASK, 4, vectorization="multiprocess", envs_per_worker=2, **kwargs)
    try:
        a, b = batched.reset(seed=5), workers.reset(seed=5)
        rng = np.random.default_rng(5)
        for _ in range(25):
            np.testing.assert_array_equal(a.observations, b.observations)
            np.testing.assert_array_equal(a.action_masks, b.action_masks)
            actions = _random_batch(batched, a.action_masks, rng)
            a, b = batched.step(actions), workers.step(actions)
            np.testing.assert_array_equal(a.rewards, b.rewards)
            np.testing.assert_array_equal(a.terminated, b.terminated)
    finally:
        batched.close()
        workers.close()


def test_the_batch_has_one_row_per_env_and_agent():
    vec = vector_env(TASK, 2, split="train")
    result = vec.reset(seed=0)
    a, w = vec.num_agents, vec.layout.observation_size
    assert result.observations.shape == (2, a, w) and result.observations.dtype == np.float32
    assert result.action_masks.shape == (2, a, int(vec.layout.n_choices.max()))
    assert result.rewards.shape == (2, a) and result.state.shape[0] == 2
    assert result.action_masks[:, :, 0].all()
    with pytest.raises(ValueError, match=r"actions must be shaped \(num_envs, 7\)"):
        vec.step(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="actions must have 2 rows"):
        vec.step(np.zeros((3, a)))
    with pytest.raises(ValueError, match="env 1, agent substation_2"):
        bad = np.zeros((2, a))
        bad[1, 1] = 0.5
        vec.step(bad)
    vec.close()


def test_a_multi_mix_env_is_refused_with_a_clear_error():
    import grid_vec
    from grid_vec.env.multimix import MultiMixEnv
    from grid_vec.marl.agents import MultiAgentLayout

    mixes = [(name, grid_vec.make("case14", action_type="set_bus")) for name in ("a", "b")]
    with pytest.raises(ValueError, match="needs one GridEnv, got a MultiMixEnv"):
        MultiAgentLayout.of(MultiMixEnv(mixes))
