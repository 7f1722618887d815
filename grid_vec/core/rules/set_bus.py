"""grid2op's general topology action (``set_bus`` and ``set_line_status``) for many envs at
once: when it is ambiguous, what it impacts (the branches and substations that the legality
rules count and the cooldowns then hold), and its effect on the topology.

The catalog's actions (:mod:`grid_vec.core.rules.actions`) are pruned substation
configurations and branch toggles; this is every action a grid2op agent can build with
``set_bus`` and ``set_line_status``. grid2op's rules (``BaseAction._check_for_ambiguity``,
``get_topological_impact``, the ``LookParam`` and ``PreventReconnection`` rules,
``_BackendAction.__iadd__``), restated on arrays:

* **ambiguous** (played as do-nothing, flagged): a branch end set to -1 while its other end
  is set to a bus bar; a branch set to -1 (``set_line_status``) with an end set to a bus
  bar; a branch set to +1 with an end set to -1.
* **impact**, from the branches' status before the action: the branches whose status is set
  (even to the status they have), whose end is set to a bus bar while they are disconnected
  (that reconnects them), or to -1 while they are connected (that disconnects them); the
  substations of the element ends set, less the ends of those branches and of the
  disconnected branches whose status is set (a status change is not a substation change).
* **illegal** (played as do-nothing, flagged): more impacted branches than
  ``max_line_status_changed``, more impacted substations than ``max_sub_changed``, an
  impacted branch or substation in cooldown.
* **effect**, in grid2op's three moves: ``set_line_status`` first (-1: both ends off; +1:
  each end that is off goes back on its last bus bar), then every end set goes to its bus
  bar, then each branch is made whole: one with an end off (after the first move or now) is
  disconnected, unless it was off after the first move and now has an end on a bus bar, in
  which case it is reconnected, its end still off on its last bus bar.
* then the impacted branches and substations get their cooldowns
  (:func:`grid_vec.core.state.update_timers`).

A load or generator set to -1 is disconnected, and its episode ends (a load or generator
cut off), as grid2op ends it when detaching elements is not allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grid_vec.core.parameters import Parameters
from grid_vec.core.state import BatchState, any_true
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel


@dataclass(frozen=True, eq=False)
class Impact:
    """What general topology actions of ``k`` envs impact (grid2op's
    ``get_topological_impact`` given the branches' status)."""

    branches: np.ndarray  # (k, n_branch) bool
    substations: np.ndarray  # (k, n_sub) bool


@dataclass(frozen=True, eq=False)
class SetBusRules:
    """The rules of the general topology action on one grid's topology vector."""

    model: GridModel
    layout: TopologyLayout

    def ambiguous(self, set_bus: np.ndarray, set_status: np.ndarray) -> dict[int, str]:
        """The actions (rows of ``set_bus`` / ``set_status``) grid2op finds ambiguous, by
        position, with the reason (its checks' order: the first that holds)."""
        bus_or, bus_ex = set_bus[:, self.layout.pos_or], set_bus[:, self.layout.pos_ex]
        checks = (
            (((bus_or == -1) & (bus_ex > 0)) | ((bus_ex == -1) & (bus_or > 0)),
             "is connected (set to a bus bar) at one end and disconnected (set to -1) at the "
             "other"),
            ((set_status == -1) & ((bus_or > 0) | (bus_ex > 0)),
             "is disconnected (set_line_status -1) and set to a bus bar"),
            ((set_status == 1) & ((bus_or == -1) | (bus_ex == -1)),
             "is reconnected (set_line_status +1) and set to -1"),
        )  # fmt: skip
        why: dict[int, str] = {}
        for bad, what in checks:
            if not any_true(bad):
                continue
            for j in np.flatnonzero(bad.any(axis=1)).tolist():
                if j not in why:
                    names = ", ".join(self.model.branch_names[np.flatnonzero(bad[j])])
                    why[j] = f"branch {names} {what}"
        return why

    def impact(
        self, line_status: np.ndarray, set_bus: np.ndarray, set_status: np.ndarray
    ) -> Impact:
        """What the actions impact, given the ``(k, n_branch)`` status of their envs' branches
        before them."""
        layout = self.layout
        off = ~line_status
        bus_or, bus_ex = set_bus[:, layout.pos_or], set_bus[:, layout.pos_ex]
        status_set = set_status != 0
        # reconnected or disconnected through an end
        through_end = ((bus_or > 0) | (bus_ex > 0)) & off
        through_end |= ((bus_or < 0) | (bus_ex < 0)) & line_status
        branches = status_set | through_end
        # a status change is not a substation change: those ends do not count
        not_counted = through_end | (status_set & off)
        changed = set_bus != 0
        changed[:, layout.pos_or] &= ~not_counted
        changed[:, layout.pos_ex] &= ~not_counted
        return Impact(branches, self._per_substation(changed))

    def illegal(
        self, state: BatchState, rows: np.ndarray, impact: Impact, p: Parameters
    ) -> dict[int, str]:
        """The actions (positions in ``rows``) that grid2op's rules refuse, with the reason
        (its rules' order: the numbers of changes, then the cooldowns)."""
        names = self.model.branch_names, self.model.sub_names
        counted = (
            (impact.branches, p.max_line_status_changed, "max_line_status_changed", "branches"),
            (impact.substations, p.max_sub_changed, "max_sub_changed", "substations"),
        )
        why: dict[int, str] = {}
        for hit, limit, parameter, what in counted:
            count = hit.sum(axis=1)
            for j in np.flatnonzero(count > limit).tolist():
                why.setdefault(j, f"{count[j]} {what} changed, {parameter} is {limit}")
        waits = (
            (impact.branches & (state.cooldown_line[rows] > 0), "branch", names[0]),
            (impact.substations & (state.cooldown_sub[rows] > 0), "substation", names[1]),
        )
        for waiting, what, labels in waits:
            for j in np.flatnonzero(waiting.any(axis=1)).tolist():
                why.setdefault(
                    j, f"{what} {', '.join(labels[np.flatnonzero(waiting[j])])} in cooldown"
                )
        return why

    def apply(
        self, state: BatchState, rows: np.ndarray, set_bus: np.ndarray, set_status: np.ndarray
    ) -> None:
        """Play the legal, unambiguous actions of ``rows`` (indices of ``state``; rows asking
        nothing are left alone) on their topology, branch status and last bus bars."""
        layout = self.layout
        pos_or, pos_ex = layout.pos_or, layout.pos_ex
        before = state.topo[rows]
        topo = before.copy()
        last_or, last_ex = state.last_or[rows], state.last_ex[rows]
        was_on = state.line_status[rows]
        # 1. set_line_status: -1 takes both ends off, +1 puts each end that is off back
        _set_status(topo, set_status, pos_or, pos_ex, last_or, last_ex)
        off_or, off_ex = topo[:, pos_or] == -1, topo[:, pos_ex] == -1
        # 2. every end set goes to its bus bar
        asked = set_bus != 0
        topo[asked] = set_bus[asked]
        # 3. each branch made whole
        now_or, now_ex = topo[:, pos_or], topo[:, pos_ex]
        whole = np.zeros_like(set_status)
        whole[off_or | off_ex | (now_or == -1) | (now_ex == -1)] = -1
        whole[off_or & ((now_or >= 1) | (now_ex >= 1))] = 1
        _set_status(topo, whole, pos_or, pos_ex, last_or, last_ex)
        on = (topo[:, pos_or] >= 1) & (topo[:, pos_ex] >= 1)
        # a branch taken off keeps the bus bars it was on, to go back on them
        gone = was_on & ~on
        last_or[gone] = before[:, pos_or][gone]
        last_ex[gone] = before[:, pos_ex][gone]
        state.topo[rows] = topo
        state.line_status[rows] = on
        state.last_or[rows], state.last_ex[rows] = last_or, last_ex
        state.topo_dirty[rows] = True

    def _per_substation(self, per_position: np.ndarray) -> np.ndarray:
        """(k, n_elem) bool over the topology vector -> (k, n_sub): any of the substation's."""
        start = self.layout.sub_start
        sizes = np.diff(start)
        anywhere = np.zeros((len(per_position), len(sizes)), dtype=bool)
        filled = sizes > 0  # reduceat reads one element for an empty group: none is set
        anywhere[:, filled] = np.logical_or.reduceat(per_position, start[:-1][filled], axis=1)
        return anywhere


def _set_status(
    topo: np.ndarray,
    status: np.ndarray,
    pos_or: np.ndarray,
    pos_ex: np.ndarray,
    last_or: np.ndarray,
    last_ex: np.ndarray,
) -> None:
    """grid2op's ``set_status`` of its topology store, in place on ``topo`` (k, n_elem):
    -1 takes both ends of a branch off, +1 puts each of its ends that is off on its last bus
    bar."""
    off = status == -1
    ends_or, ends_ex = topo[:, pos_or], topo[:, pos_ex]
    ends_or[off], ends_ex[off] = -1, -1
    back = status == 1
    back_or, back_ex = back & (ends_or < 0), back & (ends_ex < 0)
    ends_or[back_or], ends_ex[back_ex] = last_or[back_or], last_ex[back_ex]
    topo[:, pos_or], topo[:, pos_ex] = ends_or, ends_ex
