"""The scenario cache: a folder scenario is parsed once per process, read-only, bounded."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_folder import net14, write_folder  # noqa: F401 (net14 is a fixture)

from grid_vec.chronics.folder import FolderSource
from grid_vec.chronics.scenario import INJECTION_FIELDS, Injections
from grid_vec.chronics.scenario_cache import ScenarioCache, shared_cache

FIELDS = list(INJECTION_FIELDS)  # the outage fields are optional


@pytest.fixture
def source(tmp_path, case14_model, net14):  # noqa: F811
    shared_cache.clear()
    yield FolderSource(write_folder(tmp_path / "env14", case14_model, net14), case14_model)
    shared_cache.clear()


def _same(a: Injections, b: Injections) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_windows_from_the_cache_equal_windows_parsed_from_the_files(source):
    info = source.info(0)
    files = source._files(0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        start = int(rng.integers(0, info.length - 1))
        stop = int(rng.integers(start + 1, info.length + 1))
        _same(source.read(0, start, stop), source._parse(info, files, start, stop))


def test_a_scenario_is_parsed_once_then_served_read_only(source):
    first = source.read(1, 0, 10)
    assert (shared_cache.misses, shared_cache.hits) == (1, 0)
    again = source.read(1, 5, 20)
    assert (shared_cache.misses, shared_cache.hits) == (1, 1)
    np.testing.assert_array_equal(first.load_p[5:], again.load_p[:5])
    with pytest.raises(ValueError, match="read-only"):
        again.load_p[0, 0] = 1.0


def test_sources_of_one_folder_share_the_parsed_scenario(source, case14_model):
    source.read(0, 0, 5)
    other = FolderSource(source.path, case14_model)
    other.read(0, 3, 8)
    assert (shared_cache.misses, shared_cache.hits) == (1, 1)


def test_an_edited_file_is_parsed_again(source):
    before = source.read(0, 0, 4)
    load_p = source._files(0)["load_p"]
    stat = load_p.stat()
    os.utime(load_p, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = source.read(0, 0, 4)
    assert shared_cache.misses == 2
    _same(before, after)  # same content, parsed anew


def test_reads_of_one_instant_stat_a_scenario_once_and_later_reads_see_an_edit(source):
    """A batch's reset reads a scenario for many envs inside ``one_instant``: its files are
    checked at the first read only; a read after the block checks them again."""
    source.read(0, 0, 4)
    load_p = source._files(0)["load_p"]
    stat = load_p.stat()
    with source.one_instant():
        source.read(0, 0, 4)  # checks the files: unchanged, a hit
        os.utime(load_p, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        source.read(0, 2, 6)  # the same instant: not checked again
    assert (shared_cache.misses, shared_cache.hits) == (1, 2)
    source.read(0, 0, 4)
    assert shared_cache.misses == 2  # the edit seen, parsed again


def test_the_cache_keeps_at_most_its_byte_limit_dropping_the_least_recent():
    def scenario(value: float, rows: int = 10) -> Injections:
        return Injections(*(np.full((rows, 3), value) for _ in FIELDS))

    size = 8 * 10 * 3 * 8  # bytes of one scenario above
    cache = ScenarioCache(max_bytes=2 * size)
    cache.get("a", lambda: scenario(1.0))
    cache.get("b", lambda: scenario(2.0))
    cache.get("a", lambda: scenario(-1.0))  # a hit: "a" becomes the most recent
    cache.get("c", lambda: scenario(3.0))  # drops "b"
    assert len(cache) == 2 and cache.nbytes == 2 * size
    assert cache.get("a", lambda: scenario(-1.0)).load_p[0, 0] == 1.0
    assert cache.get("b", lambda: scenario(-2.0)).load_p[0, 0] == -2.0  # parsed again
    big = cache.get("big", lambda: scenario(4.0, rows=1000))  # larger than the limit
    assert big.load_p[0, 0] == 4.0 and "big" not in cache._entries


def test_a_cache_of_zero_bytes_keeps_nothing():
    cache = ScenarioCache(max_bytes=0)
    cache.get("a", lambda: Injections(*(np.zeros((2, 2)) for _ in FIELDS)))
    assert len(cache) == 0 and cache.nbytes == 0


def test_disk_tier_serves_a_later_process_the_same_arrays_without_parsing(tmp_path, source):
    info = source.info(0)
    parsed = source._parse(info, source._files(0), 0, info.length)
    key = ("scenario", 0)
    first = ScenarioCache(2**30, tmp_path / "cache")
    _same(first.get(key, lambda: parsed), parsed)
    assert first.disk.writes == 1 and list((tmp_path / "cache").glob("*.npz"))

    def must_not_parse():
        raise AssertionError("parsed again")

    later = ScenarioCache(2**30, tmp_path / "cache")  # a new process: empty memory
    _same(later.get(key, must_not_parse), parsed)
    assert later.disk.hits == 1
    assert not list((tmp_path / "cache").glob("*.tmp"))  # written atomically


def _corrupt_entries():
    def truncated(path, parsed):
        path.write_bytes(path.read_bytes()[:100])

    def other_key(path, parsed):
        arrays = dict(zip(FIELDS, parsed.arrays(), strict=True))
        np.savez(path, key=np.array("grid_vec-scenario-1|('another', 1)"), **arrays)

    def non_finite(path, parsed):
        arrays = {n: a.copy() for n, a in zip(FIELDS, parsed.arrays(), strict=True)}
        arrays["load_p"][3, 0] = np.nan
        with np.load(path) as npz:
            key = npz["key"]
        np.savez(path, key=key, **arrays)

    def pickled_object(path, parsed):
        arrays = dict(zip(FIELDS, parsed.arrays(), strict=True))
        arrays["gen_v"] = np.array([object()], dtype=object)
        with np.load(path) as npz:
            key = npz["key"]
        np.savez(path, key=key, **arrays)

    def bad_shape(path, parsed):
        arrays = dict(zip(FIELDS, parsed.arrays(), strict=True))
        arrays["gen_p"] = arrays["gen_p"][:, :2]
        with np.load(path) as npz:
            key = npz["key"]
        np.savez(path, key=key, **arrays)

    return [truncated, other_key, non_finite, pickled_object, bad_shape]


@pytest.mark.parametrize("corrupt", _corrupt_entries(), ids=lambda f: f.__name__)
def test_disk_tier_parses_again_over_an_entry_that_is_not_what_it_claims(tmp_path, source, corrupt):
    info = source.info(0)
    parsed = source._parse(info, source._files(0), 0, info.length)
    key = ("scenario", 0)
    ScenarioCache(2**30, tmp_path).get(key, lambda: parsed)
    (path,) = tmp_path.glob("*.npz")
    corrupt(path, parsed)
    calls = []
    cache = ScenarioCache(2**30, tmp_path)
    with pytest.warns(UserWarning, match="scenario cache entry ignored"):
        got = cache.get(key, lambda: calls.append(1) or parsed)
    assert calls == [1] and cache.disk.hits == 0
    _same(got, parsed)
    _same(ScenarioCache(2**30, tmp_path).get(key, lambda: 1 / 0), parsed)  # rewritten whole


def test_disk_tier_in_a_directory_that_cannot_be_written_warns_and_still_parses(tmp_path, source):
    info = source.info(0)
    parsed = source._parse(info, source._files(0), 0, info.length)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ScenarioCache(2**30, blocker / "cache")
    with pytest.warns(UserWarning, match="cannot write the scenario cache"):
        _same(cache.get(("k",), lambda: parsed), parsed)


def test_a_cached_scenario_is_served_packed(source):
    """The cache lays each scenario's four injections out side by side once (the batch
    gathers a step's as one row), with the values parsed from the files."""
    window = source.read(0, 3, 30)
    assert window.block is not None and not window.block.flags.writeable
    assert np.shares_memory(window.load_p, window.block)
    np.testing.assert_array_equal(
        window.block,
        np.concatenate([window.load_p, window.load_q, window.gen_p, window.gen_v], axis=1),
    )
    _same(window, source._parse(source.info(0), source._files(0), 3, 30))
