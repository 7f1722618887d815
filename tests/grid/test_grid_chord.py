"""The batched chord solve (grid_vec/grid/chord.py) against lightsim2grid's own solves.

A row of a :class:`LightSimBatch` that kept its topology for a few solves is solved by the
chord; each test compares it with a twin row kept off the chord (its steady solve count held
at 0: the path every row took before the chord, the batched Newton and lightsim2grid for
what the Newton refuses) on the same injections, topology and warm start.
"""

from __future__ import annotations

import gc
import pickle
import weakref

import numpy as np
import pytest
from grid_helpers import perturbed_injections, random_outage, random_split

from grid_vec.grid import chord
from grid_vec.grid.backend import FLOW_FIELDS, InjectionRows, flow_slices
from grid_vec.grid.compile import compile_net
from grid_vec.grid.lightsim import LightSimBackend
from grid_vec.grid.lightsim_batch import LightSimBatch
from grid_vec.grid.lightsim_rows import BY_CHORD, LIGHTSIM
from grid_vec.grid.networks import load_network

N_ROWS = 6
N_STEPS = chord.STEADY_SOLVES + 3  # steps played: the chord takes the last ones
# what the chord's stopping test (1e-8 p.u. of mismatch) allows, in grid_vec's units
ATOL = {"p": 1e-5, "q": 1e-5, "v": 1e-5, "a": 1e-3, "storage_theta": 1e-7}


@pytest.fixture(scope="module", params=["case14", "case118"])
def model(request):
    return compile_net(load_network(request.param), name=request.param)


def _buses(model, topology: list[np.ndarray]) -> np.ndarray:
    """A topology (load, gen, branch origin and extremity bus bars) as a batch takes it: one
    new int32 row, storage units on bus bar 1."""
    return np.concatenate([*topology, np.ones(model.n_storage, int)]).astype(np.int32)[None]


def _pair(model, rng, n: int, *, split: bool) -> tuple[LightSimBatch, LightSimBatch]:
    """Two batches of ``n`` rows (chord, kept off the chord), row i of each in the same random
    topology."""
    chords, refs = LightSimBatch.fresh(model, n), LightSimBatch.fresh(model, n)
    for row in range(n):
        topology = random_split(model, rng) if split else random_outage(model, rng)
        chords.set_topologies([row], _buses(model, topology))
        refs.set_topologies([row], _buses(model, topology))
    return chords, refs


def _injection_rows(model, injections) -> InjectionRows:
    """Each row's ``(load_p, load_q, gen_p, gen_v)`` as a batch takes them."""
    return InjectionRows.of_rows([np.concatenate(injection) for injection in injections], model)


def _off_the_chord(batch: LightSimBatch) -> None:
    """No steady solve yet for any row of ``batch``: its next solve is never the chord's."""
    batch.rows.steady[:] = 0
    batch.rows.route[:] = LIGHTSIM


def _step(model, chords, refs, injections, flows_a, flows_b) -> tuple[list[int], list[int]]:
    rows = list(range(len(chords)))
    chords.set_injections(rows, _injection_rows(model, injections))
    refs.set_injections(rows, _injection_rows(model, injections))
    _off_the_chord(refs)
    return chords.solve(rows, flows_a), refs.solve(rows, flows_b)


def _by_chord(batch: LightSimBatch, row: int = 0) -> bool:
    """Whether the row's last solve was the chord's."""
    return batch.rows.solved_by[row] == BY_CHORD


def _tolerance(field: str) -> float:
    return ATOL.get(field, ATOL.get(field.split("_")[-1][0], 1e-5))


def _chord_solved(model, seed: int):
    """A batch of one row (random outage, perturbed injections) whose last solve was the
    chord's, its flows row and its injections."""
    rng = np.random.default_rng(seed)
    a, _ = _pair(model, rng, 1, split=False)
    flows = np.zeros((1, flow_slices(model)["all"].stop))
    inj = perturbed_injections(model, rng)
    for _ in range(chord.STEADY_SOLVES + 1):
        a.set_injections([0], _injection_rows(model, [inj]))
        assert a.solve([0], flows) == []
    assert _by_chord(a)
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
        by_chord += sum(_by_chord(chords, row) for row in range(N_ROWS))
        for name in FLOW_FIELDS:
            part = slices[name]
            np.testing.assert_allclose(
                flows_a[:, part], flows_b[:, part], rtol=1e-7, atol=_tolerance(name), err_msg=name
            )
    # the first steps are lightsim2grid's (a new topology); the chord takes the others
    assert by_chord >= (N_STEPS - chord.STEADY_SOLVES) * (N_ROWS - len(failed_a)) > 0


