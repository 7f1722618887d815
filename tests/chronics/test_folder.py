"""grid2op-format folders: load_folder, FolderSource, malformed input and security."""

from __future__ import annotations

import bz2
import datetime as dt
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from grid_vec.chronics import (
    FolderFormatError,
    FolderSource,
    Injections,
    ScenarioHandler,
    ScenarioSource,
    SyntheticSource,
    load_folder,
)
from grid_vec.chronics.scenario import INJECTION_FIELDS
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

N_ROWS = 30
FIELDS = list(INJECTION_FIELDS)  # the outage fields are optional


def write_csv(path: Path, names, rows: np.ndarray) -> None:
    text = ";".join(names) + "\n" + "\n".join(";".join(f"{v:.6f}" for v in r) for r in rows) + "\n"
    if path.suffix == ".bz2":
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path.write_text(text)


def write_folder(root: Path, model, net, *, n_scenarios: int = 2, forecasts: bool = True) -> Path:
    """A grid2op-format folder for ``net`` whose scenarios are synthetic ones, rounded to 1e-6.

    The slack is left out of prod_p/prod_v, as grid2op datasets often do.
    """
    import pandapower as pp

    root.mkdir(parents=True, exist_ok=True)
    pp.to_json(net, str(root / "grid.json"))
    limits = ", ".join(str(float(v)) for v in model.thermal_limit_a)
    (root / "config.py").write_text(
        f'config = {{"backend": None, "thermal_limits": [{limits}], '
        '"names_chronics_to_grid": None}\n'
    )
    src = SyntheticSource(model, seed=4, length=N_ROWS)
    gens = model.gen_kind != "slack"
    for i in range(n_scenarios):
        folder = root / "chronics" / f"{i:04d}"
        folder.mkdir(parents=True)
        inj = src.read(i, 0, N_ROWS)
        for stem, names, actual, forecast in (
            ("load_p", model.load_names, inj.load_p, inj.load_p_forecast),
            ("load_q", model.load_names, inj.load_q, inj.load_q_forecast),
            ("prod_p", model.gen_names[gens], inj.gen_p[:, gens], inj.gen_p_forecast[:, gens]),
            ("prod_v", model.gen_names[gens], inj.gen_v[:, gens], inj.gen_v_forecast[:, gens]),
        ):
            suffix = ".csv.bz2" if stem.startswith("load") else ".csv"  # both kinds exercised
            write_csv(folder / f"{stem}{suffix}", names, actual)
            if forecasts:
                write_csv(folder / f"{stem}_forecasted{suffix}", names, forecast)
        (folder / "start_datetime.info").write_text("2019-01-05 23:55\n")
        (folder / "time_interval.info").write_text("00:05\n")
    return root


@pytest.fixture(scope="module")
def net14():
    return load_network("case14")


@pytest.fixture
def folder14(tmp_path, case14_model, net14):
    return write_folder(tmp_path / "env14", case14_model, net14)


def expected(model, scenario_id: int) -> Injections:
    inj = SyntheticSource(model, seed=4, length=N_ROWS).read(scenario_id, 0, N_ROWS)
    values = {f: np.round(getattr(inj, f), 6) for f in FIELDS}
    slack = model.gen_kind == "slack"
    for f in ("gen_p", "gen_p_forecast"):
        values[f][:, slack] = model.gen_p0[slack]
    for f in ("gen_v", "gen_v_forecast"):
        values[f][:, slack] = model.gen_v0[slack]
    return Injections(**values)


