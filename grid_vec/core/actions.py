"""The ``Discrete`` action catalog of a GridEnv.

Encoding (``ActionCatalog.counts`` gives the counts; embedded grids: case14 has 126 actions
= 1 + 20 branch toggles + 105 substation configurations, case118 has 11,604 = 1 + 186 +
11,417; grid2op's ``l2rpn_case14_sandbox`` grid, whose generators sit differently, has 154
= 1 + 20 + 133):

* index ``0``: do nothing;
* indices ``1 .. n_branch``: toggle the status of branch ``i - 1`` (grid2op's
  ``change_line_status``): a connected branch is disconnected, a disconnected one is
  reconnected on the bus bars it had before;
* then one index per substation bus configuration: every element of the substation is
  assigned to bus bar 1 or 2. Configurations are enumerated and pruned like grid2op's
  ``get_all_unitary_topologies_set``: the first element stays on bus bar 1 (the two bus bars
  are interchangeable), every used bus bar holds at least two elements and at least one
  branch end. For each substation that has at least one split configuration, the
  "all on bus bar 1" configuration is included too (to undo a split).

Applying a configuration sets the bus bar of every element of the substation; a
disconnected branch with an end there is reconnected, as grid2op's ``set_bus`` on a
disconnected end reconnects it: that end on the configured bus bar, the other on its last one.
It counts as a change of that branch's status (its cooldown must be over, at most
``max_line_status_changed`` branches, and its cooldown starts). :class:`SubstationTable`
applies configurations for many envs at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grid_vec.core.state import BatchState
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel

DO_NOTHING = 0
KIND_NOTHING, KIND_LINE, KIND_SUB = 0, 1, 2

# Substations with more elements than this get no configuration action (2**(n-1) candidates
# would not fit in memory); none of the embedded grids has one (case118: at most 14).
MAX_ENUMERATED_ELEMENTS = 16


@dataclass(frozen=True, eq=False)
class ActionCatalog:
    """All discrete actions, as flat arrays indexed by action id."""

    kind: np.ndarray  # (n,) int8: KIND_NOTHING / KIND_LINE / KIND_SUB
    target: np.ndarray  # (n,) int64: branch index (line) or substation index (sub), else -1
    sub_buses: list  # per action: (n_elem_of_sub,) int8 bus bars for KIND_SUB, else None
    n_line_actions: int
    n_sub_actions: int
    # storage units per substation: grid2op lists them last in a substation's topo_vect,
    # grid_vec keeps them on bus bar 1 (they are not in its topology)
    sub_storage: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.kind)

    def checked_subset(self, subset: Sequence[int] | None) -> np.ndarray | None:
        """``action_subset`` as an int64 array: distinct catalog indices, do-nothing (0)
        first (None: no subset).

        Raises:
            ValueError: anything else.
        """
        if subset is None:
            return None
        n = len(self)
        arr = np.asarray(subset)
        if arr.ndim != 1 or not len(arr) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError("action_subset must be a non-empty sequence of catalog indices")
        if arr[0] != 0 or arr.min() < 0 or arr.max() >= n or len(set(arr.tolist())) < len(arr):
            raise ValueError(
                f"action_subset must list distinct catalog indices in [0, {n - 1}], "
                f"do-nothing (0) first; got {arr[:8].tolist()}..."
            )
        return arr.astype(np.int64)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "do_nothing": 1,
            "line_status": self.n_line_actions,
            "substation": self.n_sub_actions,
            "total": len(self),
        }

    @classmethod
    def from_model(cls, model: GridModel, layout: TopologyLayout) -> ActionCatalog:
        kind = [KIND_NOTHING] + [KIND_LINE] * model.n_branch
        target = [-1, *range(model.n_branch)]
        sub_buses: list = [None] * (1 + model.n_branch)
        is_branch = np.zeros(layout.n_elem, dtype=bool)
        is_branch[layout.pos_or] = True
        is_branch[layout.pos_ex] = True
        n_sub_actions = 0
        for sub in range(model.n_sub):
            lo, hi = layout.sub_start[sub], layout.sub_start[sub + 1]
            for config in substation_configurations(is_branch[lo:hi]):
                kind.append(KIND_SUB)
                target.append(sub)
                sub_buses.append(config)
                n_sub_actions += 1
        return cls(
            kind=np.asarray(kind, dtype=np.int8),
            target=np.asarray(target, dtype=np.int64),
            sub_buses=sub_buses,
            n_line_actions=model.n_branch,
            n_sub_actions=n_sub_actions,
            sub_storage=np.bincount(model.storage_sub, minlength=model.n_sub),
        )

    def describe(self, index: int, model: GridModel, layout: TopologyLayout) -> str:
        """The action in words, e.g. ``"toggle status of branch 3_4_0"``."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"action index must be an int, got {index!r}")
        if not 0 <= index < len(self):
            raise ValueError(f"action index must be in [0, {len(self) - 1}], got {index}")
        kind = self.kind[index]
        if kind == KIND_NOTHING:
            return "do nothing"
        if kind == KIND_LINE:
            return f"toggle status of branch {model.branch_names[self.target[index]]}"
        sub = int(self.target[index])
        lo = layout.sub_start[sub]
        buses = self.sub_buses[index]
        on_two = [str(layout.elem_label[lo + i]) for i in np.flatnonzero(buses == 2)]
        where = ", ".join(on_two) if on_two else "nothing (all on bus bar 1)"
        return f"substation {model.sub_names[sub]}: bus bar 2 <- {where}"

    def grid2op_action(self, index: int) -> dict:
        """The action in grid2op's vocabulary, the dict grid2op's ``action_space(...)`` takes:
        ``{}`` (do nothing), ``{"change_line_status": [branch]}`` (a toggle: reconnected on
        its last bus bars, as grid2op does) or ``{"set_bus": {"substations_id": [(sub,
        buses)]}}`` (bus bars in the substation's ``topo_vect`` order, grid2op's; its storage
        units, last in grid2op's order, on bus bar 1, where grid_vec keeps them)."""
        kind, target = int(self.kind[index]), int(self.target[index])
        if kind == KIND_LINE:
            return {"change_line_status": [target]}
        if kind == KIND_SUB:
            buses = [int(b) for b in self.sub_buses[index]]
            if self.sub_storage is not None:
                buses += [1] * int(self.sub_storage[target])
            return {"set_bus": {"substations_id": [(target, buses)]}}
        return {}