def test_chord_results_equal_its_flows_row(model) -> None:
    a, flows, _ = _chord_solved(model, 3)
    res = a.results(0)
    slices = flow_slices(model)
    for name in FLOW_FIELDS:
        np.testing.assert_array_equal(getattr(res, name), flows[0, slices[name]], err_msg=name)
    read = np.empty(flows.shape[1])
    a.read_flows(0, read)
    np.testing.assert_array_equal(read, flows[0])


def test_a_chord_row_is_bitwise_the_same_in_a_batch_of_one_and_of_many(model) -> None:
    rng = np.random.default_rng(11)
    chords, _ = _pair(model, rng, N_ROWS, split=True)
    alone = [chords.take([row]) for row in range(N_ROWS)]
    width = flow_slices(model)["all"].stop
    together, single = np.zeros((N_ROWS, width)), np.zeros((1, width))
    injections = [perturbed_injections(model, rng) for _ in range(N_ROWS)]
    for _ in range(chord.STEADY_SOLVES + 2):
        chords.set_injections(list(range(N_ROWS)), _injection_rows(model, injections))
        chords.solve(list(range(N_ROWS)), together)
        for i, (b, inj) in enumerate(zip(alone, injections, strict=True)):
            b.set_injections([0], _injection_rows(model, [inj]))
            b.solve([0], single)
            np.testing.assert_array_equal(single[0], together[i])
            np.testing.assert_array_equal(b.rows.V[0], chords.rows.V[i])
    assert any(_by_chord(chords, row) for row in range(N_ROWS))  # the chord solved rows


def test_rows_of_one_topology_are_bitwise_the_same_in_any_lane_and_block(model) -> None:
    """The kernel iterates the rows of a plan side by side (8 lanes per block, fewer in the
    last one): a row's iterations, voltages and flows must not depend on its lane, on its
    block's width or on the rows beside it, rows that stop sooner or never converge included."""
    base = LightSimBackend(model)
    base.set_injections(model.load_p0, model.load_q0, model.gen_p0, model.gen_v0)
    assert base.run_ac()
    (plan,), _ = base.batch.shared.book.plans(base.batch.rows.buses[:1])
    assert plan is not None
    rng = np.random.default_rng(5)
    k = 19  # blocks of 8, 8 and 3
    # rows at different distances from the common first guess: different iteration counts
    scale = 1.0 + rng.uniform(-0.3, 0.3, (k, 1))
    injections = np.concatenate([model.load_p0, model.load_q0, model.gen_p0])[None] * scale
    injections[3] *= 40.0  # far beyond what the grid can carry: never converges
    storage = np.zeros((k, model.n_storage))
    first_guess = np.repeat(base.batch.rows.V[:1], k, axis=0)
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
        assert not any(_by_chord(chords, row) for row in range(3))
        np.testing.assert_array_equal(flows_a, flows_b)


def test_a_chord_that_does_not_converge_falls_back_to_lightsim(model, monkeypatch) -> None:
    rng = np.random.default_rng(9)
    a, b = _pair(model, rng, 1, split=False)
    width = flow_slices(model)["all"].stop
    flows_a, flows_b = np.zeros((1, width)), np.zeros((1, width))
    p, q, g, v = perturbed_injections(model, rng)
    for _ in range(chord.STEADY_SOLVES):
        assert _step(model, a, b, [(p, q, g, v)], flows_a, flows_b) == ([], [])
    # one chord iteration never meets the tolerance from a moved operating point: the row is
    # lightsim2grid's Newton solve from the same warm start, bit for bit
    monkeypatch.setattr(chord, "CHORD_MAX_ITER", 1)
    moved = (p * 1.05, q * 1.05, g * 1.05, v)
    assert _step(model, a, b, [moved], flows_a, flows_b) == ([], [])
    assert not _by_chord(a)
    np.testing.assert_array_equal(flows_a, flows_b)
    np.testing.assert_array_equal(a.rows.V, b.rows.V)


def test_new_voltage_setpoints_send_a_row_to_lightsim(model) -> None:
    a, flows, (p, q, g, v) = _chord_solved(model, 2)
    # the chord keeps the magnitudes of its warm start
    a.set_injections([0], _injection_rows(model, [(p, q, g, v * 1.01)]))
    a.solve([0], flows)
    assert not _by_chord(a)


def test_a_backend_after_a_chord_solve_pickles_and_copies_with_its_injections(model) -> None:
    a, flows, _ = _chord_solved(model, 4)
    backend = LightSimBackend.of_batch(a)  # the one-row view of a batch of one
    for other in (pickle.loads(pickle.dumps(backend)).batch, backend.copy().batch, a.take([0])):
        # the injections never handed to lightsim2grid travel with the row
        np.testing.assert_array_equal(other.rows.inj32, a.rows.inj32)
        _off_the_chord(other)
        again = np.zeros_like(flows)
        assert other.solve([0], again) == []
        np.testing.assert_allclose(again, flows, atol=1e-3)
    assert backend.copy().batch.shared.book is a.shared.book  # a batch's rows share their plans
    assert a.take([0, 0]).shared.book is a.shared.book


