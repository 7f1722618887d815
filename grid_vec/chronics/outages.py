"""Line outages a scenario plans: maintenance and hazards, as grid2op reads and plays them.

A grid2op scenario folder may hold ``maintenance.csv[.bz2]`` and ``hazards.csv[.bz2]``: one
column per powerline (named as the grid's branches, after ``names_chronics_to_grid["lines"]``),
one row per step, 1 when the line is out at that step, 0 otherwise. grid2op turns them into,
per step and line:

* ``maintenance_time``: steps before the next maintenance starts (0 while it lasts, -1
  when none is planned any more);
* ``maintenance_duration``: steps that maintenance lasts (while it lasts: the steps left,
  the current one included; 0 when none is planned);
* ``hazard_duration``: while a hazard lasts, the steps left (the current one included),
  else 0.

A run of 1s is one outage; the env disconnects the line at each of its steps. The files are
untrusted input: they are read with the bounds of :mod:`grid_vec.chronics.csv_table`, must
have exactly the scenario's rows and one column per branch, and hold only 0 and 1; any
fault is a :class:`FolderFormatError` naming the file and the place.

Outages are kept as events (line, first step, stop step) and laid out per step window by
:func:`outage_window`, so that random maintenance (grid2op's
``GridStateFromFileWithForecastsWithMaintenance``: :class:`MaintenancePlan`) is drawn per
episode as a handful of events and only the window of a chunk is ever laid out.

One difference from grid2op: an outage already running at a scenario's first row is taken
as one (grid2op's reading misses the start of such a run); no bundled folder has one.
"""

from __future__ import annotations

import ast
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grid_vec.chronics.config_file import class_name, config_dict
from grid_vec.chronics.csv_table import read_table
from grid_vec.chronics.untrusted import (
    FolderFormatError,
    check_number,
    load_json,
    short,
)

MAINTENANCE_STEM = "maintenance"
HAZARDS_STEM = "hazards"
META_FILE = "maintenance_meta.json"
# grid2op's scenario class that draws maintenance from maintenance_meta.json
RANDOM_MAINTENANCE_CLASS = "GridStateFromFileWithForecastsWithMaintenance"
_MAX_META_LINES = 10_000


@dataclass(frozen=True)
class Events:
    """Outages as runs: ``line[i]`` is out at steps ``[start[i], stop[i])``; sorted by line,
    then start; runs of one line never overlap."""

    line: np.ndarray  # int64
    start: np.ndarray  # int64
    stop: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.line)


def events_of(flags: np.ndarray) -> Events:
    """The runs of a ``(steps, lines)`` bool array."""
    padded = np.zeros((flags.shape[0] + 2, flags.shape[1]), dtype=np.int8)
    padded[1:-1] = flags
    edges = np.diff(padded, axis=0).T  # (lines, steps + 1)
    line, start = np.nonzero(edges == 1)
    _, stop = np.nonzero(edges == -1)
    return Events(line.astype(np.int64), start.astype(np.int64), stop.astype(np.int64))


