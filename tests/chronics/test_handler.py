"""ScenarioHandler: order, set_id, filter, fast-forward, limits, chunked reading, pickling."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import numpy as np
import pytest

from grid_vec.chronics import ScenarioHandler, SyntheticSource


@pytest.fixture
def source(case14_model):
    return SyntheticSource(case14_model, seed=0, length=50, n_scenarios=6)


def play(handler: ScenarioHandler) -> list[np.ndarray]:
    rows = [handler.current().load_p.copy()]
    while handler.advance():
        rows.append(handler.current().load_p.copy())
    return rows


def test_cycles_in_natural_order_then_shuffled_by_seed(source):
    h = ScenarioHandler(source)
    assert [h.reset().id for _ in range(7)] == [0, 1, 2, 3, 4, 5, 0]
    h.seed(1)
    first = [h.reset().id for _ in range(6)]
    assert sorted(first) == list(range(6)) and first != list(range(6))
    h2 = ScenarioHandler(source)
    h2.seed(1)
    assert [h2.reset().id for _ in range(6)] == first
    h.seed(None)
    assert h.reset().id == 0


def test_set_id_applies_to_next_reset_only(source):
    h = ScenarioHandler(source)
    h.set_id(4)
    assert h.reset().id == 4
    assert h.reset().id == 0
    h.set_id("synthetic_0003")
    assert h.reset().name == "synthetic_0003"
    assert h.reset(scenario_id=2).id == 2
    with pytest.raises(ValueError, match="unknown scenario name 'nope'"):
        h.set_id("nope")
    with pytest.raises(ValueError, match="scenario_id must be >= 0"):
        h.set_id(-1)
    with pytest.raises(TypeError, match="int id or a str name"):
        h.set_id(1.0)


def test_filter_restricts_the_cycle(source):
    h = ScenarioHandler(source)
    h.set_filter(lambda name: name.endswith(("1", "4")))
    assert [h.reset().id for _ in range(4)] == [1, 4, 1, 4]
    h.seed(5)
    assert sorted(h.order) == [1, 4]
    with pytest.raises(ValueError, match="rejects all 6 scenarios"):
        h.set_filter(lambda name: False)
    assert sorted(h.order) == [1, 4]  # a rejected filter leaves the previous one


def test_steps_follow_the_source_and_stop_at_the_end(source):
    h = ScenarioHandler(source)
    h.reset(scenario_id=2)
    assert (h.step, h.steps_played, h.max_steps) == (0, 0, 49)
    rows = play(h)
    assert len(rows) == 50 and h.step == 49 and h.steps_played == 49
    np.testing.assert_array_equal(np.array(rows), source.read(2, 0, 50).load_p)
    assert not h.advance() and h.step == 49
    cur = h.current()
    assert cur.load_p.ndim == 1 and cur.gen_p_forecast.shape == (source.model.n_gen,)


def test_fast_forward_max_steps_and_max_iter(source):
    h = ScenarioHandler(source, max_iter=30)
    h.reset(scenario_id=1, fast_forward=10)
    assert h.step == 10 and h.max_steps == 30
    np.testing.assert_array_equal(h.current().load_p, source.read(1, 10, 11).load_p[0])
    assert len(play(h)) == 31
    h.reset(fast_forward=40)
    assert h.max_steps == 9  # the end of the scenario comes first
    h.reset(max_steps=5)
    assert h.max_steps == 5 and len(play(h)) == 6
    h.set_max_iter(None)
    h.reset()
    assert h.max_steps == 49
    for bad in (-1, 49, 2.0):
        with pytest.raises(ValueError, match=r"fast_forward must be an int in \[0, 48\]"):
            h.reset(fast_forward=bad)
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        h.reset(max_steps=0)


def test_chunked_reading_gives_the_same_steps(source):
    whole = ScenarioHandler(source)
    whole.reset(scenario_id=3, fast_forward=5)
    chunked = ScenarioHandler(source, chunk_size=7)
    chunked.reset(scenario_id=3, fast_forward=5)
    assert len(chunked._chunk) == 7
    np.testing.assert_array_equal(np.array(play(chunked)), np.array(play(whole)))
    chunked.set_chunk_size(1)
    chunked.reset(scenario_id=3)
    assert len(play(chunked)) == 50
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        chunked.set_chunk_size(0)


def test_pickle_mid_episode_resumes_at_the_same_step(source):
    h = ScenarioHandler(source, chunk_size=10)
    h.seed(3)
    h.reset()
    for _ in range(13):
        h.advance()
    clone = pickle.loads(pickle.dumps(h))
    assert clone.step == 13 and clone.info == h.info
    np.testing.assert_array_equal(clone.current().load_p, h.current().load_p)
    assert [clone.reset().id for _ in range(3)] == [h.reset().id for _ in range(3)]


def test_use_before_reset_and_bad_arguments(source):
    with pytest.raises(TypeError, match="must implement ScenarioSource"):
        ScenarioHandler([1, 2, 3])
    h = ScenarioHandler(source)
    with pytest.raises(RuntimeError, match="reset"):
        h.current()
    with pytest.raises(RuntimeError, match="reset"):
        h.advance()
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        ScenarioHandler(source, max_iter=0)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        h.seed(-2)


def test_chronics_imports_without_pandapower_or_pandas():
    """A worker rebuilding an env must not pay pandapower's import."""
    code = (
        "import sys, grid_vec.chronics\n"
        "assert 'pandapower' not in sys.modules and 'pandas' not in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith(('pandas', 'pandapower')))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # a bound on hangs


def test_random_fast_forward_is_bounded_seeded_and_needs_an_rng(source):
    handler = ScenarioHandler(source)
    handler.set_max_fast_forward(10_000)  # beyond the scenario: bounded by its length

    def start(seed: int) -> int:
        handler.reset(scenario_id=0, rng=np.random.default_rng(seed))
        return handler.step

    starts = [start(s) for s in range(20)]
    length = source.info(0).length
    assert all(0 <= s <= length - 2 for s in starts) and len(set(starts)) > 1
    assert [start(s) for s in range(20)] == starts
    with pytest.raises(ValueError, match="needs an rng"):
        handler.reset(scenario_id=0)
    with pytest.raises(ValueError, match="max_fast_forward must be >= 1"):
        handler.set_max_fast_forward(-3)
    handler.set_max_fast_forward(None)
    handler.reset(scenario_id=0)
    assert handler.step == 0


def test_rows_are_the_current_injections_across_chunks_and_pickling(source):
    """rows() (the env's hot path) serves exactly what current() does, now and forecast."""
    h = ScenarioHandler(source, chunk_size=7)
    with pytest.raises(RuntimeError, match="reset"):
        h.rows()
    h.reset(fast_forward=3)
    for n in range(20):
        if n == 9:
            h = pickle.loads(pickle.dumps(h))  # mid-chunk: the chunk is re-read on demand
        cur = h.current()
        now = (cur.load_p, cur.load_q, cur.gen_p, cur.gen_v)
        ahead = (cur.load_p_forecast, cur.load_q_forecast, cur.gen_p_forecast, cur.gen_v_forecast)
        for got, want in zip(h.rows() + h.rows(forecast=True), now + ahead, strict=True):
            np.testing.assert_array_equal(got, want)
        h.advance()


class _UnpackedSource:
    """The synthetic source's scenarios with their injections not laid out together (what a
    source of a user's own may serve): the handler then builds each packed row itself."""

    def __init__(self, source):
        self._source = source

    def __getattr__(self, name):
        if name == "_source":  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self._source, name)

    def __len__(self) -> int:
        return len(self._source)

    def read(self, scenario_id: int, start: int, stop: int):
        return dataclasses.replace(self._source.read(scenario_id, start, stop), block=None)


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "unpacked"])
def test_packed_row_is_the_current_four_side_by_side(source, packed):
    """packed_row() (the batch's gather) is load_p, load_q, gen_p and gen_v of rows(), across
    chunks and a pickle, whether the source packs its injections (a view of its block) or not."""
    h = ScenarioHandler(source if packed else _UnpackedSource(source), chunk_size=7)
    with pytest.raises(RuntimeError, match="reset"):
        h.packed_row()
    h.reset(fast_forward=3)
    for n in range(20):
        if n == 9:
            h = pickle.loads(pickle.dumps(h))
        row = h.packed_row()
        np.testing.assert_array_equal(row, np.concatenate(h.rows()))
        assert (row.base is not None) == packed
        h.advance()