def test_folder_reads_back_what_was_written(folder14, case14_model):
    folder = load_folder(folder14)
    assert folder.name == "env14" and folder.layout is None
    assert folder.parameters is None and folder.difficulty_levels is None
    np.testing.assert_allclose(folder.thermal_limits, case14_model.thermal_limit_a)
    model = compile_net(folder.net, name=folder.name, thermal_limits=folder.thermal_limits)
    src = FolderSource(folder.path, model)
    assert isinstance(src, ScenarioSource)
    assert len(src) == 2 and src.names == ["0000", "0001"]
    info = src.info(1)
    assert (info.id, info.name, info.length) == (1, "0001", N_ROWS)
    assert info.start == dt.datetime(2019, 1, 6, 0, 0)  # row 0: one step after the file's date
    assert info.step_duration == dt.timedelta(minutes=5)
    got, want = src.read(1, 0, N_ROWS), expected(model, 1)
    for f in FIELDS:
        np.testing.assert_allclose(getattr(got, f), getattr(want, f), rtol=0, atol=1e-9)
    window = src.read(1, 7, 12)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(window, f), getattr(got, f)[7:12])
    with pytest.raises(ValueError, match=r"scenario_id must be in \[0, 1\]"):
        src.info(2)
    with pytest.raises(ValueError, match="0 <= start < stop <= 30"):
        src.read(0, 10, 31)


def test_folder_and_synthetic_give_the_same_kind_of_object(folder14, case14_model):
    a = FolderSource(folder14, case14_model).read(0, 0, 5)
    b = SyntheticSource(case14_model).read(0, 0, 5)
    assert type(a) is type(b)
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert (x.shape, x.dtype) == (y.shape, y.dtype)


def test_handler_plays_a_folder_in_chunks(folder14, case14_model):
    src = FolderSource(folder14, case14_model)
    h = ScenarioHandler(src, chunk_size=4)
    h.set_id("0001")
    h.reset(fast_forward=3)
    rows = [h.current().gen_p.copy()]
    while h.advance():
        rows.append(h.current().gen_p.copy())
    np.testing.assert_array_equal(np.array(rows), src.read(1, 3, N_ROWS).gen_p)
    assert len(pickle.dumps(src)) < len(pickle.dumps(case14_model)) + 5_000


def test_missing_forecasts_and_prod_v_use_next_step_and_setpoints(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1, forecasts=False)
    (root / "chronics" / "0000" / "prod_v.csv").unlink()
    (root / "chronics" / "0000" / "start_datetime.info").unlink()
    src = FolderSource(root, case14_model)
    assert src.info(0).start == dt.datetime(2019, 1, 1, 0, 5)
    inj = src.read(0, 0, N_ROWS)
    np.testing.assert_array_equal(inj.load_p_forecast[:-1], inj.load_p[1:])
    np.testing.assert_array_equal(inj.load_p_forecast[-1], inj.load_p[-1])
    np.testing.assert_array_equal(inj.gen_v, np.broadcast_to(case14_model.gen_v0, inj.gen_v.shape))
    # a window ending before the scenario's end still forecasts its last row from the next step
    np.testing.assert_array_equal(src.read(0, 2, 5).gen_p_forecast, inj.gen_p[3:6])


def _edit(path: Path, fn) -> None:
    """Apply ``fn`` to the list of lines of a (possibly bz2) CSV file."""
    raw = path.read_bytes()
    compressed = path.suffix == ".bz2"
    lines = (bz2.decompress(raw) if compressed else raw).decode().splitlines()
    text = "\n".join(fn(lines)) + "\n"
    path.write_bytes(bz2.compress(text.encode()) if compressed else text.encode())


def _set_cell(row: int, col: int, value: str):
    def fn(lines):
        cells = lines[row + 1].split(";")
        cells[col] = value
        lines[row + 1] = ";".join(cells)
        return lines

    return fn


