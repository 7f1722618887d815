"""The turn is written once (grid_vec/core/turn.py): step and simulate play the same phases,
so a phase changed in one place changes both."""

from __future__ import annotations

import numpy as np

from grid_vec.core import turn
from grid_vec.core.state import disconnect

BRANCH = 3  # a branch the patched outage phase takes out every turn


def test_a_patched_reward_phase_is_seen_by_step_and_simulate(make_env, monkeypatch):
    env = make_env()
    env.reset(seed=0)
    _, sim_reward, *_ = env.simulate(0)
    _, reward, *_ = env.step(0)
    play = turn.reward

    def plus_100(*args, **kwargs):
        result = play(*args, **kwargs)
        result.reward = result.reward + 100.0
        return result

    monkeypatch.setattr(turn, "reward", plus_100)
    assert env.simulate(0)[1] == sim_reward + 100.0
    assert env.step(0)[1] == reward + 100.0


def test_a_patched_outage_phase_is_seen_by_step_and_simulate(make_env, monkeypatch):
    env = make_env()
    env.reset(seed=0)
    assert env.view(env.simulate(0)[0]).line_status[BRANCH] == 1
    outages = turn.outages

    def branch_out(rules, state, rows, inputs, attack):
        outages(rules, state, rows, inputs, attack)
        mask = np.zeros_like(state.line_status)
        mask[rows, BRANCH] = True
        disconnect(state, rules.topology, mask)

    monkeypatch.setattr(turn, "outages", branch_out)
    sim_obs, *_ = env.simulate(0)
    assert env.view(sim_obs).line_status[BRANCH] == 0
    obs, *_ = env.step(0)
    assert env.view(obs).line_status[BRANCH] == 0
    # unpatched, the branch the step took out stays out (nothing reconnects it)
    monkeypatch.setattr(turn, "outages", outages)
    assert env.view(env.simulate(0)[0]).line_status[BRANCH] == 0
