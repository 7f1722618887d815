"""grid layer: a pandapower net compiled into arrays, and power-flow backends."""

from __future__ import annotations

from grid_vec.grid.backend import Backend, PowerFlowDivergedError, PowerFlowResults
from grid_vec.grid.model import GridModel

BACKEND_NAMES: tuple[str, ...] = ("lightsim2grid", "pandapower")


def make_backend(model: GridModel, name: str = "lightsim2grid") -> Backend:
    """A fresh backend of kind ``name`` (one of :data:`BACKEND_NAMES`) for ``model``."""
    if name == "lightsim2grid":
        from grid_vec.grid.lightsim import LightSimBackend

        return LightSimBackend(model)
    if name == "pandapower":
        from grid_vec.grid.pandapower_backend import PandapowerBackend

        return PandapowerBackend(model)
    raise ValueError(f"unknown backend {name!r}; allowed names: {', '.join(BACKEND_NAMES)}")


__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "GridModel",
    "PowerFlowDivergedError",
    "PowerFlowResults",
    "make_backend",
]
