"""The embedded case14 is a real control problem for a do-nothing agent (issue 3, item 3)."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec


@pytest.mark.slow
def test_do_nothing_survives_a_median_20_to_80_percent_of_the_week():
    env = grid_vec.make("case14")
    fractions, overflow_game_overs = [], 0
    for sid in range(20):
        env.reset(options={"scenario_id": sid})
        played, tripped = 0, False
        while True:
            _, _, term, trunc, info = env.step(0)
            played += 1
            tripped |= info["tripped_branches"].any()
            if term or trunc:
                break
        fractions.append(played / env.scenario_info.length if term else 1.0)
        overflow_game_overs += term and tripped
    assert 0.2 <= np.median(fractions) <= 0.8, fractions
    assert overflow_game_overs >= 1
    assert min(fractions) > 0.02  # nobody fails within the first hours
