"""Hostile dataset folders: no code from the folder runs, memory stays bounded, and every
fault is one FolderFormatError naming the file, in a short message."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import importlib.util
import json
import lzma
import os
import pickle
import shutil
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import grid_vec
from grid_vec.chronics import FolderFormatError, FolderSource, load_folder
from grid_vec.chronics.csv_table import MAX_CSV_CHARS, MAX_LINE_CHARS, MAX_ROWS
from grid_vec.chronics.grid_json import read_grid_json
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

PLANTED = "grid_vec_planted_gadget"  # a module shipped inside hostile folders
MARKER_ENV = "GRID_VEC_PLANTED_RAN"
MAX_MESSAGE = 500
N_ROWS = 4


def _write_csv(path: Path, names, rows) -> None:
    path.write_text(";".join(names) + "\n" + "".join(";".join(map(str, r)) + "\n" for r in rows))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, case14_model) -> Path:
    """A small valid folder for case14 (one scenario of 4 rows), copied by ``folder``."""
    import pandapower as pp

    root = tmp_path_factory.mktemp("pristine") / "env"
    (root / "chronics" / "0000").mkdir(parents=True)
    pp.to_json(load_network("case14"), str(root / "grid.json"))
    limits = ", ".join(str(float(v)) for v in case14_model.thermal_limit_a)
    (root / "config.py").write_text(f"config = {{'thermal_limits': [{limits}]}}\n")
    (root / "parameters.json").write_text('{"NB_TIMESTEP_OVERFLOW_ALLOWED": 3}')
    (root / "difficulty_levels.json").write_text(
        '{"0": {"NB_TIMESTEP_OVERFLOW_ALLOWED": 9}, "competition": {"MAX_SUB_CHANGED": 2}}'
    )
    (root / "grid_layout.json").write_text('{"sub_0": [0.0, 1.0]}')
    (root / "prods_charac.csv").write_text(
        "name,max_ramp_up,max_ramp_down\ngen_1_0,5,5\ngen_2_1,10,10\n"
    )
    m = case14_model
    gens = m.gen_names[m.gen_kind != "slack"]
    scenario = root / "chronics" / "0000"
    for stem, names, values in (
        ("load_p", m.load_names, m.load_p0),
        ("load_q", m.load_names, m.load_q0),
        ("prod_p", gens, m.gen_p0[m.gen_kind != "slack"]),
    ):
        _write_csv(scenario / f"{stem}.csv", names, [np.round(values, 3)] * N_ROWS)
    (scenario / "start_datetime.info").write_text("2019-01-05 23:55\n")
    (scenario / "time_interval.info").write_text("00:05\n")
    return root


@pytest.fixture
def folder(pristine, tmp_path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "env"))


@pytest.fixture
def planted(folder, tmp_path, monkeypatch) -> Path:
    """A module in the folder that would leave a marker file and an env var if it ran, with
    the folder and the working directory on ``sys.path`` (as in Jupyter or ``python -c``)."""
    marker = tmp_path / "planted_ran"
    source = (
        f"import os\nopen({str(marker)!r}, 'w').write('ran')\nos.environ[{MARKER_ENV!r}] = '1'\n"
        "class Gadget:\n    def __init__(self, *a, **k):\n"
        f"        open({str(marker)!r}, 'w').write('built')\n"
    )
    (folder / f"{PLANTED}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    monkeypatch.delenv(MARKER_ENV, raising=False)
    yield marker
    assert not marker.exists(), "code from the dataset folder ran"
    assert MARKER_ENV not in os.environ
    assert PLANTED not in sys.modules


def _open(root: Path, model) -> None:
    """Everything a user does with a folder: load it, then read every scenario row."""
    folder = load_folder(root)
    source = FolderSource(folder.path, model)
    source.read(0, 0, source.info(0).length)


def _fails_naming(call, file_name: str) -> FolderFormatError:
    with pytest.raises(FolderFormatError) as info:
        call()
    message = str(info.value)
    assert file_name in message
    assert len(message) < MAX_MESSAGE, message[:1000]
    return info.value


def _grid(folder: Path) -> dict:
    return json.loads((folder / "grid.json").read_text())


def _set_table(grid: dict, table: str, edit) -> None:
    """Apply ``edit`` to the split-orient dict of one table of a grid.json document."""
    entry = grid["_object"][table]
    split = json.loads(entry["_object"])
    edit(split)
    entry["_object"] = json.dumps(split)


def _set_cell(grid: dict, table: str, column: str, value, row: int = 0) -> None:
    def edit(split):
        split["data"][row][split["columns"].index(column)] = value

    _set_table(grid, table, edit)


# ---- code in the folder never runs ----------------------------------------------------------


def _gadget_top(grid, folder):
    return {"_module": PLANTED, "_class": "Gadget", "_object": {}}


def _gadget_os_system(grid, folder):
    return {"_module": "os", "_class": "system", "_object": "touch pwned"}


def _gadget_table(grid, folder):
    grid["_object"]["bus"] = {"_module": PLANTED, "_class": "Gadget", "_object": "{}"}
    return grid


def _gadget_table_os(grid, folder):
    grid["_object"]["line"] = {"_module": "os", "_class": "system", "_object": "touch pwned"}
    return grid


def _gadget_in_cell(grid, folder):
    _set_cell(grid, "line", "name", {"_module": PLANTED, "_class": "Gadget", "_object": {}}, 3)
    return grid


def _gadget_in_std_types(grid, folder):
    grid["_object"]["std_types"]["line"]["x"] = {"_module": PLANTED, "_class": "Gadget"}
    return grid


def _gadget_dtype(grid, folder):
    grid["_object"]["bus"]["dtype"]["vn_kv"] = f"{PLANTED}.Gadget"
    return grid


def _gadget_geo(grid, folder):
    _set_cell(grid, "bus", "geo", json.dumps({"type": "__class__", "coordinates": [0, 0]}))
    return grid


def _gadget_controller(grid, folder):
    def edit(split):
        split["columns"], split["index"] = ["object"], [0]
        split["data"] = [[f"{PLANTED}.Gadget"]]

    _set_table(grid, "controller", edit)
    return grid


@pytest.mark.parametrize(
    "gadget",
    [
        _gadget_top,
        _gadget_os_system,
        _gadget_table,
        _gadget_table_os,
        _gadget_in_cell,
        _gadget_in_std_types,
        _gadget_dtype,
        _gadget_geo,
        _gadget_controller,
    ],
)
def test_grid_json_naming_modules_or_classes_runs_no_code(folder, planted, case14_model, gadget):
    grid = gadget(_grid(folder), folder)
    (folder / "grid.json").write_text(json.dumps(grid))
    _fails_naming(lambda: _open(folder, case14_model), "grid.json")
    _fails_naming(lambda: grid_vec.make(folder), "grid.json")


def test_config_py_importing_a_module_of_the_folder_runs_no_code(folder, planted, case14_model):
    text = (folder / "config.py").read_text()
    (folder / "config.py").write_text(
        f"import {PLANTED}\nfrom {PLANTED} import Gadget\n{PLANTED}.Gadget()\n{text}"
    )
    _open(folder, case14_model)  # the literal values are read; the imports are not run
    (folder / "config.py").write_text(f"import {PLANTED}\nconfig = {{'thermal_limits': Gadget()}}")
    _fails_naming(lambda: load_folder(folder), "config.py")


# ---- compression bombs ---------------------------------------------------------------------

_COMPRESS = {
    ".bz2": lambda b: bz2.compress(b, 9),
    ".gz": lambda b: gzip.compress(b, 9),
    ".xz": lambda b: lzma.compress(b, preset=0),
}
_CHUNK = 16 * 2**20


def _bomb(path: Path, head: bytes, filler: bytes, expanded: int) -> None:
    """``head`` then ``filler`` repeated to ``expanded`` bytes, from one compressed chunk
    written again and again (the formats accept concatenated streams)."""
    suffix = path.suffix
    chunk = _COMPRESS[suffix](filler * max(1, _CHUNK // len(filler)))  # whole lines
    with open(path, "wb") as f:
        f.write(_COMPRESS[suffix](head))
        for _ in range(expanded // _CHUNK + 1):
            f.write(chunk)


def _peak_bytes(call) -> int:
    """Peak of memory allocated by Python (tracemalloc) while ``call`` runs."""
    tracemalloc.start()
    with contextlib.suppress(FolderFormatError):
        call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _bomb_in_load_p(folder: Path, suffix: str, head: bytes, filler: bytes, expanded: int):
    scenario = folder / "chronics" / "0000"
    (scenario / "load_p.csv").unlink()
    _bomb(scenario / f"load_p.csv{suffix}", head, filler, expanded)
    return f"load_p.csv{suffix}"


@pytest.mark.parametrize("suffix", [".bz2", ".gz", ".xz"])
def test_a_compressed_huge_line_stops_early_in_bounded_memory(folder, case14_model, suffix):
    header = ";".join(case14_model.load_names).encode() + b"\n"
    name = _bomb_in_load_p(folder, suffix, header + b"1", b"1", 2**30)  # a 1 GiB data row
    err = _fails_naming(lambda: FolderSource(folder, case14_model).info(0), name)
    assert f"line 2 is longer than {MAX_LINE_CHARS} characters" in str(err)
    assert _peak_bytes(lambda: FolderSource(folder, case14_model).info(0)) < 200 * 2**20


def test_a_compressed_huge_header_stops_early_in_bounded_memory(folder, case14_model):
    name = _bomb_in_load_p(folder, ".bz2", b"load_", b"x", 2**30)
    err = _fails_naming(lambda: FolderSource(folder, case14_model).info(0), name)
    assert "line 1 is longer than" in str(err)
    assert _peak_bytes(lambda: FolderSource(folder, case14_model).read(0, 0, 2)) < 200 * 2**20


def test_a_compressed_file_of_many_rows_stops_at_the_row_bound(folder, case14_model):
    name = _bomb_in_load_p(folder, ".gz", b"a\n", b"1\n", 3 * MAX_ROWS)
    err = _fails_naming(lambda: FolderSource(folder, case14_model).info(0), name)
    assert f"more than {MAX_ROWS} data rows" in str(err)


def test_a_compressed_file_of_long_lines_stops_at_the_size_bound(folder, case14_model):
    line = b"1;" * (MAX_LINE_CHARS // 4) + b"1\n"
    name = _bomb_in_load_p(folder, ".xz", b"a\n", line, 2 * MAX_CSV_CHARS)
    err = _fails_naming(lambda: FolderSource(folder, case14_model).info(0), name)
    assert f"more than {MAX_CSV_CHARS} characters" in str(err)


def test_an_uncompressed_huge_line_in_a_data_window_is_refused(folder, case14_model):
    path = folder / "chronics" / "0000" / "prod_p.csv"
    with open(path, "a") as f:
        f.write("9" * (2 * MAX_LINE_CHARS))
    _fails_naming(lambda: _open(folder, case14_model), "prod_p.csv")


# ---- deep nesting and huge numbers ---------------------------------------------------------

_DEEP = 100_000


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("config.py", "config = {'thermal_limits': " + "[" * _DEEP + "]" * _DEEP + "}\n"),
        ("config.py", "config = {'thermal_limits': " + "-" * _DEEP + "1}\n"),
        ("config.py", "config = {'thermal_limits': 1" + "+1" * _DEEP + "}\n"),
        ("config.py", "config = {'thermal_limits': " + "[" * 150 + "]" * 150 + "}\n"),
        ("parameters.json", "[" * _DEEP + "]" * _DEEP),
        ("parameters.json", '{"a": ' * _DEEP + "1" + "}" * _DEEP),
        ("difficulty_levels.json", '{"0": ' * _DEEP + "{}" + "}" * _DEEP),
        ("grid_layout.json", "[" * _DEEP + "]" * _DEEP),
        ("grid.json", '{"_object": ' * _DEEP + "{}" + "}" * _DEEP),
    ],
)
def test_deep_nesting_is_refused(folder, file, text):
    (folder / file).write_text(text)
    _fails_naming(lambda: load_folder(folder), file)


def test_deep_nesting_inside_a_grid_table_is_refused(folder):
    grid = _grid(folder)
    _set_cell(grid, "line", "name", "PLACEHOLDER")
    text = json.dumps(grid).replace('\\"PLACEHOLDER\\"', "[" * _DEEP + "]" * _DEEP)
    (folder / "grid.json").write_text(text)
    err = _fails_naming(lambda: load_folder(folder), "grid.json")
    assert "table 'line'" in str(err)


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("config.py", "config = {'thermal_limits': [1e400] * 20}"),
        ("config.py", "config = {'thermal_limits': [" + "9" * 4000 + "] * 20}"),
        ("config.py", "config = {'thermal_limits': [" + ", ".join(["1e300"] * 20) + "]}"),
        ("config.py", "config = {'thermal_limits': [" + ", ".join(["-5"] * 20) + "]}"),
        ("config.py", "config = {'thermal_limits': [" + ", ".join(["True"] * 20) + "]}"),
        ("config.py", "config = {'thermal_limits': {'a': 'b'}}"),
        ("config.py", "config = {'thermal_limits': 'x' * 9}"),
        ("config.py", "config = {'names_chronics_to_grid': ['loads', 'prods']}"),
        ("config.py", "config = {'names_chronics_to_grid': {'loads': [1, 2]}}"),
        ("parameters.json", '{"NB_TIMESTEP_OVERFLOW_ALLOWED": 1e400}'),
        ("parameters.json", '{"NB_TIMESTEP_OVERFLOW_ALLOWED": ' + "9" * 5000 + "}"),
        ("parameters.json", '{"NB_TIMESTEP_OVERFLOW_ALLOWED": Infinity}'),
        ("parameters.json", '{"NB_TIMESTEP_OVERFLOW_ALLOWED": [' + "1," * 10_000 + "1]}"),
        ("parameters.json", '{"NB_TIMESTEP_OVERFLOW_ALLOWED": "' + "x" * 10_000 + '"}'),
        ("parameters.json", "[1, 2]"),
        ("difficulty_levels.json", '{"0": {"NB_TIMESTEP_OVERFLOW_ALLOWED": 1e400}}'),
        ("difficulty_levels.json", '{"0": {"NB_TIMESTEP_OVERFLOW_ALLOWED": [1]}}'),
        ("difficulty_levels.json", '{"0": 3}'),
        ("difficulty_levels.json", "{}"),
        ("difficulty_levels.json", "{" + ", ".join(f'"{i}": {{}}' for i in range(500)) + "}"),
        ("prods_charac.csv", 'name,max_ramp_up\n"' + "x" * 200_000 + '",1\n'),
    ],
)
def test_bad_values_in_metadata_files_are_refused(folder, file, text):
    (folder / file).write_text(text)
    _fails_naming(lambda: load_folder(folder), file)


_CHARAC_HEADER = (
    "name,type,Pmin,Pmax,max_ramp_up,max_ramp_down,start_cost,shut_down_cost,marginal_cost,"
    "min_up_time,min_down_time"
)


@pytest.mark.parametrize(
    ("row", "bad"),
    [
        ("{name},thermal,0,100,1e400,5,0,0,1,0,0", "max_ramp_up"),
        ("{name},thermal,0,100,-1,5,0,0,1,0,0", "max_ramp_up"),
        ("{name},thermal,0,100,fast,5,0,0,1,0,0", "max_ramp_up"),
        ("{name},thermal,0,100,5,nan,0,0,1,0,0", "max_ramp_down"),
        ("{name},thermal,50,10,5,5,0,0,1,0,0", "Pmin"),
        ("{name},thermal,0,100,5,5,0,0,1,0,0\n{name},thermal,0,100,5,5,0,0,1,0,0", "repeated"),
    ],
)
def test_bad_generator_characteristics_are_refused_when_the_env_is_made(folder, row, bad):
    """prods_charac.csv with every column grid2op requires: the dispatch rules read it when
    the env is made, and refuse a bad value naming the file, line and column."""
    names = [str(n) for n in grid_vec.make(folder).model.gen_names]
    rows = [row.format(name=names[0])] + [f"{n},thermal,0,100,5,5,0,0,1,0,0" for n in names[1:]]
    (folder / "prods_charac.csv").write_text("\n".join([_CHARAC_HEADER, *rows]) + "\n")
    grid_vec.env.make.clear_compiled_cache()
    error = _fails_naming(lambda: grid_vec.make(folder), "prods_charac.csv")
    assert bad in str(error)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"NB_TIMESTEP_OVERFLOW_ALLOWED": "many"}, "NB_TIMESTEP_OVERFLOW_ALLOWED"),
        ({"NB_TIMESTEP_OVERFLOW_ALLOWED": -1}, "nb_timestep_overflow_allowed"),
        ({"HARD_OVERFLOW_THRESHOLD": "nan"}, "hard_overflow_threshold"),
        ({"SOFT_OVERFLOW_THRESHOLD": 3.0}, "hard_overflow_threshold"),
        ({"NO_OVERFLOW_DISCONNECTION": "perhaps"}, "NO_OVERFLOW_DISCONNECTION"),
    ],
)
def test_parameters_json_values_rules_refuse_are_reported_naming_the_file(folder, params, key):
    (folder / "difficulty_levels.json").unlink()  # else the rules come from there
    (folder / "parameters.json").write_text(json.dumps(params))
    err = _fails_naming(lambda: grid_vec.make(folder), "parameters.json")
    assert key in str(err)
    (folder / "difficulty_levels.json").write_text(json.dumps({"competition": params}))
    err = _fails_naming(lambda: grid_vec.make(folder), "difficulty_levels.json")
    assert key in str(err) and "level 'competition'" in str(err)


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("time_interval.info", "99999999999999999999:00"),
        ("time_interval.info", "1" * 5000),
        ("time_interval.info", "00:00"),
        ("start_datetime.info", "9" * 1000),
        ("start_datetime.info", "x" * 5000),
    ],
)
def test_bad_info_files_are_refused(folder, case14_model, file, text):
    (folder / "chronics" / "0000" / file).write_text(text)
    _fails_naming(lambda: _open(folder, case14_model), file)


def _line_value(column, value):
    def edit(grid):
        _set_cell(grid, "line", column, value, 2)

    return edit


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_line_value("x_ohm_per_km", 0.0), "'x_ohm_per_km': must be finite and != 0"),
        (_line_value("max_i_ka", 0.0), "'max_i_ka': must be finite and > 0"),
        (_line_value("length_km", -1.0), "'length_km': must be finite and > 0"),
        (_line_value("r_ohm_per_km", None), "'r_ohm_per_km': must be finite"),
        (_line_value("from_bus", 99), "'from_bus': bus 99 is not in table 'bus'"),
        (_line_value("x_ohm_per_km", "PLACEHOLDER_BIG"), "out of bounds"),
        (_line_value("x_ohm_per_km", "PLACEHOLDER_INT"), "out of bounds"),
        (_line_value("x_ohm_per_km", "nope"), "not all float64"),
        (lambda g: _set_cell(g, "bus", "vn_kv", float("nan")), "'vn_kv': must be finite"),
        (lambda g: _set_cell(g, "gen", "vm_pu", 0.0), "'vm_pu': must be finite and > 0"),
        (lambda g: _set_cell(g, "trafo", "sn_mva", -3.0), "'sn_mva': must be finite and > 0"),
        (lambda g: g["_object"].update(version="9" * 50), "is not a version"),
        (
            lambda g: g["_object"].update(version="99.0.0", format_version="99.0.0"),
            "cannot bring the grid",
        ),
        (lambda g: g["_object"].update(bus=3), "'bus': must be a table"),
        (lambda g: g["_object"].update(__class__="x"), "is not an element name"),
    ],
)
def test_bad_grid_values_are_refused_naming_the_place(folder, case14_model, edit, expected):
    grid = _grid(folder)
    edit(grid)
    text = json.dumps(grid)
    text = text.replace('\\"PLACEHOLDER_BIG\\"', "1e400").replace(
        '\\"PLACEHOLDER_INT\\"', "1" * 5000
    )
    (folder / "grid.json").write_text(text)
    err = _fails_naming(lambda: _open(folder, case14_model), "grid.json")
    assert expected in str(err)


# ---- bad encodings -------------------------------------------------------------------------

_TEXT_FILES = [
    "grid.json",
    "config.py",
    "parameters.json",
    "difficulty_levels.json",
    "grid_layout.json",
    "prods_charac.csv",
    "chronics/0000/load_p.csv",
    "chronics/0000/load_q.csv.bz2",
    "chronics/0000/prod_p.csv.gz",
    "chronics/0000/start_datetime.info",
    "chronics/0000/time_interval.info",
]


@pytest.mark.parametrize("file", _TEXT_FILES)
@pytest.mark.parametrize("junk", [b"caf\xe9 \xe0 la cr\xe8me", b"\x00\xff\xfe\x80binary\x00"])
def test_text_files_that_are_not_utf8_are_refused(folder, case14_model, file, junk):
    path = folder / file
    suffix = path.suffix if path.suffix in _COMPRESS else ""
    if suffix:
        plain = path.with_suffix("")
        data = plain.read_bytes()
        plain.unlink()
    else:
        data = path.read_bytes()
    cut = len(data) // 2
    data = data[:cut] + junk + data[cut:]
    path.write_bytes(_COMPRESS[suffix](data) if suffix else data)
    _fails_naming(lambda: _open(folder, case14_model), path.name)


@pytest.mark.parametrize("suffix", [".bz2", ".gz", ".xz"])
def test_corrupt_compressed_files_are_refused(folder, case14_model, suffix):
    (folder / "chronics" / "0000" / "load_p.csv").unlink()
    (folder / "chronics" / "0000" / f"load_p.csv{suffix}").write_bytes(b"\x00garbage" * 50)
    _fails_naming(lambda: _open(folder, case14_model), f"load_p.csv{suffix}")


# ---- symlinks out of the folder ------------------------------------------------------------


@pytest.mark.parametrize(
    "link",
    [
        "grid.json",
        "config.py",
        "parameters.json",
        "difficulty_levels.json",
        "prods_charac.csv",
        "chronics",
        "chronics/0000",
        "chronics/0000/load_p.csv",
        "chronics/0000/time_interval.info",
    ],
)
def test_symlinks_out_of_the_folder_are_refused(folder, case14_model, tmp_path, link):
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside)  # a valid target: only where it lies is wrong
    path = folder / link
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(outside / link, target_is_directory=(outside / link).is_dir())
    err = _fails_naming(lambda: _open(folder, case14_model), link.split("/")[-1])
    assert "outside the dataset folder" in str(err)


def test_symlinks_inside_the_folder_are_followed(folder, case14_model):
    (folder / "grid_copy.json").write_bytes((folder / "grid.json").read_bytes())
    (folder / "grid.json").unlink()
    (folder / "grid.json").symlink_to("grid_copy.json")
    _open(folder, case14_model)


# ---- the reader builds the net pandapower's loader builds ----------------------------------


def _sandbox_grid() -> Path | None:
    """grid2op's bundled l2rpn_case14_sandbox grid.json, located without importing grid2op."""
    spec = importlib.util.find_spec("grid2op")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "l2rpn_case14_sandbox" / "grid.json"
    return path if path.is_file() else None


@pytest.mark.parametrize("case", ["case5", "case14", "l2rpn_case14_sandbox"])
def test_reader_compiles_the_same_model_as_pandapowers_loader(tmp_path, case):
    import pandapower as pp

    if case.startswith("l2rpn"):
        path = _sandbox_grid()
        if path is None:
            pytest.skip("grid2op's datasets are not installed")
    else:
        path = tmp_path / "grid.json"
        pp.to_json(load_network(case), str(path))
    ours = read_grid_json(path)
    theirs = pp.from_json_string(path.read_text(), convert=True)
    assert pp.to_json(ours) == pp.to_json(theirs)
    a, b = compile_net(ours, name=case), compile_net(theirs, name=case)
    assert pickle.dumps(a) == pickle.dumps(b)
