"""The topology vector: every element end's bus bar, grouped by substation.

Order: grid2op's ``topo_vect`` as grid2op builds it on a pandapower grid (its pandapower and
lightsim2grid backends agree): substation 0's elements, then substation 1's, ...; inside a
substation: the ends of its branches in branch order (lines, then transformers; the origin or
the extremity, whichever is there), then its generators, then its loads. So the positions are
grid2op's ``*_pos_topo_vect`` (see :meth:`TopologyLayout.grid2op_arrays`). Values are ``1`` or
``2`` (bus bar) or ``-1`` (disconnected).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from grid_vec.grid import newton_kernel  # compiled from grid_vec/grid/newton_kernel.c
from grid_vec.grid.model import GridModel


@dataclass(frozen=True, eq=False)
class TopologyLayout:
    """Positions of each element end in the topology vector."""

    n_elem: int
    sub_start: np.ndarray  # (n_sub + 1,) first position of each substation, then n_elem
    elem_sub: np.ndarray  # (n_elem,) substation of each position
    pos_load: np.ndarray  # (n_load,)
    pos_gen: np.ndarray  # (n_gen,)
    pos_or: np.ndarray  # (n_branch,)
    pos_ex: np.ndarray  # (n_branch,)
    # (n_elem,) pos_load, pos_gen, pos_or, pos_ex back to back: topo[pos_model] is the bus bar
    # of every element in the model's order, as a backend's set_topology takes them
    pos_model: np.ndarray
    elem_label: np.ndarray  # (n_elem,) str, e.g. "load load_3_0" or "branch 1_2_0 (or)"
    # what isolated_elements' compiled search reads: the elements' substations and positions,
    # which generators are slacks (grid_vec.grid.newton_kernel.isolated's layout)
    connectivity: np.ndarray

    @classmethod
    def from_model(cls, model: GridModel) -> TopologyLayout:
        kinds = [
            ("load", model.load_sub, model.load_names),
            ("gen", model.gen_sub, model.gen_names),
            ("or", model.branch_or_sub, model.branch_names),
            ("ex", model.branch_ex_sub, model.branch_names),
        ]
        # Sort key: substation, then group (branch ends, generators, loads), then the element's
        # index in its group (a branch's origin and extremity are never in one substation).
        subs = np.concatenate([np.asarray(s, dtype=np.int64) for _, s, _ in kinds])
        group = np.concatenate(
            [np.full(len(s), {"load": 2, "gen": 1}.get(kind, 0)) for kind, s, _ in kinds]
        )
        index = np.concatenate([np.arange(len(s)) for _, s, _ in kinds])
        order = np.lexsort((index, group, subs))
        position = np.empty(len(subs), dtype=np.int64)
        position[order] = np.arange(len(subs))
        sizes = np.cumsum([0] + [len(s) for _, s, _ in kinds])
        labels = np.concatenate(
            [
                np.array([_label(kind, str(n)) for n in names], dtype=object)
                for kind, _, names in kinds
            ]
        )
        counts = np.bincount(subs, minlength=model.n_sub)
        pos = {kind: position[sizes[i] : sizes[i + 1]] for i, (kind, _, _) in enumerate(kinds)}
        connectivity = np.concatenate(
            [
                [model.n_sub, model.n_load, model.n_gen, model.n_branch, len(subs)],
                model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub,
                pos["load"], pos["gen"], pos["or"], pos["ex"], model.gen_is_slack,
            ]
        ).astype(np.int64)  # fmt: skip
        return cls(
            n_elem=len(subs),
            sub_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            elem_sub=subs[order],
            pos_load=position[sizes[0] : sizes[1]],
            pos_gen=position[sizes[1] : sizes[2]],
            pos_or=position[sizes[2] : sizes[3]],
            pos_ex=position[sizes[3] : sizes[4]],
            pos_model=position,
            elem_label=labels[order].astype(str),
            connectivity=connectivity,
        )

    def describe_set_bus(
        self, model: GridModel, set_bus: np.ndarray, set_status: np.ndarray
    ) -> str:
        """A general topology action (``set_bus`` per position, ``set_line_status`` per
        branch) in words, e.g. ``"set_bus: load load_3_0 -> 2; set_line_status: branch
        3_4_0 -> +1"``."""
        parts = []
        moved = np.flatnonzero(np.asarray(set_bus) != 0)
        if len(moved):
            parts.append(
                "set_bus: " + ", ".join(f"{self.elem_label[i]} -> {int(set_bus[i])}" for i in moved)
            )
        status = np.flatnonzero(np.asarray(set_status) != 0)
        if len(status):
            parts.append(
                "set_line_status: "
                + ", ".join(
                    f"branch {model.branch_names[b]} -> {int(set_status[b]):+d}" for b in status
                )
            )
        return "; ".join(parts) or "do nothing"

    def grid2op_set_bus(self, set_bus: np.ndarray, set_status: np.ndarray) -> dict:
        """A general topology action in grid2op's vocabulary, the dict grid2op's
        ``action_space(...)`` takes: ``set_bus`` by element kind and id (``loads_id``,
        ``generators_id``, ``lines_or_id``, ``lines_ex_id``: ``(id, bus)`` pairs) and
        ``set_line_status`` (``(branch, status)`` pairs), each only where it asks something
        (``{}``: do nothing)."""
        set_bus, set_status = np.asarray(set_bus), np.asarray(set_status)
        by_kind = {}
        for key, pos in (
            ("loads_id", self.pos_load),
            ("generators_id", self.pos_gen),
            ("lines_or_id", self.pos_or),
            ("lines_ex_id", self.pos_ex),
        ):
            asked = np.flatnonzero(set_bus[pos])
            if len(asked):
                by_kind[key] = [(int(i), int(set_bus[pos[i]])) for i in asked]
        action: dict = {"set_bus": by_kind} if by_kind else {}
        status = np.flatnonzero(set_status)
        if len(status):
            action["set_line_status"] = [(int(b), int(set_status[b])) for b in status]
        return action

    def grid2op_arrays(self, model: GridModel) -> dict[str, np.ndarray]:
        """grid2op's layout arrays under grid2op's names, for agents written against them:
        ``dim_topo``, ``sub_info``, ``{load,gen,line_or,line_ex}_pos_topo_vect``,
        ``..._to_subid`` and ``..._to_sub_pos`` (branches are grid2op's lines: lines, then
        transformers). Read-only."""
        arrays: dict[str, np.ndarray] = {
            "dim_topo": np.asarray(self.n_elem),
            "sub_info": np.diff(self.sub_start),
        }
        for name, pos, sub in (
            ("load", self.pos_load, model.load_sub),
            ("gen", self.pos_gen, model.gen_sub),
            ("line_or", self.pos_or, model.branch_or_sub),
            ("line_ex", self.pos_ex, model.branch_ex_sub),
        ):
            arrays[f"{name}_pos_topo_vect"] = pos
            arrays[f"{name}_to_subid"] = np.asarray(sub, dtype=np.int64)
            arrays[f"{name}_to_sub_pos"] = pos - self.sub_start[sub]
        for array in arrays.values():
            array.flags.writeable = False
        return arrays


