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
and a fresh parse is written there atomically. A file of that directory is trusted no more
than a dataset: its size is bounded, nothing in it is unpickled, and it is used only if it
holds exactly the arrays of an :class:`Injections`, finite, of consistent shapes, under the
very key asked for; anything else is parsed again (and rewritten), with a warning naming the
file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import warnings
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import fields
from pathlib import Path

import numpy as np

from grid_vec.chronics.scenario import INJECTION_FIELDS, OUTAGE_FIELDS, Injections

DEFAULT_MAX_BYTES = 256 * 2**20  # about 60 case14 scenarios of 4 weeks with their forecasts
ENV_VAR = "GRID_VEC_SCENARIO_CACHE_MB"
DIR_ENV_VAR = "GRID_VEC_SCENARIO_CACHE_DIR"
# a disk entry's arrays are bounded by this (a 4-week case118 scenario with forecasts: ~70 MB)
MAX_DISK_ENTRY_BYTES = 1 << 30
_DISK_FORMAT = "grid_vec-scenario-2"  # changes when the layout of an entry changes
_ALL_FIELDS = tuple(f.name for f in fields(Injections))
_OUTAGE_FIELDS = OUTAGE_FIELDS
_FIELDS = INJECTION_FIELDS


def _limit_from_env() -> int:
    value = os.environ.get(ENV_VAR)
    if value is None:
        return DEFAULT_MAX_BYTES
    try:
        megabytes = float(value)
    except ValueError:
        raise ValueError(f"{ENV_VAR} must be a number of megabytes, got {value!r}") from None
    if not megabytes >= 0:
        raise ValueError(f"{ENV_VAR} must be >= 0, got {value!r}")
    return int(megabytes * 2**20)


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
        self.disk = None if disk_dir is None else DiskTier(Path(disk_dir))
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
        parsed = (parse() if self.disk is None else self.disk.get(key, parse)).read_only()
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
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory.expanduser()
        self.hits = 0
        self.writes = 0

    def path_of(self, key: Hashable) -> Path:
        """The file of ``key``'s entry."""
        return self.directory / f"{hashlib.sha256(self._stamp(key).encode()).hexdigest()}.npz"

    @staticmethod
    def _stamp(key: Hashable) -> str:
        return f"{_DISK_FORMAT}|{key!r}"

    def get(self, key: Hashable, parse: Callable[[], Injections]) -> Injections:
        """The entry of ``key`` from disk, else ``parse()`` written to disk."""
        path = self.path_of(key)
        if path.is_file():
            try:
                found = self._load(path, key)
                self.hits += 1
                return found
            except _BadEntry as e:
                warnings.warn(
                    f"{path}: scenario cache entry ignored ({e}); parsing again", stacklevel=3
                )
        parsed = parse()
        self._write(path, key, parsed)
        return parsed

    def _load(self, path: Path, key: Hashable) -> Injections:
        size = path.stat().st_size
        if size > MAX_DISK_ENTRY_BYTES:
            raise _BadEntry(f"{size} bytes, more than {MAX_DISK_ENTRY_BYTES}")
        try:
            with np.load(path, allow_pickle=False) as npz:
                names = set(npz.files)
                if not {*_FIELDS, "key"} <= names <= {*_ALL_FIELDS, "key"}:
                    raise _BadEntry(
                        f"arrays {sorted(names)}, expected {sorted(_FIELDS)}, key and optionally "
                        f"{sorted(_OUTAGE_FIELDS)}"
                    )
                if str(npz["key"]) != self._stamp(key):
                    raise _BadEntry("written for another scenario")
                arrays = [npz[name] for name in _FIELDS]
                outages = {name: npz[name] for name in _OUTAGE_FIELDS if name in names}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
            raise _BadEntry(f"unreadable: {e}") from None
        load_shape, gen_shape = arrays[0].shape, arrays[2].shape
        for name, array in zip(_FIELDS, arrays, strict=True):
            want = load_shape if name.startswith("load") else gen_shape
            if array.dtype != np.float64 or array.ndim != 2 or array.shape != want:
                raise _BadEntry(f"{name} is {array.dtype}{array.shape}, expected float64{want}")
            if not np.isfinite(array).all():
                raise _BadEntry(f"{name} holds non-finite values")
        if load_shape[0] != gen_shape[0]:
            raise _BadEntry("loads and generators have different numbers of steps")
        widths = set()
        for name, array in outages.items():
            if array.dtype != np.int32 or array.ndim != 2 or array.shape[0] != load_shape[0]:
                raise _BadEntry(
                    f"{name} is {array.dtype}{array.shape}, expected int32 of {load_shape[0]} rows"
                )
            widths.add(array.shape[1])
        if len(widths) > 1:
            raise _BadEntry("outage arrays of different widths")
        return Injections(*arrays, **outages)

    def _write(self, path: Path, key: Hashable, injections: Injections) -> None:
        """Write atomically (a temporary file renamed): a reader sees a whole entry or none.
        A directory that cannot be written costs a warning, not the scenario."""
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
                    np.savez(out, key=np.array(self._stamp(key)), **arrays)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self.writes += 1
        except OSError as e:
            warnings.warn(f"{self.directory}: cannot write the scenario cache ({e})", stacklevel=4)


class _BadEntry(Exception):
    """A disk entry that is not what its name promises."""


shared_cache = ScenarioCache(_limit_from_env(), os.environ.get(DIR_ENV_VAR) or None)
"""The cache of this process, used by :class:`~grid_vec.chronics.folder.FolderSource`."""
