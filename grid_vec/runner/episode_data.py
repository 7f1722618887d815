"""Loading recorded episodes back, without ever unpickling (recorded runs get shared)."""

from __future__ import annotations

import itertools
import json
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.runner.recording import ARRAYS_FILE, FORMAT, META_FILE, finished_episodes
from grid_vec.runner.results import EpisodeResult

_REQUIRED = ("observations", "actions", "rewards", "terminated", "truncated")


class EpisodeDataError(ValueError):
    """A recorded episode is missing, truncated or malformed; the message names the file."""


@dataclass
class EpisodeData:
    """One recorded episode: its arrays, its metadata and its result."""

    path: Path
    meta: dict[str, Any]
    result: EpisodeResult
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    arrays: dict[str, np.ndarray]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EpisodeData:
        """Load the episode directory ``path`` (``np.load`` with ``allow_pickle=False``,
        metadata as JSON). Raises EpisodeDataError naming the faulty file."""
        root = Path(path)
        meta = _load_meta(root / META_FILE)
        arrays = _load_arrays(root / ARRAYS_FILE)
        missing = [name for name in _REQUIRED if name not in arrays]
        if missing:
            raise EpisodeDataError(f"{root / ARRAYS_FILE}: missing arrays {missing}")
        steps = arrays["rewards"].shape[0]
        if arrays["observations"].shape[0] != steps + 1:
            raise EpisodeDataError(
                f"{root / ARRAYS_FILE}: {arrays['observations'].shape[0]} observations for "
                f"{steps} steps (expected steps + 1)"
            )
        try:
            result = EpisodeResult.from_dict(meta["result"])
        except (KeyError, TypeError) as exc:
            raise EpisodeDataError(f"{root / META_FILE}: malformed 'result' entry: {exc}") from exc
        return cls(
            path=root,
            meta=meta,
            result=result,
            observations=arrays["observations"],
            actions=arrays["actions"],
            rewards=arrays["rewards"],
            terminated=arrays["terminated"],
            truncated=arrays["truncated"],
            arrays=arrays,
        )

    def __len__(self) -> int:
        return int(self.rewards.shape[0])

    def info(self, key: str) -> np.ndarray | list[np.ndarray] | None:
        """The recorded per-step values of info entry ``key`` (dotted for nested ones,
        e.g. ``"is_illegal"``, ``"other_rewards.margin"``), or None when not recorded.
        Entries of varying length per step come back as a list of one array per step; fixed
        shapes (GridEnv's ``"tripped_branches"`` mask per branch) as one array."""
        values = self.arrays.get(f"info.{key}")
        offsets = self.arrays.get(f"info_offsets.{key}")
        if values is None or offsets is None:
            return values
        return [values[a:b] for a, b in itertools.pairwise(offsets)]

    @property
    def illegal(self) -> np.ndarray | None:
        """Per-step illegal-action flags, when the env reported ``is_illegal``."""
        return self.info("is_illegal")

    @property
    def other_rewards(self) -> dict[str, np.ndarray]:
        """Per-step values of each ``other_rewards`` entry the env reported."""
        prefix = "info.other_rewards."
        return {k[len(prefix) :]: v for k, v in self.arrays.items() if k.startswith(prefix)}

    def views(self, view: Callable[[np.ndarray], Any]) -> Any:
        """``view(observations)``: e.g. a grid env's ``unwrapped.view`` giving ``.rho`` etc.
        over all recorded steps at once."""
        return view(self.observations)


def load_run(path: str | os.PathLike[str]) -> list[EpisodeData]:
    """Every complete episode recorded under the run directory ``path``, in episode order."""
    root = Path(path)
    if not root.is_dir():
        raise EpisodeDataError(f"{root}: not a directory")
    return [EpisodeData.load(p) for _, p in sorted(finished_episodes(root).items())]


def load_result(path: Path) -> tuple[EpisodeResult, dict[str, Any]]:
    """The result and metadata of a recorded episode, reading only its ``meta.json``."""
    meta = _load_meta(path / META_FILE)
    try:
        return EpisodeResult.from_dict(meta["result"]), meta
    except (KeyError, TypeError) as exc:
        raise EpisodeDataError(f"{path / META_FILE}: malformed 'result' entry: {exc}") from exc


def _load_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EpisodeDataError(f"{path}: cannot read episode metadata: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise EpisodeDataError(f"{path}: not a grid_vec episode metadata file (format {FORMAT})")
    return meta


def _load_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise EpisodeDataError(f"{path}: cannot read episode arrays: {exc}") from exc