def test_a_blown_up_iterate_is_never_taken_for_a_solution(model) -> None:
    # a NaN mismatch compares false with everything: it once passed the stopping test, and a
    # row whose chord had blown up reported NaN flows (no overflow, no trip) instead of
    # falling back to lightsim2grid (seen in parity_continuous.py's combined actions, seed 2)
    a, flows, _ = _chord_solved(model, 1)
    injections = a.rows.inj32[:1].astype(np.float64)
    storage = a.rows.storage_p32[:1].astype(np.float64)
    plan = a.rows.plan[0]
    V = a.rows.V[:1].copy()
    V[0, plan.pvpq[0]] = np.nan
    out = np.zeros_like(flows)
    assert chord.solve_rows(plan, injections, storage, V, out).tolist() == [-1]
    assert not out.any()  # nothing written for a row that did not converge


def test_injections_set_for_many_rows_solve_bitwise_as_set_one_by_one(model) -> None:
    """A batch's ``set_injections`` (one float32 cast for the rows, the voltage setpoints
    compared at once; a row alone into its own buffer) leaves each row as a backend's
    ``set_injections_trusted`` leaves its own: the same buffers, the same setpoints sent, the
    same flows over steady (chord) steps, a step where one row's setpoints move (that row
    alone goes back to lightsim2grid), and a pickle and a copy."""
    rng = np.random.default_rng(7)
    chords, twins = _pair(model, rng, N_ROWS, split=False)
    rows = list(range(N_ROWS))
    refs = [LightSimBackend.of_batch(twins.take([row])) for row in rows]  # a row each
    flows_a, flows_b = (np.zeros((N_ROWS, flow_slices(model)["all"].stop)) for _ in "ab")
    setpoints = [perturbed_injections(model, rng)[3] for _ in rows]  # steady: kept
    for step in range(chord.STEADY_SOLVES + 3):
        injections = [(*perturbed_injections(model, rng)[:3], v) for v in setpoints]
        if step == chord.STEADY_SOLVES + 1:
            p, q, g, v = injections[2]
            injections[2] = (p, q, g, v * 1.01)
        chords.set_injections(rows, _injection_rows(model, injections))
        for b, inj in zip(refs, injections, strict=True):
            b.set_injections_trusted(*inj)
        assert chords.solve(rows, flows_a) == []
        for row, b in enumerate(refs):
            assert b.batch.solve([0], flows_b[row : row + 1]) == []
        np.testing.assert_array_equal(flows_a, flows_b)
        for row, b in enumerate(refs):
            np.testing.assert_array_equal(chords.rows.inj32[row], b.batch.rows.inj32[0])
            assert chords.rows.gen_v_sent[row].tobytes() == b.batch.rows.gen_v_sent[0].tobytes()
            assert _by_chord(chords, row) == _by_chord(b.batch)
        if step == chord.STEADY_SOLVES + 1:
            by_chord = [_by_chord(chords, row) for row in rows]
            assert by_chord == [True, True, False] + [True] * (N_ROWS - 3)
    for row, ref in zip(rows[:2], refs[:2], strict=True):  # a row alone (a GridEnv's)
        one = chords.take([row])
        injection = perturbed_injections(model, rng)
        one.set_injections([0], _injection_rows(model, [injection]))
        ref.set_injections_trusted(*injection)
        mine, theirs = one.rows, ref.batch.rows
        np.testing.assert_array_equal(mine.inj32, theirs.inj32)
        assert mine.gen_v_sent.tobytes() == theirs.gen_v_sent.tobytes()
        assert mine.steady[0] == theirs.steady[0]
    for other in (pickle.loads(pickle.dumps(chords)), chords.take(rows)):
        assert not np.shares_memory(other.rows.inj32, chords.rows.inj32)  # a buffer of its own
        np.testing.assert_array_equal(other.rows.inj32, chords.rows.inj32)