def outage_window(
    maintenance: Events | None, hazards: Events | None, n_lines: int, first: int, stop: int
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(maintenance_time, maintenance_duration, hazard_duration)`` of steps
    ``[first, stop)``, int32 ``(stop - first, n_lines)``; None for a kind without events."""
    steps = np.arange(first, stop, dtype=np.int64)
    time = duration = hazard = None
    if maintenance is not None and len(maintenance):
        time = np.full((stop - first, n_lines), -1, dtype=np.int32)
        duration = np.zeros((stop - first, n_lines), dtype=np.int32)
        for line, lo, hi, s, e in _spans(maintenance, first, stop):
            rows = steps[lo:hi]
            time[lo:hi, line] = np.maximum(s - rows, 0)
            duration[lo:hi, line] = np.where(rows < s, e - s, e - rows)
    if hazards is not None and len(hazards):
        hazard = np.zeros((stop - first, n_lines), dtype=np.int32)
        for line, s, e in zip(
            *(a.tolist() for a in (hazards.line, hazards.start, hazards.stop)), strict=True
        ):
            lo, hi = max(s, first) - first, min(e, stop) - first
            if lo < hi:
                hazard[lo:hi, line] = e - steps[lo:hi]
    return time, duration, hazard


def _spans(events: Events, first: int, stop: int):
    """Per maintenance run, the window rows it describes (from the end of the line's previous
    run to its own end): ``(line, lo, hi, start, stop)`` with rows ``[lo, hi)`` of the window."""
    previous_end = -1
    previous_line = -1
    for line, s, e in zip(
        *(a.tolist() for a in (events.line, events.start, events.stop)), strict=True
    ):
        begin = previous_end if line == previous_line else 0
        previous_line, previous_end = line, e
        lo, hi = max(begin, first) - first, min(e, stop) - first
        if lo < hi:
            yield line, lo, hi, s, e


def read_outage_file(
    path: Path, branch_names: np.ndarray, rename: dict[str, str], length: int
) -> Events:
    """The runs of a ``maintenance`` or ``hazards`` file of a scenario of ``length`` steps.

    Raises:
        FolderFormatError: naming the file and the place: a column that names no branch, a
            branch without a column, a row count other than ``length``, a value other than 0
            or 1 (and every fault :func:`read_table` finds).
    """
    header, values = read_table(path, 0, length, total=length)
    index = {str(n): i for i, n in enumerate(branch_names)}
    positions = []
    for column in header:
        name = rename.get(column, column)
        if name not in index:
            raise FolderFormatError(
                f"{path}: column {short(column)} names no powerline of the grid"
            )
        positions.append(index[name])
    listed = np.zeros(len(branch_names), dtype=bool)
    listed[positions] = True
    if not listed.all():
        missing = str(branch_names[np.argmin(listed)])
        raise FolderFormatError(f"{path}: no column for powerline {short(missing)}")
    bad = np.argwhere((values != 0) & (values != 1))
    if bad.size:
        r, c = bad[0]
        raise FolderFormatError(
            f"{path}: line {r + 2} (data row {r}), column {c + 1} ({short(header[c])}): "
            f"{float(values[r, c])} is neither 0 nor 1"
        )
    flags = np.zeros((length, len(branch_names)), dtype=bool)
    flags[:, positions] = values != 0
    return events_of(flags)


# --- random maintenance (grid2op's GridStateFromFileWithForecastsWithMaintenance) ---------


@dataclass(frozen=True)
class MaintenancePlan:
    """maintenance_meta.json, checked: which lines may be maintained, on which days, when."""

    lines: np.ndarray  # int64 branch indices, in grid order
    starting_hour: float
    ending_hour: float
    daily_proba: np.ndarray  # (12,) per month
    max_daily: np.ndarray  # (12,) int64 per month
    days_of_week: tuple[int, ...]  # 0 = Monday

    def draw(
        self,
        rng: np.random.Generator,
        start: dt.datetime,
        step: dt.timedelta,
        length: int,
        n_lines: int,
    ) -> Events:
        """Outages of a scenario of ``length`` steps whose step 0 is at ``start``, drawn as
        grid2op draws them: rows are cut in days of ``86400 / step`` steps from row 0, every
        day but the scenario's last calendar day; on a day of ``days_of_week`` each listed
        line is out with the month's probability from ``starting_hour`` to ``ending_hour``
        (as rows of the day), at most the month's ``max_daily`` of them (the excess dropped
        at random). The draws are grid_vec's own: not grid2op's random sequence."""
        seconds = step.total_seconds()
        per_day = int(86400 / seconds)
        first_row = int(self.starting_hour * 3600 / seconds)
        end_row = int(self.ending_hour * 3600 / seconds)
        # grid2op dates its rows from start_datetime.info, one step before row 0
        origin = start - step
        last = (origin + step * (length - 1)).date()
        n_days = (last - origin.date()).days  # the last calendar day is left out
        flags = np.zeros((length, n_lines), dtype=bool)
        if per_day <= 0 or not len(self.lines):
            return events_of(flags)
        for day in range(n_days):
            date = origin.date() + dt.timedelta(days=day)
            if date.weekday() not in self.days_of_week:
                continue
            p = float(self.daily_proba[date.month - 1])
            out = rng.random(len(self.lines)) < p
            excess = int(out.sum()) - int(self.max_daily[date.month - 1])
            if excess > 0:
                out[rng.choice(np.flatnonzero(out), size=excess, replace=False)] = False
            lo = day * per_day + first_row
            hi = min(day * per_day + min(end_row, per_day), length)
            if lo < hi and out.any():
                flags[lo:hi, self.lines[out]] = True
        return events_of(flags)


def read_maintenance_plan(path: Path, branch_names: np.ndarray) -> MaintenancePlan:
    """maintenance_meta.json, checked (keys, types, ranges, line names).

    Raises:
        FolderFormatError: naming the file and the key.
    """
    meta = load_json(path)
    if not isinstance(meta, dict):
        raise FolderFormatError(f"{path}: expected a JSON object, got {type(meta).__name__}")

    def get(key: str):
        if key not in meta:
            raise FolderFormatError(f"{path}: missing key {key!r}")
        return meta[key]

    hours = []
    for key in ("maintenance_starting_hour", "maintenance_ending_hour"):
        value = check_number(get(key), path, key)
        if not 0 <= value <= 24:
            raise FolderFormatError(f"{path}: {key}: {value} is not an hour in [0, 24]")
        hours.append(float(value))
    names = get("line_to_maintenance")
    if not isinstance(names, list) or len(names) > _MAX_META_LINES:
        raise FolderFormatError(
            f"{path}: line_to_maintenance: expected a list of at most {_MAX_META_LINES} names"
        )
    index = {str(n): i for i, n in enumerate(branch_names)}
    lines = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or name not in index:
            raise FolderFormatError(
                f"{path}: line_to_maintenance[{i}]: {short(name)} names no powerline of the grid"
            )
        lines.add(index[name])
    per_month = []
    for key, integer in (
        ("daily_proba_per_month_maintenance", False),
        ("max_daily_number_per_month_maintenance", True),
    ):
        values = get(key)
        if not isinstance(values, list) or len(values) != 12:
            raise FolderFormatError(f"{path}: {key}: expected a list of 12 numbers (months)")
        checked = [check_number(v, path, f"{key}[{m}]") for m, v in enumerate(values)]
        for m, v in enumerate(checked):
            if (integer and (v < 0 or v != int(v))) or (not integer and not 0 <= v <= 1):
                want = "an int >= 0" if integer else "a probability in [0, 1]"
                raise FolderFormatError(f"{path}: {key}[{m}]: {v} is not {want}")
        per_month.append(np.array(checked, dtype=np.int64 if integer else np.float64))
    days = meta.get("maintenance_day_of_week", list(range(5)))
    if (
        not isinstance(days, list)
        or len(days) > 7
        or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 6 for d in days)
    ):
        raise FolderFormatError(
            f"{path}: maintenance_day_of_week: expected a list of weekdays 0..6 (0 = Monday)"
        )
    return MaintenancePlan(
        np.array(sorted(lines), dtype=np.int64), hours[0], hours[1], per_month[0],
        per_month[1], tuple(days),
    )  # fmt: skip


def grid_value_class(tree: ast.Module, path: Path) -> str | None:
    """The name of the scenario class ``config.py`` gives grid2op (``config["grid_value_class"]``
    or ``config["data_feeding_kwargs"]["gridvalueClass"]``), read from the parsed file (never
    run); None when it names none.

    Raises:
        FolderFormatError: naming ``path``: the file has no ``config`` dict.
    """
    config = config_dict(tree, path)
    entries = dict(zip(_keys(config), config.values, strict=True))
    value = entries.get("grid_value_class")
    kwargs = entries.get("data_feeding_kwargs")
    if isinstance(kwargs, ast.Dict):
        value = dict(zip(_keys(kwargs), kwargs.values, strict=True)).get("gridvalueClass", value)
    return class_name(value)


def _keys(node: ast.Dict) -> list:
    return [k.value if isinstance(k, ast.Constant) else None for k in node.keys]


# --- what a FolderSource calls --------------------------------------------------------


def outage_files(folder: Path, root: Path, *, random_maintenance: bool) -> dict[str, Path]:
    """A scenario folder's outage files by stem (``maintenance`` is not read when the
    maintenance is drawn at random, as grid2op's class for it does not read it)."""
    from grid_vec.chronics.csv_table import find_csv

    stems = (HAZARDS_STEM,) if random_maintenance else (MAINTENANCE_STEM, HAZARDS_STEM)
    found = {stem: find_csv(folder, stem, root) for stem in stems}
    return {stem: path for stem, path in found.items() if path is not None}


