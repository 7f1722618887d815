"""Recording episodes to disk: per-step buffers, atomic episode directories, run scanning.

Layout of a run directory::

    episode_00007/arrays.npz   compressed arrays (see EpisodeRecorder.arrays)
    episode_00007/meta.json    env id, scenario, seeds, options, parameters, versions, result

An episode is written in a hidden temporary directory then renamed, so a killed run leaves
only whole episodes (plus hidden ``.episode_*.tmp-*`` leftovers that the next run removes).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

ARRAYS_FILE = "arrays.npz"
META_FILE = "meta.json"
FORMAT = "grid_vec.episode/1"
_EPISODE_DIR = re.compile(r"^episode_(\d+)$")
_TMP_DIR = re.compile(r"^\.episode_\d+\.tmp-\d+$")


def episode_dirname(index: int) -> str:
    """Directory name of episode ``index`` (``episode_00007``)."""
    return f"episode_{index:05d}"


def finished_episodes(root: Path) -> dict[int, Path]:
    """Episode index -> directory for every complete episode under ``root``."""
    found = {}
    if root.is_dir():
        for child in root.iterdir():
            match = _EPISODE_DIR.match(child.name)
            if match and child.is_dir():
                found[int(match.group(1))] = child
    return found


def remove_partial_episodes(root: Path) -> None:
    """Delete the temporary directories an interrupted run left under ``root``."""
    if root.is_dir():
        for child in root.iterdir():
            if _TMP_DIR.match(child.name):
                shutil.rmtree(child, ignore_errors=True)


def prepare_run_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` if needed and prove it writable; ValueError naming it otherwise."""
    root = Path(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"path_save {str(root)!r} is not a writable directory: {exc}") from exc
    return root


