"""grid layer: a pandapower net compiled into arrays, and power-flow backends."""

from __future__ import annotations

import importlib

from grid_vec.grid.backend import Backend, PowerFlowDivergedError, PowerFlowResults
from grid_vec.grid.model import GridModel

# name -> (module, class) of each backend, imported on first use (lightsim2grid loads its C++
# extension, pandapower its solvers): a new backend is a module of this package and one line
BACKENDS: dict[str, tuple[str, str]] = {
    "lightsim2grid": ("grid_vec.grid.lightsim", "LightSimBackend"),
    "pandapower": ("grid_vec.grid.pandapower_backend", "PandapowerBackend"),
}
BACKEND_NAMES: tuple[str, ...] = tuple(BACKENDS)


def make_backend(model: GridModel, name: str = "lightsim2grid") -> Backend:
    """A fresh backend of kind ``name`` for ``model``.

    Args:
        model: the compiled grid.
        name: one of :data:`BACKEND_NAMES`.

    Returns:
        The backend.

    Raises:
        ValueError: an unknown name.
    """
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; allowed names: {', '.join(BACKEND_NAMES)}")
    module, cls = BACKENDS[name]
    return getattr(importlib.import_module(module), cls)(model)


__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "GridModel",
    "PowerFlowDivergedError",
    "PowerFlowResults",
    "make_backend",
]
