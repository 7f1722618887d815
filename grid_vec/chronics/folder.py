"""grid2op-format dataset folders: the grid (:func:`load_folder`) and scenarios (`FolderSource`).

Layout read::

    <path>/grid.json                  pandapower net (read as data, grid_vec.chronics.grid_json)
    <path>/config.py                  thermal limits, names_chronics_to_grid (ast, never run)
    <path>/difficulty_levels.json, parameters.json    the rules, optional (grid2op's choice:
                                      see grid_vec.chronics.folder_rules)
    <path>/prods_charac.csv, grid_layout.json         optional
    <path>/storage_units_charac.csv   required when the grid has storage units
                                      (grid_vec.chronics.storage_charac)
    <path>/chronics/<name>/{load_p,load_q,prod_p,prod_v}[_forecasted].csv[.bz2|.gz|.xz]
    <path>/chronics/<name>/start_datetime.info, time_interval.info      optional
    <path>/chronics/<name>/{maintenance,hazards}.csv[...], maintenance_meta.json   optional
                                      line outages (grid_vec.chronics.outages)

Scenario ids are the indices of the sorted ``chronics`` subfolders; names are the subfolder
names. CSV columns are mapped to the model's element order by name (after the renaming in
``config["names_chronics_to_grid"]``; ``config.py`` is read once, by
:mod:`grid_vec.chronics.folder_config`, and its record handed on). The slack and static
generators may be absent from ``prod_p``/``prod_v`` (grid2op datasets do not always
list them): they keep the model's ``gen_p0``/``gen_v0``. A missing ``prod_v`` file means
``gen_v0`` throughout; a missing ``*_forecasted`` file means the forecast is the next actual
step (the last step repeats itself). As in grid2op, row 0 of a scenario is the state one
time interval after ``start_datetime.info`` (``ScenarioInfo.start`` is that instant). Only
this module's :func:`read_net` imports pandapower, lazily.

The folder is untrusted input (see :mod:`grid_vec.chronics.untrusted`): nothing in it is
imported or run, every read is bounded, no file or subfolder may resolve outside it, and
everything read is checked here or in the modules it calls (thermal limits, the rules
files' values, the grid's numbers), so that each fault is one :class:`FolderFormatError`
naming the file.

``params.json`` is not read: in grid2op's folders it holds the settings the data were
generated with, and grid2op's ``make`` ignores it too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._untrusted import file_stamp, read_bytes
from grid_vec.chronics.csv_table import count_rows, find_csv, read_table
from grid_vec.chronics.folder_config import FolderConfig, read_folder_config
from grid_vec.chronics.folder_rules import (
    DIFFICULTY_FILE,
    PARAMETERS_FILE,
    read_json,
    read_levels,
    read_params,
)
from grid_vec.chronics.grid_json import read_grid_json
from grid_vec.chronics.outages import (
    MaintenancePlan,
    find_plan,
    outage_arrays,
    outage_files,
)
from grid_vec.chronics.prods_charac import read_prods_charac
from grid_vec.chronics.scenario import Injections, ScenarioInfo
from grid_vec.chronics.scenario_cache import ScenarioKey, shared_cache
from grid_vec.chronics.storage_charac import (
    STORAGE_CHARAC_FILE,
    StorageCharac,
    folder_storage_charac,
)
from grid_vec.chronics.untrusted import (
    MAX_GRID_JSON_BYTES,
    MAX_INFO_BYTES,
    MAX_SMALL_FILE_BYTES,
    FolderFormatError,
    inside,
    read_text,
    short,
)
from grid_vec.grid.model import GridModel

DEFAULT_START = dt.datetime(2019, 1, 1)
DEFAULT_STEP = dt.timedelta(minutes=5)
_STEMS = ("load_p", "load_q", "prod_p", "prod_v")


@dataclass(frozen=True, eq=False)
class GridFolder:
    """The static part of a grid2op-format folder, ready for ``compile_net``."""

    path: Path
    name: str  # the folder's name
    net: Any  # pandapower.pandapowerNet; None when built from a compiled model
    thermal_limits: np.ndarray | None  # amperes per branch (lines then trafos), or None
    # the rules files: level name -> flat dict (difficulty_levels.json), and parameters.json;
    # keys are str, values None, bool, number or short str; None when the file is absent
    difficulty_levels: dict[str, dict] | None
    parameters: dict | None
    prods_charac: dict[str, np.ndarray] | None  # prods_charac.csv columns by header name
    layout: dict | None  # grid_layout.json
    config: FolderConfig  # config.py, read once: every entry the game reads from it
    # storage_units_charac.csv, in the grid's storage order; None when the grid has no storage
    storage_charac: StorageCharac | None = None


def load_folder(
    path: str | Path, model: GridModel | None = None, config: FolderConfig | None = None
) -> GridFolder:
    """Read the grid, its limits and metadata from a grid2op-format folder, each file once.

    Args:
        path: the dataset folder.
        model: the folder's grid, compiled before (from the cache of compiled grids, keyed by
            :func:`grid_files_digest`): ``grid.json`` is then not read (``net`` is None), and
            the element names and counts that the other files are checked against are the
            model's.
        config: the folder's ``config.py``, read before (:func:`read_folder_config`); None:
            read here.

    Returns:
        The checked :class:`GridFolder`.

    Raises:
        TypeError: ``path`` is not a str or Path, or ``model`` not a GridModel.
        FileNotFoundError: ``path`` is not a directory.
        FolderFormatError: any fault in the folder's files, naming the file.
    """
    root = _check_dir(path)
    if model is not None and not isinstance(model, GridModel):
        raise TypeError(f"model must be a GridModel or None, got {type(model).__name__}")
    if config is None:
        config = read_folder_config(root)
    if model is None:
        from grid_vec.grid.compile import storage_names  # compile_net's names

        net, thermal_limits = read_net(root, config)
        storage = storage_names(net)
    else:
        net, storage = None, model.storage_names
        thermal_limits = _thermal_limits(config.thermal_limits, model.branch_names, config.path)
    charac_path = _file(root, root / "prods_charac.csv")
    charac = None if charac_path is None else read_prods_charac(charac_path)
    return GridFolder(
        path=root,
        name=root.name,
        net=net,
        thermal_limits=thermal_limits,
        difficulty_levels=read_levels(_file(root, root / DIFFICULTY_FILE)),
        parameters=read_params(_file(root, root / PARAMETERS_FILE)),
        prods_charac=charac,
        layout=read_json(_file(root, root / "grid_layout.json")),
        config=config,
        storage_charac=folder_storage_charac(
            _file(root, root / STORAGE_CHARAC_FILE), root, storage
        ),
    )


def read_net(path: str | Path, config: FolderConfig) -> tuple[Any, np.ndarray | None]:
    """What compiling a folder's grid reads: the pandapower net of ``grid.json`` and the
    thermal limits of its ``config.py`` in the net's branch order.

    Args:
        path: the dataset folder.
        config: its ``config.py`` (:func:`read_folder_config`).

    Returns:
        The net and the limits (amperes per branch, lines then transformers; None when
        ``config.py`` gives none).

    Raises:
        TypeError, FileNotFoundError, FolderFormatError: as :func:`load_folder`.
    """
    root = _check_dir(path)
    net = read_grid_json(_grid_file(root))
    from grid_vec.grid.compile import net_branch_names  # compile_net's names

    return net, _thermal_limits(config.thermal_limits, net_branch_names(net), config.path)


def grid_files_digest(path: str | Path) -> str:
    """A hash of what a folder's compiled grid depends on: the bytes of ``grid.json`` and of
    ``config.py`` (its thermal limits), read within the folder's size limits.

    Args:
        path: the dataset folder.

    Returns:
        A hex digest, for the key of the folder's entry in the cache of compiled grids.

    Raises:
        TypeError, FileNotFoundError, FolderFormatError: as :func:`load_folder`.
    """
    root = _check_dir(path)
    grid = read_bytes(_grid_file(root), MAX_GRID_JSON_BYTES, error=FolderFormatError)
    digest = hashlib.sha256(grid)
    config_path = _file(root, root / "config.py")
    if config_path is not None:
        digest.update(read_bytes(config_path, MAX_SMALL_FILE_BYTES, error=FolderFormatError))
    return digest.hexdigest()


def _grid_file(root: Path) -> Path:
    grid = _file(root, root / "grid.json")
    if grid is None:
        raise FolderFormatError(f"{root / 'grid.json'}: missing file (the grid of the folder)")
    return grid


def _check_dir(path: str | Path) -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"dataset folder {root} does not exist or is not a directory")
    return root


def _file(root: Path, path: Path) -> Path | None:
    """``path`` when it is a file (inside ``root``: a symlink out is refused), else None."""
    if not path.is_file() and not path.is_symlink():
        return None
    resolved = inside(root, path)
    if not resolved.is_file():
        raise FolderFormatError(f"{path}: not a regular file")
    return path


def _thermal_limits(
    value: Any, branch_names: np.ndarray, config_path: Path | None
) -> np.ndarray | None:
    """Limits in branch order from a list, or from a dict keyed by branch name (the values
    are already checked positive numbers, by ``config_file``)."""
    if value is None:
        return None
    n_branch = len(branch_names)
    if isinstance(value, dict):
        missing = [str(n) for n in branch_names if n not in value]
        if missing:
            raise FolderFormatError(
                f"{config_path}: thermal_limits has no entry for branch {short(missing[0])}"
            )
        value = [value[n] for n in branch_names]
    limits = np.asarray(value, dtype=np.float64)
    if limits.shape != (n_branch,):
        raise FolderFormatError(
            f"{config_path}: thermal_limits has shape {limits.shape}, "
            f"the grid has {n_branch} branches (lines then transformers)"
        )
    return limits


class FolderSource:
    """Scenarios of a grid2op-format folder, read lazily window by window.

    Holds only paths, names and per-scenario metadata, so it pickles small; each ``read``
    streams the CSV files up to the window's end. A negative ``load_p`` is accepted, as
    grid2op accepts it (some L2RPN datasets, ``l2rpn_wcci_2020``, ``l2rpn_icaps_2021``,
    ``l2rpn_neurips_2020_track1``, model interconnections as loads that export power);
    ``allow_negative_loads=False`` makes it an error.
    """

    def __init__(
        self,
        path: str | Path,
        model: GridModel,
        *,
        config: FolderConfig | None = None,
        allow_negative_loads: bool = True,
    ) -> None:
        if not isinstance(model, GridModel):
            raise TypeError(f"model must be a GridModel, got {type(model).__name__}")
        root = _check_dir(path)
        chronics = root / "chronics"
        if not chronics.is_dir():
            raise FolderFormatError(f"{chronics}: missing folder (one subfolder per scenario)")
        inside(root, chronics)
        self.path = root
        self.model = model
        self.allow_negative_loads = bool(allow_negative_loads)
        self._dirs = sorted(p.name for p in chronics.iterdir() if p.is_dir())
        for name in self._dirs:
            inside(root, chronics / name)
        if not self._dirs:
            raise FolderFormatError(f"{chronics}: no scenario subfolder")
        # config.py: read by the folder's loading already, or here
        self.config = read_folder_config(root) if config is None else config
        # forecasts per step in the *_forecasted files (grid2op's h_forecast), step-major: the
        # first of each step's is its next step's, the one the env reads
        self._horizons = self.config.forecast_horizons
        self._rename = {
            "load": self.config.renaming("loads"),
            "prod": self.config.renaming("prods"),
            "line": self.config.renaming("lines"),
        }
        # config.py names grid2op's class that draws maintenance from maintenance_meta.json
        self.random_maintenance = self.config.random_maintenance
        self._plans: dict[int, MaintenancePlan | None] = {}
        self._infos: dict[int, ScenarioInfo] = {}
        self._model_key: str | None = None  # digest of what parsing depends on in the model
        self._found: dict[int, dict[str, Path]] = {}  # scenario id -> its files, by stem
        self._key_fixed: dict[int, tuple] = {}  # scenario id -> _fixed_key's
        self._whole_bytes: dict[int, int] = {}  # scenario id -> its parsed arrays' bytes
        # inside one_instant(): each scenario's cache key as its first read found it
        self._instant_keys: dict[int, ScenarioKey] | None = None

    def __len__(self) -> int:
        return len(self._dirs)

    @property
    def names(self) -> list[str]:
        return list(self._dirs)

    def _check_id(self, scenario_id: int) -> int:
        if isinstance(scenario_id, bool) or not isinstance(scenario_id, (int, np.integer)):
            raise TypeError(f"scenario_id must be an int, got {scenario_id!r}")
        if not 0 <= scenario_id < len(self._dirs):
            raise ValueError(
                f"scenario_id must be in [0, {len(self._dirs) - 1}] "
                f"({len(self._dirs)} scenarios in {self.path / 'chronics'}), got {scenario_id}"
            )
        return int(scenario_id)

    def _files(self, scenario_id: int) -> dict[str, Path]:
        """Present CSV files by stem (``load_p``, ``load_p_forecasted``, ...)."""
        folder = self.path / "chronics" / self._dirs[scenario_id]
        files = {}
        for stem in _STEMS:
            for name in (stem, f"{stem}_forecasted"):
                found = find_csv(folder, name, self.path)
                if found is not None:
                    files[name] = found
        files.update(outage_files(folder, self.path, random_maintenance=self.random_maintenance))
        for required in ("load_p", "load_q", "prod_p"):
            if required not in files:
                if find_csv(folder, "_N_loads_p", self.path) is not None:
                    raise FolderFormatError(
                        f"{folder}: scenario files in pypownet's format (_N_loads_p.csv...; "
                        "grid2op's ReadPypowNetData, which grid2op no longer has) are not "
                        "supported; expected load_p.csv, load_q.csv, prod_p.csv"
                    )
                raise FolderFormatError(
                    f"{folder / required}.csv: missing file (also looked for .csv.bz2/.gz/.xz)"
                )
        return files

    def info(self, scenario_id: int) -> ScenarioInfo:
        # a scenario read before (its id checked then): every reset asks for its info again
        found = self._infos.get(scenario_id) if type(scenario_id) is int else None
        if found is not None:
            return found
        scenario_id = self._check_id(scenario_id)
        if scenario_id not in self._infos:
            folder = self.path / "chronics" / self._dirs[scenario_id]
            # load_p sets the length; the other files are checked against it when read
            self._found[scenario_id] = self._files(scenario_id)
            length = count_rows(self._found[scenario_id]["load_p"])
            if length < 2:
                raise FolderFormatError(
                    f"{folder}: a scenario needs at least 2 steps, load_p has {length}"
                )
            step = _read_step(_file(self.path, folder / "time_interval.info"))
            self._infos[scenario_id] = ScenarioInfo(
                id=scenario_id,
                name=self._dirs[scenario_id],
                # grid2op moves its clock one interval before it reads a row: row 0 is the
                # state at start_datetime.info + one step (GridStateFromFile.load_next)
                start=_first_step(self.path, folder, step, length),
                step_duration=step,
                length=length,
            )
        return self._infos[scenario_id]

    def maintenance_plan(self, scenario_id: int) -> MaintenancePlan | None:
        """What random maintenance of the scenario is drawn from (its
        ``maintenance_meta.json``, else the dataset's), when ``config.py`` asks for grid2op's
        ``GridStateFromFileWithForecastsWithMaintenance``; else None."""
        scenario_id = self._check_id(scenario_id)
        if not self.random_maintenance:
            return None
        if scenario_id not in self._plans:
            folder = self.path / "chronics" / self._dirs[scenario_id]
            self._plans[scenario_id] = find_plan(folder, self.path, self.model.branch_names)
        return self._plans[scenario_id]

    def read(self, scenario_id: int, start: int, stop: int) -> Injections:
        info = self.info(scenario_id)
        if not 0 <= start < stop <= info.length:
            raise ValueError(
                f"need 0 <= start < stop <= {info.length} (the length of scenario "
                f"{info.name!r}), got start={start}, stop={stop}"
            )
        if not self.reads_whole(scenario_id):  # never kept: read just the window
            return self._parse(info, self._files(info.id), start, stop)
        # the files found by info() name the cache entry (resolving them again costs more
        # than the read); a miss checks them again before parsing
        whole = shared_cache.get(
            self._cache_key(info),
            lambda: self._parse(info, self._files(info.id), 0, info.length),
        )
        if start == 0 and stop == info.length:
            return whole  # read-only already: no window to build
        return whole.window(start, stop)

    def reads_whole(self, scenario_id: int) -> bool:
        """Whether reading the whole scenario costs no more than reading a part of it (it is
        parsed whole and kept in the cache): a handler then reads it whole at a reset."""
        whole_bytes = self._whole_bytes.get(scenario_id)
        if whole_bytes is None:
            length, m = self.info(scenario_id).length, self.model
            # the injections and their forecasts (h per step), float64, and the outages, int32
            whole_bytes = self._whole_bytes[scenario_id] = length * (
                (1 + self._horizons) * (2 * m.n_load + 2 * m.n_gen) * 8 + 3 * 4 * m.n_branch
            )
        return whole_bytes <= shared_cache.max_bytes

    @contextmanager
    def one_instant(self) -> Iterator[None]:
        """Reads within the block see each scenario's files as its first read there found
        them: a batch's reset reads a scenario for many envs at once, and its files are
        stat'ed once for all of them (outside the block, every read checks them again, so an
        edited file is parsed again)."""
        outer = self._instant_keys
        if outer is None:
            self._instant_keys = {}
        try:
            yield
        finally:
            self._instant_keys = outer

    def _cache_key(self, info: ScenarioInfo) -> ScenarioKey:
        if self._instant_keys is not None:
            key = self._instant_keys.get(info.id)
            if key is None:
                key = self._instant_keys[info.id] = self._files_key(info)
            return key
        return self._files_key(info)

    def _files_key(self, info: ScenarioInfo) -> ScenarioKey:
        """What the parsed arrays of a scenario depend on: its files as they are now (a disk
        entry is also tied to their content), the grid's element order and defaults, the
        renaming and the negative-load rule; plain values only, equal in every process.
        Only the files' stat is read again at each call (the rest is the scenario's own)."""
        fixed = self._key_fixed.get(info.id)
        if fixed is None:
            fixed = self._key_fixed[info.id] = self._fixed_key(info)
        head, named = fixed
        stats = []
        for name, text, path in named:
            try:  # the path as text: pathlib's stat costs a conversion more, at every reset
                stats.append((name, text, *file_stamp(text)))
            except OSError as e:  # removed since it was found
                raise FolderFormatError(f"{path}: cannot be read ({e.strerror or e})") from None
        return ScenarioKey((*head, *stats), tuple(text for _, text, _ in named))

    def _fixed_key(self, info: ScenarioInfo) -> tuple[tuple, tuple[tuple[str, str, Path], ...]]:
        """The parts of a scenario's cache key that do not change while the source lives, and
        its files (found by :meth:`info`) as (stem, path as text, path), by stem."""
        if self._model_key is None:
            m = self.model
            digest = hashlib.sha256()
            # names as text: an object array's bytes would be this process' pointers
            for names in (m.load_names, m.gen_names, m.gen_kind, m.branch_names):
                digest.update(json.dumps([str(n) for n in names]).encode())
            for values in (m.gen_p0, m.gen_v0):
                digest.update(np.ascontiguousarray(values, dtype=np.float64).tobytes())
            rename = {k: {str(a): str(b) for a, b in v.items()} for k, v in self._rename.items()}
            digest.update(json.dumps(rename, sort_keys=True).encode())
            self._model_key = digest.hexdigest()
        head = (
            str(self.path), info.name, self.allow_negative_loads, self._model_key,
            self._horizons,
        )  # fmt: skip
        named = tuple(
            (name, str(path), path) for name, path in sorted(self._found[info.id].items())
        )
        return head, named

    def _parse(
        self, info: ScenarioInfo, files: dict[str, Path], start: int, stop: int
    ) -> Injections:
        """Parse steps ``[start, stop)`` of a scenario's files."""
        arrays: dict[str, np.ndarray] = {}
        h, steps = self._horizons, stop - start
        for stem in _STEMS:
            # h rows past the window, for forecasts that default to the actual steps ahead
            ext_stop = min(stop + h, info.length)
            actual = self._read_table(files.get(stem), stem, start, ext_stop, info.length)
            forecast_path = files.get(f"{stem}_forecasted")
            if forecast_path is not None:  # step-major: the h forecasts made at a step in a row
                forecasts = self._read_table(
                    forecast_path, stem, start * h, stop * h, info.length * h
                ).reshape(steps, h, -1)
            else:  # the actual steps ahead (the last step's stands for those past the end)
                ahead = np.minimum(np.arange(steps)[:, None] + np.arange(1, h + 1), len(actual) - 1)
                forecasts = actual[ahead]
            arrays[stem] = actual[:steps]
            arrays[f"{stem}_forecast"] = np.ascontiguousarray(forecasts[:, 0])
            if h > 1:
                arrays[f"{stem}_ahead"] = np.ascontiguousarray(forecasts[:, 1:])
        outages = outage_arrays(
            {k: v for k, v in files.items() if k in ("maintenance", "hazards")},
            self.model.branch_names, self._rename["line"], info.length, start, stop,
        )  # fmt: skip
        return Injections(
            **outages,
            load_p=arrays["load_p"],
            load_q=arrays["load_q"],
            gen_p=arrays["prod_p"],
            gen_v=arrays["prod_v"],
            load_p_forecast=arrays["load_p_forecast"],
            load_q_forecast=arrays["load_q_forecast"],
            gen_p_forecast=arrays["prod_p_forecast"],
            gen_v_forecast=arrays["prod_v_forecast"],
            load_p_ahead=arrays.get("load_p_ahead"),
            load_q_ahead=arrays.get("load_q_ahead"),
            gen_p_ahead=arrays.get("prod_p_ahead"),
            gen_v_ahead=arrays.get("prod_v_ahead"),
        )

    def _read_table(
        self, path: Path | None, stem: str, start: int, stop: int, total: int
    ) -> np.ndarray:
        """Rows ``[start, stop)`` of one file, in model element order with defaults filled."""
        m = self.model
        is_load = stem.startswith("load")
        if is_load:
            names, default, optional = m.load_names, None, np.zeros(m.n_load, dtype=bool)
        else:
            names = m.gen_names
            default = m.gen_p0 if stem == "prod_p" else m.gen_v0
            optional = m.gen_kind != "gen"  # the slack and sgens may be absent
        out = np.empty((stop - start, len(names)))
        if path is None:  # only prod_v may be absent
            out[:] = default
            return out
        header, values = read_table(path, start, stop, total=total)
        rename = self._rename["load" if is_load else "prod"]
        index = {str(n): i for i, n in enumerate(names)}
        positions = []
        for column in header:
            grid_name = rename.get(column, column)
            if grid_name not in index:
                kind = "load" if is_load else "generator"
                shown = ", ".join(map(str, names[:6])) + (", ..." if len(names) > 6 else "")
                raise FolderFormatError(
                    f"{path}: column {column!r} names no {kind} of grid {m.name!r} "
                    f"(its {kind}s: {shown})"
                )
            positions.append(index[grid_name])
        listed = np.zeros(len(names), dtype=bool)
        listed[positions] = True
        missing = np.flatnonzero(~listed & ~optional)
        if missing.size:
            raise FolderFormatError(f"{path}: no column for {str(names[missing[0]])!r}")
        if stem == "load_p" and not self.allow_negative_loads:
            negative = np.argwhere(values < 0)
            if negative.size:
                r, c = negative[0]
                raise FolderFormatError(
                    f"{path}: line {start + r + 2} (data row {start + r}), column {c + 1} "
                    f"({header[c]!r}): negative load {values[r, c]} (refused: "
                    "allow_negative_loads=False)"
                )
        if default is not None:
            out[:, ~listed] = default[~listed]
        out[:, positions] = values
        return out