def write_episode(root: Path, index: int, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write one episode atomically under ``root``; returns its directory."""
    final = root / episode_dirname(index)
    tmp = root / f".{episode_dirname(index)}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    # Level 1 deflate: most of the size gain of the default level at a fraction of its cost.
    with zipfile.ZipFile(tmp / ARRAYS_FILE, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, array in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=1, allow_nan=True))
    os.rename(tmp, final)
    return final


class EpisodeWriter:
    """Writes episodes with :func:`write_episode` on a background thread, so compression
    overlaps the stepping (zlib releases the GIL). At most ``backlog`` episodes wait, which
    keeps memory bounded; a write error is raised by the next ``submit`` or by ``close``."""

    def __init__(self, root: Path, backlog: int = 2) -> None:
        self.root = root
        self._jobs: queue.Queue[tuple[int, dict, dict] | None] = queue.Queue(maxsize=backlog)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="episode-writer", daemon=True)
        self._thread.start()

    def submit(self, index: int, arrays: dict[str, np.ndarray], meta: dict) -> None:
        """Queue episode ``index`` for writing (blocks while the backlog is full)."""
        self._raise()
        self._jobs.put((index, arrays, meta))

    def close(self, *, check: bool = True) -> None:
        """Write what is queued, stop the thread; with ``check``, raise a write error."""
        self._jobs.put(None)
        self._thread.join()
        if check:
            self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise OSError(f"writing an episode under {self.root} failed") from self._error

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self._error is None:
                try:
                    write_episode(self.root, *job)
                except BaseException as exc:  # reported to the Runner's thread
                    self._error = exc


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape a run's results."""
    versions = {"python": sys.version.split()[0]}
    for name in ("grid_vec", "gymnasium", "numpy", "lightsim2grid", "pandapower"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


InfoColumns = list[tuple[str, Any, "np.ndarray | None"]]


def info_columns(infos: dict[str, Any], prefix: str = "") -> InfoColumns:
    """Batched vector-env ``infos`` as ``(key, values, mask or None)`` columns, nested dicts
    flattened into dotted keys (``other_rewards.margin``) with their masks combined: built
    once per step, then read for each sub-env by :func:`info_row`."""
    columns: InfoColumns = []
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if isinstance(value, dict):
            for name, values, inner in info_columns(value, f"{prefix}{key}."):
                both = inner if mask is None else mask if inner is None else mask & inner
                columns.append((name, values, both))
        else:
            columns.append((f"{prefix}{key}", value, mask))
    return columns


def info_row(columns: InfoColumns, i: int) -> dict[str, Any]:
    """The entries of ``columns`` that belong to sub-env ``i``."""
    return {name: values[i] for name, values, mask in columns if mask is None or mask[i]}


class EpisodeRecorder:
    """Per-step buffers of one episode, turned into arrays at its end.

    Arrays: ``observations`` (steps + 1 rows, the initial one first), ``actions``,
    ``rewards``, ``terminated``, ``truncated``, ``step_time`` and ``agent_time`` (seconds of
    the batched calls), and ``info.<key>`` for every info entry whose values form a regular
    array (``info_present.<key>`` marks the steps that carried it when some did not); 1-D
    entries of varying length (e.g. a list of event indices) are stored concatenated, with
    ``info_offsets.<key>`` (steps + 1 offsets: step ``t`` holds ``values[off[t]:off[t+1]]``).
    Observations and actions of spaces other than Box/Discrete/MultiDiscrete/MultiBinary are
    stored flattened (``gymnasium.spaces.flatten``).
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self._obs_space = observation_space
        self._act_space = action_space
        self.clear()

    def clear(self) -> None:
        """Drop the buffered steps (frees the memory of a written episode)."""
        self._obs: list[np.ndarray] = []
        self._actions: list[Any] = []
        self._rewards: list[float] = []
        self._terminated: list[bool] = []
        self._truncated: list[bool] = []
        self._step_time: list[float] = []
        self._agent_time: list[float] = []
        self._infos: dict[str, list[tuple[int, Any]]] = {}

    def start(self, obs: Any) -> None:
        """Begin an episode with its initial observation."""
        self.clear()
        self._obs.append(_row(self._obs_space, obs))

    def add(
        self,
        action: Any,
        obs: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        step_time: float,
        agent_time: float,
    ) -> None:
        """Append one step."""
        step = len(self._rewards)
        self._actions.append(_row(self._act_space, action))
        self._obs.append(_row(self._obs_space, obs))
        self._rewards.append(reward)
        self._terminated.append(terminated)
        self._truncated.append(truncated)
        self._step_time.append(step_time)
        self._agent_time.append(agent_time)
        for key, value in info.items():
            self._infos.setdefault(key, []).append((step, value))

    def mark_truncated(self) -> None:
        """Flag the last step truncated (the Runner stopped the episode at ``max_iter``)."""
        if self._truncated:
            self._truncated[-1] = True

    def arrays(self) -> tuple[dict[str, np.ndarray], list[str]]:
        """The episode's arrays, and the info keys left out (irregular or non-numeric)."""
        steps = len(self._rewards)
        out = {
            "observations": np.stack(self._obs),
            "actions": np.asarray(self._actions) if steps else np.zeros(0),
            "rewards": np.asarray(self._rewards, dtype=np.float64),
            "terminated": np.asarray(self._terminated, dtype=bool),
            "truncated": np.asarray(self._truncated, dtype=bool),
            "step_time": np.asarray(self._step_time, dtype=np.float64),
            "agent_time": np.asarray(self._agent_time, dtype=np.float64),
        }
        skipped = []
        for key, entries in self._infos.items():
            values = _regular_array(v for _, v in entries)
            if values is None:
                ragged = _ragged(entries, steps)
                if ragged is None:
                    skipped.append(key)
                else:
                    out[f"info.{key}"], out[f"info_offsets.{key}"] = ragged
                continue
            full = np.zeros((steps, *values.shape[1:]), dtype=values.dtype)
            at = np.fromiter((t for t, _ in entries), dtype=np.intp, count=len(entries))
            full[at] = values
            out[f"info.{key}"] = full
            if len(entries) < steps:
                present = np.zeros(steps, dtype=bool)
                present[at] = True
                out[f"info_present.{key}"] = present
        return out, skipped


def _row(space: spaces.Space, item: Any) -> np.ndarray:
    if isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        return np.array(item, copy=True)
    return np.asarray(spaces.flatten(space, item))


def _regular_array(values: Iterable[Any]) -> np.ndarray | None:
    """``values`` as one numeric, boolean or string array, or None when they do not fit."""
    try:
        array = np.asarray(list(values))
    except ValueError:
        return None
    if array.dtype.kind in "biufUS":
        return array
    return None


def _ragged(entries: list[tuple[int, Any]], steps: int) -> tuple[np.ndarray, np.ndarray] | None:
    """1-D per-step values of varying length as (concatenated values, offsets), or None."""
    parts = [np.asarray(v) for _, v in entries]
    if not parts or any(p.ndim != 1 or p.dtype.kind not in "biuf" for p in parts):
        return None
    counts = np.zeros(steps, dtype=np.int64)
    counts[[t for t, _ in entries]] = [p.size for p in parts]
    offsets = np.concatenate(([0], np.cumsum(counts)))
    return np.concatenate(parts), offsets
