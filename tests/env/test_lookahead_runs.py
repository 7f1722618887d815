"""A look-ahead finds the envs still playing among its sorted copies by their runs, as
``np.unique(..., return_inverse=True)`` would, without its sort."""

from __future__ import annotations

import numpy as np

from grid_vec.core.lookahead import _runs


def test_runs_of_sorted_env_indices_are_numpys_unique_and_inverse():
    rng = np.random.default_rng(0)
    for _ in range(500):
        at = np.sort(rng.integers(0, 6, rng.integers(1, 40)))
        want, inverse = np.unique(at, return_inverse=True)
        got, position = _runs(at)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(position, inverse)