def _read_info_line(path: Path | None) -> str | None:
    if path is None:
        return None
    return read_text(path, MAX_INFO_BYTES).strip()


def _read_start(path: Path | None) -> dt.datetime:
    text = _read_info_line(path)
    if text is None:
        return DEFAULT_START
    for fmt in ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            pass
    raise FolderFormatError(f"{path}: {short(text)} is not a date like '2019-01-05 23:55'")


def _first_step(root: Path, folder: Path, step: dt.timedelta, length: int) -> dt.datetime:
    """The date of row 0 of the scenario in ``folder`` (``start_datetime.info`` + one step),
    refused when its last row, ``length`` steps after ``start_datetime.info``, is past year
    9999 (the last date :mod:`datetime` has); the error names ``start_datetime.info``, or
    ``time_interval.info`` when the start is the default one."""
    start_file = _file(root, folder / "start_datetime.info")
    start = _read_start(start_file)
    try:
        start + step * length
    except OverflowError:
        named = start_file or folder / "time_interval.info"
        raise FolderFormatError(
            f"{named}: {length} steps of {step} from {start} end after year 9999"
        ) from None
    return start + step


def _read_step(path: Path | None) -> dt.timedelta:
    """HH:MM or HH:MM:SS; at most 4 digits a part, so that the duration cannot overflow."""
    text = _read_info_line(path)
    if text is None:
        return DEFAULT_STEP
    parts = text.split(":")
    digits = all(p.isascii() and p.isdigit() and len(p) <= 4 for p in parts)
    if len(parts) not in (2, 3) or not digits:
        raise FolderFormatError(f"{path}: {short(text)} is not a duration like '00:05' (HH:MM)")
    numbers = [int(p) for p in parts]
    step = dt.timedelta(hours=numbers[0], minutes=numbers[1], seconds=[*numbers, 0][2])
    if step <= dt.timedelta(0):
        raise FolderFormatError(f"{path}: the step duration must be positive, got {short(text)}")
    return step
