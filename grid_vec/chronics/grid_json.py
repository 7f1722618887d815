"""``grid.json`` read as data: a pandapower net built from plain JSON, nothing imported by name.

pandapower's own loader imports the module that a ``"_module"`` entry names before it checks
its allow-list, so any importable module named by the file would run (a ``.py`` shipped in
the dataset folder included, whenever that folder is on ``sys.path``). This reader never
hands the file to that loader. It parses it with bounded :func:`json.loads` and accepts only
the layout pandapower writes::

    {"_module": "pandapower.auxiliary", "_class": "pandapowerNet", "_object": {key: entry}}

where an entry is either a table::

    {"_module": "pandas.core.frame", "_class": "DataFrame", "orient": "split",
     "_object": "<JSON {columns, index, data}>", "dtype": {column: dtype}}

with dtypes from an allow-list, or plain JSON holding no ``"_module"``/``"_class"`` key.
Table cells are JSON scalars or lists of numbers (geodata coordinates); a cell of a ``geo``
column is a GeoJSON geometry (checked, kept as its string, as pandapower does); tables whose
cells pandapower decodes into Python objects (``controller``, ``characteristic``) must be
empty. The net is ``pandapower.create_empty_network()`` with these tables and values, brought
to the current format by ``pandapower.convert_format`` as pandapower's loader does with
``convert=True`` (tests compare ``pandapower.to_json`` of both nets). The grid's numbers are
then checked (:mod:`grid_vec.chronics.grid_values`), so that no bad value reaches the solvers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.chronics.grid_values import check_grid_values
from grid_vec.chronics.untrusted import (
    MAX_GRID_JSON_BYTES,
    FolderFormatError,
    parse_json,
    read_text,
    short,
)

# cells per table (rows x columns): the 118-bus grids have ~200 rows x 20 columns per table
MAX_TABLE_CELLS = 10_000_000
_DTYPES = frozenset(
    (
        "float64",
        "float32",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "bool",
        "boolean",
        "Int64",
        "Int32",
        "object",
    )
)
_TABLE_KEYS = frozenset(
    ("_module", "_class", "_object", "orient", "dtype", "is_multiindex", "is_multicolumn")
)
_OBJECT_TABLES = ("controller", "characteristic", "q_capability_characteristic")
_GEOMETRIES = frozenset(
    ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon")
)
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){0,3}(\.dev\d{1,4})?")
_MAX_LIST_DEPTH = 3  # coordinates: [[x, y], ...] or the points of a piecewise-linear cost


def read_grid_json(path: Path):
    """The pandapower net of a ``grid.json``, read as described in this module's docstring.

    Args:
        path: the ``grid.json`` file (already checked to lie inside the dataset folder).

    Returns:
        A ``pandapower.pandapowerNet`` in pandapower's current format.

    Raises:
        FolderFormatError: naming ``path`` and the key, table, row or column at fault.
    """
    document = parse_json(read_text(path, MAX_GRID_JSON_BYTES), path)
    if not isinstance(document, dict) or (
        document.get("_module"),
        document.get("_class"),
    ) != ("pandapower.auxiliary", "pandapowerNet"):
        raise FolderFormatError(
            f"{path}: expected a pandapower net ({{'_module': 'pandapower.auxiliary', "
            f"'_class': 'pandapowerNet', '_object': {{...}}}}), got {short(_kind(document))}"
        )
    if set(document) != {"_module", "_class", "_object"} or not isinstance(
        document["_object"], dict
    ):
        raise FolderFormatError(f"{path}: the net must hold exactly '_module', '_class', '_object'")
    entries: dict[str, Any] = {}
    for key, entry in document["_object"].items():
        if not _KEY.fullmatch(key):
            raise FolderFormatError(f"{path}: net key {short(key)} is not an element name")
        if isinstance(entry, dict) and ("_module" in entry or "_class" in entry):
            entries[key] = _table(path, key, entry)
        else:
            _check_plain(path, key, entry)
            entries[key] = entry
    _check_scalars(path, entries)
    net = _build(path, entries)
    check_grid_values(path, net)
    return net


def _kind(document: Any) -> Any:
    if isinstance(document, dict):
        return {k: document.get(k) for k in ("_module", "_class")}
    return type(document).__name__


def _table(path: Path, key: str, entry: dict):
    """A DataFrame from a split-orient table entry, with allow-listed dtypes."""
    import pandas as pd

    where = f"table {key!r}"
    if (entry.get("_module"), entry.get("_class")) not in (
        ("pandas.core.frame", "DataFrame"),
        ("pandas", "DataFrame"),
    ):
        raise FolderFormatError(
            f"{path}: {where}: only pandas DataFrames are read, got "
            f"_module={short(entry.get('_module'))}, _class={short(entry.get('_class'))}"
        )
    unknown = set(entry) - _TABLE_KEYS
    if unknown:
        raise FolderFormatError(f"{path}: {where}: unexpected entry {short(sorted(unknown)[0])}")
    if entry.get("orient") != "split" or not isinstance(entry.get("_object"), str):
        raise FolderFormatError(f"{path}: {where}: expected orient 'split' and a JSON string")
    if any(entry.get(k, False) is not False for k in ("is_multiindex", "is_multicolumn")):
        raise FolderFormatError(f"{path}: {where}: multi-indexes are not supported")
    dtype = entry.get("dtype", {})
    if not isinstance(dtype, dict) or not all(
        isinstance(t, str) and t in _DTYPES for t in dtype.values()
    ):
        raise FolderFormatError(
            f"{path}: {where}: dtypes must be among {', '.join(sorted(_DTYPES))}"
        )
    split = parse_json(entry["_object"], path, f"{where}:")
    columns, index, data = _split_parts(path, where, split)
    if key in _OBJECT_TABLES and data:
        raise FolderFormatError(
            f"{path}: {where}: has rows; its cells would be Python objects, which are not read"
        )
    for row_index, row in zip(index, data, strict=True):
        for column, cell in zip(columns, row, strict=True):
            _check_cell(path, f"{where}, row index {row_index}, column {column!r}", column, cell)
    frame = pd.DataFrame(
        {c: pd.Series([row[j] for row in data], dtype=object) for j, c in enumerate(columns)},
        columns=columns,
    )
    frame.index = pd.Index(index, dtype=np.int64)
    for column in columns:
        frame[column] = _typed_column(path, where, frame[column], dtype.get(column))
    return frame


def _split_parts(path: Path, where: str, split: Any) -> tuple[list, list, list]:
    if not isinstance(split, dict) or set(split) != {"columns", "index", "data"}:
        raise FolderFormatError(f"{path}: {where}: expected {{columns, index, data}}")
    columns, index, data = split["columns"], split["index"], split["data"]
    if not all(isinstance(x, list) for x in (columns, index, data)):
        raise FolderFormatError(f"{path}: {where}: columns, index and data must be lists")
    if not all(isinstance(c, str) for c in columns) or len(set(columns)) != len(columns):
        raise FolderFormatError(f"{path}: {where}: columns must be distinct strings")
    if len(index) != len(data) or len(data) * max(len(columns), 1) > MAX_TABLE_CELLS:
        raise FolderFormatError(
            f"{path}: {where}: {len(index)} index entries for {len(data)} rows "
            f"(at most {MAX_TABLE_CELLS} cells per table)"
        )
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in index):
        raise FolderFormatError(f"{path}: {where}: the index must be integers >= 0")
    if len(set(index)) != len(index):
        raise FolderFormatError(f"{path}: {where}: the index has duplicates")
    for i, row in zip(index, data, strict=True):
        if not isinstance(row, list) or len(row) != len(columns):
            raise FolderFormatError(
                f"{path}: {where}, row index {i}: expected a list of {len(columns)} cells"
            )
    return columns, index, data


def _check_cell(path: Path, where: str, column: str, cell: Any) -> None:
    if cell is None or isinstance(cell, (bool, int, float)):
        return
    if isinstance(cell, str):
        if column == "geo":
            _check_geometry(path, where, parse_json(cell, path, f"{where}:"))
        return
    if isinstance(cell, list):
        _check_number_lists(path, where, cell, 1)
        return
    raise FolderFormatError(
        f"{path}: {where}: a JSON object in a table cell (pandapower would build a Python "
        "object from it); only numbers, strings, booleans, null and lists of numbers are read"
    )


def _check_number_lists(path: Path, where: str, value: list, depth: int) -> None:
    if depth > _MAX_LIST_DEPTH:
        raise FolderFormatError(f"{path}: {where}: lists nested deeper than {_MAX_LIST_DEPTH}")
    for item in value:
        if isinstance(item, list):
            _check_number_lists(path, where, item, depth + 1)
        elif isinstance(item, bool) or not isinstance(item, (int, float)):
            raise FolderFormatError(f"{path}: {where}: lists may hold numbers only")


def _check_geometry(path: Path, where: str, geometry: Any) -> None:
    if (
        not isinstance(geometry, dict)
        or set(geometry) != {"type", "coordinates"}
        or geometry["type"] not in _GEOMETRIES
        or not isinstance(geometry["coordinates"], list)
    ):
        raise FolderFormatError(
            f"{path}: {where}: expected a GeoJSON geometry {{type, coordinates}} of type "
            f"{', '.join(sorted(_GEOMETRIES))}"
        )
    _check_number_lists(path, where, geometry["coordinates"], 1)


def _typed_column(path: Path, where: str, column, dtype: str | None):
    """One column as pandapower's loader types it: the file's dtype, else pandas' inference."""
    import pandas as pd

    if dtype is None:
        return pd.Series(column.tolist(), index=column.index)
    if dtype == "object":
        return column.where(column.notna(), None).astype(object)
    if dtype.startswith("float"):
        column = column.map(lambda x: np.nan if x is None else x)
    try:
        return column.astype(dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise FolderFormatError(
            f"{path}: {where}, column {column.name!r}: not all {dtype} ({short(str(e))})"
        ) from None


def _check_plain(path: Path, key: str, value: Any) -> None:
    """Plain JSON: no dict anywhere that names a module or class to build."""
    if isinstance(value, dict):
        if "_module" in value or "_class" in value:
            raise FolderFormatError(
                f"{path}: net key {key!r}: an object naming a module or class is only read "
                "as a top-level table"
            )
        for item in value.values():
            _check_plain(path, key, item)
    elif isinstance(value, list):
        for item in value:
            _check_plain(path, key, item)


def _check_scalars(path: Path, entries: dict[str, Any]) -> None:
    for key in ("version", "format_version"):
        if key in entries and not (
            isinstance(entries[key], str) and _VERSION.fullmatch(entries[key])
        ):
            raise FolderFormatError(f"{path}: {key}: {short(entries[key])} is not a version")
    if "version" not in entries:
        raise FolderFormatError(f"{path}: the net has no 'version'")
    for key in ("f_hz", "sn_mva"):
        value = entries.get(key)
        if key in entries and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
        ):
            raise FolderFormatError(f"{path}: {key}: must be a number > 0, got {short(value)}")
    for key in ("std_types", "user_pf_options"):
        if key in entries and not isinstance(entries[key], dict):
            raise FolderFormatError(f"{path}: {key}: must be a JSON object")


def _build(path: Path, entries: dict[str, Any]):
    """pandapower's empty net with the file's entries, in pandapower's current format."""
    from grid_vec.grid._pandapower import import_pandapower

    pp = import_pandapower()
    import pandas as pd

    net = pp.create_empty_network()
    for key, value in entries.items():
        if isinstance(net.get(key), pd.DataFrame) and not isinstance(value, pd.DataFrame):
            raise FolderFormatError(f"{path}: net key {key!r}: must be a table")
    net.update(entries)
    try:
        pp.convert_format(net)
    except Exception as e:  # pandapower raises many kinds on data it cannot convert
        raise FolderFormatError(
            f"{path}: pandapower cannot bring the grid from version {short(net.get('version'))}"
            f" to its format: {short(str(e))}"
        ) from None
    return net
