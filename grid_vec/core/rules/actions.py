"""The rules of the agent's actions in the batched core: which are legal (cooldowns, the
limits of changes per step), and how a legal one changes the topology of its env (branch
toggles, substation configurations), for many envs at once; the redispatch and curtailment
rules are :mod:`grid_vec.core.rules.dispatch`'s, the storage rules
:mod:`grid_vec.core.rules.storage`'s.
:class:`~grid_vec.core.batch.GridBatch` calls them each step and in ``simulate``.

A substation configuration reconnects the disconnected branches with an end at its
substation, as grid2op's ``set_bus`` on a disconnected end does: that end on the configured
bus bar, the other on its last one; it is a change of those branches' status, under the
line rules (their cooldown must be over, at most ``max_line_status_changed`` of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from grid_vec.core.actions import KIND_LINE, KIND_SUB, ActionCatalog, SubstationTable
from grid_vec.core.parameters import Parameters
from grid_vec.core.records import ActionBatch
from grid_vec.core.rules.set_bus import SetBusRules
from grid_vec.core.state import NOTHING_ACTED, Acted, BatchState, any_true, disconnect, reconnect
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel

_FALSE = np.zeros(256, dtype=bool)
_FALSE.flags.writeable = False

# (illegal, ambiguous, (reasons of the illegal rows, of the ambiguous rows) by position)
Legality = tuple[np.ndarray, np.ndarray, tuple[dict[int, str], dict[int, str]]]


def false_flags(k: int) -> np.ndarray:
    """(k,) False (read-only)."""
    return _FALSE[:k] if k <= len(_FALSE) else np.zeros(k, dtype=bool)


@dataclass(frozen=True, eq=False)
class ActionRules:
    """The legality of actions and the effect of catalog actions on a batch's state."""

    model: GridModel
    catalog: ActionCatalog
    topology: TopologyLayout
    sub_table: SubstationTable  # the catalog's configurations as fixed-width rows
    sub_branches: np.ndarray  # (n_sub, n_branch): the branches with an end at each substation
    buses: SetBusRules  # the general topology action's rules

    @classmethod
    def of(cls, model: GridModel, catalog: ActionCatalog, topology: TopologyLayout) -> ActionRules:
        sub_branches = np.zeros((model.n_sub, model.n_branch), dtype=bool)
        sub_branches[model.branch_or_sub, np.arange(model.n_branch)] = True
        sub_branches[model.branch_ex_sub, np.arange(model.n_branch)] = True
        return cls(
            model,
            catalog,
            topology,
            SubstationTable.of(catalog, topology),
            sub_branches,
            SetBusRules(model, topology),
        )

    def legalise_action(
        self, state: BatchState, rows: np.ndarray, action: ActionBatch, p: Parameters
    ) -> Legality:
        """:meth:`legalise` of the catalog part, then grid2op's verdict on the general
        topology action where the action type has one: ambiguous first (an ambiguous
        action is not judged legal or not: it is played as do-nothing), then illegal."""
        legal = self.legalise(state, rows, action.topology, action.redispatch, action.curtail, p)
        asking = np.flatnonzero(action.setting_buses())
        if not len(asking):
            return legal
        set_bus, set_status = action.set_bus[asking], action.set_line_status[asking]
        why_ambiguous = self.buses.ambiguous(set_bus, set_status)
        clear = np.array([j not in why_ambiguous for j in range(len(asking))], dtype=bool)
        r = rows[asking]
        impact = self.buses.impact(state.line_status[r], set_bus, set_status)
        why_illegal = self.buses.illegal(state, r, impact, p)
        illegal, ambiguous, (was_illegal, was_ambiguous) = legal
        illegal, ambiguous = illegal.copy(), ambiguous.copy()
        was_illegal, was_ambiguous = dict(was_illegal), dict(was_ambiguous)
        for j, why in why_ambiguous.items():
            ambiguous[asking[j]] = True
            was_ambiguous.setdefault(int(asking[j]), why)
        for j, why in why_illegal.items():
            if clear[j]:
                illegal[asking[j]] = True
                was_illegal.setdefault(int(asking[j]), why)
        return illegal, ambiguous, (was_illegal, was_ambiguous)

    def legalise(
        self,
        state: BatchState,
        rows: np.ndarray,
        actions: np.ndarray,
        redispatch: np.ndarray | None,
        curtail: np.ndarray | None,
        p: Parameters,
    ) -> Legality:
        """Which actions are illegal (cooldowns, limits), with the reasons of the flagged
        rows (by position in ``rows``). A redispatch or curtailment within the action space
        is always legal (grid2op's rules); none is ambiguous here: the action spaces keep
        them within the ramps, on the generators they may act on."""
        k = len(rows)
        if not any_true(actions):  # no topology action anywhere
            none = false_flags(k)
            return none, none, ({}, {})
        illegal = np.zeros(k, dtype=bool)
        ambiguous = np.zeros(k, dtype=bool)
        why_illegal: dict[int, str] = {}
        why_ambiguous: dict[int, str] = {}
        m, cat = self.model, self.catalog
        if any_true(actions):
            kind, target = cat.kind[actions], cat.target[actions]
            line, sub = kind == KIND_LINE, kind == KIND_SUB
            if line.any():
                cooldown = state.cooldown_line[rows, np.where(line, target, 0)]
                illegal |= line & ((p.max_line_status_changed < 1) | (cooldown > 0))
            if sub.any():
                cooldown_s = state.cooldown_sub[rows, np.where(sub, target, 0)]
                illegal |= sub & ((p.max_sub_changed < 1) | (cooldown_s > 0))
                # a configuration reconnects the substation's disconnected branches (grid2op's
                # set_bus on a disconnected end): status changes, under the line rules too
                back = self.reconnected_by(state, rows, np.where(sub, target, -1))
                waiting = back & (state.cooldown_line[rows] > 0)
                too_many = back.sum(axis=1) > p.max_line_status_changed
                line_rule = sub & ~illegal & (waiting.any(axis=1) | too_many)
                illegal |= line_rule
            for j in np.flatnonzero(illegal).tolist():
                t = int(target[j])
                if line[j]:
                    why_illegal[j] = (
                        "max_line_status_changed is 0"
                        if p.max_line_status_changed < 1
                        else f"branch {m.branch_names[t]} cannot change status for "
                        f"{cooldown[j]} more step(s)"
                    )
                elif line_rule[j]:
                    names = ", ".join(m.branch_names[np.flatnonzero(back[j])])
                    why_illegal[j] = (
                        f"substation {m.sub_names[t]}'s configuration would reconnect {names}: "
                        + (
                            f"more than max_line_status_changed={p.max_line_status_changed}"
                            if too_many[j]
                            else "a branch that cannot change status yet"
                        )
                    )
                else:
                    why_illegal[j] = (
                        "max_sub_changed is 0"
                        if p.max_sub_changed < 1
                        else f"substation {m.sub_names[t]} is in cooldown for "
                        f"{cooldown_s[j]} more step(s)"
                    )
        return illegal, ambiguous, (why_illegal, why_ambiguous)

    def legal_mask(self, state: BatchState, rows: np.ndarray, p: Parameters) -> np.ndarray:
        """(k, n_catalog) bool: True where the catalog action would be legal in each of
        ``rows`` now, :meth:`legalise`'s verdict for every action at once.

        Args:
            state: the batch's state.
            rows: the envs (indices of ``state``).
            p: the rules in force.

        Returns:
            The masks (do-nothing is always legal).
        """
        cooldown_line = state.cooldown_line[rows]
        off = ~state.line_status[rows]
        n_line, n_sub = self._line_actions, self._sub_actions
        mask = np.ones((len(rows), len(self.catalog)), dtype=bool)
        if p.max_line_status_changed < 1:
            mask[:, n_line] = False
        else:
            mask[:, n_line] = cooldown_line[:, self.catalog.target[n_line]] == 0
        if len(n_sub):
            # a configuration's line rule depends on its substation only: the disconnected
            # branches there, counted per substation with one product (exact in float32)
            touching = self._sub_branches_t
            back = off.astype(np.float32) @ touching
            waiting = (off & (cooldown_line > 0)).astype(np.float32) @ touching
            sub_ok = (state.cooldown_sub[rows] == 0) & (waiting == 0)
            sub_ok &= back <= p.max_line_status_changed
            if p.max_sub_changed < 1:
                sub_ok[:] = False
            mask[:, n_sub] = sub_ok[:, self.catalog.target[n_sub]]
        return mask

    @cached_property
    def _line_actions(self) -> np.ndarray:
        return np.flatnonzero(self.catalog.kind == KIND_LINE)

    @cached_property
    def _sub_actions(self) -> np.ndarray:
        return np.flatnonzero(self.catalog.kind == KIND_SUB)

    @cached_property
    def _sub_branches_t(self) -> np.ndarray:
        return self.sub_branches.T.astype(np.float32)

    def apply(
        self,
        state: BatchState,
        rows: np.ndarray,
        action: ActionBatch,
    ) -> Acted:
        """Apply legal topology actions (catalog ones, then general ones where the action
        type has them); return what they acted on (:class:`~grid_vec.core.state.Acted`)."""
        acted = self._apply_catalog(state, rows, action.topology)
        asking = np.flatnonzero(action.setting_buses())
        if not len(asking):
            return acted
        r = rows[asking]
        set_bus, set_status = action.set_bus[asking], action.set_line_status[asking]
        impact = self.buses.impact(state.line_status[r], set_bus, set_status)
        self.buses.apply(state, r, set_bus, set_status)
        # the catalog's rows of the batch (the heuristics' reconnections) keep what they did
        branches, substations = acted.branches, acted.substations
        if branches is None:
            branches = np.zeros_like(state.line_status)
            substations = np.zeros(state.cooldown_sub.shape, dtype=bool)
        branches[r] |= impact.branches
        substations[r] |= impact.substations
        return Acted(branches, substations)

    def _apply_catalog(self, state: BatchState, rows: np.ndarray, actions: np.ndarray) -> Acted:
        """Apply legal catalog actions: a toggle acts on its branch, a configuration on its
        substation and on the branches it reconnects."""
        if not any_true(actions):
            return NOTHING_ACTED
        branches = np.zeros_like(state.line_status)
        substations = np.zeros(state.cooldown_sub.shape, dtype=bool)
        kind, target = self.catalog.kind[actions], self.catalog.target[actions]
        line = kind == KIND_LINE
        if line.any():
            r, b = rows[line], target[line]
            branches[r, b] = True
            on = state.line_status[r, b]
            if on.any():
                mask = np.zeros_like(state.line_status)
                mask[r[on], b[on]] = True
                disconnect(state, self.topology, mask)
            if not on.all():
                reconnect(state, self.topology, r[~on], b[~on])
        sub = kind == KIND_SUB
        if sub.any():
            r = rows[sub]
            substations[r, target[sub]] = True
            back = self.reconnected_by(state, r, target[sub])
            self.sub_table.apply(state, self.topology, r, actions[sub])
            if back.any():  # on the configured bus bar here, the last one at the other end
                at, branch = np.nonzero(back)
                reconnect(state, self.topology, r[at], branch)
                branches[r[at], branch] = True
        return Acted(branches, substations)

    def reconnected_by(self, state: BatchState, rows: np.ndarray, subs: np.ndarray) -> np.ndarray:
        """(k, n_branch): the disconnected branches a configuration of ``subs`` (-1: none)
        reconnects in each of ``rows``."""
        touching = self.sub_branches[np.maximum(subs, 0)] & (subs >= 0)[:, None]
        return touching & ~state.line_status[rows]


def neutralise(action: ActionBatch, legal: Legality) -> ActionBatch:
    """Illegal or ambiguous actions (:meth:`ActionRules.legalise`'s verdict) are played as
    do-nothing: no catalog action, no redispatch, no curtailment, no storage power."""
    illegal, ambiguous, (why_illegal, why_ambiguous) = legal
    if not why_illegal and not why_ambiguous:  # every refused action has its reason
        return action
    return action.neutralised(illegal | ambiguous)
