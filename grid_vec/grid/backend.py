"""The power-flow backend interface shared by every solver.

A backend holds one grid's injections and topology, solves an AC power flow on demand and
exposes the results as numpy arrays in the element order of :class:`~grid_vec.grid.model.GridModel`
(branches = lines then transformers; generators = ``gen``, then ``sgen``, then ``ext_grid``).

Topology is given per element as its bus bar at its substation: ``1`` or ``2``, or ``-1`` for
disconnected. A branch is in service when both of its ends are on a bus bar.

Storage units are PQ injections in load convention (``p > 0``: the unit absorbs, MW) whose
reactive setpoint stays the net's (0 in grid2op's grids, which never sets it). A unit at
``p = 0`` changes nothing in the power flow, but its bus bar is still in it: a unit alone on
a bus bar is an island and the power flow does not converge, as lightsim2grid's does not
under grid2op. Setpoints start at the model's ``storage_p0`` (the net's, 0 in grid2op's
grids), bus bars at 1.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from grid_vec.grid._checks import (
    bus_bar_one,
    check_injections,
    check_storage_p,
    check_topology,
)
from grid_vec.grid.model import GridModel

# The fields of PowerFlowResults that :meth:`Backend.read_flows` writes, in this order: every
# branch quantity (one value per branch), then the loads', then the generators', then the
# storage units' (last, so that the other fields keep their places; empty without storage).
FLOW_FIELDS = (
    "p_or", "q_or", "v_or", "a_or", "p_ex", "q_ex", "v_ex", "a_ex",
    "load_p", "load_q", "load_v", "gen_p", "gen_q", "gen_v",
    "storage_p", "storage_q", "storage_v", "storage_theta",
)  # fmt: skip


class PowerFlowDivergedError(RuntimeError):
    """Raised (or reported) when an AC power flow does not converge."""


@dataclass(frozen=True)
class PowerFlowResults:
    """Results of one converged AC power flow, all float64 arrays.

    Units: p in MW, q in MVAr, v in kV, a in A, angles in radians (``storage_theta`` too);
    bus arrays have ``2 * n_sub`` entries (bus bar 1 of every substation, then bus bar 2).
    Disconnected elements and branches report zeros. ``storage_p`` is in load convention
    (``> 0``: the unit absorbs); the storage arrays are empty when the grid has none.
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
    storage_p: np.ndarray
    storage_q: np.ndarray
    storage_v: np.ndarray
    storage_theta: np.ndarray


@dataclass(slots=True, eq=False)
class InjectionRows:
    """The injections of several rows (a batch's envs) for one step, laid out as the scenarios
    pack them (:meth:`~grid_vec.chronics.scenario.Injections.packed`): ``block``, float64
    ``(k, 2 * n_load + 2 * n_gen)``, holds ``load_p``, ``load_q``, ``gen_p`` (MW, MVAr, MW)
    and ``gen_v`` (kV) side by side; the four properties are its column views. Never
    written once built (:meth:`with_gen_p` makes a new one)."""

    block: np.ndarray
    n_load: int
    n_gen: int

    @classmethod
    def of_rows(cls, packed_rows: list[np.ndarray], model: GridModel) -> InjectionRows:
        """The rows' injections from each row's packed step (one gather)."""
        if len(packed_rows) == 1:  # a GridEnv's: the row itself (never written here)
            return cls(packed_rows[0][None], model.n_load, model.n_gen)
        n_load, n_gen = model.n_load, model.n_gen
        block = np.array(packed_rows, dtype=np.float64).reshape(-1, 2 * (n_load + n_gen))
        return cls(block, n_load, n_gen)

    @property
    def load_p(self) -> np.ndarray:
        return self.block[:, : self.n_load]

    @property
    def load_q(self) -> np.ndarray:
        return self.block[:, self.n_load : 2 * self.n_load]

    @property
    def gen_p(self) -> np.ndarray:
        return self.block[:, 2 * self.n_load : 2 * self.n_load + self.n_gen]

    @property
    def gen_v(self) -> np.ndarray:
        return self.block[:, 2 * self.n_load + self.n_gen :]

    def with_gen_p(self, gen_p: np.ndarray) -> InjectionRows:
        """The same injections with the generators' ``(k, n_gen)`` ``gen_p`` instead."""
        new = InjectionRows(self.block.copy(), self.n_load, self.n_gen)
        new.gen_p[...] = gen_p
        return new

    def take(self, positions: np.ndarray) -> InjectionRows:
        """The injections of the rows at ``positions`` (a new block)."""
        return InjectionRows(self.block[positions], self.n_load, self.n_gen)


