"""The default backend: lightsim2grid's AC power flow, as one row of a
:class:`~grid_vec.grid.lightsim_batch.LightSimBatch` (a batch of one).

A batch never holds these: it holds one ``LightSimBatch`` (:func:`solver_batch`). This
one-row view is the :class:`~grid_vec.grid.backend.Backend` API for tests, tools and plans:
its :meth:`LightSimBackend.run_ac` is always lightsim2grid's own ``ac_pf`` (the reference the
batch's compiled solvers are held to), warm-started from the previous solution while the
topology is unchanged and from the compiled net's base case after a topology change or a
divergence.

Only the compiled extension is imported (never ``lightsim2grid`` itself nor pandapower), so
worker processes stay small.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from grid_vec.grid.backend import Backend, InjectionRows, PowerFlowResults
from grid_vec.grid.lightsim_batch import MAX_ITER, TOLERANCE, LightSimBatch
from grid_vec.grid.lightsim_rows import RowTimings
from grid_vec.grid.model import GridModel

__all__ = ["MAX_ITER", "TOLERANCE", "LightSimBackend", "solver_batch"]

_ROW = np.zeros(1, dtype=np.intp)  # the view's row of its batch


def solver_batch(model: GridModel, n: int) -> LightSimBatch:
    """``n`` new rows of ``model`` solved with lightsim2grid's solvers (the registry's
    batch of the ``"lightsim2grid"`` backend).

    Raises:
        TypeError: ``model`` is not a GridModel.
        ValueError: it has no lightsim2grid solver state.
    """
    return LightSimBatch.fresh(model, n)


class LightSimBackend(Backend):
    """AC power flow with lightsim2grid on the state compiled in ``model``: a batch of one.

    Args:
        model: the grid, with a ``"lightsim2grid"`` solver state.

    Raises:
        TypeError: ``model`` is not a GridModel.
        ValueError: it has no lightsim2grid solver state.
    """

    def __init__(self, model: GridModel) -> None:
        self._batch = LightSimBatch.fresh(model, 1)
        self.model = model
        self._flows = np.empty((1, self._batch.shared.flow_slices["all"].stop))

    @classmethod
    def of_batch(cls, batch: LightSimBatch) -> LightSimBackend:
        """The view of a one-row batch (``batch.take([row])`` gives one of any row)."""
        new = object.__new__(cls)
        new._batch, new.model = batch, batch.model
        new._flows = np.empty((1, batch.shared.flow_slices["all"].stop))
        return new

    @property
    def batch(self) -> LightSimBatch:
        """The one-row batch this backend is a view of."""
        return self._batch

    @property
    def timings(self) -> RowTimings:  # type: ignore[override]
        return self._batch.timings(0)

    def _apply_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        # the time is counted by Backend's setters (the batch's put_ methods count none)
        block = np.concatenate((load_p, load_q, gen_p, gen_v))[None]
        self._batch.put_injections(_ROW, InjectionRows(block, self.model.n_load, self.model.n_gen))

    def _apply_storage_p(self, p_mw: np.ndarray) -> None:
        if self.model.n_storage:
            self._batch.put_storage_p(_ROW, p_mw[None])

    def _apply_topology(self, buses: np.ndarray) -> None:
        self._batch.put_topologies(_ROW, buses[None])

    def run_ac(self) -> bool:
        start = perf_counter()
        converged = not self._batch.solve_by_lightsim(_ROW, self._flows)
        timings = self.timings
        timings["powerflow"] += perf_counter() - start
        timings["n_powerflow"] += 1
        return converged

    def results(self) -> PowerFlowResults:
        return self._batch.results(0)

    def read_flows(self, out: np.ndarray) -> None:
        self._batch.read_flows(0, out)

    def copy(self) -> LightSimBackend:
        """An independent backend: its row copied (the ``LSGrid`` shared until either
        changes it)."""
        return LightSimBackend.of_batch(self._batch.take(_ROW))

    def _forget_solves(self) -> None:
        self._batch.forget(_ROW)

    def solver_state(self) -> np.ndarray:
        return self._batch.solver_state(0)

    def set_solver_state(self, state: np.ndarray) -> None:
        self._batch.set_solver_state(0, state)

    def outage_currents(
        self,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        parts = (load_bus, gen_bus, branch_or_bus, branch_ex_bus)
        return self._batch.outage_currents(_ROW, branches, *(part[None] for part in parts))[0]
