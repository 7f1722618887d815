"""benchmarks/oracle_search.py: the path it finds is real (a plain env replays it)."""

from __future__ import annotations

import argparse

from benchmark_scripts import load_benchmark

import grid_vec

oracle = load_benchmark("oracle_search")

# validation scenario 6 of Case14Topology: greedy-by-simulate's game over comes at step 220
SCENARIO = 6


def search_args(**kw) -> argparse.Namespace:
    base = dict(backs=[20, 50], tols=list(oracle.DEFAULT_TOLS), tries=20, margin=300, seed=0)
    return argparse.Namespace(**{**base, **kw})


def short_env(max_iter: int):
    env = grid_vec.make("grid_vec/Case14Topology-v0", split="validation").unwrapped
    env.set_max_iter(max_iter)
    return env


def test_oracle_search_path_outlives_greedy_and_replays_in_a_plain_env():
    env = short_env(600)
    result = oracle.search_scenario(env, SCENARIO, search_args())
    assert result.greedy_survival == 220 and not result.greedy_full
    assert result.full and result.rescued_at == [220]
    assert result.oracle_survival == 600
    replayed = oracle.replay(short_env(600), SCENARIO, 0, result.actions)
    assert replayed == (600, False)


def test_oracle_search_without_rescue_reports_greedy_game_over_and_its_replay():
    env = short_env(600)
    result = oracle.search_scenario(env, SCENARIO, search_args(backs=[5], tols=[0.0], tries=1))
    assert not result.full and result.rescued_at == []
    assert result.oracle_survival == result.greedy_survival == 220
    assert oracle.replay(short_env(600), SCENARIO, 0, result.actions) == (220, True)
