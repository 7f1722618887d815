"""The Combined tasks: a Topology task's reduced set and redispatch in one ``"combined"``
action, with the Topology task's splits, reward and heuristics (and the dispatch recovered)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

import grid_vec
from grid_vec.core.actions import KIND_SUB
from grid_vec.env.tasks import TASKS, action_set_path, load_action_set

COMBINED = "grid_vec/Case14Combined-v0"
TOPOLOGY = "grid_vec/Case14Topology-v0"


@pytest.mark.parametrize(
    ("combined", "topology"),
    [(COMBINED, TOPOLOGY), ("grid_vec/Case118Combined-v0", "grid_vec/Case118Topology-v0")],
)
def test_a_combined_task_plays_its_topology_tasks_set_splits_reward_and_heuristics(
    combined, topology
):
    task, of = TASKS[combined], TASKS[topology]
    assert task.grid == of.grid and task.splits == of.splits
    assert action_set_path(combined) == action_set_path(topology)
    assert load_action_set(combined) == load_action_set(topology)
    assert task.settings["action_type"] == "combined"
    assert task.settings["reward"] == of.settings["reward"] == "line_margin"
    assert task.settings["action_mask"] is True
    heuristics = task.settings["heuristics"]
    assert heuristics.idle_below_rho == 0.9
    assert heuristics.reconnect_lines and heuristics.recover_topology
    assert heuristics.recover_dispatch  # a redispatch taken back while the grid idles


def test_the_combined_env_has_the_sets_topology_part_and_a_redispatch_part():
    env = grid_vec.make(COMBINED, split="test")
    space = env.action_space
    assert isinstance(space, spaces.Dict)
    assert space["topology"] == spaces.Discrete(len(load_action_set(TOPOLOGY)))
    assert space["continuous"].shape == (len(env.unwrapped.redispatchable),)
    assert env.unwrapped.config.action_subset == tuple(load_action_set(TOPOLOGY))
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (space["topology"].n,)


def test_one_combined_action_plays_its_topology_and_its_redispatch_in_the_same_step():
    env = grid_vec.make(COMBINED, split="test", heuristics=None)
    obs, _ = env.reset(seed=0)
    unwrapped = env.unwrapped
    subset = unwrapped.config.action_subset
    catalog = unwrapped.catalog
    # the first action of the set that splits a substation
    k = next(
        i
        for i, a in enumerate(subset)
        if catalog.kind[a] == KIND_SUB and (catalog.sub_buses[a] == 2).any()
    )
    box = env.action_space["continuous"]
    redispatch = np.zeros(box.shape, np.float32)
    redispatch[0] = box.high[0]  # generator redispatchable[0]'s ramp up
    obs, _, terminated, _, info = env.step({"topology": k, "continuous": redispatch})
    view = unwrapped.view(obs)
    assert not terminated and not info["is_illegal"] and not info["is_ambiguous"]
    assert (view.topo_vect == 2).any()  # the substation split
    assert view.actual_dispatch[unwrapped.redispatchable[0]] > 0  # the generator redispatched