@pytest.mark.parametrize(
    ("file", "fn", "match"),
    [
        ("load_q.csv.bz2", None, r"load_q\.csv: missing file"),
        (
            "prod_p.csv",
            _set_cell(4, 2, "abc"),
            r"prod_p\.csv: line 6 \(data row 4\), column 3 \('gen_5_2'\): 'abc' is not a number",
        ),
        (
            "prod_p.csv",
            _set_cell(2, 0, ""),
            r"prod_p\.csv: line 4 \(data row 2\), column 1 \('gen_1_0'\): '' is not a number",
        ),
        (
            "load_p.csv.bz2",
            _set_cell(5, 3, "nan"),
            r"load_p\.csv\.bz2: line 7 \(data row 5\), column 4 \('load_4_3'\): value nan is not",
        ),
        (
            "load_p.csv.bz2",
            _set_cell(8, 1, "-3.5"),
            r"load_p\.csv\.bz2: line 10 \(data row 8\), column 2 \('load_2_1'\): negative load",
        ),
        (
            "load_q.csv.bz2",
            lambda ls: [*ls[:3], ls[3] + ";1.0", *ls[4:]],
            r"load_q\.csv\.bz2: line 4 \(data row 2\): has 12 columns, the header has 11",
        ),
        (
            "prod_v.csv",
            lambda ls: [ls[0].replace("gen_2_1", "gen_2_x"), *ls[1:]],
            r"prod_v\.csv: column 'gen_2_x' names no generator of grid 'case14'",
        ),
        (
            "load_p.csv.bz2",
            lambda ls: [
                ";".join(ls[0].split(";")[1:]),
                *(";".join(r.split(";")[1:]) for r in ls[1:]),
            ],
            r"load_p\.csv\.bz2: no column for 'load_1_0'",
        ),
        (
            "prod_p_forecasted.csv",
            lambda ls: ls[:-2],
            r"prod_p_forecasted\.csv: has 28 data rows, needs at least 30 \(load_p has 30\)",
        ),
        (
            "load_p.csv.bz2",
            lambda ls: [ls[0], ls[0], *ls[2:]],
            r"load_p\.csv\.bz2: line 2 \(data row 0\), column 1 \('load_1_0'\): 'load_1_0' is not",
        ),
        (
            "load_q_forecasted.csv.bz2",
            lambda ls: [*ls, ls[-1]],
            r"load_q_forecasted\.csv\.bz2: has more than 30 data rows \(load_p has 30\)",
        ),
        ("time_interval.info", None, None),
    ],
)
def test_malformed_files_are_reported_with_file_row_and_column(
    tmp_path, case14_model, net14, file, fn, match
):
    root = write_folder(tmp_path / "bad", case14_model, net14, n_scenarios=1)
    path = root / "chronics" / "0000" / file
    if file.endswith(".info"):
        path.write_text("five minutes")
        match = r"time_interval\.info: 'five minutes' is not a duration"
    elif fn is None:
        path.unlink()
    else:
        _edit(path, fn)
    src = FolderSource(root, case14_model, allow_negative_loads=False)
    with pytest.raises(FolderFormatError, match=match):
        src.read(0, 0, N_ROWS)
    assert issubclass(FolderFormatError, ValueError)


def test_negative_loads_are_accepted_unless_refused(tmp_path, case14_model, net14):
    """grid2op accepts loads that export power (interconnections): so does a folder source,
    unless told not to."""
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    _edit(root / "chronics" / "0000" / "load_p.csv.bz2", _set_cell(8, 1, "-3.5"))
    inj = FolderSource(root, case14_model).read(0, 0, N_ROWS)
    assert inj.load_p[8, 1] == -3.5
    with pytest.raises(FolderFormatError, match="allow_negative_loads=False"):
        FolderSource(root, case14_model, allow_negative_loads=False).read(0, 0, N_ROWS)


def test_duplicate_header_column_is_reported(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "bad", case14_model, net14, n_scenarios=1)
    path = root / "chronics" / "0000" / "prod_p.csv"
    _edit(path, lambda ls: [ls[0].replace("gen_2_1", "gen_1_0"), *ls[1:]])
    with pytest.raises(FolderFormatError, match=r"prod_p\.csv: column 'gen_1_0' appears twice"):
        FolderSource(root, case14_model).read(0, 0, 2)


