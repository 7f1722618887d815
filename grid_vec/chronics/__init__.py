"""chronics layer: scenarios from a synthetic generator or grid2op-format folders.

Importing this package does not import pandapower (only :func:`load_folder` does, lazily).
"""

from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.scenario import Injections, ScenarioInfo, ScenarioSource
from grid_vec.chronics.synthetic import SyntheticSource

__all__ = [
    "Injections",
    "ScenarioHandler",
    "ScenarioInfo",
    "ScenarioSource",
    "SyntheticSource",
]
