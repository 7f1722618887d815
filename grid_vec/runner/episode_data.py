"""Loading recorded episodes back. Recorded runs get shared, so their files are untrusted:
reads are bounded, nothing is unpickled, and the arrays must agree with ``meta.json``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.runner.bounded_io import EpisodeDataError, read_json, read_npz
from grid_vec.runner.recording import ARRAYS_FILE, FORMAT, META_FILE, finished_episodes
from grid_vec.runner.results import EpisodeResult

__all__ = ["EpisodeData", "EpisodeDataError", "iter_run", "load_run", "read_meta"]

_REQUIRED = ("observations", "actions", "rewards", "terminated", "truncated")


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
        """Load and check the episode directory ``path``.

        Args:
            path: an ``episode_NNNNN`` directory of a recorded run.

        Returns:
            The episode, its arrays checked against the shapes and dtypes ``meta.json`` lists
            and against the step count of its result.

        Raises:
            EpisodeDataError: naming the faulty file and what is wrong in it (missing,
                truncated, not UTF-8, too large or deep, object arrays, mismatched arrays).
        """
        root = Path(path)
        meta, result = read_meta(root)
        arrays = read_npz(root / ARRAYS_FILE)
        _check_arrays(root / ARRAYS_FILE, arrays, meta["arrays"], result.steps)
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
        """The recorded per-step values of one info entry.

        Args:
            key: the entry, dotted for nested ones (``"is_illegal"``,
                ``"other_rewards.margin"``).

        Returns:
            One array over the steps for fixed shapes (GridEnv's ``"tripped_branches"`` mask
            per branch); a list of one array per step for entries of varying length; None
            when not recorded.
        """
        values = self.arrays.get(f"info.{key}")
        offsets = self.arrays.get(f"info_offsets.{key}")
        if values is None or offsets is None:
            return values
        return [values[a:b] for a, b in itertools.pairwise(offsets)]

    @property
    def ending(self) -> str:
        """How the episode ended, in words: its game-over reason (the last step's
        ``game_over_reason`` info, cut to one line of 120 characters: the file is shared),
        ``"terminated"`` when none was recorded, ``"truncated"``, or ``"scenario played to
        the end"``."""
        if self.result.terminated:
            reasons = self.info("game_over_reason")
            reason = "" if reasons is None or not len(reasons) else str(reasons[-1])
            return " ".join(reason.split())[:120] or "terminated"
        return "truncated" if self.result.truncated else "scenario played to the end"

    def trips(self) -> list[tuple[int, list[int]]]:
        """``(step, branches)`` for every step where the protections tripped branches
        (``info["tripped_branches"]``; steps counted from 1), empty when not recorded."""
        tripped = self.info("tripped_branches")
        if not isinstance(tripped, np.ndarray) or tripped.ndim != 2:
            return []
        return [
            (int(t) + 1, np.flatnonzero(tripped[t]).tolist())
            for t in np.flatnonzero(tripped.any(1))
        ]

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
        """Apply an observation view to all recorded steps at once.

        Args:
            view: e.g. a grid env's ``unwrapped.view``, giving ``.rho`` etc.

        Returns:
            ``view(observations)``.
        """
        return view(self.observations)


def load_run(path: str | os.PathLike[str]) -> list[EpisodeData]:
    """Load every complete episode recorded under a run directory.

    Args:
        path: the run directory (the Runner's ``path_save``).

    Returns:
        The episodes, in episode order (partial ones left aside).

    Raises:
        EpisodeDataError: when ``path`` is not a directory or an episode does not load.
    """
    return list(iter_run(path))


def iter_run(path: str | os.PathLike[str]) -> Iterator[EpisodeData]:
    """The complete episodes recorded under a run directory, loaded one at a time (a
    reader that stops early never loads the rest).

    Args:
        path: the run directory (the Runner's ``path_save``).

    Yields:
        The episodes, in episode order (partial ones left aside).

    Raises:
        EpisodeDataError: when ``path`` is not a directory or an episode does not load.
    """
    root = Path(path)
    try:
        if not root.is_dir():
            raise EpisodeDataError(f"{root}: not a directory")
        found = finished_episodes(root)
    except OSError as exc:
        raise EpisodeDataError(f"{root}: cannot list the run: {exc.strerror or exc}") from exc
    for _, episode in sorted(found.items()):
        yield EpisodeData.load(episode)


def read_meta(path: Path) -> tuple[dict[str, Any], EpisodeResult]:
    """The checked metadata and result of the episode directory ``path``, reading only its
    ``meta.json`` (what a resumed run needs to compare settings).

    Raises:
        EpisodeDataError: naming ``meta.json`` and what is wrong in it.
    """
    file = path / META_FILE
    meta = read_json(file, "episode metadata")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise EpisodeDataError(f"{file}: not a grid_vec episode metadata file (format {FORMAT})")
    try:
        result = EpisodeResult.from_dict(meta.get("result"))
    except ValueError as exc:
        raise EpisodeDataError(f"{file}: malformed 'result' entry: {exc}") from exc
    if meta.get("episode") != result.episode or isinstance(meta.get("episode"), bool):
        raise EpisodeDataError(f"{file}: 'episode' does not match result.episode")
    listed = meta.get("arrays")
    if not isinstance(listed, dict) or not all(_is_array_entry(v) for v in listed.values()):
        raise EpisodeDataError(f"{file}: 'arrays' must map names to [shape, dtype]")
    return meta, result


def _is_array_entry(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], list)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[0])
        and isinstance(entry[1], str)
    )


def _check_arrays(
    file: Path, arrays: dict[str, np.ndarray], listed: dict[str, Any], steps: int
) -> None:
    """The arrays must be those ``meta.json`` lists, and span the result's ``steps``."""
    if sorted(arrays) != sorted(listed):
        absent = sorted(set(listed) - set(arrays))[:5]
        extra = sorted(set(arrays) - set(listed))[:5]
        raise EpisodeDataError(
            f"{file}: arrays differ from meta.json (missing {absent}, unlisted {extra})"
        )
    for name, (shape, dtype) in listed.items():
        array = arrays[name]
        if list(array.shape) != shape or array.dtype.str != dtype:
            raise EpisodeDataError(
                f"{file}: {name[:80]!r} is {array.dtype.str}{list(array.shape)}, meta.json "
                f"lists {dtype[:20]}{shape[:4]}"
            )
    missing = [name for name in _REQUIRED if name not in arrays]
    if missing:
        raise EpisodeDataError(f"{file}: missing arrays {missing}")
    expected = {name: steps for name in _REQUIRED} | {"observations": steps + 1}
    for name, rows in expected.items():
        found = arrays[name].shape[0] if arrays[name].ndim else 0
        if found != rows or arrays[name].ndim == 0:
            raise EpisodeDataError(
                f"{file}: {name} has {found} rows, the result's {steps} steps need {rows}"
            )
