"""grid_vec: power-grid operation as first-class Gymnasium environments.

Layers (data flows one way, see docs/architecture.md): ``grid`` (physics) -> ``chronics``
(scenarios) -> ``env`` (GridEnv) -> ``vector`` (GridVecEnv) -> ``runner`` (Runner) / RL libraries.

Importing ``grid_vec`` registers the gymnasium ids (``grid_vec/Case14-v0``,
``grid_vec/Case118-v0``) and stays light: ``make`` and the env layer load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from grid_vec.env.registration import register_envs

__version__ = "0.1.0"

__all__ = ["GridVecEnv", "UntrustedFileError", "__version__", "make", "make_vec"]

_LAZY = {
    "UntrustedFileError": "grid_vec._untrusted",  # base of FolderFormatError, EpisodeDataError
    "make": "grid_vec.env.make",
    "GridVecEnv": "grid_vec.vector.vec_env",
    "make_vec": "grid_vec.vector.make_vec",
}

register_envs()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'grid_vec' has no attribute {name!r}")
