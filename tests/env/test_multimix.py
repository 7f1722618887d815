"""MultiMixEnv without grid2op: mix order on reset, chosen mixes, setters on every mix."""

from __future__ import annotations

import numpy as np
import pytest
from env_helpers import loose_limits

from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.parameters import Parameters
from grid_vec.env.grid_env import GridEnv
from grid_vec.env.multimix import MultiMixEnv


def _mixes(case14, n: int = 3) -> list[tuple[str, GridEnv]]:
    limits = loose_limits(case14)
    sources = [SyntheticSource(case14, seed=i, length=20) for i in range(n)]
    return [(f"m{i}", GridEnv(case14, s, thermal_limits=limits)) for i, s in enumerate(sources)]


def test_each_reset_plays_the_next_mix_from_the_second_as_grid2op(case14):
    env = MultiMixEnv(_mixes(case14))
    played = [env.reset(seed=0)[1]["mix"] for _ in range(4)]
    assert played == ["m1", "m2", "m0", "m1"]


def test_a_mix_plays_what_its_own_env_plays(case14):
    env = MultiMixEnv(_mixes(case14))
    alone = _mixes(case14)[2][1]
    obs, _ = env.reset(seed=4, options={"mix": 2})
    ref, _ = alone.reset(seed=4)
    np.testing.assert_array_equal(obs, ref)
    for _ in range(5):
        np.testing.assert_array_equal(env.step(3)[0], alone.step(3)[0])


def test_random_mixes_follow_the_seed(case14):
    def draws(seed):
        env = MultiMixEnv(_mixes(case14))
        env.reset(seed=seed)
        return [env.reset(options={"mix": "random"})[1]["mix"] for _ in range(12)]

    assert draws(1) == draws(1)
    assert len(set(draws(1))) > 1


def test_setters_reach_every_mix(case14):
    env = MultiMixEnv(_mixes(case14))
    rules = Parameters(nb_timestep_cooldown_line=5)
    env.set_parameters(rules)
    assert all(mix.parameters == rules for mix in env.mixes)
    env.set_scenario_id(0)
    assert {env.reset()[1]["scenario_id"] for _ in range(3)} == {0}


def test_bad_mixes_and_steps_are_refused(case14):
    env = MultiMixEnv(_mixes(case14))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(ValueError, match="unknown mix"):
        env.reset(options={"mix": "nope"})
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"mix": 7})
    redispatch = GridEnv(case14, SyntheticSource(case14, seed=0), action_type="redispatch")
    with pytest.raises(ValueError, match="action space differs"):
        MultiMixEnv([*_mixes(case14, 1), ("r", redispatch)])
    with pytest.raises(ValueError, match="at least one"):
        MultiMixEnv([])
