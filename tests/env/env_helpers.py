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
