"""The batched connectivity check against the per-topology one it replaced (#30).

``_one_topology`` is grid_vec's check before #30 (a union-find in Python and ``np.isin``, one
topology per call), kept here as the oracle: the batched check must give the same isolated
loads and generators and the same slack flag, hence the same game-over reasons, on every
topology.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from grid_vec.core.topology import TopologyLayout, isolated_elements, unsolvable
from grid_vec.env.embedded import embedded_model
from grid_vec.grid.model import GridModel


def _one_topology(
    model: GridModel, layout: TopologyLayout, topo: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The pre-#30 ``_isolated_elements``: one topology, union-find over its buses."""
    n_sub = model.n_sub
    gen_bus_bar = topo[layout.pos_gen].astype(np.int64)
    slack = model.gen_is_slack
    slack_on = slack & (gen_bus_bar > 0)
    if not slack_on.any():
        return np.ones(model.n_load, dtype=bool), np.ones(model.n_gen, dtype=bool), True
    or_bus = topo[layout.pos_or].astype(np.int64)
    ex_bus = topo[layout.pos_ex].astype(np.int64)
    on = (or_bus > 0) & (ex_bus > 0)
    parent = list(range(2 * n_sub))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rows = (model.branch_or_sub[on] + (or_bus[on] - 1) * n_sub).tolist()
    cols = (model.branch_ex_sub[on] + (ex_bus[on] - 1) * n_sub).tolist()
    for x, y in zip(rows, cols, strict=True):
        x, y = root(x), root(y)
        if x != y:
            parent[x] = y
    comp = np.array([root(i) for i in range(2 * n_sub)])
    slack_comp = comp[model.gen_sub[slack_on] + (gen_bus_bar[slack_on] - 1) * n_sub]
    load_bus_bar = topo[layout.pos_load].astype(np.int64)
    load_comp = comp[model.load_sub + (np.maximum(load_bus_bar, 1) - 1) * n_sub]
    gen_comp = comp[model.gen_sub + (np.maximum(gen_bus_bar, 1) - 1) * n_sub]
    load_iso = (load_bus_bar < 0) | ~np.isin(load_comp, slack_comp)
    gen_iso = (gen_bus_bar < 0) | ~np.isin(gen_comp, slack_comp)
    return load_iso, gen_iso, bool((slack & (gen_bus_bar < 0)).any())


def _reason(model: GridModel, load_iso: np.ndarray, gen_iso: np.ndarray, slack_off: bool):
    """The pre-#30 ``push_topology``'s reason for one topology's check."""
    if slack_off:
        return "slack disconnected"
    if load_iso.any():
        return f"load {model.load_names[np.argmax(load_iso)]} isolated"
    if gen_iso.any():
        return f"generator {model.gen_names[np.argmax(gen_iso)]} isolated"
    return None


def _random_topologies(layout: TopologyLayout, model: GridModel, n: int, seed: int) -> np.ndarray:
    """``n`` topologies from the base one: bus-2 splits of a few substations, branches out
    (one end or both), loads and generators off, now and then the slack off; a quarter are
    heavily cut (every element off with probability 0.2, on bus bar 2 with 0.2)."""
    rng = np.random.default_rng(seed)
    topos = np.ones((n, layout.n_elem), dtype=np.int8)
    heavy = rng.random(n) < 0.25
    topos[heavy] = rng.choice(
        np.array([-1, 1, 1, 1, 2], dtype=np.int8), (heavy.sum(), layout.n_elem)
    )
    slack_pos = layout.pos_gen[model.gen_is_slack]
    for row in np.flatnonzero(~heavy):
        topo = topos[row]  # a view: written in place
        for sub in rng.choice(model.n_sub, rng.integers(0, 4), replace=False):
            lo, hi = layout.sub_start[sub], layout.sub_start[sub + 1]
            topo[lo:hi] = rng.choice(np.array([1, 2], dtype=np.int8), hi - lo)
        out = rng.choice(model.n_branch, rng.integers(0, 5), replace=False)
        topo[layout.pos_or[out]] = -1
        topo[layout.pos_ex[out[: len(out) // 2]]] = -1
        topo[rng.choice(layout.pos_load, rng.integers(0, 2))] = -1
        topo[rng.choice(layout.pos_gen, rng.integers(0, 2))] = -1
        if rng.random() < 0.05:
            topo[slack_pos] = -1
    return topos


def _two_slacks(model: GridModel) -> GridModel:
    """``model`` with its first non-slack generator made a slack too (a distributed slack)."""
    kind = model.gen_kind.copy()
    kind[np.flatnonzero(kind != "slack")[0]] = "slack"
    return dataclasses.replace(model, gen_kind=kind)


@pytest.fixture(scope="module", params=["case14", "case118", "case14 two slacks"])
def grid(request) -> tuple[GridModel, TopologyLayout]:
    model = embedded_model(request.param.split()[0])
    if "two slacks" in request.param:
        model = _two_slacks(model)
    return model, TopologyLayout.from_model(model)


def test_batched_check_equals_the_per_topology_one(grid):
    model, layout = grid
    topos = _random_topologies(layout, model, 600, seed=1)
    load_iso, gen_iso, slack_off = isolated_elements(model, layout, topos)
    assert load_iso.shape == (600, model.n_load) and gen_iso.shape == (600, model.n_gen)
    kinds = set()
    for row, topo in enumerate(topos):
        want = _one_topology(model, layout, topo)
        np.testing.assert_array_equal(load_iso[row], want[0], err_msg=f"row {row}")
        np.testing.assert_array_equal(gen_iso[row], want[1], err_msg=f"row {row}")
        assert slack_off[row] == want[2], row
        reason = _reason(model, *want)
        kinds.add(reason.split()[0] if reason else None)
        # the same answer alone as in the batch: rows never see each other
        alone = isolated_elements(model, layout, topo[None])
        for got, batched in zip(alone, (load_iso, gen_iso, slack_off), strict=True):
            np.testing.assert_array_equal(got[0], batched[row])
    assert kinds == {None, "slack", "load", "generator"}  # every outcome was exercised


def test_reasons_are_the_per_topology_ones(grid):
    model, layout = grid
    topos = _random_topologies(layout, model, 300, seed=2)
    topos = np.concatenate([topos, topos[:50]])  # repeats
    want = [_reason(model, *_one_topology(model, layout, topo)) for topo in topos]
    assert unsolvable(model, layout, topos) == want
    assert unsolvable(model, layout, topos[::-1]) == want[::-1]
    for k in (0, 1, 8, 32):
        assert unsolvable(model, layout, topos[:k]) == want[:k]


def test_base_topology_is_solvable_and_cut_elements_are_named(grid):
    model, layout = grid
    base = np.ones((1, layout.n_elem), dtype=np.int8)
    assert unsolvable(model, layout, base) == [None]
    load_off, gen_off, slack_off = base.copy(), base.copy(), base.copy()
    load_off[0, layout.pos_load[3]] = -1
    non_slack = np.flatnonzero(~model.gen_is_slack)[0]
    gen_off[0, layout.pos_gen[non_slack]] = -1
    slack_off[0, layout.pos_gen[np.flatnonzero(model.gen_is_slack)[0]]] = -1
    assert unsolvable(model, layout, np.concatenate([load_off, gen_off, slack_off])) == [
        f"load {model.load_names[3]} isolated",
        f"generator {model.gen_names[non_slack]} isolated",
        "slack disconnected",
    ]
