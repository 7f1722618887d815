"""grid_vec: power-grid operation as first-class Gymnasium environments.

Layers (data flows one way): ``chronics`` (scenarios) -> ``grid`` (physics) -> ``env``
(GridEnv) -> ``vector`` (GridVecEnv) -> ``runner`` (Runner) / RL libraries.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
