"""chronics layer: scenarios from a synthetic generator or grid2op-format folders.

Importing this package does not import pandapower (only :func:`load_folder` does, lazily).
"""

from grid_vec.chronics.csv_table import FolderFormatError
from grid_vec.chronics.folder import FolderSource, GridFolder, load_folder
from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.scenario import Injections, ScenarioInfo, ScenarioSource
from grid_vec.chronics.synthetic import SyntheticSource

__all__ = [
    "FolderFormatError",
    "FolderSource",
    "GridFolder",
    "Injections",
    "ScenarioHandler",
    "ScenarioInfo",
    "ScenarioSource",
    "SyntheticSource",
    "load_folder",
]