def substation_configurations(is_branch: np.ndarray) -> list[np.ndarray]:
    """Pruned bus-bar assignments of one substation's elements (see module docstring)."""
    n = len(is_branch)
    if n < 4 or n > MAX_ENUMERATED_ELEMENTS:
        return []
    codes = np.arange(2 ** (n - 1), dtype=np.int64)
    # bit j of the code -> element j + 1 on bus bar 2; element 0 always on bus bar 1
    bits = ((codes[:, None] >> np.arange(n - 1)) & 1).astype(bool)
    on_two = np.concatenate([np.zeros((len(codes), 1), dtype=bool), bits], axis=1)
    n_two = on_two.sum(axis=1)
    branch_two = (on_two & is_branch).sum(axis=1)
    branch_one = is_branch.sum() - branch_two
    keep = (n_two >= 2) & (n - n_two >= 2) & (branch_two >= 1) & (branch_one >= 1)
    configs = [np.where(row, 2, 1).astype(np.int8) for row in on_two[keep]]
    if configs:
        configs.insert(0, np.ones(n, dtype=np.int8))
    return configs


@dataclass(frozen=True)
class SubstationTable:
    """Each catalog action's substation configuration as fixed-width rows, so that the
    configurations of many envs are applied with a few array operations."""

    start: np.ndarray  # (n_actions,) first topology position of the action's substation
    buses: np.ndarray  # (n_actions, width) int8 bus bars, 0 past the substation's elements

    @classmethod
    def of(cls, catalog: ActionCatalog, layout: TopologyLayout) -> SubstationTable:
        n = len(catalog)
        sizes = np.diff(layout.sub_start)
        width = int(sizes.max()) if len(sizes) else 1
        start = np.zeros(n, dtype=np.int64)
        buses = np.zeros((n, width), dtype=np.int8)
        for i in np.flatnonzero(catalog.kind == KIND_SUB).tolist():
            sub = int(catalog.target[i])
            start[i] = layout.sub_start[sub]
            config = catalog.sub_buses[i]
            buses[i, : len(config)] = config
        return cls(start, buses)

    def apply(
        self, state: BatchState, layout: TopologyLayout, rows: np.ndarray, actions: np.ndarray
    ) -> None:
        """Set the bus bar of every connected element of each action's substation; the
        disconnected branch ends there get it as their last bus bar (``GridBatch._apply``
        reconnects their branches)."""
        width = self.buses.shape[1]
        k = len(rows)
        positions = self.start[actions][:, None] + np.arange(width)
        buses = self.buses[actions]
        placed = np.zeros((k, layout.n_elem + width), dtype=np.int8)  # padded: no overflow
        np.put_along_axis(placed, positions, buses, axis=1)
        placed = placed[:, : layout.n_elem]
        topo = state.topo[rows]
        state.topo[rows] = np.where((placed > 0) & (topo > 0), placed, topo)
        new_or, new_ex = placed[:, layout.pos_or], placed[:, layout.pos_ex]
        state.last_or[rows] = np.where(new_or > 0, new_or, state.last_or[rows])
        state.last_ex[rows] = np.where(new_ex > 0, new_ex, state.last_ex[rows])
        state.topo_dirty[rows] = True
