"""Import pandapower without a warning that is not grid_vec's to give.

pandapower imports lightsim2grid when it is installed, which imports grid2op when that is
installed, and grid2op warns at import that numba is missing: a grid2op matter (grid_vec
never uses grid2op) that the user of grid_vec should not see. Only that warning is silenced.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType


def import_pandapower(module: str = "pandapower") -> ModuleType:
    """``import <module>`` (pandapower or one of its submodules), quietly as said above."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Numba cannot be loaded", category=UserWarning)
        return importlib.import_module(module)
