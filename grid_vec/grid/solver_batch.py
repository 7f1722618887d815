"""The power flows of a batch: N rows of one grid (a batch's envs, a look-ahead's candidates)
answering one set of verbs, each over many rows at once.

The core holds one :class:`SolverBatch` per batch, never a list of per-env solvers: the
lightsim2grid solver keeps every row's state in arrays and solves the rows in compiled calls
(:class:`~grid_vec.grid.lightsim_batch.LightSimBatch`); a solver that has only a one-row
:class:`~grid_vec.grid.backend.Backend` (pandapower, the reference) answers the same verbs with
its loop inside (:class:`BackendLoop`).

Rows are given as sorted distinct indices (a list or an int array); a verb's arrays have a row
per given row, in that order.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from time import perf_counter

import numpy as np

from grid_vec.grid.backend import Backend, InjectionRows, PowerFlowResults
from grid_vec.grid.model import GridModel

Rows = Sequence[int] | np.ndarray


class SolverBatch(abc.ABC):
    """N rows of one grid: their injections, topologies and AC power flows."""

    model: GridModel

    @abc.abstractmethod
    def __len__(self) -> int:
        """The rows."""

    @abc.abstractmethod
    def set_injections(self, rows: Rows, injections: InjectionRows) -> None:
        """Give row ``rows[j]`` the injections of row ``j`` of ``injections`` (finite float64
        of the model's sizes, unchecked: the scenario sources check them)."""

    @abc.abstractmethod
    def set_storage_p(self, rows: Rows, p_mw: np.ndarray) -> None:
        """Give row ``rows[j]`` the storage setpoints ``p_mw[j]`` (``(k, n_storage)``
        float64, MW in load convention, unchecked)."""

    @abc.abstractmethod
    def set_topologies(self, rows: Rows, buses: np.ndarray) -> None:
        """Give row ``rows[j]`` the topology ``buses[j]``.

        Args:
            rows: the rows.
            buses: ``(k, n_load + n_gen + 2 n_branch + n_storage)`` int32 of 1, 2 or -1, a new
                array (the solver may write into it): every element's bus bar in
                :meth:`Backend.set_topology`'s order.
        """

    @abc.abstractmethod
    def solve(self, rows: Rows, flows: np.ndarray) -> list[int]:
        """Solve ``rows`` and write each converged row's results into its row of ``flows``
        (``(N, n_flows)``, :func:`~grid_vec.grid.backend.flow_slices`' layout).

        Returns:
            The rows that diverged (their flows rows are left as they were).
        """

    @abc.abstractmethod
    def take(self, rows: Rows) -> SolverBatch:
        """A new, independent batch of copies of ``rows`` (repeats allowed: a look-ahead's
        candidates), row ``j`` a copy of ``rows[j]``."""

    @abc.abstractmethod
    def reset(self, rows: Rows) -> None:
        """Put ``rows`` back, in place, to what a new batch's rows solve like: every element
        on bus bar 1, no solution yet, the next power flow started as a new row's first (see
        :meth:`Backend.reset`). Injections and storage setpoints keep their last values."""

    @abc.abstractmethod
    def solver_state(self, row: int) -> np.ndarray:
        """:meth:`Backend.solver_state` of ``row``."""

    @abc.abstractmethod
    def set_solver_state(self, row: int, state: np.ndarray) -> None:
        """:meth:`Backend.set_solver_state` of ``row``.

        Raises:
            ValueError: ``state`` is not one of this model's solver states.
        """

    @abc.abstractmethod
    def results(self, row: int) -> PowerFlowResults:
        """The results of ``row``'s last power flow.

        Raises:
            PowerFlowDivergedError: it diverged, or none was run.
        """

    @abc.abstractmethod
    def outage_currents(
        self,
        rows: Rows,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        """The N-1 screening of ``rows`` (solved), the rows unchanged: each branch's origin
        current (A) after each of ``branches`` goes out alone.

        Args:
            rows: the rows.
            branches: ``(m,)`` branch indices.
            load_bus, gen_bus, branch_or_bus, branch_ex_bus: ``(len(rows), n)`` each row's
                bus bars as last set (:meth:`Backend.outage_currents`' arrays, a row each).

        Returns:
            ``(len(rows), m, n_branch)`` float64; NaN where an outage's power flow diverges.
        """

    @abc.abstractmethod
    def timings(self, row: int) -> Mapping[str, float]:
        """``row``'s cumulative seconds per operation and its power flows
        (:meth:`Backend._new_timings`' keys)."""


class BackendLoop(SolverBatch):
    """A :class:`SolverBatch` of one-row backends, one per row, each verb a loop over them.

    Args:
        backends: the rows' backends, all of one model.
    """

    def __init__(self, backends: list[Backend]) -> None:
        if not backends:
            raise ValueError("a batch needs at least one backend")
        self.model = backends[0].model
        self.backends = list(backends)

    def __len__(self) -> int:
        return len(self.backends)

    def set_injections(self, rows: Rows, injections: InjectionRows) -> None:
        parts = injections.load_p, injections.load_q, injections.gen_p, injections.gen_v
        for j, row in enumerate(np.asarray(rows).tolist()):
            self.backends[row].set_injections_trusted(*(part[j] for part in parts))

    def set_storage_p(self, rows: Rows, p_mw: np.ndarray) -> None:
        for j, row in enumerate(np.asarray(rows).tolist()):
            self.backends[row].set_storage_p_trusted(p_mw[j])

    def set_topologies(self, rows: Rows, buses: np.ndarray) -> None:
        for row, row_buses in zip(np.asarray(rows).tolist(), buses, strict=True):
            backend = self.backends[row]
            start = perf_counter()
            backend._apply_topology(row_buses)
            backend.timings["set_topology"] += perf_counter() - start

    def solve(self, rows: Rows, flows: np.ndarray) -> list[int]:
        failed = []
        for row in np.asarray(rows).tolist():
            backend = self.backends[row]
            if backend.run_ac():
                backend.read_flows(flows[row])
            else:
                failed.append(row)
        return failed

    def take(self, rows: Rows) -> BackendLoop:
        return BackendLoop([self.backends[row].copy() for row in np.asarray(rows).tolist()])

    def reset(self, rows: Rows) -> None:
        for row in np.asarray(rows).tolist():
            self.backends[row].reset()

    def solver_state(self, row: int) -> np.ndarray:
        return self.backends[row].solver_state()

    def set_solver_state(self, row: int, state: np.ndarray) -> None:
        self.backends[row].set_solver_state(state)

    def results(self, row: int) -> PowerFlowResults:
        return self.backends[row].results()

    def outage_currents(
        self,
        rows: Rows,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        buses = load_bus, gen_bus, branch_or_bus, branch_ex_bus
        return np.stack(
            [
                self.backends[row].outage_currents(branches, *(part[j] for part in buses))
                for j, row in enumerate(np.asarray(rows).tolist())
            ]
        )

    def timings(self, row: int) -> Mapping[str, float]:
        return self.backends[row].timings
