"""Helpers shared by the env tests (a module of its own: ``conftest`` names clash across
test folders)."""

from __future__ import annotations

import numpy as np


def loose_limits(model, **tight: float) -> np.ndarray:
    """Limits that never bind, except the branches given as ``b<index>=amperes``."""
    limits = np.full(model.n_branch, 1e9)
    for key, value in tight.items():
        limits[int(key[1:])] = value
    return limits


def grid2op_env(path, *, maintenance: bool = True, opponent: bool = True, **kwargs):
    """grid2op + LightSimBackend on the folder ``path`` (its warnings silenced): without
    maintenance and hazards unless ``maintenance`` (then the folder's own scenario class
    reads them), without opponent unless ``opponent`` (then the folder's own plays).
    grid2op is imported here, so only by tests that already skipped without it."""
    import warnings

    import grid2op
    from grid2op.Chronics import GridStateFromFileWithForecastsWithoutMaintenance
    from grid2op.Opponent import BaseOpponent
    from lightsim2grid import LightSimBackend

    if not maintenance:
        kwargs["data_feeding_kwargs"] = {
            "gridvalueClass": GridStateFromFileWithForecastsWithoutMaintenance
        }
    if not opponent:
        kwargs.update(
            opponent_class=BaseOpponent, opponent_init_budget=0.0, opponent_budget_per_ts=0.0
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid2op.make(str(path), backend=LightSimBackend(), **kwargs)
