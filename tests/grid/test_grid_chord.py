"""The batched chord solve (grid_vec/grid/chord.py) against lightsim2grid's own solves.

A row that kept its topology for a few solves is solved by the chord; each test compares it
with a twin backend forced through lightsim2grid (``_steady_solves = 0``: the path every row
took before) on the same injections, topology and warm start.
"""

from __future__ import annotations

import gc
import pickle
import weakref
from functools import partial

import numpy as np
import pytest
from grid_helpers import perturbed_injections, random_outage, random_split

from grid_vec.grid import chord
from grid_vec.grid.backend import FLOW_FIELDS, Backends, InjectionRows, flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.lightsim import LightSimBackend
from grid_vec.grid.lightsim_rows import BY_CHORD
from grid_vec.grid.networks import load_network

N_ROWS = 6
N_STEPS = 5
# what the chord's stopping test (1e-8 p.u. of mismatch) allows, in grid_vec's units
ATOL = {"p": 1e-5, "q": 1e-5, "v": 1e-5, "a": 1e-3, "storage_theta": 1e-7}


@pytest.fixture(scope="module", params=["case14", "case118"])
def model(request):
    return compile_net(load_network(request.param), name=request.param)


def _pair(model, rng, n: int, *, split: bool):
    """Two lists of ``n`` backends (chord, lightsim-only) in the same random topologies."""
    base = LightSimBackend(model)
    chords, refs = [base.copy() for _ in range(n)], [base.copy() for _ in range(n)]
    for a, b in zip(chords, refs, strict=True):
        topology = random_split(model, rng) if split else random_outage(model, rng)
        a.set_topology(*topology)
        b.set_topology(*topology)
    return chords, refs


def _step(model, chords, refs, injections, flows_a, flows_b) -> tuple[list[int], list[int]]:
    rows = list(range(len(chords)))
    for a, b, inj in zip(chords, refs, injections, strict=True):
        a.set_injections(*inj)
        b.set_injections(*inj)
        b._steady_solves = 0  # always lightsim2grid
    return (
        LightSimBackend.solve_rows(chords, rows, flows_a),
        LightSimBackend.solve_rows(refs, rows, flows_b),
    )


def _by_chord(backend) -> bool:
    """Whether the backend's last solve was the chord's."""
    return backend._solved_by == BY_CHORD


def _tolerance(field: str) -> float:
    return ATOL.get(field, ATOL.get(field.split("_")[-1][0], 1e-5))


def _chord_solved(model, seed: int):
    """A backend (random outage, perturbed injections) whose last solve was the chord's, its
    flows row and its injections."""
    rng = np.random.default_rng(seed)
    (a,), _ = _pair(model, rng, 1, split=False)
    flows = np.zeros((1, flow_slices(model)["all"].stop))
    inj = perturbed_injections(model, rng)
    for _ in range(chord.STEADY_SOLVES + 1):
        a.set_injections(*inj)
        assert LightSimBackend.solve_rows([a], [0], flows) == []
    assert a._solved_by == BY_CHORD
    return a, flows, inj


@pytest.mark.parametrize("split", [False, True], ids=["outage", "split"])
def test_chord_rows_equal_lightsim_solves_within_the_solver_tolerance(model, split) -> None:
    rng = np.random.default_rng(7)
    chords, refs = _pair(model, rng, N_ROWS, split=split)
    width = flow_slices(model)["all"].stop
    flows_a, flows_b = np.zeros((N_ROWS, width)), np.zeros((N_ROWS, width))
    slices = flow_slices(model)
    by_chord = 0
    # the same operating point drifting step to step (the case of an env's episode)
    start = [perturbed_injections(model, rng) for _ in range(N_ROWS)]
    for step in range(N_STEPS):
        scale = 1.0 + 0.01 * step
        injections = [(p * scale, q * scale, g * scale, v) for p, q, g, v in start]
        failed_a, failed_b = _step(model, chords, refs, injections, flows_a, flows_b)
        assert failed_a == failed_b
        by_chord += sum(a._solved_by == BY_CHORD for a in chords)
        for name in FLOW_FIELDS:
            part = slices[name]
            np.testing.assert_allclose(
                flows_a[:, part], flows_b[:, part], rtol=1e-7, atol=_tolerance(name), err_msg=name
            )
    # the first steps are lightsim2grid's (a new topology); the chord takes the others
    assert by_chord >= (N_STEPS - chord.STEADY_SOLVES) * (N_ROWS - len(failed_a)) > 0


