"""The disk cache of compiled grids: what it returns equals a fresh compile, a warm cache
spares pandapower, and no damaged, foreign or unwritable cache breaks ``make``."""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from test_folder import net14, write_folder  # noqa: F401 (net14 is a fixture)

from grid_vec.env.make import clear_compiled_cache, make
from grid_vec.grid import model_cache
from grid_vec.grid.model import GridModel


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory of this test's own; ``make`` forgets its in-process models."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(model_cache.CACHE_DIR_VARIABLE, str(directory))
    clear_compiled_cache()
    yield directory
    clear_compiled_cache()


def _entries(directory):
    return sorted(directory.glob("*.npz")) if directory.is_dir() else []


def assert_same_model(a: GridModel, b: GridModel) -> None:
    for field in dataclasses.fields(GridModel):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.shape == y.shape, field.name
            np.testing.assert_array_equal(x.astype(y.dtype) if x.dtype.kind == "O" else x, y)
        elif field.name == "solver_states":  # the cache keeps lightsim2grid's (plain values)
            assert pickle.dumps(x["lightsim2grid"]) == pickle.dumps(y["lightsim2grid"])
        else:
            assert x == y, field.name


def assert_same_rollouts(a, b) -> None:
    for x, y in zip(_rollout(a), _rollout(b), strict=True):
        np.testing.assert_array_equal(x, y)


def _rollout(env, steps: int = 30) -> list[np.ndarray]:
    obs, _ = env.reset(seed=3, options={"scenario_id": 1})
    trace = [obs]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        trace += [obs, np.float64(reward)]
        if terminated or truncated:
            break
    return trace


def test_a_cached_embedded_grid_equals_a_fresh_compile_and_plays_the_same(cache):
    fresh = make("case14")  # compiles and stores
    assert len(_entries(cache)) == 1
    clear_compiled_cache()
    cached = make("case14")  # from the entry
    assert cached.model is not fresh.model
    assert_same_model(fresh.model, cached.model)
    assert_same_rollouts(fresh, cached)


def test_a_cached_folder_grid_equals_a_fresh_compile_and_keeps_the_folders_rules(
    cache,
    tmp_path,
    case14_model,
    net14,  # noqa: F811
):
    folder = write_folder(tmp_path / "env14", case14_model, net14)
    fresh = make(folder)
    clear_compiled_cache()
    cached = make(folder)
    assert len(_entries(cache)) == 1
    assert_same_model(fresh.model, cached.model)
    assert cached.parameters == fresh.parameters
    assert_same_rollouts(fresh, cached)


def test_editing_a_folders_thermal_limits_compiles_it_anew(
    cache,
    tmp_path,
    case14_model,
    net14,  # noqa: F811
):
    folder = write_folder(tmp_path / "env14", case14_model, net14)
    before = make(folder).model.thermal_limit_a.copy()
    limits = before.copy()
    limits[0] = 1234.5
    text = ", ".join(str(float(v)) for v in limits)
    (folder / "config.py").write_text(f'config = {{"thermal_limits": [{text}]}}\n')
    clear_compiled_cache()
    after = make(folder).model.thermal_limit_a
    assert after[0] == 1234.5 and after[0] != before[0]
    np.testing.assert_array_equal(after[1:], before[1:])
    assert len(_entries(cache)) == 2  # one entry per content: the old one is never found again


