"""Parsed scenarios kept in memory, shared by every source of a process, bounded in bytes.

Reading a grid2op-format scenario parses compressed CSV files (about 11 ms a week on case14);
an agent that fails fast resets every few steps, so it would spend its time parsing the same
files again. A source asks this cache for a whole scenario by a key that names everything the
parsed arrays depend on (the files' identity and stat, the grid's element order and
defaults); the cache parses it once and serves read-only arrays afterwards. The least
recently used scenarios are dropped beyond the byte limit.

The limit is :data:`DEFAULT_MAX_BYTES`, or ``GRID_VEC_SCENARIO_CACHE_MB`` from the environment
(``0`` disables caching). Each process has its own cache: workers of a vector env share a
scenario between the envs they carry.

A disk tier, off by default, carries parsed scenarios across processes and runs: with
``GRID_VEC_SCENARIO_CACHE_DIR`` naming a directory (for example ``~/.cache/grid_vec``), a
scenario missing from memory is loaded from an uncompressed ``.npz`` written there by an
earlier parse (a read of raw float64 arrays instead of decompressing and parsing CSV files),
and a fresh parse is written there atomically (a temporary file renamed: concurrent writers
leave one whole entry). A file of that directory is trusted no more than a dataset:

* it is read by :func:`grid_vec._untrusted_npz.read_npz`: nothing unpickled, the file's size
  bounded, every member's inflated size bounded (all together by the memory tier's byte
  limit: an entry larger than the cache would keep is refused) before it is inflated;
* it is named by a digest of a text of its key (a :class:`ScenarioKey` of plain values, never
  a ``repr`` of an object: equal in every process), records that text and is used only
  under it, and records a digest of the *content* of the files it was parsed from (its
  key's ``files``), checked again before it is used: an entry left from other files, even
  with the same sizes and times, is refused;
* it must hold exactly the arrays of an :class:`Injections`, finite, of consistent shapes,
  and outage arrays that are what :func:`~grid_vec.chronics.outages.outage_window` lays out
  for the outages they describe (so no negative duration, no run of the wrong length);
* anything else -- a damaged, foreign or planted entry, a directory or an ``.npy`` at its
  path -- is one warning naming the file and the reason, then the scenario is parsed again
  and the entry rewritten; a directory that cannot be written costs at most one warning.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._untrusted import UntrustedFileError
from grid_vec._untrusted_npz import read_npz
from grid_vec.chronics.config_file import MAX_FORECAST_HORIZONS
from grid_vec.chronics.outages import events_of, outage_window
from grid_vec.chronics.scenario import (
    AHEAD_FIELDS,
    DATA_FIELDS,
    INJECTION_FIELDS,
    OUTAGE_FIELDS,
    Injections,
)

DEFAULT_MAX_BYTES = 256 * 2**20  # about 60 case14 scenarios of 4 weeks with their forecasts
ENV_VAR = "GRID_VEC_SCENARIO_CACHE_MB"
DIR_ENV_VAR = "GRID_VEC_SCENARIO_CACHE_DIR"
# a disk entry's arrays are bounded by this (a 4-week case118 scenario with forecasts: ~70 MB)
MAX_DISK_ENTRY_BYTES = 1 << 30
MAX_LIMIT_MB = 2**30  # GRID_VEC_SCENARIO_CACHE_MB beyond this (a PiB) is a mistake
_DISK_FORMAT = "grid_vec-scenario-4"  # changes when the layout of an entry changes
_ALL_FIELDS = DATA_FIELDS
_OUTAGE_FIELDS = OUTAGE_FIELDS
_AHEAD_FIELDS = AHEAD_FIELDS
_FIELDS = INJECTION_FIELDS


def _limit_from_env() -> int:
    value = os.environ.get(ENV_VAR)
    if value is None:
        return DEFAULT_MAX_BYTES
    try:
        megabytes = float(value)
    except ValueError:
        raise ValueError(f"{ENV_VAR} must be a number of megabytes, got {value!r}") from None
    if not (math.isfinite(megabytes) and 0 <= megabytes <= MAX_LIMIT_MB):
        raise ValueError(
            f"{ENV_VAR} must be a number of megabytes in [0, {MAX_LIMIT_MB}], got {value!r}"
        )
    return int(megabytes * 2**20)


@dataclass(frozen=True)
class ScenarioKey:
    """What a scenario's parsed arrays depend on: the key of both tiers of the cache.

    Args:
        parts: plain values (str, int, float, bool, None, and tuples of them) naming
            everything the arrays depend on (the files' paths and stat, the grid's element
            order...): equal parts, equal arrays. They name the disk entry as text, so the
            name is the same in every process.
        files: the files the scenario is parsed from: a disk entry records a digest of
            their content, and is used only while it matches.
    """

    parts: tuple
    files: tuple[str, ...] = ()


class ScenarioCache:
    """A least-recently-used map from a scenario's key to its parsed injections.

    Args:
        max_bytes: the most bytes of arrays kept; a scenario larger than this is parsed on
            every read and never kept. ``0`` keeps nothing.
    """

    def __init__(self, max_bytes: int, disk_dir: str | os.PathLike | None = None) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.disk = None if disk_dir is None else DiskTier(Path(disk_dir), max_bytes)
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, Injections] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # envs of one process may read from several threads

    @property
    def nbytes(self) -> int:
        """Bytes of arrays held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, parse: Callable[[], Injections]) -> Injections:
        """The injections cached under ``key``, parsed by ``parse()`` on a miss.

        Args:
            key: everything the parsed arrays depend on.
            parse: reads the whole scenario; called without the lock held.

        Returns:
            The scenario's injections; their arrays are read-only (several envs share them).
        """
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        # packed: the envs sharing it gather a step's injections as one row each
        parsed = (parse() if self.disk is None else self.disk.get(key, parse)).packed().read_only()
        size = _nbytes(parsed)
        if size > self.max_bytes:
            return parsed
        with self._lock:
            if key not in self._entries:
                self._entries[key] = parsed
                self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= _nbytes(dropped)
            return self._entries.get(key, parsed)

    def clear(self) -> None:
        """Forget every scenario (and the hit and miss counts)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = self.misses = 0


def _nbytes(injections: Injections) -> int:
    return sum(a.nbytes for a in injections.arrays())


class DiskTier:
    """Parsed scenarios as ``.npz`` files of one directory, named by a digest of their key.

    Args:
        directory: where the files are (created on the first write).
        max_bytes: the most bytes an entry's arrays may inflate to.
    """

    def __init__(self, directory: Path, max_bytes: int = MAX_DISK_ENTRY_BYTES) -> None:
        self.directory = directory.expanduser()
        self.max_bytes = min(max_bytes, MAX_DISK_ENTRY_BYTES)
        self.hits = 0
        self.writes = 0

    def path_of(self, key: Hashable) -> Path:
        """The file of ``key``'s entry."""
        return self.directory / f"{hashlib.sha256(self._stamp(key).encode()).hexdigest()}.npz"

    @staticmethod
    def _stamp(key: Hashable) -> str:
        """The text of ``key`` (a :class:`ScenarioKey` or a tuple of plain values)."""
        if isinstance(key, ScenarioKey):
            key = ("ScenarioKey", key.parts, key.files)
        return f"{_DISK_FORMAT}|{json.dumps(_plain(key))}"

    def get(self, key: Hashable, parse: Callable[[], Injections]) -> Injections:
        """The entry of ``key`` from disk, else ``parse()`` written to disk."""
        path = self.path_of(key)
        try:
            content = _content_digest(key.files if isinstance(key, ScenarioKey) else ())
        except OSError:  # a file went away: parsing reports it
            return parse()
        warned = False
        if os.path.lexists(path):
            try:
                found = self._load(path, key, content)
                self.hits += 1
                return found
            except _BadEntry as e:
                reason = str(e).removeprefix(f"{path}: ")
                warnings.warn(
                    f"{path}: scenario cache entry ignored ({reason}); parsing again",
                    stacklevel=3,
                )
                warned = True
        parsed = parse()
        self._write(path, key, content, parsed, warn=not warned)
        return parsed

    def _load(self, path: Path, key: Hashable, content: str) -> Injections:
        arrays = read_npz(
            path,
            error=_BadEntry,
            max_file_bytes=MAX_DISK_ENTRY_BYTES,
            max_array_bytes=self.max_bytes,
            what="scenario cache entry",
        )
        names = set(arrays)
        if not {*_FIELDS, *_META} <= names <= {*_ALL_FIELDS, *_META}:
            raise _BadEntry(
                f"arrays {sorted(names)[:20]}, expected {sorted(_FIELDS)}, key, content and "
                f"optionally {sorted(_OUTAGE_FIELDS)} and {sorted(_AHEAD_FIELDS)}"
            )
        if _text(arrays["key"]) != self._stamp(key):
            raise _BadEntry("written for another scenario")
        if _text(arrays["content"]) != content:
            raise _BadEntry("written from files of other content")
        values = [arrays[name] for name in _FIELDS]
        load_shape, gen_shape = values[0].shape, values[2].shape
        for name, array in zip(_FIELDS, values, strict=True):
            want = load_shape if name.startswith("load") else gen_shape
            if array.dtype != np.float64 or array.ndim != 2 or array.shape != want:
                raise _BadEntry(f"{name} is {array.dtype}{array.shape}, expected float64{want}")
            if not np.isfinite(array).all():
                raise _BadEntry(f"{name} holds non-finite values")
        if load_shape[0] != gen_shape[0]:
            raise _BadEntry("loads and generators have different numbers of steps")
        outages = {name: arrays[name] for name in _OUTAGE_FIELDS if name in names}
        _check_outages(outages, load_shape[0])
        ahead = {name: arrays[name] for name in _AHEAD_FIELDS if name in names}
        _check_ahead(ahead, load_shape, gen_shape)
        return Injections(*values, **outages, **ahead)

    def _write(
        self, path: Path, key: Hashable, content: str, injections: Injections, *, warn: bool
    ) -> None:
        """Write atomically (a temporary file renamed): a reader sees a whole entry or none.
        A directory that cannot be written costs a warning (when ``warn``), not the
        scenario."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    arrays = {
                        name: getattr(injections, name)
                        for name in _ALL_FIELDS
                        if getattr(injections, name) is not None
                    }
                    meta = {"key": np.array(self._stamp(key)), "content": np.array(content)}
                    np.savez(out, **meta, **arrays)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self.writes += 1
        except OSError as e:
            if warn:
                warnings.warn(
                    f"{self.directory}: cannot write the scenario cache ({e})", stacklevel=4
                )


class _BadEntry(UntrustedFileError):
    """A disk entry that is not what its name promises."""


_META = ("key", "content")


def _plain(value: Any) -> Any:
    """``value`` as JSON values (tuples as lists), refusing anything but plain values: the
    text of a key must not depend on the process (as a ``repr`` of an object would)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(
        f"a scenario cache key is made of str, int, float, bool, None and tuples, "
        f"not {type(value).__name__}"
    )


