"""The power-flow backend interface shared by every solver.

A backend holds one grid's injections and topology, solves an AC power flow on demand and
exposes the results as numpy arrays in the element order of :class:`~grid_vec.grid.model.GridModel`
(branches = lines then transformers; generators = ``gen``, then ``sgen``, then ``ext_grid``).

Topology is given per element as its bus bar at its substation: ``1`` or ``2``, or ``-1`` for
disconnected. A branch is in service when both of its ends are on a bus bar.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np


class PowerFlowDivergedError(RuntimeError):
    """Raised (or reported) when an AC power flow does not converge."""


@dataclass(frozen=True)
class PowerFlowResults:
    """Results of one converged AC power flow, all float64 arrays.

    Units: p in MW, q in MVAr, v in kV, a in A, angles in radians; bus arrays have
    ``2 * n_sub`` entries (bus bar 1 of every substation, then bus bar 2). Disconnected
    elements and branches report zeros.
    """

    bus_vm_pu: np.ndarray
    bus_va_rad: np.ndarray
    p_or: np.ndarray
    q_or: np.ndarray
    v_or: np.ndarray
    a_or: np.ndarray
    p_ex: np.ndarray
    q_ex: np.ndarray
    v_ex: np.ndarray
    a_ex: np.ndarray
    load_p: np.ndarray
    load_q: np.ndarray
    load_v: np.ndarray
    gen_p: np.ndarray
    gen_q: np.ndarray
    gen_v: np.ndarray


class Backend(abc.ABC):
    """One grid's state (injections + topology) and an AC power-flow solver."""

    @abc.abstractmethod
    def set_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        """Set all injections (MW, MVAr, kV). Raises ``ValueError`` on bad shape or non-finite."""

    @abc.abstractmethod
    def set_topology(
        self,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> None:
        """Set every element's bus bar (1, 2 or -1). Raises ``ValueError`` on bad values."""

    @abc.abstractmethod
    def run_ac(self) -> bool:
        """Solve the AC power flow; return ``True`` when it converged."""

    @abc.abstractmethod
    def results(self) -> PowerFlowResults:
        """Results of the last converged power flow (raises if it diverged)."""

    @abc.abstractmethod
    def copy(self) -> Backend:
        """An independent deep copy (injections, topology, last results) for look-ahead."""
