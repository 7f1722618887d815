"""Shared helpers for the grid tests: topology vectors, valid random splits, comparisons."""

from __future__ import annotations

import numpy as np

from grid_vec.grid import GridModel, PowerFlowResults

VM_ATOL_PU = 1e-6
VA_ATOL_RAD = 1e-5
CURRENT_RTOL = 1e-4
CURRENT_ATOL_A = 1e-3  # only matters for near-zero currents (open branch ends)
FLOW_ATOL = 1e-3  # MW / MVAr


def base_topology(model: GridModel) -> list[np.ndarray]:
    """Everything on bus bar 1: load_bus, gen_bus, branch_or_bus, branch_ex_bus."""
    return [
        np.ones(model.n_load, dtype=int),
        np.ones(model.n_gen, dtype=int),
        np.ones(model.n_branch, dtype=int),
        np.ones(model.n_branch, dtype=int),
    ]


def bus_of(model: GridModel, topology: list[np.ndarray]) -> list[np.ndarray]:
    """Global bus (sub + (bar - 1) * n_sub, or -1) of each element, same layout as topology."""
    subs = [model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub]
    return [
        np.where(t == -1, -1, s + (t - 1) * model.n_sub)
        for s, t in zip(subs, topology, strict=True)
    ]


def is_connected(model: GridModel, topology: list[np.ndarray]) -> bool:
    """Whether every bus bar holding an element is reachable from every other one."""
    load, gen, bor, bex = bus_of(model, topology)
    on = (bor != -1) & (bex != -1)
    used = set(load[load != -1]) | set(gen[gen != -1]) | set(bor[on]) | set(bex[on])
    neighbours: dict[int, set[int]] = {b: set() for b in used}
    for a, b in zip(bor[on], bex[on], strict=True):
        neighbours[a].add(b)
        neighbours[b].add(a)
    start = next(iter(used))
    seen, todo = {start}, [start]
    while todo:
        for nxt in neighbours[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen == used


def random_outage(model: GridModel, rng: np.random.Generator) -> list[np.ndarray]:
    """One branch disconnected (at a random end), keeping the grid connected."""
    while True:
        topology = base_topology(model)
        branch = int(rng.integers(model.n_branch))
        topology[2 + int(rng.integers(2))][branch] = -1
        if is_connected(model, topology):
            return topology


def random_split(model: GridModel, rng: np.random.Generator) -> list[np.ndarray]:
    """Some elements of one substation moved to bus bar 2, both bars non-empty, connected."""
    subs = [model.load_sub, model.gen_sub, model.branch_or_sub, model.branch_ex_sub]
    while True:
        sub = int(rng.integers(model.n_sub))
        members = [(k, i) for k, s in enumerate(subs) for i in np.flatnonzero(s == sub)]
        if len(members) < 4:
            continue
        moved = rng.random(len(members)) < 0.5
        if moved.all() or not moved.any():
            continue
        topology = base_topology(model)
        for (k, i), move in zip(members, moved, strict=True):
            if move:
                topology[k][i] = 2
        if is_connected(model, topology):
            return topology


def perturbed_injections(model: GridModel, rng: np.random.Generator) -> list[np.ndarray]:
    """Loads and generator set points around the base case (p +-10 %, v +-2 %).

    lightsim2grid stores injections in float32, so the values are drawn float32-exact (and the
    voltage set points float32-exact in p.u.): both solvers then solve exactly the same case.
    """
    scale = 1.0 + 0.1 * rng.standard_normal(model.n_load)
    gen_p = model.gen_p0 * (1.0 + 0.1 * rng.standard_normal(model.n_gen))
    vn_kv = model.sub_vn_kv[model.gen_sub]
    vm_pu = model.gen_v0 / vn_kv * (1.0 + 0.02 * rng.uniform(-1.0, 1.0, model.n_gen))
    return [
        _f32(model.load_p0 * scale),
        _f32(model.load_q0 * scale),
        _f32(gen_p),
        _f32(vm_pu) * vn_kv,
    ]


def _f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32).astype(np.float64)


def assert_results_close(fast: PowerFlowResults, ref: PowerFlowResults, context: str) -> None:
    """The issue's tolerances: vm, va, branch currents (relative) and branch p/q."""
    checks = [
        ("bus_vm_pu", VM_ATOL_PU, 0.0),
        ("bus_va_rad", VA_ATOL_RAD, 0.0),
        ("a_or", CURRENT_ATOL_A, CURRENT_RTOL),
        ("a_ex", CURRENT_ATOL_A, CURRENT_RTOL),
        ("p_or", FLOW_ATOL, 0.0),
        ("q_or", FLOW_ATOL, 0.0),
        ("p_ex", FLOW_ATOL, 0.0),
        ("q_ex", FLOW_ATOL, 0.0),
    ]
    for field, atol, rtol in checks:
        np.testing.assert_allclose(
            getattr(fast, field),
            getattr(ref, field),
            atol=atol,
            rtol=rtol,
            err_msg=f"{field} {context}",
        )