def outage_arrays(
    files: dict[str, Path],
    branch_names: np.ndarray,
    rename: dict[str, str],
    length: int,
    start: int,
    stop: int,
) -> dict[str, np.ndarray]:
    """The outage fields of an :class:`~grid_vec.chronics.scenario.Injections` window
    ``[start, stop)`` from a scenario's files (each read whole: a step's time to the next
    outage may lie beyond the window); only the fields with events."""
    events = {
        stem: read_outage_file(files[stem], branch_names, rename, length)
        for stem in (MAINTENANCE_STEM, HAZARDS_STEM)
        if stem in files
    }
    time, duration, hazard = outage_window(
        events.get(MAINTENANCE_STEM), events.get(HAZARDS_STEM), len(branch_names), start, stop
    )
    found = {
        "maintenance_time": time,
        "maintenance_duration": duration,
        "hazard_duration": hazard,
    }
    return {name: array for name, array in found.items() if array is not None}


def find_plan(folder: Path, root: Path, branch_names: np.ndarray) -> MaintenancePlan | None:
    """The scenario's ``maintenance_meta.json``, else the dataset's, checked; None if neither."""
    from grid_vec.chronics.untrusted import inside

    for candidate in (folder / META_FILE, root / META_FILE):
        if candidate.is_file():
            inside(root, candidate)
            return read_maintenance_plan(candidate, branch_names)
    return None
