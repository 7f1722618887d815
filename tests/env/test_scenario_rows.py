"""The scenarios in play as arrays (``grid_vec.core.scenario_rows``): what a step and a
look-ahead gather from the windows is what each env's handler reads at its clock."""

from __future__ import annotations

import numpy as np

import grid_vec
from grid_vec.core import scenario_rows


def test_windows_give_each_env_its_handlers_injections_and_forecasts_across_refills():
    envs = grid_vec.make_vec("case14", 5, vectorization="batched", max_iter=300)
    try:
        envs.reset(seed=[3, 4, 5, 6, 7], options={"fast_forward": 11})
        scenarios = envs.unwrapped._batch.game.scenarios
        rows = np.arange(5)
        rng = np.random.default_rng(0)
        # past the reset's short window and two full ones, envs reset at different steps
        for step in range(scenario_rows.FIRST_WINDOW + 2 * scenario_rows.WINDOW + 3):
            _, _, terminated, truncated, _ = envs.step(np.zeros(5, dtype=np.int64))
            if step % 29 == 7:
                mask = rng.random(5) < 0.4
                mask[step % 5] = True
                envs.reset(options={"reset_mask": mask})
                terminated = truncated = np.zeros(5, dtype=bool)
            if step % 5:
                continue
            running = rows[~(terminated | truncated)]
            now = scenarios.injections(running).block
            ahead = scenarios.forecasts(running).block
            for j, row in enumerate(running.tolist()):
                handler = scenarios.handler(row)
                np.testing.assert_array_equal(now[j], handler.packed_row())
                np.testing.assert_array_equal(ahead[j], np.concatenate(handler.rows_ahead(1)))
    finally:
        envs.close()
