"""The embedded case14 is a real control problem for a do-nothing agent (issue 3, item 3)."""

from __future__ import annotations

import numpy as np
import pytest

import grid_vec
from grid_vec.env.embedded import do_nothing_survival


@pytest.mark.slow
def test_do_nothing_survives_a_median_20_to_80_percent_of_the_week():
    runs = do_nothing_survival(grid_vec.make("case14"), range(20))
    fractions = [r.fraction for r in runs]
    overflow_game_overs = sum(r.game_over_reason is not None and r.tripped for r in runs)
    assert 0.2 <= np.median(fractions) <= 0.8, fractions
    assert overflow_game_overs >= 1
    assert min(fractions) > 0.02  # nobody fails within the first hours