def test_chord_results_equal_its_flows_row(model) -> None:
    a, flows, _ = _chord_solved(model, 3)
    res = a.results()
    slices = flow_slices(model)
    for name in FLOW_FIELDS:
        np.testing.assert_array_equal(getattr(res, name), flows[0, slices[name]], err_msg=name)
    read = np.empty(flows.shape[1])
    a.read_flows(read)
    np.testing.assert_array_equal(read, flows[0])


def test_a_chord_row_is_bitwise_the_same_in_a_batch_of_one_and_of_many(model) -> None:
    rng = np.random.default_rng(11)
    chords, _ = _pair(model, rng, N_ROWS, split=True)
    alone = [c.copy() for c in chords]
    width = flow_slices(model)["all"].stop
    together, single = np.zeros((N_ROWS, width)), np.zeros((1, width))
    injections = [perturbed_injections(model, rng) for _ in range(N_ROWS)]
    for _ in range(chord.STEADY_SOLVES + 2):
        for a, inj in zip(chords, injections, strict=True):
            a.set_injections(*inj)
        LightSimBackend.solve_rows(chords, list(range(N_ROWS)), together)
        for i, (b, inj) in enumerate(zip(alone, injections, strict=True)):
            b.set_injections(*inj)
            LightSimBackend.solve_rows([b], [0], single)
            np.testing.assert_array_equal(single[0], together[i])
            np.testing.assert_array_equal(b._V, chords[i]._V)


def test_rows_of_one_topology_are_bitwise_the_same_in_any_lane_and_block(model) -> None:
    """The kernel iterates the rows of a plan side by side (8 lanes per block, fewer in the
    last one): a row's iterations, voltages and flows must not depend on its lane, on its
    block's width or on the rows beside it, rows that stop sooner or never converge included."""
    base = LightSimBackend(model)
    base.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
    assert base.run_ac()
    plan = chord.PlanBook(partial(LightSimBackend, model)).plan(base._buses)
    assert plan is not None
    rng = np.random.default_rng(5)
    k = 19  # blocks of 8, 8 and 3
    # rows at different distances from the common first guess: different iteration counts
    scale = 1.0 + rng.uniform(-0.3, 0.3, (k, 1))
    injections = np.concatenate([model.load_p0, model.load_q0, model.gen_p0])[None] * scale
    injections[3] *= 40.0  # far beyond what the grid can carry: never converges
    storage = np.zeros((k, model.n_storage))
    first_guess = np.repeat(np.asarray(base._V)[None], k, axis=0)
    width = flow_slices(model)["all"].stop

    def solve(order):
        V, out = first_guess[order].copy(), np.zeros((len(order), width))
        iters = chord.solve_rows(plan, injections[order], storage[order], V, out)
        return iters, V, out

    iters, V, out = solve(np.arange(k))
    assert iters[3] == -1 and len(set(iters[iters >= 0].tolist())) >= 2
    orders = [np.arange(k)[::-1], rng.permutation(k), *([i] for i in range(k))]
    for order in orders:
        got_iters, got_V, got_out = solve(np.asarray(order))
        np.testing.assert_array_equal(got_iters, iters[order])
        ok = got_iters >= 0
        np.testing.assert_array_equal(got_V[ok], V[order][ok])
        np.testing.assert_array_equal(got_out[ok], out[order][ok])