def test_a_row_solved_without_the_rest_of_its_batch_keeps_its_own_state(model) -> None:
    """A batch's rows are solved in any subset (a run of rows, or scattered ones): rows solved
    apart from the others for a few steps (two of six here), then with all of them again,
    solve bitwise as the same row alone (a batch of one taken from it) at every step, and
    their timings count every one of their power flows."""
    rng = np.random.default_rng(11)
    batch, _ = _pair(model, rng, N_ROWS, split=False)
    alone = [batch.take([row]) for row in range(N_ROWS)]
    width = flow_slices(model)["all"].stop
    setpoints = [perturbed_injections(model, rng)[3] for _ in alone]  # kept: the chord's rows

    def step(rows: list[int]) -> None:
        packed = [
            np.concatenate([*perturbed_injections(model, rng)[:3], setpoints[row]]) for row in rows
        ]
        flows = np.zeros((N_ROWS, width))
        batch.set_injections(rows, InjectionRows.of_rows(packed, model))
        assert batch.solve(rows, flows) == []
        for j, row in enumerate(rows):
            twin, own = alone[row], np.zeros((1, width))
            twin.set_injections([0], InjectionRows.of_rows([packed[j]], model))
            assert twin.solve([0], own) == []
            np.testing.assert_array_equal(flows[row], own[0])

    rows = list(range(N_ROWS))
    for _ in range(chord.STEADY_SOLVES + 1):
        step(rows)
    for _ in range(2):
        step([2, 4])
    step(rows)
    assert [_by_chord(batch, row) for row in rows] == [_by_chord(t) for t in alone]
    assert _by_chord(batch, 2) and _by_chord(batch, 4)  # the chord solved the rows apart
    for row, twin in enumerate(alone):
        np.testing.assert_array_equal(batch.rows.V[row], twin.rows.V[0])
        timings, own = batch.timings(row), twin.timings(0)
        assert timings["n_powerflow"] == own["n_powerflow"] > 0
        assert timings["powerflow"] > 0 and timings["set_injections"] > 0
    assert batch.timings(2)["n_powerflow"] == batch.timings(0)["n_powerflow"] + 2


def test_a_batch_of_taken_rows_goes_when_dropped_no_collector_needed(model) -> None:
    """A look-ahead's candidates (rows taken from a batch, each solved by lightsim2grid on a
    grid of its own) go, with their lightsim2grid grids, as soon as their batch is dropped,
    with the garbage collector off: a reference cycle held a look-ahead over case118's whole
    catalog in chunks of 512 grid copies until a full collection (peak resident memory 0.56
    -> 1.4 GB)."""
    rng = np.random.default_rng(3)
    batch = LightSimBatch.fresh(model, 2)
    batch.set_injections([0, 1], _injection_rows(model, [perturbed_injections(model, rng)] * 2))
    assert batch.solve([0, 1], np.zeros((2, flow_slices(model)["all"].stop))) == []
    candidates = batch.take([0, 0, 1, 1])
    injections = [perturbed_injections(model, rng) for _ in range(4)]
    candidates.set_injections([0, 1, 2, 3], _injection_rows(model, injections))
    flows = np.zeros((4, flow_slices(model)["all"].stop))
    assert candidates.solve_by_lightsim([0, 1, 2, 3], flows) == []
    grids = candidates.rows.grid.tolist()
    assert not {id(g) for g in grids} & {id(g) for g in batch.rows.grid}  # their own grids
    alive = [weakref.ref(candidates), weakref.ref(candidates.rows), *map(weakref.ref, grids)]
    gc.disable()
    try:
        del candidates, grids
        assert [ref() for ref in alive] == [None] * len(alive)
    finally:
        gc.enable()


def test_copies_of_rows_taken_together_solve_bitwise_as_copies_taken_one_by_one(model) -> None:
    """``take`` (a look-ahead's copies: the rows taken from the batch's in one gather, a row
    repeated for each of its candidates) gives rows that solve, through the chord and
    lightsim2grid, bitwise as copies of each taken one at a time, and leaves the batch as it
    was."""
    rng = np.random.default_rng(5)
    batch, _ = _pair(model, rng, 4, split=False)
    setpoints = [perturbed_injections(model, rng)[3] for _ in range(4)]
    width = flow_slices(model)["all"].stop

    def step(rows: LightSimBatch, which: list[int], injections: list) -> np.ndarray:
        everyone = list(range(len(rows)))
        flows = np.zeros((len(rows), width))
        packed = [np.concatenate([*injections[j][:3], setpoints[j]]) for j in which]
        rows.set_injections(everyone, InjectionRows.of_rows(packed, model))
        assert rows.solve(everyone, flows) == []
        return flows

    for _ in range(chord.STEADY_SOLVES + 1):
        step(batch, [0, 1, 2, 3], [perturbed_injections(model, rng) for _ in range(4)])
    before = [batch.solver_state(row) for row in range(4)]
    which = [2, 2, 0]
    together = batch.take(which)
    one_by_one = [batch.take([j]) for j in which]
    for _ in range(2):
        injections = [perturbed_injections(model, rng) for _ in range(4)]
        apart = [step(one, [j], injections) for one, j in zip(one_by_one, which, strict=True)]
        np.testing.assert_array_equal(step(together, which, injections), np.concatenate(apart))
    assert all(_by_chord(together, row) for row in range(len(which)))
    for row, state in enumerate(before):
        np.testing.assert_array_equal(batch.solver_state(row), state)
