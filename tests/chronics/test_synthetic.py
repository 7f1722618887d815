"""SyntheticSource: determinism, shapes, balance, forecasts, pickling."""

from __future__ import annotations

import datetime as dt
import pickle

import numpy as np
import pytest

from grid_vec.chronics import (
    ScenarioHandler,
    ScenarioInfo,
    ScenarioSource,
    SyntheticSource,
)
from grid_vec.chronics.scenario import INJECTION_FIELDS
from grid_vec.chronics.synthetic import BLOCK, PIECE

FIELDS = list(INJECTION_FIELDS)  # synthetic scenarios plan no outage


def test_same_seed_and_id_give_identical_arrays(case14_model):
    a = SyntheticSource(case14_model, seed=3).read(5, 0, 2016)
    b = SyntheticSource(case14_model, seed=3).read(5, 0, 2016)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_different_ids_and_seeds_differ(case14_model):
    src = SyntheticSource(case14_model, seed=3)
    a = src.read(0, 0, 100).load_p.copy()
    assert not np.allclose(a, src.read(1, 0, 100).load_p)
    assert not np.allclose(a, SyntheticSource(case14_model, seed=4).read(0, 0, 100).load_p)


def test_ids_beyond_n_scenarios_are_valid(case14_model):
    src = SyntheticSource(case14_model, n_scenarios=4, length=10)
    assert len(src) == 4
    assert src.names == ["synthetic_0000", "synthetic_0001", "synthetic_0002", "synthetic_0003"]
    assert src.info(10_000).length == 10
    assert src.read(10_000, 0, 10).load_p.shape == (10, case14_model.n_load)
    with pytest.raises(ValueError, match="scenario_id must be >= 0"):
        src.info(-1)


def test_windows_are_slices_of_the_whole(case14_model):
    src = SyntheticSource(case14_model, seed=1, length=300)
    whole = src.read(2, 0, 300)
    part = SyntheticSource(case14_model, seed=1, length=300).read(2, 100, 150)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(part, f), getattr(whole, f)[100:150])
    with pytest.raises(ValueError, match="0 <= start < stop <= 300"):
        src.read(2, 250, 301)


def test_shapes_info_and_protocol(case118_model):
    src = SyntheticSource(case118_model, start=dt.datetime(2020, 3, 2), step_minutes=15)
    assert isinstance(src, ScenarioSource)
    info = src.info(7)
    assert info == ScenarioInfo(
        7, "synthetic_0007", dt.datetime(2020, 3, 2), dt.timedelta(minutes=15), 2016
    )
    inj = src.read(7, 0, 2016)
    assert len(inj) == 2016
    for f in FIELDS:
        n = case118_model.n_load if f.startswith("load") else case118_model.n_gen
        arr = getattr(inj, f)
        assert arr.shape == (2016, n) and arr.dtype == np.float64
        assert np.isfinite(arr).all()
        assert not arr.flags.writeable


def test_load_levels_shapes_and_power_factor(case14_model):
    m = case14_model
    inj = SyntheticSource(m, seed=0).read(0, 0, 2016)
    total = inj.load_p.sum(axis=1)
    assert 0.9 < total.mean() / m.load_p0.sum() < 1.1  # the base net is the mean level
    assert 1.1 < total.max() / total.mean() < 1.4  # peaks exceed it by 10-40%
    assert (inj.load_p > 0).all()
    # daily cycle: night (3-5 h) clearly below evening (18-20 h)
    hours = (np.arange(2016) * 5 / 60) % 24
    assert (
        total[(hours >= 3) & (hours < 5)].mean() < 0.9 * total[(hours >= 18) & (hours < 20)].mean()
    )
    # per-load diversity: loads are not all scaled copies of one profile
    rel = inj.load_p / inj.load_p.mean(axis=0)
    assert np.corrcoef(rel.T).min() < 0.95
    # q follows p with a per-load power factor close to the net's
    ratio = inj.load_q / inj.load_p
    np.testing.assert_allclose(ratio, np.broadcast_to(ratio[0], ratio.shape), rtol=1e-12)
    np.testing.assert_allclose(ratio[0], m.load_q0 / m.load_p0, rtol=0.11)


