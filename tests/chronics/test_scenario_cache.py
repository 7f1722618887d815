"""The scenario cache: a folder scenario is parsed once per process, read-only, bounded."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from test_folder import net14, write_folder  # noqa: F401 (net14 is a fixture)

from grid_vec.chronics.folder import FolderSource
from grid_vec.chronics.scenario import Injections
from grid_vec.chronics.scenario_cache import ScenarioCache, shared_cache

FIELDS = [f.name for f in dataclasses.fields(Injections)]


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
