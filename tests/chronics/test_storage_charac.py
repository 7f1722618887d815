"""storage_units_charac.csv: read in the grid's storage order, every fault named by place."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from grid_vec.chronics import FolderFormatError, load_folder
from grid_vec.chronics.storage_charac import STORAGE_CHARAC_FILE, read_storage_charac
from grid_vec.chronics.untrusted import MAX_SMALL_FILE_BYTES

NAMES = ["storage_5_0", "storage_7_1"]
HEADER = (
    "Emax,Emin,name,type,max_p_prod,max_p_absorb,marginal_cost,power_loss,"
    "charging_efficiency,discharging_efficiency"
)
ROWS = [
    "15,0,storage_5_0,battery,5,5,20,0.1,0.95,1",
    "7,0,storage_7_1,battery,10,10,20,0.1,1,0.9",
]


def _write(tmp_path: Path, header: str = HEADER, rows: list[str] = ROWS) -> Path:
    path = tmp_path / STORAGE_CHARAC_FILE
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_reads_the_columns_in_the_grids_order(tmp_path) -> None:
    path = _write(tmp_path, rows=ROWS[::-1])  # rows in another order than the grid's
    charac = read_storage_charac(path, NAMES)
    assert charac.names.tolist() == NAMES and charac.n_storage == 2
    np.testing.assert_array_equal(charac.emax, [15.0, 7.0])
    np.testing.assert_array_equal(charac.emin, [0.0, 0.0])
    np.testing.assert_array_equal(charac.max_p_prod, [5.0, 10.0])
    np.testing.assert_array_equal(charac.max_p_absorb, [5.0, 10.0])
    np.testing.assert_array_equal(charac.marginal_cost, [20.0, 20.0])
    np.testing.assert_array_equal(charac.loss, [0.1, 0.1])
    np.testing.assert_array_equal(charac.charging_efficiency, [0.95, 1.0])
    np.testing.assert_array_equal(charac.discharging_efficiency, [1.0, 0.9])
    assert charac.storage_type.tolist() == ["battery", "battery"]


def test_optional_columns_take_grid2ops_defaults(tmp_path) -> None:
    header = "name,type,Emax,Emin,max_p_prod,max_p_absorb,marginal_cost,extra"
    rows = ["storage_5_0,battery,15,1,5,5,20,x", "storage_7_1,pumped_storage,7,0,10,10,20,y"]
    charac = read_storage_charac(_write(tmp_path, header, rows), NAMES)
    np.testing.assert_array_equal(charac.loss, [0.0, 0.0])
    np.testing.assert_array_equal(charac.charging_efficiency, [1.0, 1.0])
    np.testing.assert_array_equal(charac.discharging_efficiency, [1.0, 1.0])
    assert charac.storage_type.tolist() == ["battery", "pumped_storage"]


def _replace(row: int, column: str, value: str) -> list[str]:
    names = HEADER.split(",")
    rows = [r.split(",") for r in ROWS]
    rows[row][names.index(column)] = value
    return [",".join(r) for r in rows]


@pytest.mark.parametrize(
    ("header", "rows", "match"),
    [
        (HEADER.replace("Emin,", ""), [r.split(",", 2)[0] + "," + r.split(",", 2)[2] for r in ROWS],
         r"no column 'Emin'"),
        (HEADER, _replace(1, "Emax", "nan"), r"line 3, column 'Emax': nan is not a finite"),
        (HEADER, _replace(0, "max_p_prod", ""), r"line 2, column 'max_p_prod': '' is not a number"),
        (HEADER, _replace(0, "Emin", "inf"), r"line 2, column 'Emin': inf is not a finite"),
        (HEADER, _replace(1, "Emin", "8"), r"line 3, column 'Emax' \(storage 'storage_7_1'\): "
         r"must be >= Emin, got 7"),
        (HEADER, _replace(0, "name", "storage_9_9"),
         r"line 2, column 'name': 'storage_9_9' names no storage unit of the grid"),
        (HEADER, _replace(1, "name", "storage_5_0"),
         r"line 3, column 'name': 'storage_5_0' is repeated \(first on line 2\)"),
        (HEADER, ROWS[:1], r"no row for storage unit 'storage_7_1'"),
        (HEADER, [ROWS[0], ROWS[1] + ",1"], r"line 3 has 11 cells, the header has 10"),
        (HEADER, _replace(0, "discharging_efficiency", "0"),
         r"line 2, column 'discharging_efficiency' .*must be in \(0, 1\], got 0"),
        (HEADER, _replace(1, "charging_efficiency", "1.5"),
         r"line 3, column 'charging_efficiency' .*must be in \[0, 1\], got 1.5"),
        (HEADER, _replace(0, "power_loss", "6"),
         r"line 2, column 'power_loss' .*must be <= max_p_absorb, got 6"),
        (HEADER, _replace(1, "max_p_absorb", "-1"),
         r"line 3, column 'max_p_absorb' .*must be >= 0, got -1"),
        ("", [], r"empty file"),
    ],
)  # fmt: skip
def test_malformed_files_name_the_file_and_the_place(tmp_path, header, rows, match) -> None:
    path = _write(tmp_path, header, rows)
    with pytest.raises(FolderFormatError, match=match) as info:
        read_storage_charac(path, NAMES)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_huge_file_is_refused_unread(tmp_path) -> None:
    path = _write(tmp_path, rows=[*ROWS, *(["#" * 1000] * (MAX_SMALL_FILE_BYTES // 1000 + 1))])
    with pytest.raises(FolderFormatError, match=f"{STORAGE_CHARAC_FILE}: .*larger than"):
        read_storage_charac(path, NAMES)


def _grid2op_folder(name: str) -> Path:
    grid2op = pytest.importorskip("grid2op", reason="needs the grid2op extra")
    return Path(grid2op.__file__).parent / "data" / name


@pytest.mark.grid2op
def test_load_folder_reads_the_storage_units_of_grid2ops_folders(tmp_path) -> None:
    folder = load_folder(_grid2op_folder("educ_case14_storage"))
    charac = folder.storage_charac
    assert charac is not None and charac.names.tolist() == NAMES
    np.testing.assert_array_equal(charac.emax, [15.0, 7.0])
    np.testing.assert_array_equal(charac.discharging_efficiency, [1.0, 0.9])
    wcci = load_folder(_grid2op_folder("l2rpn_wcci_2022_dev")).storage_charac
    assert wcci.n_storage == 7 and wcci.names[-1] == "storage_112_6"
    np.testing.assert_array_equal(wcci.charging_efficiency, np.full(7, 0.95))

    # the same grid without the file: refused, as grid2op refuses it
    root = tmp_path / "no_charac"
    root.mkdir()
    shutil.copy(_grid2op_folder("educ_case14_storage") / "grid.json", root / "grid.json")
    with pytest.raises(FolderFormatError, match=f"{STORAGE_CHARAC_FILE}: missing file"):
        load_folder(root)
    # a grid without storage units ignores the file
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    shutil.copy(_grid2op_folder("l2rpn_case14_sandbox") / "grid.json", sandbox / "grid.json")
    (sandbox / STORAGE_CHARAC_FILE).write_text("not a table at all")
    assert load_folder(sandbox).storage_charac is None
