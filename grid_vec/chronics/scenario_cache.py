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
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from grid_vec.chronics.scenario import Injections

DEFAULT_MAX_BYTES = 256 * 2**20  # about 60 case14 scenarios of 4 weeks with their forecasts
ENV_VAR = "GRID_VEC_SCENARIO_CACHE_MB"


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

    def __init__(self, max_bytes: int) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
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
        parsed = parse().read_only()
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


shared_cache = ScenarioCache(_limit_from_env())
"""The cache of this process, used by :class:`~grid_vec.chronics.folder.FolderSource`."""
