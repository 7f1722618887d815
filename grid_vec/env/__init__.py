"""env layer: GridEnv and its parts (see docs/architecture.md, the game layer).

Names are loaded on first use so that importing ``grid_vec`` (which registers the gymnasium
ids through ``grid_vec.env.registration``) stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "GridEnv": "grid_vec.env.grid_env",
    "Heuristics": "grid_vec.env.heuristics",
    "Parameters": "grid_vec.env.parameters",
    "GeometricOpponent": "grid_vec.env.opponent",
    "RandomLineOpponent": "grid_vec.env.opponent",
    "WeightedRandomOpponent": "grid_vec.env.opponent",
    "ObservationView": "grid_vec.env.observation",
    "make": "grid_vec.env.make",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'grid_vec.env' has no attribute {name!r}")
