"""The two disk caches (compiled grids, parsed scenarios) attacked as dataset files are: no
code in an entry runs, memory stays bounded, a refused entry is one warning naming the file,
and the env (or scenario) built over a hostile entry equals the one built without the cache."""

# the fixtures `cache` and `net14` are imported from the suites that define them and taken
# as arguments, which ruff reads as redefinitions
# ruff: noqa: F811

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from test_compiled_grid_cache import cache  # noqa: F401 (a fixture: an empty cache)
from test_folder import (  # noqa: F401 (net14 is a fixture)
    forecast_three_horizons,
    net14,
    write_folder,
)

from grid_vec.chronics import scenario_cache
from grid_vec.chronics.folder import FolderSource
from grid_vec.chronics.scenario import AHEAD_FIELDS, INJECTION_FIELDS, OUTAGE_FIELDS, Injections
from grid_vec.chronics.scenario_cache import ScenarioCache, shared_cache
from grid_vec.env.make import clear_compiled_cache, make
from grid_vec.grid import model_cache
from grid_vec.grid.model_cache import same_model_arrays

MAX_PEAK_MB = 200
BOMB_BYTES = 1 << 30  # what a bomb's member inflates to: 1 GiB of zeros, ~1 MB deflated


# --- helpers --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference14(tmp_path_factory):
    """case14 compiled without any cache: what every hostile entry must give back."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(model_cache.CACHE_DIR_VARIABLE, "off")
        clear_compiled_cache()
        env = make("case14")
        clear_compiled_cache()
    return env.model, _first_obs(env)


def _first_obs(env) -> np.ndarray:
    obs, _ = env.reset(seed=0, options={"scenario_id": 0})
    return obs


def _entry(directory: Path) -> Path:
    (entry,) = directory.glob("*.npz")
    return entry


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def _filled_entry(cache: Path) -> Path:
    """The case14 entry, written by a first ``make``."""
    make("case14")
    clear_compiled_cache()
    return _entry(cache)


def _make_warns_and_equals(entry: Path, reference, match: str = "") -> None:
    """``make("case14")`` over ``entry`` warns once, naming it, and equals the reference;
    the entry is rewritten and then loads without a warning."""
    model, obs = reference
    with pytest.warns(UserWarning) as caught:
        env = make("case14")
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and str(entry) in messages[0], messages
    assert match in messages[0]
    assert same_model_arrays(env.model, model)
    np.testing.assert_array_equal(_first_obs(env), obs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model_cache.load_model(entry.stem) is not None  # rewritten whole


def _run(code: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=240,
    )


def _bomb_member(zf: zipfile.ZipFile, name: str) -> None:
    """A deflated ``name``: a header for 1 GiB of float64, then that many zero bytes."""
    header = {"descr": "<f8", "fortran_order": False, "shape": (BOMB_BYTES // 8,)}
    with zf.open(name, "w", force_zip64=True) as member:
        np.lib.format.write_array_header_1_0(member, header)
        block = bytes(1 << 24)
        for _ in range(BOMB_BYTES // len(block)):
            member.write(block)


def _huge_shape_member(zf: zipfile.ZipFile, name: str) -> None:
    """``name`` claiming 10**12 float64 (8 TB) and holding 8 bytes."""
    with zf.open(name, "w") as member:
        header = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
        np.lib.format.write_array_header_1_0(member, header)
        member.write(bytes(8))


def _replace_member(path: Path, name: str, write) -> None:
    """Rewrite the archive ``path`` with member ``name`` written by ``write(zf, name)``."""
    arrays = _arrays(path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for other, array in arrays.items():
            if other != name:
                with zf.open(f"{other}.npy", "w") as member:
                    np.lib.format.write_array(member, array)
        write(zf, name)


def _raw_member(zf: zipfile.ZipFile, name: str) -> None:
    zf.writestr(name.removesuffix(".npy"), b"raw bytes, not an array")


def _peak_mb(code: str, cwd: Path, env: dict) -> tuple[float, str]:
    """Run ``code`` in a fresh process; its peak resident memory (MB) and its stdout."""
    probe = textwrap.dedent(code) + (
        "\nimport resource\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    # Linux carries a process' peak over exec: a child of this (large) test process would
    # start at its peak, so the probe runs in a grandchild, forked from a small interpreter
    launcher = (
        f"import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-c', {probe!r}]))"
    )
    out = _run(launcher, cwd, env)
    assert out.returncode == 0, out.stderr[-3000:]
    peak = next(line for line in out.stdout.splitlines() if line.startswith("PEAK"))
    return int(peak.split()[1]) / 1024, out.stdout + out.stderr


# --- the cache of compiled grids --------------------------------------------------------


@pytest.mark.parametrize(
    "backend", ["lightsim2grid", pytest.param("pandapower", marks=pytest.mark.slow)]
)
def test_a_module_named_by_an_entry_is_never_imported(cache, tmp_path, reference14, backend):
    entry = _filled_entry(cache)
    marker = tmp_path / "evil ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nclass Net: pass\n")
    arrays = _arrays(entry)
    states = json.loads(str(arrays["solver_states"]))
    # pandapower JSON naming a module of the working directory, as the old format stored
    planted = {"_module": "evil", "_class": "Net", "_object": "{}"}
    states["dict"]["pandapower"] = json.dumps(planted)
    arrays["solver_states"] = np.array(json.dumps(states))
    _write_npz(entry, arrays)
    out = _run(
        f"""
        import json, sys
        from grid_vec.env.make import make
        env = make("case14", backend={backend!r})
        obs, _ = env.reset(seed=0, options={{"scenario_id": 0}})
        print(json.dumps(obs.tolist()))
        print("evil" in sys.modules)
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert not marker.exists()
    *_, obs, imported = out.stdout.strip().splitlines()
    assert imported == "False"
    assert str(entry) in out.stderr and "compiled grid cache entry" in out.stderr
    np.testing.assert_allclose(json.loads(obs), reference14[1], rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_an_entry_copied_under_another_grids_name_is_refused(cache, reference14):
    entry14 = _filled_entry(cache)
    make("case118")
    clear_compiled_cache()
    (entry118,) = set(cache.glob("*.npz")) - {entry14}
    shutil.copyfile(entry118, entry14)
    _make_warns_and_equals(entry14, reference14, "written under another key")


BAD_VALUES = [
    ("thermal_limit_a", 0, np.nan),
    ("thermal_limit_a", 1, 0.0),
    ("thermal_limit_a", 2, -5.0),
    ("sub_vn_kv", 3, 0.0),
    ("gen_pmax", 0, np.nan),
]


@pytest.mark.parametrize(("field", "index", "value"), BAD_VALUES)
def test_an_entry_with_a_value_no_grid_has_is_refused(cache, reference14, field, index, value):
    entry = _filled_entry(cache)
    arrays = _arrays(entry)
    arrays[field] = arrays[field].copy()
    arrays[field][index] = value
    _write_npz(entry, arrays)
    _make_warns_and_equals(entry, reference14, f"{field}[{index}]")


@pytest.mark.slow
def test_a_deflate_bomb_in_a_model_entry_is_refused_before_it_is_inflated(
    cache, tmp_path, reference14
):
    entry = _filled_entry(cache)
    _replace_member(entry, "thermal_limit_a", lambda zf, n: _bomb_member(zf, f"{n}.npy"))
    assert entry.stat().st_size < 4 * 2**20
    peak, out = _peak_mb(
        f"""
        from grid_vec.grid import model_cache
        assert model_cache.load_model({entry.stem!r}) is None
        """,
        tmp_path,
        {model_cache.CACHE_DIR_VARIABLE: str(cache)},
    )
    assert peak < MAX_PEAK_MB, out
    assert str(entry) in out and "limit" in out
    _make_warns_and_equals(entry, reference14, "limit")


def test_a_raw_member_in_a_model_entry_is_refused(cache, reference14):
    entry = _filled_entry(cache)
    _replace_member(entry, "thermal_limit_a", lambda zf, n: _raw_member(zf, f"{n}.npy"))
    _make_warns_and_equals(entry, reference14, "is not a .npy array")


def test_a_huge_declared_shape_in_a_model_entry_is_refused(cache, reference14):
    entry = _filled_entry(cache)
    _replace_member(entry, "gen_p0", lambda zf, n: _huge_shape_member(zf, f"{n}.npy"))
    _make_warns_and_equals(entry, reference14, "does not fit")


def test_a_poisoned_lightsim_state_is_refused(cache, reference14):
    entry = _filled_entry(cache)
    arrays = _arrays(entry)
    states = json.loads(str(arrays["solver_states"]))
    core = states["dict"]["lightsim2grid"]["dict"]["grid"]["tuple"][3]["tuple"]
    core[10]["tuple"][8][0] = 10**6  # a generator regulating a bus that does not exist
    arrays["solver_states"] = np.array(json.dumps(states))
    _write_npz(entry, arrays)
    _make_warns_and_equals(entry, reference14, "lightsim2grid state is unusable")


_PROBE_MAKE14 = """
    import json, warnings
    from grid_vec.env.make import make
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = make("case14")
    obs, _ = env.reset(seed=0, options={"scenario_id": 0})
    print(json.dumps([str(w.message) for w in caught if w.category is UserWarning]))
    print(json.dumps(obs.tolist()))
"""


def _read_only_command(directory: Path) -> list[str] | None:
    """The command prefix that runs a process seeing ``directory`` read-only: a read-only bind
    mount in a mount namespace of its own for root (whom permissions do not stop), else
    nothing to add (the directory is made read-only by its mode). None where neither works."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    mount = (
        f"mount --bind {shlex.quote(str(directory))} {shlex.quote(str(directory))} && "
        f'mount -o remount,bind,ro {shlex.quote(str(directory))} && exec "$@"'
    )
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", mount, "sh", "true"], capture_output=True, timeout=30
    )
    return None if probe.returncode else ["unshare", "-m", "sh", "-c", mount, "sh"]


@pytest.mark.slow
def test_a_read_only_cache_with_a_damaged_entry_warns_once(cache, tmp_path, reference14):
    entry = _filled_entry(cache)
    entry.write_bytes(b"damaged")
    prefix = _read_only_command(cache)
    if prefix is None:
        pytest.skip("root without a mount namespace cannot make a directory read-only")
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-c", textwrap.dedent(_PROBE_MAKE14)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, model_cache.CACHE_DIR_VARIABLE: str(cache),
                 "PYTHONPATH": str(Path(__file__).parents[2])},
            timeout=240,
        )  # fmt: skip
    finally:
        cache.chmod(0o755)
    assert out.returncode == 0, out.stderr[-3000:]
    *_, messages, obs = out.stdout.strip().splitlines()
    messages = json.loads(messages)
    assert len(messages) == 1 and str(entry) in messages[0], messages
    np.testing.assert_array_equal(json.loads(obs), reference14[1])
    assert entry.read_bytes() == b"damaged"  # the read-only entry was left as it was


def test_a_cache_directory_that_cannot_be_created_costs_at_most_one_warning(
    monkeypatch, tmp_path, reference14
):
    blocker = tmp_path / "a file where the directory should be"
    blocker.write_text("")
    monkeypatch.setenv(model_cache.CACHE_DIR_VARIABLE, str(blocker / "models"))
    clear_compiled_cache()
    try:
        with pytest.warns(UserWarning, match="cannot write the cache of compiled grids") as got:
            env = make("case14")
        assert len([w for w in got if w.category is UserWarning]) == 1
        np.testing.assert_array_equal(_first_obs(env), reference14[1])
    finally:
        clear_compiled_cache()


@pytest.mark.slow
def test_a_full_disk_with_a_damaged_entry_warns_once_and_builds_the_env(
    cache, tmp_path, reference14
):
    entry = _filled_entry(cache)
    entry.write_bytes(b"damaged")
    # a "full" disk without root: a file-size limit of 4 kB makes every write past it fail
    # with EFBIG (SIGXFSZ ignored), as ENOSPC would
    full_disk = """
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    """
    out = _run(
        full_disk + _PROBE_MAKE14,
        tmp_path,
        {model_cache.CACHE_DIR_VARIABLE: str(cache)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    *_, messages, obs = out.stdout.strip().splitlines()
    messages = json.loads(messages)
    assert len(messages) == 1 and str(entry) in messages[0], messages
    np.testing.assert_array_equal(json.loads(obs), reference14[1])
    assert not list(cache.glob(".tmp-*"))


@pytest.mark.slow
def test_two_processes_writing_one_entry_leave_one_whole_entry(cache, tmp_path, reference14):
    cache.mkdir()
    code = "from grid_vec.env.make import make; make('case14')"
    environment = {**os.environ, model_cache.CACHE_DIR_VARIABLE: str(cache)}
    writers = [
        subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=environment)
        for _ in range(2)
    ]
    assert [w.wait(timeout=240) for w in writers] == [0, 0]
    entry = _entry(cache)
    assert not list(cache.glob(".tmp-*"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert same_model_arrays(model_cache.load_model(entry.stem), reference14[0])


# --- the disk tier of the scenario cache ------------------------------------------------

FIELDS = list(INJECTION_FIELDS)


@pytest.fixture
def source(tmp_path, case14_model, net14):
    shared_cache.clear()
    yield FolderSource(write_folder(tmp_path / "env14", case14_model, net14), case14_model)
    shared_cache.clear()


def _whole(source: FolderSource, scenario_id: int = 0) -> tuple[Injections, object]:
    info = source.info(scenario_id)
    files = source._files(scenario_id)
    return source._parse(info, files, 0, info.length), source._cache_key(info)


def _same(a: Injections, b: Injections) -> None:
    for name in (*FIELDS, *OUTAGE_FIELDS, *AHEAD_FIELDS):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)


def _served_over(directory: Path, key, parsed: Injections) -> tuple[Injections, list[str]]:
    """What a fresh cache serves for ``key`` over ``directory``, and its warnings."""
    calls = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ScenarioCache(2**28, directory).get(key, lambda: calls.append(1) or parsed)
    return got, [str(w.message) for w in caught]


def _assert_refused(directory: Path, entry: Path, key, parsed: Injections, match: str) -> None:
    got, messages = _served_over(directory, key, parsed)
    assert len(messages) == 1 and str(entry) in messages[0] and match in messages[0], messages
    _same(got, parsed)
    again, messages = _served_over(directory, key, parsed)  # rewritten: served, no warning
    assert messages == []
    _same(again, parsed)


def _scenario_entry(tmp_path: Path, source: FolderSource):
    parsed, key = _whole(source)
    directory = tmp_path / "scenarios"
    ScenarioCache(2**28, directory).get(key, lambda: parsed)
    return directory, _entry(directory), key, parsed


def test_a_deflate_bomb_in_a_scenario_entry_is_refused_before_it_is_inflated(tmp_path, source):
    directory, entry, key, parsed = _scenario_entry(tmp_path, source)
    _replace_member(entry, "load_p", lambda zf, n: _bomb_member(zf, f"{n}.npy"))
    bomb = entry.read_bytes()
    assert len(bomb) < 4 * 2**20
    # a fresh process asks the disk tier (default limit) for the entry, under its own key
    peak, out = _peak_mb(
        f"""
        import json, warnings
        from pathlib import Path
        import numpy as np
        from grid_vec.chronics.scenario import Injections
        from grid_vec.chronics.scenario_cache import DEFAULT_MAX_BYTES, DiskTier, ScenarioKey
        parts, files = json.loads({json.dumps([key.parts, key.files])!r})
        tier = DiskTier(Path({str(directory)!r}), DEFAULT_MAX_BYTES)
        small = Injections(*(np.zeros((2, 2)) for _ in range(8)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert tier.get(ScenarioKey(tuple(parts), tuple(files)), lambda: small) is small
        print([str(w.message) for w in caught])
        """,
        tmp_path,
        {},
    )
    assert peak < MAX_PEAK_MB, out
    assert str(entry) in out and "limit" in out
    entry.write_bytes(bomb)  # the process above wrote a fresh entry over it
    _assert_refused(directory, entry, key, parsed, "limit")


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda entry: _replace_member(entry, "load_p", lambda zf, n: _raw_member(zf, n)), "npy"),
        (lambda entry: _replace_member(entry, "gen_p", _huge_npy), "does not fit"),
        (
            lambda entry: np.save(entry.with_suffix(".tmp.npy"), np.zeros(3)) or _npy_at(entry),
            "cannot read",
        ),
        (lambda entry: entry.unlink() or entry.mkdir(), "not a regular file"),
    ],
    ids=["raw member", "huge shape", "npy at the entry path", "directory at the entry path"],
)
def test_a_scenario_entry_that_would_raise_a_bare_error_is_refused(tmp_path, source, damage, match):
    directory, entry, key, parsed = _scenario_entry(tmp_path, source)
    damage(entry)
    if entry.is_dir():  # it cannot be rewritten: refused each time, one warning each time
        got, messages = _served_over(directory, key, parsed)
        assert len(messages) == 1 and str(entry) in messages[0] and match in messages[0]
        _same(got, parsed)
        return
    _assert_refused(directory, entry, key, parsed, match)


def _huge_npy(zf: zipfile.ZipFile, name: str) -> None:
    _huge_shape_member(zf, f"{name}.npy")


def _npy_at(entry: Path) -> None:
    entry.with_suffix(".tmp.npy").replace(entry)


def _folder_with_maintenance(tmp_path, model, net):
    folder = write_folder(tmp_path / "env14m", model, net, n_scenarios=1)
    scenario = folder / "chronics" / "0000"
    n_rows = len((scenario / "prod_p.csv").read_text().splitlines()) - 1
    flags = np.zeros((n_rows, model.n_branch), dtype=int)
    flags[5:9, 3] = 1
    names = ";".join(map(str, model.branch_names))
    rows = "\n".join(";".join(map(str, r)) for r in flags)
    (scenario / "maintenance.csv").write_text(f"{names}\n{rows}\n")
    return FolderSource(folder, model)


@pytest.mark.parametrize(
    ("field", "edit"),
    [
        ("maintenance_duration", lambda a: a.__setitem__((6, 3), -3)),
        ("maintenance_time", lambda a: a.__setitem__((0, 3), 2)),
        ("hazard_duration", lambda a: a.__setitem__((1, 0), -1)),
    ],
    ids=["negative duration", "time to a maintenance that does not start then", "hazard"],
)
def test_a_scenario_entry_with_impossible_outages_is_refused(
    tmp_path,
    case14_model,
    net14,
    field,
    edit,
):
    source = _folder_with_maintenance(tmp_path, case14_model, net14)
    directory, entry, key, parsed = _scenario_entry(tmp_path, source)
    assert parsed.maintenance_time is not None
    arrays = _arrays(entry)
    if field not in arrays:
        arrays[field] = np.zeros_like(arrays["maintenance_time"])
    edit(arrays[field])
    _write_npz(entry, arrays)
    _assert_refused(directory, entry, key, parsed, field)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda arrays: arrays.pop("gen_v_ahead"), "go together"),
        (lambda arrays: arrays.update(load_q_ahead=arrays["load_q_ahead"][:, :1]), "load_q_ahead"),
        (lambda arrays: arrays.update(gen_p_ahead=arrays["gen_p_ahead"][..., 0]), "gen_p_ahead"),
        (
            lambda arrays: arrays.update(load_p_ahead=arrays["load_p_ahead"].astype(np.float32)),
            "load_p_ahead",
        ),
        (lambda arrays: arrays["gen_v_ahead"].__setitem__((2, 1, 0), np.nan), "non-finite"),
    ],
    ids=["one missing", "fewer horizons", "no horizon axis", "float32", "NaN"],
)
def test_a_scenario_entry_with_bad_forecasts_ahead_is_refused(
    tmp_path, case14_model, net14, edit, match
):
    folder = write_folder(tmp_path / "env14h", case14_model, net14, n_scenarios=1)
    forecast_three_horizons(folder)
    directory, entry, key, parsed = _scenario_entry(tmp_path, FolderSource(folder, case14_model))
    assert parsed.load_p_ahead.shape[1] == 2
    arrays = _arrays(entry)
    edit(arrays)
    _write_npz(entry, arrays)
    _assert_refused(directory, entry, key, parsed, match)


def test_a_scenario_entry_from_files_of_other_content_is_refused(tmp_path, source):
    directory, entry, key, parsed = _scenario_entry(tmp_path, source)
    # edit prod_p.csv in place: same size, same inode, its times put back; only the content
    # tells the entry is stale
    path = source._files(0)["prod_p"]
    status = path.stat()
    text = path.read_text()
    first = next(i for i, c in enumerate(text) if c in "123456789" and i > text.index("\n"))
    edited = text[:first] + ("2" if text[first] == "1" else "1") + text[first + 1 :]
    with path.open("r+") as file:
        file.write(edited)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    info, files = source.info(0), source._files(0)
    assert source._cache_key(info) == key  # the stat-based name still matches
    fresh = source._parse(info, files, 0, info.length)
    assert not np.array_equal(fresh.gen_p, parsed.gen_p)
    _assert_refused(directory, entry, key, fresh, "other content")


@pytest.mark.slow
def test_scenario_keys_are_equal_in_two_processes(tmp_path, case14_model, net14):
    folder = write_folder(tmp_path / "env14", case14_model, net14, n_scenarios=1)
    code = f"""
        from grid_vec.chronics.folder import FolderSource
        from grid_vec.chronics.scenario_cache import DiskTier
        from grid_vec.grid.compile import compile_net
        from grid_vec.grid.networks import load_network
        model = compile_net(load_network("case14"), name="case14")  # names as pandas gives
        source = FolderSource({str(folder)!r}, model)
        key = source._cache_key(source.info(0))
        print(DiskTier(__import__("pathlib").Path("d")).path_of(key).name)
        """
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=environment,
        )
        for _ in range(2)
    ]
    names = [run.communicate(timeout=240)[0].strip().splitlines()[-1] for run in runs]
    assert names[0] == names[1] and names[0].endswith(".npz")


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-1"])
def test_a_scenario_cache_limit_that_is_no_size_is_a_value_error_naming_the_variable(
    monkeypatch, value
):
    monkeypatch.setenv(scenario_cache.ENV_VAR, value)
    with pytest.raises(ValueError, match=scenario_cache.ENV_VAR):
        scenario_cache._limit_from_env()