class Backend(abc.ABC):
    """One grid's state (injections + topology) and an AC power-flow solver.

    The public setters validate their arguments and count their time; a backend implements
    :meth:`_apply_injections` and :meth:`_apply_topology`, which receive checked arrays.
    """

    model: GridModel
    timings: dict[str, float]

    @staticmethod
    def _new_timings() -> dict[str, float]:
        """Cumulative seconds per operation, and the number of power flows run."""
        return {
            "set_injections": 0.0,
            "set_topology": 0.0,
            "powerflow": 0.0,
            "results": 0.0,
            "n_powerflow": 0,
        }

    def set_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        """Set all injections (MW, MVAr, kV). Raises ``ValueError`` on bad shape or non-finite."""
        start = perf_counter()
        self._apply_injections(*check_injections(self.model, load_p, load_q, gen_p, gen_v))
        self.timings["set_injections"] += perf_counter() - start

    def set_injections_trusted(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        """:meth:`set_injections` for callers that guarantee finite float64 arrays of the right
        shapes (an environment feeding validated scenario data): no checks."""
        start = perf_counter()
        self._apply_injections(load_p, load_q, gen_p, gen_v)
        self.timings["set_injections"] += perf_counter() - start

    def set_storage_p(self, p_mw: np.ndarray) -> None:
        """Set the active power setpoint of every storage unit.

        Args:
            p_mw: ``(n_storage,)`` MW in load convention (``> 0``: the unit absorbs, charging;
                ``< 0``: it produces). A disconnected unit keeps its setpoint for when it is
                connected again and injects nothing meanwhile.

        Raises:
            TypeError: ``p_mw`` is not numeric.
            ValueError: wrong shape or a non-finite value.
        """
        start = perf_counter()
        self._apply_storage_p(check_storage_p(self.model, p_mw))
        self.timings["set_injections"] += perf_counter() - start

    def set_storage_p_trusted(self, p_mw: np.ndarray) -> None:
        """:meth:`set_storage_p` for callers that guarantee a finite float64 array of shape
        ``(n_storage,)``: no checks."""
        start = perf_counter()
        self._apply_storage_p(p_mw)
        self.timings["set_injections"] += perf_counter() - start

    def set_topology(
        self,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
        storage_bus: np.ndarray | None = None,
    ) -> None:
        """Set every element's bus bar (1, 2 or -1).

        Args:
            load_bus: ``(n_load,)`` bus bar of each load.
            gen_bus: ``(n_gen,)`` bus bar of each generator.
            branch_or_bus: ``(n_branch,)`` bus bar of each branch origin.
            branch_ex_bus: ``(n_branch,)`` bus bar of each branch extremity.
            storage_bus: ``(n_storage,)`` bus bar of each storage unit; None puts every unit
                on bus bar 1.

        Raises:
            TypeError: an array is not numeric.
            ValueError: a wrong shape or a value other than 1, 2 and -1.
        """
        start = perf_counter()
        self._apply_topology(
            check_topology(self.model, load_bus, gen_bus, branch_or_bus, branch_ex_bus, storage_bus)
        )
        self.timings["set_topology"] += perf_counter() - start

    def set_topology_trusted(
        self,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
        storage_bus: np.ndarray | None = None,
    ) -> None:
        """:meth:`set_topology` for callers that guarantee integer arrays of the right shapes
        holding only 1, 2 or -1: no checks."""
        start = perf_counter()
        if storage_bus is None:
            storage_bus = bus_bar_one(self.model.n_storage)
        buses = np.concatenate(
            (load_bus, gen_bus, branch_or_bus, branch_ex_bus, storage_bus), dtype=np.int32
        )
        self._apply_topology(buses)
        self.timings["set_topology"] += perf_counter() - start

    @abc.abstractmethod
    def _apply_injections(
        self, load_p: np.ndarray, load_q: np.ndarray, gen_p: np.ndarray, gen_v: np.ndarray
    ) -> None:
        """Write checked injections into the solver."""

    @abc.abstractmethod
    def _apply_storage_p(self, p_mw: np.ndarray) -> None:
        """Write checked storage setpoints (float64, MW, load convention) into the solver."""

    @abc.abstractmethod
    def _apply_topology(self, buses: np.ndarray) -> None:
        """Write a checked topology: a new int32 array of every element's bus bar (loads,
        generators, branch origins, branch extremities, storage units)."""

    @abc.abstractmethod
    def run_ac(self) -> bool:
        """Solve the AC power flow; return ``True`` when it converged."""

    @abc.abstractmethod
    def results(self) -> PowerFlowResults:
        """Results of the last converged power flow (raises if it diverged)."""

    @abc.abstractmethod
    def copy(self) -> Backend:
        """An independent deep copy (injections, topology, last results) for look-ahead."""

    def reset(self) -> None:
        """Back, in place, to what a new backend of its model solves like: every element on
        bus bar 1, no solution yet, the next power flow started as a new backend's first one
        (its first guess, and nothing the solver kept of earlier solves), so that every float
        it computes from then on is what a new backend would compute: an env's new episode
        without a copy of the grid.

        Injections and storage setpoints keep their last values: the caller sets every one
        of them before the next power flow (as an env's reset does).
        """
        m = self.model
        start = perf_counter()
        self._apply_topology(np.ones(m.n_load + m.n_gen + 2 * m.n_branch + m.n_storage, np.int32))
        self._forget_solves()
        self.timings["set_topology"] += perf_counter() - start

    def solver_state(self) -> np.ndarray:
        """What the next power flow starts from besides the injections and the topology
        (the warm start), as a new 1-D array: with :meth:`set_solver_state`, what makes a
        restored env's next solves those of the env its snapshot was taken from.

        Raises:
            NotImplementedError: a backend class that does not give it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not give its solver state")

    def set_solver_state(self, state: np.ndarray) -> None:
        """Start the next power flow from ``state``, a :meth:`solver_state` of a backend of
        the same model, as that backend's next one would (the topology set already).

        Raises:
            ValueError: ``state`` is not one of this model's solver states.
            NotImplementedError: a backend class that does not take it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not take a solver state")

    @abc.abstractmethod
    def _forget_solves(self) -> None:
        """Drop the last solution and whatever the solver kept of its solves (first guess,
        caches): the next power flow is solved as a new backend's first one."""

    def read_flows(self, out: np.ndarray) -> None:
        """Write the last converged results into ``out``, a float64 array of
        :func:`flow_slices` layout (the :data:`FLOW_FIELDS` back to back), without allocating.

        The hot path of an environment step; this default copies from :meth:`results`.
        """
        res = self.results()
        np.concatenate([getattr(res, name) for name in FLOW_FIELDS], out=out)

    def outage_currents(
        self,
        branches: np.ndarray,
        load_bus: np.ndarray,
        gen_bus: np.ndarray,
        branch_or_bus: np.ndarray,
        branch_ex_bus: np.ndarray,
    ) -> np.ndarray:
        """Each branch's origin current (A) after each of ``branches`` goes out alone, from
        this backend's injections and its topology (the four bus bar arrays of
        :meth:`set_topology`, as last set), the backend unchanged: an N-1 screening.

        This default solves a copy per branch; a backend class may do it at once
        (:class:`~grid_vec.grid.lightsim.LightSimBackend`: lightsim2grid's
        ``ContingencyAnalysisCPP``).

        Args:
            branches: ``(m,)`` branch indices.
            load_bus, gen_bus, branch_or_bus, branch_ex_bus: the current bus bars.

        Returns:
            ``(m, n_branch)`` float64; a row of NaN where the power flow does not converge.
        """
        out = np.full((len(branches), self.model.n_branch), np.nan)
        for j, branch in enumerate(np.asarray(branches).tolist()):
            origin, extremity = branch_or_bus.copy(), branch_ex_bus.copy()
            origin[branch] = extremity[branch] = -1
            trial = self.copy()
            trial.set_topology_trusted(load_bus, gen_bus, origin, extremity)
            if trial.run_ac():
                out[j] = trial.results().a_or
        return out


def flow_slices(model: GridModel) -> dict[str, slice]:
    """Where each of :data:`FLOW_FIELDS` lies in the flat array of :meth:`Backend.read_flows`;
    the key ``"all"`` spans the whole array."""
    sizes = [model.n_branch] * 8 + [model.n_load] * 3 + [model.n_gen] * 3 + [model.n_storage] * 4
    slices, start = {}, 0
    for name, size in zip(FLOW_FIELDS, sizes, strict=True):
        slices[name] = slice(start, start + size)
        start += size
    slices["all"] = slice(0, start)
    return slices
