"""GameConfig: every setting of the game checked once, the one record a batch is built from."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import grid_vec
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.batch import GridBatch
from grid_vec.core.config import GameConfig
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.opponent import RandomLineOpponent
from grid_vec.env.grid_env import GridEnv


@pytest.fixture(scope="module")
def env():
    env = grid_vec.make("case14", max_iter=20, reward="line_margin", other_rewards=["flat"])
    yield env
    env.close()


def test_env_and_its_batches_play_the_env_config(env):
    config = env.unwrapped.config
    assert env.unwrapped.batch_row[0].config is config
    assert env.unwrapped.make_batch(3).config is config
    assert all(e.batch_row[0].config is config for e in env.unwrapped.sharing_one_batch(2))
    assert set(config.other_rewards) == {"flat"}
    assert config.max_iter == 20


def test_config_is_frozen(env):
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.unwrapped.config.max_iter = 3


def test_build_defaults_are_grid2op_parameters_and_the_grid_limits(env):
    model, source = env.unwrapped.model, env.unwrapped._source
    config = GameConfig.build(model, source)
    assert config.parameters == Parameters()
    np.testing.assert_array_equal(config.thermal_limit, model.thermal_limit_a)
    assert config.thermal_limit is not model.thermal_limit_a  # a copy: the batch may not alias it
    np.testing.assert_allclose(config.dispatch_limits.ramp_up, 0.05 * np.asarray(model.gen_pmax))
    assert config.action_subset is None and config.observation_attributes is None


def test_build_binds_the_opponent_to_the_grid_branches(env):
    model, source = env.unwrapped.model, env.unwrapped._source
    opponent = RandomLineOpponent([str(model.branch_names[3]), 1])
    GameConfig.build(model, source, opponent=opponent)
    assert opponent.targets.tolist() == [3, 1]
    with pytest.raises(ValueError, match="unknown branch 'no such line'"):
        GameConfig.build(model, source, opponent=RandomLineOpponent(["no such line"]))


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"action_type": "teleport"}, ValueError, "action_type must be one of"),
        ({"parameters": {"NB_TIMESTEP_COOLDOWN_LINE": 3}}, TypeError, "parameters must be"),
        ({"maintenance": 1}, TypeError, "maintenance must be a bool"),
        ({"action_mask": "yes"}, TypeError, "action_mask must be a bool"),
        ({"thermal_limits": [1.0, 2.0]}, ValueError, "one value per branch"),
        ({"gen_ramp": [-1.0]}, ValueError, "gen_ramp must be"),
        ({"action_type": "redispatch", "action_mask": True}, ValueError, "needs a catalog"),
        ({"action_type": "redispatch", "action_subset": [0]}, ValueError, "needs a catalog"),
        ({"other_rewards": "flat"}, TypeError, "not a str"),
        ({"heuristics": object()}, TypeError, "heuristics must be"),
    ],
)
def test_build_refuses_a_bad_setting_naming_it(env, settings, error, match):
    model, source = env.unwrapped.model, env.unwrapped._source
    with pytest.raises(error, match=match):
        GameConfig.build(model, source, **settings)


def test_a_batch_built_from_a_config_equals_the_env_it_came_from(env):
    """GridBatch takes the config whole: a batch of one built from it plays the env's step."""
    unwrapped = env.unwrapped
    batch = GridBatch(unwrapped.model, [unwrapped._source], unwrapped.config)
    assert batch.reward_fn is unwrapped.config.reward_fn
    assert batch.n == 1 and batch.n_actions == unwrapped.action_space.n


def test_grid_env_takes_a_config_or_its_keywords_not_both(case14):
    """GridEnv's keywords are GameConfig.build's: a built config plays the same game, and a
    config with keywords beside it is refused."""
    source = SyntheticSource(case14, seed=0, length=8)
    config = GameConfig.build(case14, source, action_type="redispatch", max_iter=5)
    from_config = GridEnv(case14, source, config=config)
    from_keywords = GridEnv(case14, source, action_type="redispatch", max_iter=5)
    assert from_config.action_type == from_keywords.action_type == "redispatch"
    assert from_config.config.max_iter == from_keywords.config.max_iter == 5
    np.testing.assert_array_equal(from_config.reset(seed=1)[0], from_keywords.reset(seed=1)[0])
    with pytest.raises(TypeError, match="a config or its settings, not both"):
        GridEnv(case14, source, config=config, max_iter=5)
    with pytest.raises(TypeError, match="max_iterations"):
        GridEnv(case14, source, max_iterations=5)
