"""Pool mode of BatchedGridVecEnv (send / recv of the turns that end first): each env's
trajectory is the one lockstep steps give it, and the pool's errors."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import NoAsyncCallError

import grid_vec

TASK = "grid_vec/Case14Topology-v0"
N_ENVS = 6
DECISIONS = 30


def _policy(env_id: int, decision: int, mask: np.ndarray) -> int:
    """A deterministic per-env choice: mostly do-nothing, a legal topology action every
    third decision (so turns end after different numbers of steps)."""
    if decision % 3:
        return 0
    legal = np.flatnonzero(mask)
    return int(legal[(env_id * 5 + decision) % len(legal)])


def _record(obs, reward, terminated, truncated, info_row) -> tuple:
    return (
        obs.copy(),
        float(reward),
        bool(terminated),
        bool(truncated),
        int(info_row["skipped_steps"]),
        bool(info_row["is_illegal"]),
        info_row["action_mask"].copy(),
    )


def _row(infos: dict, j: int) -> dict:
    """Env ``j``'s fixed entries of batched infos (a just-reset env's come from final_info)."""
    source = infos
    if "_final_info" in infos and infos["_final_info"][j]:
        source = infos["final_info"]
    return {
        "skipped_steps": source["skipped_steps"][j],
        "is_illegal": source["is_illegal"][j],
        "action_mask": infos["action_mask"][j],
    }


def _lockstep() -> dict[int, list]:
    envs = grid_vec.make_vec(TASK, N_ENVS, vectorization="batched", autoreset_mode="SameStep")
    obs, infos = envs.reset(seed=11)
    masks = infos["action_mask"]
    seen: dict[int, list] = {i: [] for i in range(N_ENVS)}
    for decision in range(DECISIONS):
        actions = np.array([_policy(i, decision, masks[i]) for i in range(N_ENVS)])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        for i in range(N_ENVS):
            seen[i].append(_record(obs[i], rewards[i], terminated[i], truncated[i], _row(infos, i)))
        masks = infos["action_mask"]
    envs.close()
    return seen


def _pooled(batch_size: int) -> dict[int, list]:
    envs = grid_vec.make_vec(
        TASK,
        N_ENVS,
        vectorization="batched",
        autoreset_mode="SameStep",
        vector_kwargs={"batch_size": batch_size},
    )
    _, infos = envs.reset(seed=11)
    seen: dict[int, list] = {i: [] for i in range(N_ENVS)}
    ids = np.arange(N_ENVS)
    masks = infos["action_mask"]
    while True:
        actions = [_policy(int(i), len(seen[int(i)]), masks[j]) for j, i in enumerate(ids)]
        live = [j for j, i in enumerate(ids) if len(seen[int(i)]) < DECISIONS]
        if live:
            envs.send(np.array(actions)[live], ids[live])
        if min(len(v) for v in seen.values()) >= DECISIONS:
            break
        envs.batch_size = min(batch_size, len(envs.pending_env_ids))
        batch = envs.recv()
        ids, masks = batch.env_ids, batch.infos["action_mask"]
        for j, i in enumerate(ids.tolist()):
            seen[i].append(
                _record(
                    batch.observations[j],
                    batch.rewards[j],
                    batch.terminations[j],
                    batch.truncations[j],
                    _row(batch.infos, j),
                )
            )
    envs.close()
    return seen


@pytest.mark.parametrize("batch_size", [1, 2, N_ENVS])
def test_pool_mode_plays_each_env_the_trajectory_of_lockstep_steps(batch_size: int) -> None:
    expected, got = _lockstep(), _pooled(batch_size)
    skipped = 0
    for i in range(N_ENVS):
        for k, (a, b) in enumerate(zip(expected[i], got[i][:DECISIONS], strict=True)):
            np.testing.assert_array_equal(a[0], b[0], err_msg=f"env {i} decision {k}: obs")
            assert a[1:6] == b[1:6], f"env {i} decision {k}"
            np.testing.assert_array_equal(a[6], b[6], err_msg=f"env {i} decision {k}: mask")
            skipped += a[4]
    assert skipped > 0  # the heuristics played steps on their own: turns of several steps


def test_pool_hands_out_the_turns_that_end_first() -> None:
    envs = grid_vec.make_vec(
        TASK, 8, vectorization="batched", autoreset_mode="SameStep", vector_kwargs={"batch_size": 2}
    )
    envs.reset(seed=3)
    envs.send(np.zeros(8, dtype=np.int64), list(range(8)))
    first = envs.recv()
    assert len(first.env_ids) == 2
    assert len(envs.pending_env_ids) == 6
    assert not set(first.env_ids.tolist()) & set(envs.pending_env_ids)
    rest = envs.recv()
    # the turns handed out first played no more steps on their own than those after them
    assert first.infos["skipped_steps"].max() <= rest.infos["skipped_steps"].min()
    envs.close()


def test_pool_refuses_envs_in_a_turn_and_a_recv_without_enough_sent() -> None:
    envs = grid_vec.make_vec(
        TASK, 4, vectorization="batched", autoreset_mode="SameStep", vector_kwargs={"batch_size": 2}
    )
    envs.reset(seed=0)
    with pytest.raises(NoAsyncCallError, match="needs 2 envs sent"):
        envs.recv()
    envs.send(np.zeros(2, dtype=np.int64), [0, 1])
    with pytest.raises(ValueError, match=r"envs \[1\] are in a turn already"):
        envs.send(np.zeros(2, dtype=np.int64), [1, 2])
    with pytest.raises(RuntimeError, match="finish_turns first"):
        envs.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="sub-env 3"):
        envs.send(np.array([0, 10**6]), [2, 3])
    envs.reset(seed=0)  # a reset ends the turns in progress
    assert envs.pending_env_ids == ()
    envs.close()


def test_pool_refuses_next_step_autoreset() -> None:
    envs = grid_vec.make_vec(TASK, 2, vectorization="batched", vector_kwargs={"batch_size": 1})
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="not NEXT_STEP"):
        envs.send(np.zeros(2, dtype=np.int64), [0, 1])
    envs.close()


def test_graph_observations_in_pool_mode_are_the_graphs_of_the_flat_ones() -> None:
    kwargs = {"vectorization": "batched", "autoreset_mode": "SameStep"}
    pool = {"vector_kwargs": {"batch_size": 2}}
    graphs = grid_vec.make_vec(TASK, 4, observation="graph", **kwargs, **pool)
    flat = grid_vec.make_vec(TASK, 4, **kwargs, **pool)
    for envs in (graphs, flat):
        envs.reset(seed=5)
        envs.send(np.zeros(4, dtype=np.int64), [0, 1, 2, 3])
    for _ in range(6):
        got, expected = graphs.recv(), flat.recv()
        np.testing.assert_array_equal(got.env_ids, expected.env_ids)
        encoded = graphs.graph.encode(expected.observations)
        assert set(got.observations) == set(encoded)
        for key, value in encoded.items():
            np.testing.assert_array_equal(got.observations[key], value)
        for envs in (graphs, flat):
            envs.send(np.zeros(2, dtype=np.int64), got.env_ids)
    graphs.close()
    flat.close()
