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
from dataclasses import dataclass, field

import numpy as np

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
    elem_label: np.ndarray  # (n_elem,) str, e.g. "load load_3_0" or "branch 1_2_0 (or)"
    # isolated_elements results by topology (bytes): cascades and agents revisit topologies,
    # and the graph search costs about 0.4 ms on case14
    isolation_cache: dict[bytes, tuple[np.ndarray, np.ndarray, bool]] = field(
        default_factory=dict, repr=False
    )

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
        return cls(
            n_elem=len(subs),
            sub_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            elem_sub=subs[order],
            pos_load=position[sizes[0] : sizes[1]],
            pos_gen=position[sizes[1] : sizes[2]],
            pos_or=position[sizes[2] : sizes[3]],
            pos_ex=position[sizes[3] : sizes[4]],
            elem_label=labels[order].astype(str),
        )

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
    env's, or a worker's) share its isolation cache."""
    layout = _LAYOUTS.get(model)
    if layout is None:
        layout = _LAYOUTS[model] = TopologyLayout.from_model(model)
    return layout


def _label(kind: str, name: str) -> str:
    if kind in ("or", "ex"):
        return f"branch {name} ({kind})"
    return f"{kind} {name}"


_CACHED_TOPOLOGIES = 4096  # per layout; the cache starts over when full


def isolated_elements(
    model: GridModel, layout: TopologyLayout, topo: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Which loads and generators are cut off from the slack, and whether a slack is off.

    Buses are numbered ``sub`` (bus bar 1) and ``n_sub + sub`` (bus bar 2); two buses are
    joined by every branch in service. Returns ``(load_isolated, gen_isolated,
    slack_disconnected)``, read-only; a disconnected load or generator counts as isolated.
    ``layout`` (built from ``model``) remembers the answer for each topology.
    """
    key = np.asarray(topo, dtype=np.int8).tobytes()
    found = layout.isolation_cache.get(key)
    if found is None:
        if len(layout.isolation_cache) >= _CACHED_TOPOLOGIES:
            layout.isolation_cache.clear()
        found = _isolated_elements(model, layout, topo)
        found[0].flags.writeable = found[1].flags.writeable = False
        layout.isolation_cache[key] = found
    return found


def _isolated_elements(
    model: GridModel, layout: TopologyLayout, topo: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    n_sub = model.n_sub
    gen_bus_bar = topo[layout.pos_gen]
    slack = model.gen_is_slack
    slack_on = slack & (gen_bus_bar > 0)
    if not slack_on.any():
        return (
            np.ones(model.n_load, dtype=bool),
            np.ones(model.n_gen, dtype=bool),
            True,
        )
    or_bus = topo[layout.pos_or]
    ex_bus = topo[layout.pos_ex]
    on = (or_bus > 0) & (ex_bus > 0)
    rows = (model.branch_or_sub[on] + (or_bus[on] - 1) * n_sub).tolist()
    cols = (model.branch_ex_sub[on] + (ex_bus[on] - 1) * n_sub).tolist()
    comp = np.asarray(_components(2 * n_sub, rows, cols))
    slack_comp = comp[model.gen_sub[slack_on] + (gen_bus_bar[slack_on] - 1) * n_sub]
    load_bus_bar = topo[layout.pos_load]
    load_comp = comp[model.load_sub + (np.maximum(load_bus_bar, 1) - 1) * n_sub]
    gen_comp = comp[model.gen_sub + (np.maximum(gen_bus_bar, 1) - 1) * n_sub]
    load_iso = (load_bus_bar < 0) | ~np.isin(load_comp, slack_comp)
    gen_iso = (gen_bus_bar < 0) | ~np.isin(gen_comp, slack_comp)
    return load_iso, gen_iso, bool((slack & (gen_bus_bar < 0)).any())


def _components(n: int, a: list[int], b: list[int]) -> list[int]:
    """The connected component (its root) of each of ``n`` nodes joined by edges ``a[i]-b[i]``:
    a union-find with path halving, in plain Python (a grid has a few hundred buses at most,
    far below the cost of building a sparse graph for scipy)."""
    parent = list(range(n))
    for x, y in zip(a, b, strict=True):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        while parent[y] != y:
            parent[y] = parent[parent[y]]
            y = parent[y]
        if x != y:
            parent[x] = y
    for i in range(n):
        root = i
        while parent[root] != root:
            root = parent[root]
        parent[i] = root
    return parent
