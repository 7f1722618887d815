"""Load lightsim2grid's compiled module without importing the ``lightsim2grid`` package.

``import lightsim2grid`` imports pandapower (~200 MB resident, seconds of start-up); worker
processes only need the compiled ``LSGrid``. The wheel ships the extension twice (inside the
package and at top level) and pybind11 refuses to register its types twice in one process, so
this module loads the in-package copy under its package name: a later ``import lightsim2grid``
(e.g. by :func:`~grid_vec.grid.compile.compile_net`) then reuses it instead of clashing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_QUALNAME = "lightsim2grid.lightsim2grid_cpp"


def lightsim_cpp() -> ModuleType:
    """The ``lightsim2grid_cpp`` extension module, loaded at most once per process."""
    module = sys.modules.get(_QUALNAME)
    if module is not None:
        return module
    package = importlib.util.find_spec("lightsim2grid")
    if package is None or not package.submodule_search_locations:
        raise ImportError("lightsim2grid is not installed")
    folder = Path(next(iter(package.submodule_search_locations)))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"lightsim2grid_cpp{suffix}"
        if path.exists():
            spec = importlib.util.spec_from_file_location(_QUALNAME, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[_QUALNAME] = module
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"no lightsim2grid_cpp extension found in {folder}")