def test_a_packed_scenario_keeps_its_values_and_its_block_through_windows(source):
    """Injections.packed() changes the layout only: the same values, the four fields views of
    the block in their order, kept by window() and row(), all read-only once shared."""
    raw = dataclasses.replace(source.read(0, 0, 40), block=None)
    packed = raw.packed()
    assert packed.packed() is packed
    for name in ("load_p", "load_q", "gen_p", "gen_v", "load_p_forecast"):
        np.testing.assert_array_equal(getattr(packed, name), getattr(raw, name), err_msg=name)
    np.testing.assert_array_equal(
        packed.block, np.concatenate([raw.load_p, raw.load_q, raw.gen_p, raw.gen_v], axis=1)
    )
    window = packed.window(5, 12)
    np.testing.assert_array_equal(window.block, packed.block[5:12])
    assert np.shares_memory(window.gen_v, window.block)
    np.testing.assert_array_equal(window.row(3).block, packed.block[8])
    assert len(packed.arrays()) == len(raw.arrays())  # the block is layout, not data
    shared = source.read(1, 0, 10)
    assert shared.block is not None and not shared.block.flags.writeable


def test_a_handler_pickles_without_its_chunk_packed_or_not(source):
    """A pickled handler carries no injection array (its chunk, packed block included, is
    read again on the other side): the pickle of a handler 200 steps into a packed scenario
    of 1,000 steps stays the size of a fresh one's."""
    long = SyntheticSource(source.model, seed=0, length=1_000, n_scenarios=2)
    fresh = len(pickle.dumps(ScenarioHandler(long)))
    h = ScenarioHandler(long)
    h.reset()
    for _ in range(200):
        h.advance()
    h.packed_row()
    assert h._chunk.block is not None  # the test plays a packed source
    assert len(pickle.dumps(h)) < fresh + 2_000
