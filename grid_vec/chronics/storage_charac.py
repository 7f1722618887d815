"""``storage_units_charac.csv``: the characteristics of a grid's storage units, checked.

grid2op's format (``Backend.load_storage_data``): a comma-separated table, one row per unit,
with the columns ``name``, ``type``, ``Emax``, ``Emin`` (MWh), ``max_p_prod``,
``max_p_absorb`` (MW), ``marginal_cost``, and optionally ``power_loss`` (MW, default 0),
``charging_efficiency`` and ``discharging_efficiency`` (default 1). Other columns are
ignored. Rows are matched to the grid's units by name.

The file is untrusted (see :mod:`grid_vec.chronics.untrusted`): its size is bounded, every
number must be finite, and the bounds grid2op checks (``GridObjects``) are checked here too,
so that each fault is one :class:`FolderFormatError` naming the file, the line and the
column. Unlike grid2op, a row naming no unit of the grid and a repeated name are refused (a
typo would otherwise leave a unit without its row, or silently pick one of two rows).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grid_vec.chronics.untrusted import (
    MAX_SMALL_FILE_BYTES,
    FolderFormatError,
    check_number,
    read_text,
    short,
)

STORAGE_CHARAC_FILE = "storage_units_charac.csv"
REQUIRED_COLUMNS = ("name", "type", "Emax", "Emin", "max_p_prod", "max_p_absorb", "marginal_cost")
# optional number columns and grid2op's value when the column is absent
OPTIONAL_COLUMNS = {"power_loss": 0.0, "charging_efficiency": 1.0, "discharging_efficiency": 1.0}
_MAX_TEXT_CHARS = 100  # a name or a type: grid2op writes "storage_5_0", "battery"


@dataclass(frozen=True, eq=False)
class StorageCharac:
    """The storage units' characteristics, one entry per unit in the grid's storage order.

    Energies in MWh, powers in MW, efficiencies in (0, 1] (charging: [0, 1]).
    """

    names: np.ndarray  # (n_storage,) str, the grid's storage names
    storage_type: np.ndarray  # (n_storage,) str, e.g. "battery"
    emax: np.ndarray  # (n_storage,) MWh, the largest charge
    emin: np.ndarray  # (n_storage,) MWh, the smallest charge (<= emax)
    max_p_prod: np.ndarray  # (n_storage,) MW, the most a unit can give to the grid
    max_p_absorb: np.ndarray  # (n_storage,) MW, the most a unit can take from the grid
    marginal_cost: np.ndarray  # (n_storage,) cost per MWh
    loss: np.ndarray  # (n_storage,) MW drained from the charge at every step ("power_loss")
    charging_efficiency: np.ndarray  # (n_storage,) charge gained per MWh absorbed
    discharging_efficiency: np.ndarray  # (n_storage,) MWh given per MWh of charge used

    @property
    def n_storage(self) -> int:
        return len(self.names)


def read_storage_charac(path: Path, names: Sequence[str]) -> StorageCharac:
    """Read and check ``storage_units_charac.csv`` for the grid's storage units ``names``.

    Args:
        path: the file (already known to lie inside the dataset folder).
        names: the grid's storage names, in its storage order.

    Returns:
        The :class:`StorageCharac`, arrays in the order of ``names``.

    Raises:
        FolderFormatError: the file is too large or not UTF-8 CSV, a required column is
            missing, a line has the wrong number of cells, a name is empty, repeated or names
            no unit of the grid, a unit has no row, or a number is missing, not finite or out
            of grid2op's bounds; the message names the file, the line and the column.
    """
    text = read_text(path, MAX_SMALL_FILE_BYTES)
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as e:
        raise FolderFormatError(f"{path}: not a CSV table ({short(str(e))})") from None
    if not rows:
        raise FolderFormatError(f"{path}: empty file")
    header = [cell.strip() for cell in rows[0]]
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise FolderFormatError(
                f"{path}: no column {column!r} (required: {', '.join(REQUIRED_COLUMNS)})"
            )
    position = {column: j for j, column in enumerate(header)}
    wanted = {str(n): i for i, n in enumerate(names)}
    line_of: dict[str, int] = {}  # storage name -> its line in the file (1-based)
    cells: dict[str, list[str]] = {}
    for k, row in enumerate(rows[1:]):
        line = k + 2
        if len(row) != len(header):
            raise FolderFormatError(
                f"{path}: line {line} has {len(row)} cells, the header has {len(header)}"
            )
        name = row[position["name"]].strip()
        where = f"line {line}, column 'name'"
        if not name or len(name) > _MAX_TEXT_CHARS:
            raise FolderFormatError(f"{path}: {where}: {short(name)} is not a storage name")
        if name in line_of:
            raise FolderFormatError(
                f"{path}: {where}: {short(name)} is repeated (first on line {line_of[name]})"
            )
        if name not in wanted:
            shown = ", ".join(map(str, names[:6])) + (", ..." if len(names) > 6 else "")
            raise FolderFormatError(
                f"{path}: {where}: {short(name)} names no storage unit of the grid "
                f"(its units: {shown or 'none'})"
            )
        line_of[name] = line
        cells[name] = row
    missing = [str(n) for n in names if str(n) not in line_of]
    if missing:
        raise FolderFormatError(f"{path}: no row for storage unit {short(missing[0])}")

    def text_column(column: str) -> np.ndarray:
        values = []
        for n in names:
            value = cells[str(n)][position[column]].strip()
            if len(value) > _MAX_TEXT_CHARS:
                raise FolderFormatError(
                    f"{path}: line {line_of[str(n)]}, column {column!r}: {short(value)} is "
                    f"longer than {_MAX_TEXT_CHARS} characters"
                )
            values.append(value)
        return np.array(values, dtype=str)

    def number_column(column: str) -> np.ndarray:
        if column not in position:
            return np.full(len(names), OPTIONAL_COLUMNS[column])
        values = np.empty(len(names))
        for i, n in enumerate(names):
            where = f"line {line_of[str(n)]}, column {column!r}"
            cell = cells[str(n)][position[column]].strip()
            try:
                value = float(cell[:64]) if len(cell) <= 64 else None
            except ValueError:
                value = None
            if value is None:
                raise FolderFormatError(f"{path}: {where}: {short(cell)} is not a number")
            values[i] = check_number(value, path, where)
        return values

    charac = StorageCharac(
        names=np.array([str(n) for n in names], dtype=str),
        storage_type=text_column("type"),
        emax=number_column("Emax"),
        emin=number_column("Emin"),
        max_p_prod=number_column("max_p_prod"),
        max_p_absorb=number_column("max_p_absorb"),
        marginal_cost=number_column("marginal_cost"),
        loss=number_column("power_loss"),
        charging_efficiency=number_column("charging_efficiency"),
        discharging_efficiency=number_column("discharging_efficiency"),
    )
    _check_bounds(charac, path, line_of)
    return charac


def _check_bounds(charac: StorageCharac, path: Path, line_of: dict[str, int]) -> None:
    """grid2op's checks of the storage data (``GridObjects._check_validity_storage_data``)."""
    checks = (
        ("Emin", charac.emin >= 0.0, "must be >= 0"),
        ("Emax", charac.emax >= charac.emin, "must be >= Emin"),
        ("max_p_prod", charac.max_p_prod >= 0.0, "must be >= 0"),
        ("max_p_absorb", charac.max_p_absorb >= 0.0, "must be >= 0"),
        ("power_loss", charac.loss >= 0.0, "must be >= 0"),
        # a unit losing more than it can absorb only ever empties
        ("power_loss", charac.loss <= charac.max_p_absorb, "must be <= max_p_absorb"),
        (
            "charging_efficiency",
            (charac.charging_efficiency >= 0.0) & (charac.charging_efficiency <= 1.0),
            "must be in [0, 1]",
        ),
        (
            "discharging_efficiency",
            (charac.discharging_efficiency > 0.0) & (charac.discharging_efficiency <= 1.0),
            "must be in (0, 1]",
        ),
    )
    column_values = {
        "Emin": charac.emin,
        "Emax": charac.emax,
        "max_p_prod": charac.max_p_prod,
        "max_p_absorb": charac.max_p_absorb,
        "power_loss": charac.loss,
        "charging_efficiency": charac.charging_efficiency,
        "discharging_efficiency": charac.discharging_efficiency,
    }
    for column, ok, rule in checks:
        bad = np.flatnonzero(~ok)
        if bad.size:
            i = int(bad[0])
            name = str(charac.names[i])
            raise FolderFormatError(
                f"{path}: line {line_of[name]}, column {column!r} (storage {short(name)}): "
                f"{rule}, got {column_values[column][i]:g}"
            )


def folder_storage_charac(
    path: Path | None, folder: Path, names: Sequence[str]
) -> StorageCharac | None:
    """The characteristics of a folder's storage units, None when its grid has none.

    Args:
        path: the folder's ``storage_units_charac.csv``, None when it is absent.
        folder: the dataset folder (for the message of a missing file).
        names: the grid's storage names, in its storage order.

    Raises:
        FolderFormatError: the grid has storage units and the file is absent (grid2op
            refuses such a folder too), or what :func:`read_storage_charac` raises.
    """
    if not len(names):
        return None  # grid2op ignores the file then
    if path is None:
        raise FolderFormatError(
            f"{folder / STORAGE_CHARAC_FILE}: missing file (the grid has {len(names)} "
            "storage units; this file describes them)"
        )
    return read_storage_charac(path, names)