def test_rows_without_a_plan_are_solved_by_lightsim_bitwise(model, monkeypatch) -> None:
    monkeypatch.setattr(chord, "build_plan", lambda *args, **kwargs: None)
    rng = np.random.default_rng(5)
    chords, refs = _pair(model, rng, 3, split=False)
    width = flow_slices(model)["all"].stop
    flows_a, flows_b = np.zeros((3, width)), np.zeros((3, width))
    injections = [perturbed_injections(model, rng) for _ in range(3)]
    for _ in range(3):
        assert _step(model, chords, refs, injections, flows_a, flows_b)[0] == []
        assert not any(_by_chord(a) for a in chords)
        np.testing.assert_array_equal(flows_a, flows_b)


def test_a_chord_that_does_not_converge_falls_back_to_lightsim(model, monkeypatch) -> None:
    rng = np.random.default_rng(9)
    (a,), (b,) = _pair(model, rng, 1, split=False)
    width = flow_slices(model)["all"].stop
    flows_a, flows_b = np.zeros((1, width)), np.zeros((1, width))
    p, q, g, v = perturbed_injections(model, rng)
    for _ in range(chord.STEADY_SOLVES):
        assert _step(model, [a], [b], [(p, q, g, v)], flows_a, flows_b) == ([], [])
    # one chord iteration never meets the tolerance from a moved operating point: the row is
    # lightsim2grid's Newton solve from the same warm start, bit for bit
    monkeypatch.setattr(chord, "CHORD_MAX_ITER", 1)
    moved = (p * 1.05, q * 1.05, g * 1.05, v)
    assert _step(model, [a], [b], [moved], flows_a, flows_b) == ([], [])
    assert not _by_chord(a)
    np.testing.assert_array_equal(flows_a, flows_b)
    np.testing.assert_array_equal(a._V, b._V)


def test_new_voltage_setpoints_send_a_row_to_lightsim(model) -> None:
    a, flows, (p, q, g, v) = _chord_solved(model, 2)
    a.set_injections(p, q, g, v * 1.01)  # the chord keeps the magnitudes of its warm start
    LightSimBackend.solve_rows([a], [0], flows)
    assert not _by_chord(a)


def test_a_backend_after_a_chord_solve_pickles_and_copies_with_its_injections(model) -> None:
    a, flows, _ = _chord_solved(model, 4)
    for other in (pickle.loads(pickle.dumps(a)), a.copy()):
        # the injections never handed to lightsim2grid travel with the backend
        np.testing.assert_array_equal(other._inj32, a._inj32)
        other._steady_solves = 0
        again = np.zeros_like(flows)
        assert LightSimBackend.solve_rows([other], [0], again) == []
        np.testing.assert_allclose(again, flows, atol=1e-3)
    assert a.copy()._book is a._book  # a batch's envs share their plans


def test_a_blown_up_iterate_is_never_taken_for_a_solution(model) -> None:
    # a NaN mismatch compares false with everything: it once passed the stopping test, and a
    # row whose chord had blown up reported NaN flows (no overflow, no trip) instead of
    # falling back to lightsim2grid (seen in parity_continuous.py's combined actions, seed 2)
    a, flows, _ = _chord_solved(model, 1)
    injections, storage = a._row_injections()
    V = a._V[None].copy()
    V[0, a._plan.pvpq[0]] = np.nan
    out = np.zeros_like(flows)
    assert chord.solve_rows(a._plan, injections, storage, V, out).tolist() == [-1]
    assert not out.any()  # nothing written for a row that did not converge


