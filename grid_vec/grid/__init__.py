"""grid layer: a pandapower net compiled into arrays, and power-flow backends."""

from __future__ import annotations

import importlib

from grid_vec.grid.backend import Backend, PowerFlowDivergedError, PowerFlowResults
from grid_vec.grid.model import GridModel
from grid_vec.grid.solver_batch import SolverBatch

# name -> (module, class) of each backend, imported on first use (lightsim2grid loads its C++
# extension, pandapower its solvers): a new backend is a module of this package and one line.
# Each module also has ``solver_batch(model, n)``: the batch a GridBatch holds (make_solver)
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
    module, cls = _entry(name)
    return getattr(module, cls)(model)


def make_solver(model: GridModel, name: str = "lightsim2grid", n: int = 1) -> SolverBatch:
    """``n`` new rows of ``model`` solved by backend ``name``, as one batch.

    Args:
        model: the compiled grid.
        name: one of :data:`BACKEND_NAMES`.
        n: the rows.

    Returns:
        The batch.

    Raises:
        ValueError: an unknown name.
    """
    module, _ = _entry(name)
    return module.solver_batch(model, n)


def _entry(name: str) -> tuple[object, str]:
    """Backend ``name``'s module (imported) and class name; ValueError for an unknown name."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; allowed names: {', '.join(BACKEND_NAMES)}")
    module, cls = BACKENDS[name]
    return importlib.import_module(module), cls


__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "GridModel",
    "PowerFlowDivergedError",
    "PowerFlowResults",
    "SolverBatch",
    "make_backend",
    "make_solver",
]