def test_dispatch_balances_load_within_limits(case5_model):
    m = case5_model
    inj = SyntheticSource(m, seed=2).read(0, 0, 2016)
    sgen = m.gen_kind == "sgen"
    slack = m.gen_kind == "slack"
    other = ~sgen & ~slack
    assert (inj.gen_p[:, other] <= m.gen_pmax[other] + 1e-9).all()
    assert (inj.gen_p[:, other] >= m.gen_pmin[other] - 1e-9).all()
    balance = inj.gen_p.sum(axis=1) / inj.load_p.sum(axis=1)
    assert (balance >= 1.0 - 1e-9).all() and (balance < 1.1).all()  # losses on top of the load
    # the sgen has a renewable profile within [0, capacity] that varies over time
    ren = inj.gen_p[:, sgen]
    assert (ren >= 0).all() and (ren <= m.gen_pmax[sgen]).all() and ren.std() > 0
    np.testing.assert_array_equal(inj.gen_v, np.broadcast_to(m.gen_v0, inj.gen_v.shape))


def test_forecasts_are_next_step_plus_small_error(case14_model):
    inj = SyntheticSource(case14_model, seed=0).read(0, 0, 2016)
    err = inj.load_p_forecast[:-1] / inj.load_p[1:] - 1
    assert 0.002 < err.std() < 0.03
    assert np.isfinite(inj.load_p_forecast[-1]).all()
    fc_balance = inj.gen_p_forecast.sum(axis=1) / inj.load_p_forecast.sum(axis=1)
    assert (fc_balance >= 1.0 - 1e-9).all()


def test_pickles_small_and_regenerates_identically(case118_model):
    src = SyntheticSource(case118_model, seed=9)
    before = src.read(3, 0, 2016).gen_p.copy()
    blob = pickle.dumps(src)
    assert len(blob) < len(pickle.dumps(case118_model)) + 20_000  # the model + a few traits
    np.testing.assert_array_equal(pickle.loads(blob).read(3, 0, 2016).gen_p, before)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        ({"seed": 1.5}, TypeError, "seed must be an int"),
        ({"length": 1}, ValueError, "length must be >= 2"),
        ({"n_scenarios": 0}, ValueError, "n_scenarios must be >= 1"),
        ({"start": "2019-01-01"}, TypeError, "start must be a datetime"),
    ],
)
def test_bad_arguments(case14_model, kwargs, error, match):
    with pytest.raises(error, match=match):
        SyntheticSource(case14_model, **kwargs)


def test_blocks_join_seamlessly_whatever_the_read_order(case14_model):
    """A scenario is generated a block at a time: windows across block boundaries, read in
    any order, are slices of the whole, and each step's forecast is made of the next step."""
    whole = SyntheticSource(case14_model, seed=5, length=700).read(3, 0, 700)
    src = SyntheticSource(case14_model, seed=5, length=700)
    for start, stop in ((600, 700), (280, 300), (0, 10), (287, 577)):
        part = src.read(3, start, stop)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(part, f), getattr(whole, f)[start:stop])
    # the forecast error around a block boundary is as small as inside a block
    err = whole.load_p_forecast[:-1] / whole.load_p[1:] - 1
    assert np.abs(err[BLOCK - 3 : BLOCK + 3]).max() < 0.06


def test_a_reset_generates_only_the_steps_it_reads_then_the_rest_of_the_block(case14_model):
    src = SyntheticSource(case14_model, seed=0)
    generated = []
    real = src._generate

    def counting(scenario_id, draws, block, first, stop, noise):
        generated.append((scenario_id, block, first, stop))
        return real(scenario_id, draws, block, first, stop, noise)

    src._generate = counting
    handler = ScenarioHandler(src)
    handler.reset(scenario_id=4, fast_forward=300)  # step 300: row 12 of block 1
    assert generated == [(4, 1, 0, 12 + PIECE)]  # the block's rows up to the first chunk
    for _ in range(PIECE):
        handler.advance()
    assert generated == [(4, 1, 0, 12 + PIECE), (4, 1, 12 + PIECE, BLOCK)]
    for _ in range(BLOCK - 12 - PIECE):
        handler.advance()
    assert generated[-1] == (4, 2, 0, BLOCK)  # past the first chunk: a block at a time