def test_a_warm_cache_builds_the_env_in_a_new_process_without_pandapower(cache):
    make("case14")  # fills the cache
    probe = (
        "import sys; from grid_vec.env.make import make; env = make('case14'); "
        "env.reset(seed=0); env.step(0); print('pandapower' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def _damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"not an npz at all" * 10)
    elif how == "too large":
        path.write_bytes(data + b"\0" * (model_cache.MAX_ENTRY_BYTES + 1 - len(data)))
    else:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        if how == "pickled names":
            arrays["gen_names"] = arrays["gen_names"].astype(object)
        elif how == "sizes disagree":
            arrays["gen_p0"] = arrays["gen_p0"][:-1]
        elif how == "unknown substation":
            arrays["load_sub"] = arrays["load_sub"] + 1000
        elif how == "unknown tag":
            arrays["solver_states"] = np.array('{"dict": {"x": {"eval": "1"}}}')
        elif how == "deep state":
            arrays["solver_states"] = np.array("[" * 5000 + "]" * 5000)
        elif how == "missing field":
            del arrays["thermal_limit_a"]
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        path.write_bytes(buffer.getvalue())


@pytest.fixture(scope="module")
def good_entry(tmp_path_factory):
    """The bytes and key of a valid case14 entry (compiled once for the module)."""
    directory = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(model_cache.CACHE_DIR_VARIABLE, str(directory))
        clear_compiled_cache()
        model = make("case14").model
        clear_compiled_cache()
    (entry,) = _entries(directory)
    return entry.read_bytes(), entry.stem, model


DAMAGES = [
    "truncated",
    "garbage",
    "too large",
    "pickled names",
    "sizes disagree",
    "unknown substation",
    "unknown tag",
    "deep state",
    "missing field",
]


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_entry_is_not_loaded(cache, good_entry, how):
    data, key, _ = good_entry
    entry = cache / f"{key}.npz"
    cache.mkdir()
    entry.write_bytes(data)
    assert model_cache.load_model(key) is not None  # the entry as written loads
    _damage(entry, how)
    assert model_cache.load_model(key) is None


def test_make_compiles_anew_over_a_damaged_entry_and_replaces_it(cache, good_entry):
    data, key, reference = good_entry
    cache.mkdir()
    (cache / f"{key}.npz").write_bytes(data[: len(data) // 3])
    assert_same_model(reference, make("case14").model)
    assert model_cache.load_model(key) is not None


def test_a_pickle_in_an_entry_is_never_loaded(cache, tmp_path):
    make("case14")
    (entry,) = _entries(cache)
    marker = tmp_path / "pickle ran"

    class Payload:
        def __reduce__(self):
            return (marker.write_text, ("ran",))

    with np.load(entry, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["gen_names"] = np.array([Payload()] * len(arrays["gen_names"]), dtype=object)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    entry.write_bytes(buffer.getvalue())

    assert model_cache.load_model(entry.stem) is None
    assert not marker.exists()
    with np.load(entry, allow_pickle=True) as archive:  # the payload is live: a pickle runs it
        archive["gen_names"]
    assert marker.exists()


def test_an_unwritable_cache_directory_leaves_make_working(tmp_path, monkeypatch):
    blocker = tmp_path / "a file, not a directory"
    blocker.write_text("")
    monkeypatch.setenv(model_cache.CACHE_DIR_VARIABLE, str(blocker / "models"))
    clear_compiled_cache()
    try:
        env = make("case14")
        env.reset(seed=0)
        env.step(0)
    finally:
        clear_compiled_cache()


@pytest.mark.parametrize("value", ["", "off"])
def test_the_cache_is_off_when_the_variable_says_so(tmp_path, monkeypatch, value):
    monkeypatch.setenv(model_cache.CACHE_DIR_VARIABLE, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert model_cache.cache_dir() is None
    clear_compiled_cache()
    try:
        make("case14")
    finally:
        clear_compiled_cache()
    assert not any(tmp_path.rglob("*.npz"))


def test_the_default_directory_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv(model_cache.CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert model_cache.cache_dir() == tmp_path / "grid_vec" / "models"


def test_keys_differ_with_every_input_and_agree_on_equal_ones():
    key = model_cache.model_key
    assert key("embedded", "case14") == key("embedded", "case14")
    assert key("embedded", "case14") != key("embedded", "case118")
    assert key("ab", "c") != key("a", "bc")  # parts are delimited
    assert key(b"grid") != key(b"grid", b"")