def _content_digest(files: tuple[str, ...]) -> str:
    """A digest of the names and bytes of ``files`` (read in blocks). Raises OSError."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{len(name)}:{name}".encode())
        with open(name, "rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
        digest.update(b"\0end")
    return digest.hexdigest()


def _text(array: np.ndarray) -> str | None:
    """The text of a 0-d unicode array, None for anything else."""
    return str(array[()]) if array.shape == () and array.dtype.kind == "U" else None


def _check_ahead(
    ahead: dict[str, np.ndarray], load_shape: tuple[int, ...], gen_shape: tuple[int, ...]
) -> None:
    """The forecasts of later steps come all four or none, finite float64 of
    ``(steps, horizons - 1, n)`` with the same number of horizons (at most grid2op's)."""
    if not ahead:
        return
    if len(ahead) != len(_AHEAD_FIELDS):
        raise _BadEntry(f"{sorted(_AHEAD_FIELDS)} go together, found {sorted(ahead)}")
    later = ahead["load_p_ahead"].shape[1:2]
    for name, array in ahead.items():
        steps, width = load_shape if name.startswith("load") else gen_shape
        want = (steps, *later, width)
        if array.dtype != np.float64 or array.ndim != 3 or array.shape != want:
            raise _BadEntry(f"{name} is {array.dtype}{array.shape}, expected float64{want}")
        if not 1 <= array.shape[1] < MAX_FORECAST_HORIZONS:
            raise _BadEntry(f"{name} holds {array.shape[1]} later horizons")
        if not np.isfinite(array).all():
            raise _BadEntry(f"{name} holds non-finite values")


def _check_outages(outages: dict[str, np.ndarray], steps: int) -> None:
    """Outage arrays must be exactly what :func:`outage_window` lays out for the outages
    they describe (a line is out where ``maintenance_time`` is 0, or ``hazard_duration``
    positive): the readers' own layout, so no negative duration, no run of the wrong
    length, no time to a maintenance that never comes."""
    widths = set()
    for name, array in outages.items():
        if array.dtype != np.int32 or array.ndim != 2 or array.shape[0] != steps:
            raise _BadEntry(f"{name} is {array.dtype}{array.shape}, expected int32 of {steps} rows")
        widths.add(array.shape[1])
    if len(widths) > 1:
        raise _BadEntry("outage arrays of different widths")
    if not outages:
        return
    if ("maintenance_time" in outages) != ("maintenance_duration" in outages):
        raise _BadEntry("maintenance_time and maintenance_duration go together")
    n_lines = widths.pop()
    maintenance = hazards = None
    if "maintenance_time" in outages:
        maintenance = events_of(outages["maintenance_time"] == 0)
    if "hazard_duration" in outages:
        hazards = events_of(outages["hazard_duration"] > 0)
    laid_out = outage_window(maintenance, hazards, n_lines, 0, steps)
    for name, expected in zip(OUTAGE_FIELDS, laid_out, strict=True):
        if name in outages and (expected is None or not np.array_equal(outages[name], expected)):
            raise _BadEntry(f"{name} is not the layout of the outages it describes")


shared_cache = ScenarioCache(_limit_from_env(), os.environ.get(DIR_ENV_VAR) or None)
"""The cache of this process, used by :class:`~grid_vec.chronics.folder.FolderSource`."""