def test_pieces_are_the_values_of_whole_blocks_drawn_at_once(case14_model):
    """Generated piece by piece (each block's stream drawn as far as needed), a scenario is
    bitwise what whole blocks give: any window read alone equals that window of a read of
    the whole scenario, across piece and block boundaries and at the scenario's end."""
    source = SyntheticSource(case14_model, seed=5, length=2 * BLOCK + 50)
    whole = source.read(3, 0, 2 * BLOCK + 50)
    # each block's noise, drawn piece by piece, is one draw of the whole block
    for block in (0, 1):
        noise: dict[int, list] = {}
        for rows in (1, PIECE, PIECE + 1, BLOCK):
            pieces = source._white_noise(3, block, rows, noise)
        seq = np.random.SeedSequence(5, spawn_key=(3, 3, block))
        at_once = np.random.default_rng(seq).standard_normal((BLOCK, pieces.shape[1]))
        assert pieces.tobytes() == at_once.tobytes()
    for start, stop in (
        (0, 7),
        (PIECE - 1, PIECE + 1),
        (BLOCK - 1, BLOCK + 2),
        (2 * BLOCK + 40, 2 * BLOCK + 50),
    ):
        alone = SyntheticSource(case14_model, seed=5, length=2 * BLOCK + 50).read(3, start, stop)
        for got, want in zip(alone.arrays(), whole.window(start, stop).arrays(), strict=True):
            assert (got is None and want is None) or got.tobytes() == np.ascontiguousarray(
                want
            ).tobytes()


def test_scenarios_read_in_turn_draw_their_knots_once_and_generate_each_row_once(case14_model):
    """A batch's envs read their scenarios in turn (a first chunk at each reset, then the
    rest of the block): each scenario's once-per-scenario draws are drawn once and every
    row is generated once, with the values of each scenario read alone."""
    source = SyntheticSource(case14_model, seed=2, length=3 * BLOCK)
    drawn, generated = [], []
    draws, generate = source._scenario_draws, source._generate

    def counting_draws(scenario_id):
        drawn.append(scenario_id)
        return draws(scenario_id)

    def counting_generate(scenario_id, d, block, first, stop, noise):
        generated.append(stop - first)
        return generate(scenario_id, d, block, first, stop, noise)

    source._scenario_draws, source._generate = counting_draws, counting_generate
    ids = range(8)
    got = {i: [source.read(i, 0, PIECE)] for i in ids}  # every env's reset
    for i in ids:
        got[i].append(source.read(i, PIECE, BLOCK))  # the rest of each block, in turn
    for i in ids:
        got[i].append(source.read(i, BLOCK, 2 * BLOCK))
    assert drawn == list(ids)
    assert sum(generated) == 8 * 2 * BLOCK
    for i in ids:
        alone = SyntheticSource(case14_model, seed=2, length=3 * BLOCK).read(i, 0, 2 * BLOCK)
        for j, (a, b) in enumerate(((0, PIECE), (PIECE, BLOCK), (BLOCK, 2 * BLOCK))):
            assert _bytes_of(got[i][j]) == _bytes_of(alone.window(a, b))


def test_scenarios_in_play_are_forgotten_least_recent_first_beyond_the_bound(
    case14_model, monkeypatch
):
    """Beyond ``MAX_IN_PLAY_BYTES`` the least recently read scenario is forgotten (drawn
    again when read again, with the same values)."""
    from grid_vec.chronics import synthetic

    source = SyntheticSource(case14_model, seed=2, length=3 * BLOCK)
    first = source.read(0, 0, PIECE)
    one = source._in_play[0].nbytes
    monkeypatch.setattr(synthetic, "MAX_IN_PLAY_BYTES", int(2.5 * one))
    for i in (1, 2, 3):
        source.read(i, 0, PIECE)
    assert list(source._in_play) == [2, 3]
    assert source._in_play_bytes == sum(e.nbytes for e in source._in_play.values())
    assert _bytes_of(source.read(0, 0, PIECE)) == _bytes_of(first)
    assert list(source._in_play) == [3, 0]


def _bytes_of(injections) -> bytes:
    """Every array of ``injections``, as bytes."""
    return b"".join(np.ascontiguousarray(a).tobytes() for a in injections.arrays())
