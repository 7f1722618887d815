"""The numbers of a grid read from ``grid.json``, checked before any solver sees them.

A zero reactance, a zero current rating, NaN where a value is needed or a bus that does not
exist would otherwise surface later as a ``FloatingPointError`` or an ``IndexError`` deep
in the power flow; here each is a :class:`FolderFormatError` naming ``grid.json``, the table,
the row and the column. Only the columns that ``grid_vec.grid.compile`` and the solvers use
are checked, and only for what no real grid has: values that may legitimately be NaN (cost
or operating limits) are left alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grid_vec.chronics.untrusted import FolderFormatError, short

# (table, column) -> the rule its values follow; every value must also be finite
_RULES: dict[tuple[str, str], str] = {
    ("bus", "vn_kv"): "> 0",
    ("load", "p_mw"): "finite",
    ("load", "q_mvar"): "finite",
    ("sgen", "p_mw"): "finite",
    ("sgen", "q_mvar"): "finite",
    ("gen", "p_mw"): "finite",
    ("gen", "vm_pu"): "> 0",
    ("ext_grid", "vm_pu"): "> 0",
    ("ext_grid", "va_degree"): "finite",
    ("shunt", "p_mw"): "finite",
    ("shunt", "q_mvar"): "finite",
    ("shunt", "vn_kv"): "> 0",
    ("line", "length_km"): "> 0",
    ("line", "r_ohm_per_km"): ">= 0",
    ("line", "x_ohm_per_km"): "!= 0",
    ("line", "c_nf_per_km"): "finite",
    ("line", "max_i_ka"): "> 0",
    ("line", "parallel"): ">= 1",
    ("line", "df"): "> 0",
    ("trafo", "sn_mva"): "> 0",
    ("trafo", "vn_hv_kv"): "> 0",
    ("trafo", "vn_lv_kv"): "> 0",
    ("trafo", "vk_percent"): "> 0",
    ("trafo", "vkr_percent"): "finite",
    ("trafo", "pfe_kw"): "finite",
    ("trafo", "i0_percent"): "finite",
    ("trafo", "shift_degree"): "finite",
    ("trafo", "parallel"): ">= 1",
}
_TESTS = {
    "finite": lambda v: np.ones(v.shape, dtype=bool),
    "> 0": lambda v: v > 0,
    ">= 0": lambda v: v >= 0,
    ">= 1": lambda v: v >= 1,
    "!= 0": lambda v: v != 0,
}
# (table, column) of bus references
_BUS_COLUMNS = (
    ("load", "bus"),
    ("sgen", "bus"),
    ("gen", "bus"),
    ("ext_grid", "bus"),
    ("shunt", "bus"),
    ("line", "from_bus"),
    ("line", "to_bus"),
    ("trafo", "hv_bus"),
    ("trafo", "lv_bus"),
)


def check_grid_values(path: Path, net) -> None:
    """Raise :class:`FolderFormatError` naming ``path`` on the first value a grid cannot have.

    Args:
        path: the ``grid.json`` the net was read from, for the message.
        net: the ``pandapower.pandapowerNet`` read from it.

    Raises:
        FolderFormatError: a missing column, a value breaking its rule in ``_RULES``, a bus
            reference to no bus, or an ``in_service`` column that is not boolean.
    """
    for (table, column), rule in _RULES.items():
        values = _column(path, net, table, column)
        if values is None:
            continue
        ok = np.isfinite(values) & _TESTS[rule](values)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise FolderFormatError(
                f"{path}: table {table!r}, row index {net[table].index[row]}, column "
                f"{column!r}: must be finite and {rule}, got {short(values[row])}"
            )
    buses = net.bus.index.to_numpy()
    for table, column in _BUS_COLUMNS:
        values = _column(path, net, table, column)
        if values is None:
            continue
        unknown = np.flatnonzero(~np.isin(values, buses))
        if unknown.size:
            row = int(unknown[0])
            raise FolderFormatError(
                f"{path}: table {table!r}, row index {net[table].index[row]}, column "
                f"{column!r}: bus {short(net[table][column].iloc[row])} is not in table 'bus'"
            )
    for table in ("bus", "load", "sgen", "gen", "ext_grid", "shunt", "line", "trafo"):
        frame = net[table]
        if len(frame) and "in_service" in frame and frame["in_service"].dtype != bool:
            raise FolderFormatError(
                f"{path}: table {table!r}, column 'in_service': must be boolean, "
                f"got dtype {frame['in_service'].dtype}"
            )


def _column(path: Path, net, table: str, column: str) -> np.ndarray | None:
    """The column as float64, None for an empty table; an error when a used one is missing."""
    frame = net.get(table)
    if frame is None or not len(frame):
        return None
    if column not in frame:
        raise FolderFormatError(f"{path}: table {table!r} has no column {column!r}")
    try:
        return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as e:
        raise FolderFormatError(
            f"{path}: table {table!r}, column {column!r}: not numbers ({short(str(e))})"
        ) from None
