"""Graph observations (``observation="graph"``): the flat observation's values on bus bars and
branches, batched by the vector envs, within their space."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import grid_vec
from grid_vec.env.graph import EDGE_FEATURES, NODE_FEATURES, connected_edges, graph_layout

TASK = "grid_vec/Case14Topology-v0"


def _split_substation_action(env) -> int:
    """A catalog action of case14 that puts elements on bus bar 2 and keeps the game on."""
    for k in range(1, env.action_space.n):
        env.reset(seed=0)
        obs, _, terminated, _, info = env.step(k)
        if not terminated and not info["is_illegal"] and (env.view(obs).topo_vect == 2).any():
            return k
    raise AssertionError("no catalog action splits a substation")


def _graph_by_hand(env, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The node features and edge index of one flat observation, element by element."""
    view, model, layout = env.view(flat), env.model, env.topology
    n_sub = model.n_sub
    nodes = np.zeros((2 * n_sub, len(NODE_FEATURES)))
    col = {f: j for j, f in enumerate(NODE_FEATURES)}
    volts = [[] for _ in range(2 * n_sub)]
    kinds = [
        (layout.pos_load, model.load_sub, {"load_p": view.load_p, "load_q": view.load_q},
         view.load_v),
        (layout.pos_gen, model.gen_sub, {"gen_p": view.gen_p, "gen_q": view.gen_q,
         "actual_dispatch": view.actual_dispatch}, view.gen_v),
        (layout.pos_or, model.branch_or_sub, {}, view.v_or),
        (layout.pos_ex, model.branch_ex_sub, {}, view.v_ex),
    ]  # fmt: skip
    for positions, subs, values, v in kinds:
        for i, (pos, sub) in enumerate(zip(positions, subs, strict=True)):
            bar = int(view.topo_vect[pos])
            if bar < 1:
                continue
            node = sub + (bar - 1) * n_sub
            nodes[node, col["elements"]] += 1
            for name, array in values.items():
                nodes[node, col[name]] += array[i]
            volts[node].append(v[i])
    for node in range(2 * n_sub):
        nodes[node, col["connected"]] = bool(volts[node])
        nodes[node, col["v"]] = np.mean(volts[node]) if volts[node] else 0.0
        nodes[node, col["bus_bar_2"]] = node >= n_sub
        nodes[node, col["time_before_cooldown_sub"]] = view.time_before_cooldown_sub[node % n_sub]
    index = np.zeros((2, model.n_branch), dtype=np.int64)
    for b in range(model.n_branch):
        for side, (pos, sub) in enumerate(
            [(layout.pos_or[b], model.branch_or_sub[b]), (layout.pos_ex[b], model.branch_ex_sub[b])]
        ):
            index[side, b] = sub + (max(int(view.topo_vect[pos]), 1) - 1) * n_sub
    return nodes, index


