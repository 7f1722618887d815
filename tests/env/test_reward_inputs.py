"""What rewards receive (the action, the flags, the position), custom callables, reward objects,
the bridge count, and the dataset's reward named in config.py (read as data)."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec
from grid_vec.chronics.config_file import config_name, parse_config
from grid_vec.chronics.untrusted import FolderFormatError
from grid_vec.core.actions import KIND_LINE
from grid_vec.core.parameters import Parameters
from grid_vec.core.rewards.grid2op import RedispReward, count_bridges
from grid_vec.core.rewards.registry import make_reward


def test_a_custom_reward_sees_the_action_flags_and_position():
    seen = []

    def record(inputs, terminated):
        seen.append(
            (int(inputs.action), int(inputs.acted_line), int(inputs.acted_sub),
             bool(inputs.is_illegal), bool(inputs.done), int(inputs.step), int(inputs.max_steps))
        )  # fmt: skip
        return float(inputs.is_illegal)

    env = grid_vec.make(
        "case14", parameters=Parameters(nb_timestep_cooldown_line=3), other_rewards={"r": record}
    )
    env.reset(seed=0, options={"max_steps": 3})
    line = int(np.flatnonzero(env.catalog.kind == KIND_LINE)[2])
    branch = int(env.catalog.target[line])
    env.step(line)
    *_, info = env.step(line)  # cooldown: illegal
    assert info["is_illegal"] and info["other_rewards"]["r"] == 1.0
    env.step(0)
    assert seen == [
        (line, branch, -1, False, False, 1, 3),
        (line, branch, -1, True, False, 2, 3),
        (0, -1, -1, False, True, 3, 3),
    ]


def test_reward_objects_classes_and_names():
    env = grid_vec.make(
        "case14",
        reward="GameplayReward",
        other_rewards={
            "lines": "LinesCapacityReward",
            "redisp": RedispReward(gen_cost_per_MW=[10, 20, 30, 40, 50], gen_pmax=[100] * 5),
        },
    )
    env.reset(seed=0)
    _, reward, *_, info = env.step(0)
    assert reward == 1.0 and 0 < info["other_rewards"]["lines"] < 1
    assert np.isfinite(info["other_rewards"]["redisp"])
    assert make_reward(RedispReward) is not make_reward(RedispReward)
    with pytest.raises(ValueError, match="gen_cost_per_MW"):
        grid_vec.make("case14", reward="RedispReward")  # the embedded grid has no costs
    with pytest.raises(ValueError, match="L2RPNReward"):
        make_reward("NoSuchReward")
    assert grid_vec.make("case14").reward_fn is make_reward("flat")


def test_count_bridges_as_networkx():
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        edges = {
            (min(a, b), max(a, b))
            for a, b in rng.integers(0, n, (int(rng.integers(1, 20)), 2)).tolist()
            if a != b
        }
        assert count_bridges(edges) == len(list(nx.bridges(nx.Graph(list(edges)))))


def read_config_name(path, key):
    return config_name(parse_config(path), path, key)


def test_config_name_reads_a_class_name_and_refuses_a_file_without_config(tmp_path):
    path = tmp_path / "config.py"
    path.write_text(
        "from grid2op.Reward import L2RPNReward\nimport grid2op\n"
        "config = {'reward_class': grid2op.Reward.RedispReward, 'backend': None}\n"
    )
    assert read_config_name(path, "reward_class") == "RedispReward"
    assert read_config_name(path, "backend") is None
    assert read_config_name(path, "absent") is None
    path.write_text("config = {'reward_class': L2RPNReward}\nconfig = {'reward_class': X}\n")
    assert read_config_name(path, "reward_class") == "X"  # the last assignment wins
    path.write_text("reward_class = 1\n")
    with pytest.raises(FolderFormatError, match="config"):
        read_config_name(path, "reward_class")