def test_config_py_is_never_executed(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    marker = tmp_path / "ran.txt"
    (root / "config.py").write_text(
        f"open({str(marker)!r}, 'w').write('executed')\n"
        "import os\n"
        "th = [float(x) for x in range(20)]\n"
        "lim = [" + ", ".join(["100.0"] * case14_model.n_branch) + "]\n"
        "config = {'backend': os.system, 'thermal_limits': lim,\n"
        f"          'names_chronics_to_grid': None, 'x': open({str(marker)!r}, 'w')}}\n"
    )
    folder = load_folder(root)
    np.testing.assert_array_equal(folder.thermal_limits, np.full(case14_model.n_branch, 100.0))
    FolderSource(root, case14_model).read(0, 0, 2)
    assert not marker.exists()
    # a value that is code is refused, and still not run
    (root / "config.py").write_text(
        f"config = {{'thermal_limits': open({str(marker)!r}, 'w').write('x')}}\n"
    )
    with pytest.raises(
        FolderFormatError,
        match=r"config\.py: config\['thermal_limits'\] \(line 1\) is not a literal",
    ):
        load_folder(root)
    (root / "config.py").write_text(
        "th = [float(x) for x in range(20)]\nconfig = {'thermal_limits': th}\n"
    )
    with pytest.raises(FolderFormatError, match="is not a literal"):
        load_folder(root)
    assert not marker.exists()
    (root / "config.py").write_text("config = {\n")
    with pytest.raises(FolderFormatError, match=r"config\.py: not valid Python source"):
        load_folder(root)


def test_grid_json_naming_os_system_is_rejected(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    marker = tmp_path / "pwned"
    grid = json.loads((root / "grid.json").read_text())
    grid["_object"]["bus"] = {"_module": "os", "_class": "system", "_object": f"touch {marker}"}
    (root / "grid.json").write_text(json.dumps(grid))
    with pytest.raises(
        FolderFormatError, match=r"grid\.json: table 'bus': only pandas DataFrames .*'os'"
    ):
        load_folder(root)
    assert not marker.exists()
    (root / "grid.json").write_text(
        json.dumps({"_module": "os", "_class": "system", "_object": f"touch {marker}"})
    )
    with pytest.raises(FolderFormatError, match=r"grid\.json: expected a pandapower net"):
        load_folder(root)
    assert not marker.exists()
    (root / "grid.json").unlink()
    with pytest.raises(FolderFormatError, match=r"grid\.json: missing file"):
        load_folder(root)


def test_metadata_files_and_limits_by_name(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    limits = {str(n): 10.0 + i for i, n in enumerate(case14_model.branch_names)}
    (root / "config.py").write_text(f"config = {{'thermal_limits': {limits!r}}}\n")
    (root / "parameters.json").write_text('{"NB_TIMESTEP_OVERFLOW_ALLOWED": 3}')
    (root / "params.json").write_text('{"dt": [5]}')  # data-generation settings: not read
    (root / "grid_layout.json").write_text('{"sub_0": [0.0, 1.0]}')
    (root / "prods_charac.csv").write_text(
        "Pmax,name,type\n140,gen_1_0,nuclear\n100,gen_2_1,solar\n"
    )
    folder = load_folder(root)
    np.testing.assert_array_equal(folder.thermal_limits, 10.0 + np.arange(case14_model.n_branch))
    assert folder.parameters == {"NB_TIMESTEP_OVERFLOW_ALLOWED": 3}
    assert folder.layout == {"sub_0": [0.0, 1.0]}
    np.testing.assert_array_equal(folder.prods_charac["Pmax"], [140.0, 100.0])
    assert folder.prods_charac["type"].tolist() == ["nuclear", "solar"]
    del limits[str(case14_model.branch_names[3])]
    (root / "config.py").write_text(f"config = {{'thermal_limits': {limits!r}}}\n")
    with pytest.raises(
        FolderFormatError, match=f"no entry for branch '{case14_model.branch_names[3]}'"
    ):
        load_folder(root)
    (root / "config.py").write_text("config = {'thermal_limits': [1.0, 2.0]}\n")
    with pytest.raises(
        FolderFormatError, match=r"thermal_limits has shape \(2,\), the grid has 20"
    ):
        load_folder(root)


def test_names_chronics_to_grid_renames_columns(tmp_path, case14_model, net14):
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    path = root / "chronics" / "0000" / "load_p.csv.bz2"
    _edit(path, lambda ls: [ls[0].replace("load_1_0", "2_C-10.61"), *ls[1:]])
    (root / "config.py").write_text(
        "config = {'names_chronics_to_grid': {'loads': {'2_C-10.61': 'load_1_0'}}}\n"
    )
    np.testing.assert_allclose(
        FolderSource(root, case14_model).read(0, 0, N_ROWS).load_p,
        expected(case14_model, 0).load_p,
        atol=1e-9,
    )


def test_bad_paths(tmp_path, case14_model):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_folder(tmp_path / "nope")
    with pytest.raises(FolderFormatError, match="chronics: missing folder"):
        FolderSource(tmp_path, case14_model)
    (tmp_path / "chronics").mkdir()
    with pytest.raises(FolderFormatError, match="no scenario subfolder"):
        FolderSource(tmp_path, case14_model)
    with pytest.raises(TypeError, match="model must be a GridModel"):
        FolderSource(tmp_path, None)


@pytest.mark.grid2op
def test_reads_l2rpn_case14_sandbox_from_the_grid2op_package():
    grid2op = pytest.importorskip("grid2op")
    import pandas as pd

    path = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
    folder = load_folder(path)
    assert folder.thermal_limits.shape == (20,) and folder.thermal_limits[0] == 541.0
    assert folder.prods_charac["type"].tolist()[:2] == ["nuclear", "thermal"]
    model = compile_net(folder.net, name=folder.name, thermal_limits=folder.thermal_limits)
    src = FolderSource(folder.path, model)
    assert src.names[:2] == ["0000", "0001"]
    info = src.info(0)
    assert info.start == dt.datetime(2019, 1, 6, 0, 0) and info.length == 576
    inj = src.read(0, 0, info.length)
    for stem, field, names in (
        ("load_p", "load_p", model.load_names),
        ("prod_p", "gen_p", model.gen_names),
        ("prod_v_forecasted", "gen_v_forecast", model.gen_names),
    ):
        table = pd.read_csv(path / "chronics" / "0000" / f"{stem}.csv.bz2", sep=";")
        np.testing.assert_array_equal(getattr(inj, field), table[list(names)].to_numpy())


def forecast_three_horizons(root: Path) -> None:
    """Make ``write_folder``'s folder forecast 3 steps ahead (h_forecast [5, 10, 15]): each
    step's forecast row, then twice it, then three times it."""
    config = root / "config.py"
    text = config.read_text().replace(
        '"names_chronics_to_grid": None}',
        '"names_chronics_to_grid": None, "data_feeding_kwargs": {"h_forecast": [5, 10, 15]}}',
    )
    config.write_text(text)
    for path in (root / "chronics" / "0000").glob("*_forecasted*"):
        packed = path.suffix == ".bz2"
        raw = bz2.decompress(path.read_bytes()) if packed else path.read_bytes()
        header, *rows = raw.decode().splitlines()
        scaled = [
            [";".join(f"{m * float(c):.6f}" for c in r.split(";")) for r in rows] for m in (2, 3)
        ]
        tripled = [x for r, d, t in zip(rows, *scaled, strict=True) for x in (r, d, t)]
        data = ("\n".join([header, *tripled]) + "\n").encode()
        path.write_bytes(bz2.compress(data) if packed else data)


def test_forecasts_of_several_horizons_per_step(tmp_path, case14_model, net14):
    """config.py's h_forecast (grid2op's data_feeding_kwargs): the forecast files hold that
    many rows per step, step-major; the step's forecast is the first of its rows, the later
    horizons the ``*_ahead`` arrays."""
    root = write_folder(tmp_path / "env", case14_model, net14, n_scenarios=1)
    single = FolderSource(root, case14_model).read(0, 0, N_ROWS)
    forecast_three_horizons(root)
    config = root / "config.py"
    got = FolderSource(root, case14_model).read(0, 3, 9)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(got, f), getattr(single, f)[3:9])
    gens = case14_model.gen_kind != "slack"  # the files leave the slack out: its default
    for name in ("load_p", "load_q", "gen_p", "gen_v"):
        ahead, first = getattr(got, f"{name}_ahead"), getattr(single, f"{name}_forecast")[3:9]
        assert ahead.shape == (6, 2, first.shape[1]) and single.load_p_ahead is None
        cols = slice(None) if name.startswith("load") else gens
        for j, m in enumerate((2, 3)):
            np.testing.assert_allclose(ahead[:, j][:, cols], m * first[:, cols], atol=1e-5)
    config.write_text(config.read_text().replace("[5, 10, 15]", "'soon'"))
    with pytest.raises(FolderFormatError, match="h_forecast"):
        FolderSource(root, case14_model)