def test_graph_holds_the_flat_observations_values_per_bus_bar_and_branch():
    flat_env = grid_vec.make(TASK, heuristics=None)
    graph_env = grid_vec.make(TASK, heuristics=None, observation="graph")
    split = _split_substation_action(flat_env)
    flat, _ = flat_env.reset(seed=0)
    graph, _ = graph_env.reset(seed=0)
    seen_bus_bar_2 = False
    for action in [0, split, 0, 0]:
        if action:
            flat, *_ = flat_env.step(action)
            graph, *_ = graph_env.step(action)
        nodes, index = _graph_by_hand(flat_env, flat)
        np.testing.assert_allclose(graph["nodes"], nodes, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(graph["edge_index"], index)
        view = flat_env.view(flat)
        for j, name in enumerate(EDGE_FEATURES):
            np.testing.assert_array_equal(graph["edges"][:, j], getattr(view, name))
        np.testing.assert_array_equal(graph["globals"], flat[:7])
        seen_bus_bar_2 |= bool(graph["nodes"][14:, NODE_FEATURES.index("connected")].any())
    assert seen_bus_bar_2, "the split action should have used a second bus bar"
    # every MW of load is on some bus bar
    load = graph["nodes"][:, NODE_FEATURES.index("load_p")].sum()
    assert load == pytest.approx(flat_env.view(flat).load_p.sum(), rel=1e-5)


@pytest.mark.parametrize("vectorization", ["batched", "multiprocess"])
def test_vector_env_batches_the_graphs_of_single_envs(vectorization):
    n, seed, steps = 3, 5, 6
    vec = grid_vec.make_vec(
        TASK, n, vectorization=vectorization, observation="graph", heuristics=None
    )
    singles = [grid_vec.make(TASK, observation="graph", heuristics=None) for _ in range(n)]
    try:
        obs, _ = vec.reset(seed=seed)
        assert vec.observation_space.contains(obs)
        expected = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
        rng = np.random.default_rng(0)
        for _ in range(steps):
            for key in obs:
                np.testing.assert_array_equal(obs[key], np.stack([e[key] for e in expected]))
            actions = rng.integers(0, 3, n)
            obs, _, terminated, truncated, _ = vec.step(actions)
            assert not (terminated | truncated).any()
            expected = [env.step(int(a))[0] for env, a in zip(singles, actions, strict=True)]
    finally:
        vec.close()


def test_same_step_autoreset_gives_the_ended_episodes_last_graph():
    vec = grid_vec.make_vec(
        TASK, 2, vectorization="batched", observation="graph", autoreset_mode="SameStep"
    )
    vec.reset(seed=0, options={"max_steps": 3})
    for _ in range(5):
        obs, _, terminated, truncated, infos = vec.step(np.zeros(2, dtype=np.int64))
        if (terminated | truncated).any():
            break
    ended = np.flatnonzero(infos["_final_obs"])
    assert ended.size
    for i in ended.tolist():
        assert vec.single_observation_space.contains(infos["final_obs"][i])
    assert vec.observation_space.contains(obs)
    vec.close()


def test_graph_env_passes_gymnasiums_env_checker_and_is_rebuilt_from_its_spec():
    env = grid_vec.make(TASK, observation="graph")
    check_env(env, skip_render_check=True)
    again = gymnasium.make(env.spec)
    assert again.observation_space == env.observation_space
    assert gymnasium.make(TASK, observation="graph").observation_space == env.observation_space


def test_graph_space_sizes_follow_the_grid():
    env = grid_vec.make("case118", observation="graph")
    space = env.observation_space
    model = env.unwrapped.model
    assert space["nodes"].shape == (2 * model.n_sub, len(NODE_FEATURES))
    assert space["edges"].shape == (model.n_branch, len(EDGE_FEATURES))
    assert space["edge_index"].shape == (2, model.n_branch)
    assert space["edge_index"].high.max() == 2 * model.n_sub - 1
    obs, _ = env.reset(seed=0)
    assert space.contains(obs)


def test_connected_edges_drops_the_disconnected_branches():
    env = grid_vec.make("case14", observation="graph")
    obs, _ = env.reset(seed=0)
    obs = {key: value.copy() for key, value in obs.items()}
    obs["edges"][3, EDGE_FEATURES.index("line_status")] = 0.0
    index, attrs = connected_edges(obs)
    assert index.shape == (2, env.unwrapped.model.n_branch - 1)
    np.testing.assert_array_equal(index, np.delete(obs["edge_index"], 3, axis=1))
    np.testing.assert_array_equal(attrs, np.delete(obs["edges"], 3, axis=0))


def test_an_unknown_observation_form_is_refused_by_make_and_make_vec():
    with pytest.raises(ValueError, match="observation must be one of"):
        grid_vec.make("case14", observation="grid")
    with pytest.raises(ValueError, match="observation must be one of"):
        grid_vec.make_vec("case14", 2, observation="grid", vectorization="batched")


def test_a_graph_of_chosen_attributes_names_the_segments_left_out():
    env = grid_vec.make("case14", observation_attributes=["rho", "line_status"])
    with pytest.raises(ValueError, match="leaves out p_or"):
        graph_layout(env)
