"""A copy of an env (``copy.deepcopy``, pickle) is a game of its own: it plays, for the same
actions, bitwise what its original plays from there, and neither moves the other (the state's
fields that are views of one another stay views of the copy's own arrays)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import grid_vec


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_env_plays_what_its_original_plays_and_apart_from_it(how):
    env = grid_vec.make("case14", max_iter=200)
    env.reset(seed=0)
    rng = np.random.default_rng(1)
    n = env.action_space.n
    for _ in range(20):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(n)) if rng.random() < 0.1 else 0)
        if terminated or truncated:
            env.reset()
    twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert twin.unwrapped._batch is not env.unwrapped._batch
    drawn, acting = rng.integers(n, size=70), rng.random(70) < 0.1
    actions = np.where(acting, drawn, 0).tolist()
    for action in actions:  # past the scenario window's refill (every 64 steps)
        ours, theirs = env.step(action), twin.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:4] == theirs[1:4]
        if ours[2] or ours[3]:
            break
    assert twin.unwrapped.timings()["steps"] == env.unwrapped.timings()["steps"]
    if ours[2] or ours[3]:
        env.reset(seed=5), twin.reset(seed=5)
    before = twin.snapshot()
    env.step(0)  # the original moves; the copy does not
    after = twin.snapshot()
    np.testing.assert_array_equal(before.state["flows"], after.state["flows"])
    assert before.scenario == after.scenario