def test_injections_set_for_many_rows_solve_bitwise_as_set_one_by_one(model) -> None:
    """``set_injections_rows`` (one float32 cast for the rows, the voltage setpoints compared
    at once; a row alone into its own buffer) leaves each backend as ``set_injections_trusted``
    does: the same buffers, the
    same setpoints sent, the same flows over steady (chord) steps, a step where one row's
    setpoints move (that row alone goes back to lightsim2grid), and a pickle and a copy."""
    rng = np.random.default_rng(7)
    chords, refs = _pair(model, rng, N_ROWS, split=False)
    rows = list(range(N_ROWS))
    flows_a, flows_b = (np.zeros((N_ROWS, flow_slices(model)["all"].stop)) for _ in "ab")
    setpoints = [perturbed_injections(model, rng)[3] for _ in rows]  # steady: kept
    for step in range(chord.STEADY_SOLVES + 3):
        injections = [(*perturbed_injections(model, rng)[:3], v) for v in setpoints]
        if step == chord.STEADY_SOLVES + 1:
            p, q, g, v = injections[2]
            injections[2] = (p, q, g, v * 1.01)
        packed = [np.concatenate(injection) for injection in injections]
        LightSimBackend.set_injections_rows(chords, rows, InjectionRows.of_rows(packed, model))
        for b, inj in zip(refs, injections, strict=True):
            b.set_injections_trusted(*inj)
        assert LightSimBackend.solve_rows(chords, rows, flows_a) == []
        assert LightSimBackend.solve_rows(refs, rows, flows_b) == []
        np.testing.assert_array_equal(flows_a, flows_b)
        for a, b in zip(chords, refs, strict=True):
            np.testing.assert_array_equal(a._inj32, b._inj32)
            assert a._gen_v_sent == b._gen_v_sent
            assert _by_chord(a) == _by_chord(b)
        if step == chord.STEADY_SOLVES + 1:
            assert [_by_chord(a) for a in chords] == [True, True, False] + [True] * (N_ROWS - 3)
    for one, ref in zip(chords[:2], refs[:2], strict=True):  # a row alone (a GridEnv's)
        injection = perturbed_injections(model, rng)
        LightSimBackend.set_injections_rows(
            [one], [0], InjectionRows.of_rows([np.concatenate(injection)], model)
        )
        ref.set_injections_trusted(*injection)
        np.testing.assert_array_equal(one._inj32, ref._inj32)
        assert one._gen_v_sent == ref._gen_v_sent and one._steady_solves == ref._steady_solves
    for other in (pickle.loads(pickle.dumps(chords[1])), chords[1].copy()):
        assert not np.shares_memory(other._inj32, chords[1]._inj32)  # a buffer of its own
        np.testing.assert_array_equal(other._inj32, chords[1]._inj32)


def test_a_backend_solved_through_another_list_keeps_its_own_row_in_each(model) -> None:
    """The solver state of a batch's backends lives in one array per field, a row each
    (``grid_vec.grid.lightsim_rows``), gathered by the list the batch methods get. A backend
    that another list gathers (two of six here) leaves the first list's rows, and when the
    first list is given again it is gathered again: every backend then solves bitwise as the
    same backend solved alone at every step, through whichever list, and its timings count
    every one of its power flows."""
    rng = np.random.default_rng(11)
    batch, _ = _pair(model, rng, N_ROWS, split=False)
    alone = [b.copy() for b in batch]
    width = flow_slices(model)["all"].stop
    setpoints = [perturbed_injections(model, rng)[3] for _ in batch]  # kept: the chord's rows

    def step(backends: list, rows: list[int]) -> None:
        packed = [
            np.concatenate([*perturbed_injections(model, rng)[:3], setpoints[batch.index(b)]])
            for b in (backends[row] for row in rows)
        ]
        flows = np.zeros((len(backends), width))
        LightSimBackend.set_injections_rows(backends, rows, InjectionRows.of_rows(packed, model))
        assert LightSimBackend.solve_rows(backends, rows, flows) == []
        for j, row in enumerate(rows):
            twin, own = alone[batch.index(backends[row])], np.zeros((1, width))
            LightSimBackend.set_injections_rows(
                [twin], [0], InjectionRows.of_rows([packed[j]], model)
            )
            assert LightSimBackend.solve_rows([twin], [0], own) == []
            np.testing.assert_array_equal(flows[row], own[0])

    rows = list(range(N_ROWS))
    for _ in range(chord.STEADY_SOLVES + 1):
        step(batch, rows)
    other = [batch[2], batch[4]]
    for _ in range(2):
        step(other, [0, 1])
    step(batch, rows)
    assert [_by_chord(b) for b in batch] == [_by_chord(t) for t in alone]
    assert _by_chord(batch[2]) and _by_chord(batch[4])  # the chord solved the moved rows
    for b, twin in zip(batch, alone, strict=True):
        np.testing.assert_array_equal(b._V, twin._V)
        assert b.timings["n_powerflow"] == twin.timings["n_powerflow"] > 0
        assert b.timings["powerflow"] > 0 and b.timings["set_injections"] > 0


