"""env layer: the gymnasium face of the game (GridEnv, make, tasks, registration, multi-mix;
see docs/architecture.md); the game itself is :mod:`grid_vec.core`, some of whose names are
exported here too.

Names are loaded on first use so that importing ``grid_vec`` (which registers the gymnasium
ids through ``grid_vec.env.registration``) stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "GridEnv": "grid_vec.env.grid_env",
    "Heuristics": "grid_vec.core.rules.heuristics",
    "Parameters": "grid_vec.core.parameters",
    "GeometricOpponent": "grid_vec.core.rules.opponent",
    "RandomLineOpponent": "grid_vec.core.rules.opponent",
    "WeightedRandomOpponent": "grid_vec.core.rules.opponent",
    "ObservationView": "grid_vec.core.observation",
    "make": "grid_vec.env.make",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'grid_vec.env' has no attribute {name!r}")