_LAYOUTS: weakref.WeakKeyDictionary[GridModel, TopologyLayout] = weakref.WeakKeyDictionary()


def layout_of(model: GridModel) -> TopologyLayout:
    """The layout of ``model``, one per model in a process: the envs of a model (a vector
    env's, or a worker's) share it."""
    layout = _LAYOUTS.get(model)
    if layout is None:
        layout = _LAYOUTS[model] = TopologyLayout.from_model(model)
    return layout


def _label(kind: str, name: str) -> str:
    if kind in ("or", "ex"):
        return f"branch {name} ({kind})"
    return f"{kind} {name}"


def unsolvable(model: GridModel, layout: TopologyLayout, topos: np.ndarray) -> list[str | None]:
    """Why each topology cannot be solved, as the game-over reason grid2op gives, or None.

    One compiled connectivity check for all rows (:func:`isolated_elements`, about 0.1 µs a
    row on case14: cheaper than remembering answers by topology, which cost 16 µs for 25 rows
    in look-ups alone); the reasons are spelt only for the rows that have one.

    Args:
        model: the grid.
        layout: ``model``'s layout.
        topos: ``(k, n_elem)`` topology vectors, one per row.

    Returns:
        Per row: ``"slack disconnected"``, else ``"load NAME isolated"`` (the first isolated
        load), else ``"generator NAME isolated"`` (the first), else None.
    """
    load_iso, gen_iso, slack_off = isolated_elements(model, layout, topos)
    load_cut, gen_cut = load_iso.any(axis=1), gen_iso.any(axis=1)
    reasons: list[str | None] = [None] * len(slack_off)
    cut = slack_off | load_cut | gen_cut
    if not newton_kernel.any_nonzero(cut):  # the usual step: every row solvable
        return reasons
    for row in np.flatnonzero(cut).tolist():
        if slack_off[row]:
            reasons[row] = "slack disconnected"
        elif load_cut[row]:
            reasons[row] = f"load {model.load_names[np.argmax(load_iso[row])]} isolated"
        else:
            reasons[row] = f"generator {model.gen_names[np.argmax(gen_iso[row])]} isolated"
    return reasons


def isolated_elements(
    model: GridModel, layout: TopologyLayout, topos: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which loads and generators are cut off from the slack, and whether a slack is off, for
    many topologies at once.

    One union-find per row over its bus bars joined by the branches in service, compiled
    (``grid_vec/grid/newton_kernel.c``: a few microseconds a row, where a graph search in numpy
    had a fixed cost of a hundred per call).

    Args:
        model: the grid.
        layout: ``model``'s layout.
        topos: ``(k, n_elem)`` topology vectors (bus bars 1, 2 or -1).

    Returns:
        ``(load_isolated, gen_isolated, slack_disconnected)``: ``(k, n_load)``,
        ``(k, n_gen)`` and ``(k,)`` bool. A disconnected load or generator counts as
        isolated; with every slack off, everything is.
    """
    topos = np.ascontiguousarray(topos, dtype=np.int8)
    k = len(topos)
    load_iso = np.empty((k, model.n_load), dtype=bool)
    gen_iso = np.empty((k, model.n_gen), dtype=bool)
    slack_off = np.empty(k, dtype=bool)
    newton_kernel.isolated(layout.connectivity, topos, load_iso, gen_iso, slack_off, k)
    return load_iso, gen_iso, slack_off


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The connected component of each of ``n`` nodes joined by edges ``a[i]-b[i]``, named by
    its smallest node.

    Label propagation over all edges at once, in numpy (measured cheaper than scipy's
    ``connected_components``, whose sparse-matrix setup alone costs more, and than a union-find
    in Python per topology): each node points to a node of its component no larger than
    itself; every round, the node each edge end points to is hooked onto the smaller one of
    the two, then pointers jump twice. A round that changes nothing leaves every node
    pointing to a root and both ends of every edge on the same root: a component's one root,
    its smallest node.
    """
    ends, others = np.concatenate((a, b)), np.concatenate((b, a))
    label = np.arange(n)
    while True:
        target = label[ends]
        hooked = label.copy()
        np.minimum.at(hooked, target, np.minimum(target, label[others]))
        hooked = hooked[hooked]
        hooked = hooked[hooked]
        if np.array_equal(hooked, label):
            return label
        label = hooked