def test_a_batch_of_gathered_backends_goes_with_its_list_no_collector_needed(model) -> None:
    """The rows a batch method gathers refer to their list weakly (a batch's ``Backends``):
    dropping the list frees its backends (and their lightsim2grid grids) at once, with the
    garbage collector off. A strong reference made a cycle, and a look-ahead over case118's
    whole catalog then held its chunks of 512 grid copies until a full collection (peak
    resident memory 0.56 -> 1.4 GB)."""
    rng = np.random.default_rng(3)
    base = LightSimBackend(model)
    batch = Backends(base.copy() for _ in range(4))
    packed = [np.concatenate(perturbed_injections(model, rng)) for _ in batch]
    LightSimBackend.set_injections_rows(batch, [0, 1, 2, 3], InjectionRows.of_rows(packed, model))
    flows = np.zeros((4, flow_slices(model)["all"].stop))
    assert LightSimBackend.solve_rows(batch, [0, 1, 2, 3], flows) == []
    alive = [weakref.ref(b) for b in batch]
    gc.disable()
    try:
        del batch
        assert [ref() for ref in alive] == [None] * 4
    finally:
        gc.enable()


def test_copies_of_rows_taken_together_solve_bitwise_as_copies_taken_one_by_one(model) -> None:
    """``copy_rows`` (a look-ahead's copies: the rows taken from the batch's in one gather,
    a row repeated for each of its candidates) gives backends that solve, through the chord
    and lightsim2grid, bitwise as ``copy()`` of each, and leaves the batch as it was."""
    rng = np.random.default_rng(5)
    batch, _ = _pair(model, rng, 4, split=False)
    batch = Backends(batch)
    setpoints = [perturbed_injections(model, rng)[3] for _ in batch]
    width = flow_slices(model)["all"].stop

    def step(backends: list, which: list[int], injections: list[np.ndarray]) -> np.ndarray:
        rows = list(range(len(backends)))
        flows = np.zeros((len(backends), width))
        packed = [np.concatenate([*injections[j][:3], setpoints[j]]) for j in which]
        LightSimBackend.set_injections_rows(backends, rows, InjectionRows.of_rows(packed, model))
        assert LightSimBackend.solve_rows(backends, rows, flows) == []
        return flows

    for _ in range(chord.STEADY_SOLVES + 1):
        step(batch, [0, 1, 2, 3], [perturbed_injections(model, rng) for _ in batch])
    before = [b.solver_state() for b in batch]
    which = [2, 2, 0]
    together = LightSimBackend.copy_rows(batch, which)
    one_by_one = [batch[j].copy() for j in which]
    for _ in range(2):
        injections = [perturbed_injections(model, rng) for _ in batch]
        np.testing.assert_array_equal(
            step(together, which, injections), step(one_by_one, which, injections)
        )
    assert all(_by_chord(b) for b in together)
    for b, state in zip(batch, before, strict=True):
        np.testing.assert_array_equal(b.solver_state(), state)
