"""A batch step runs no Python per env: cProfile counts the same function calls for a
do-nothing step of 8 envs and of 256.

Every env plays the same scenario from its start, so that whatever the data makes happen
(an overflow, a trip, a game over) happens in all of them or in none: a count that grows
with the batch can only be Python per env. What is per env by nature is left out of the
steps counted: the folder's opponent (``l2rpn_wcci_2022_dev``'s), whose attacks each env
draws from its own RNG, and the refill of a scenario window (a copy per env every
``scenario_rows.WINDOW`` steps and at a reset). The solver's thread split, a fixed number
of tasks per call once a call is large enough (``GRID_VEC_SOLVER_THREADS``), is one thread
here, so that 8 and 256 rows take the same path.
"""

from __future__ import annotations

import cProfile
import pstats
import warnings

import numpy as np
import pytest

pytest.importorskip("grid2op")  # the folders ship in grid2op's package

import grid_vec
from grid_vec.core import scenario_rows
from grid_vec.grid import newton

_STEPS = 5


def _maintenance_schedule() -> np.ndarray:
    """Lines 3 and 7 of the sandbox in maintenance at steps the counted ones cross."""
    schedule = np.zeros((200, 20), dtype=bool)
    schedule[2:12, 3] = True
    schedule[6:9, 7] = True
    return schedule


def _calls_per_function(grid: str, n: int, options: dict, kwargs: dict) -> dict:
    """Calls per function over ``_STEPS`` do-nothing steps of a batch of ``n`` envs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample folders' notice
        env = grid_vec.make_vec(grid, n, vectorization="batched", **kwargs)
    try:
        env.reset(seed=0, options={"scenario_id": 0, **options})
        action = np.zeros(n, dtype=np.int64)
        env.step(action)  # the first step after a reset builds what later steps reuse
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(_STEPS):
            _, _, terminated, truncated, _ = env.step(action)
        profile.disable()
        assert not (terminated | truncated).any()  # no reset among the steps counted
    finally:
        env.close()
    return {
        f"{f}:{line} {name}": s[1] for (f, line, name), s in pstats.Stats(profile).stats.items()
    }


@pytest.mark.parametrize(
    ("grid", "options", "kwargs"),
    [
        ("l2rpn_case14_sandbox", {"maintenance": _maintenance_schedule()}, {}),
        ("educ_case14_storage", {}, {}),
        ("l2rpn_wcci_2022_dev", {}, {"opponent": None}),
    ],
    ids=["sandbox-maintenance", "storage", "wcci-2022"],
)
def test_a_do_nothing_step_makes_the_same_python_calls_for_256_envs_as_for_8(
    grid: str, options: dict, kwargs: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(newton, "_THREADS", 1)
    assert _STEPS + 1 < scenario_rows.FIRST_WINDOW  # no window refill among the steps
    _calls_per_function(grid, 8, options, kwargs)  # what the process caches, cached first
    few = _calls_per_function(grid, 8, options, kwargs)
    many = _calls_per_function(grid, 256, options, kwargs)
    grown = {f: (few.get(f, 0), many.get(f, 0)) for f in few.keys() | many.keys()}
    grown = {f: counts for f, counts in grown.items() if counts[0] != counts[1]}
    assert not grown, f"calls that differ between 8 and 256 envs (8, 256): {grown}"
    assert sum(few.values()) > 50 * _STEPS  # the profile did see the steps
