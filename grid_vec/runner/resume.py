"""Resuming a recorded run: keep the recorded episodes that load and were made with the
settings asked now, play the damaged ones again, refuse a run recorded with other settings
and one holding an entry that no episode can replace (a file or a symbolic link)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grid_vec._untrusted import quote
from grid_vec.runner.episode_data import EpisodeData, EpisodeDataError, read_meta
from grid_vec.runner.recording import episode_dirname, finished_episodes
from grid_vec.runner.results import EpisodeResult, jsonable


class ResumeError(ValueError):
    """A recorded episode was made with other settings than those of the resumed run.

    ``key`` is the metadata entry that differs (dotted when nested, e.g.
    ``env_kwargs.backend``), ``recorded`` and ``asked`` its two values.
    """

    def __init__(self, path: Path, key: str, recorded: Any, asked: Any) -> None:
        self.path, self.key, self.recorded, self.asked = path, key, recorded, asked
        super().__init__(
            f"{path} was recorded with {key}={quote(recorded)}, this run asks {quote(asked)}; "
            f"resume needs the same settings"
        )


@dataclass(frozen=True)
class ResumePlan:
    """What resuming finds under a run directory: the results of the episodes kept, and why
    each damaged episode has to be played again."""

    kept: dict[int, EpisodeResult]
    damaged: dict[int, str]


def plan_resume(
    root: Path, expected: Mapping[int, Mapping[str, Any]], *, load_arrays: bool = True
) -> ResumePlan:
    """Sort the episodes recorded under ``root`` into kept and damaged.

    Args:
        root: the run directory.
        expected: for each episode index of the run, the metadata entries its recording must
            hold (nested mappings are compared entry by entry, only on the entries given).
        load_arrays: also load each episode's arrays and check them against its
            ``meta.json`` (without it, only ``meta.json`` is read: a cheap settings check).

    Returns:
        The plan; an episode that does not load is damaged (the reason is the
        :class:`EpisodeDataError` message), an episode not recorded is in neither part.

    Raises:
        ResumeError: at the first loadable episode recorded with other settings.
        EpisodeDataError: an episode's entry is a file or a symbolic link: the episode can be
            neither kept (what a link points to is not part of the run) nor played again
            (its directory is renamed into place, and cannot replace the entry).
    """
    for index in sorted(expected):
        entry = root / episode_dirname(index)
        if entry.is_symlink() or (entry.exists() and not entry.is_dir()):
            kind = "a symbolic link" if entry.is_symlink() else "not a directory"
            raise EpisodeDataError(
                f"{entry}: {kind}, not a recorded episode; move it away to resume this run"
            )
    on_disk = finished_episodes(root)
    kept: dict[int, EpisodeResult] = {}
    damaged: dict[int, str] = {}
    for index in sorted(set(expected) & set(on_disk)):
        path = on_disk[index]
        try:
            if load_arrays:
                data = EpisodeData.load(path)
                meta, result = data.meta, data.result
            else:
                meta, result = read_meta(path)
        except EpisodeDataError as exc:
            damaged[index] = str(exc)
            continue
        if result.episode != index:
            damaged[index] = f"{path}: records episode {result.episode}"
            continue
        difference = first_difference(meta, jsonable(expected[index]))
        if difference is not None:
            raise ResumeError(path, *difference)
        kept[index] = result
    return ResumePlan(kept, damaged)


def discard_episodes(root: Path, indices: Iterable[int]) -> None:
    """Delete the recorded episodes ``indices`` under ``root`` (damaged ones, before they are
    played again: an episode directory is renamed into place and cannot replace another)."""
    on_disk = finished_episodes(root)
    for index in indices:
        if index in on_disk:
            shutil.rmtree(on_disk[index])


def first_difference(
    recorded: Any, expected: Mapping[str, Any], prefix: str = ""
) -> tuple[str, Any, Any] | None:
    """The first entry of ``expected`` whose value in ``recorded`` differs, as (dotted key,
    recorded value, expected value); None when all agree."""
    for key, want in expected.items():
        got = recorded.get(key) if isinstance(recorded, dict) else None
        if isinstance(want, Mapping) and isinstance(got, dict):
            found = first_difference(got, want, f"{prefix}{key}.")
            if found is not None:
                return found
        elif got != want:
            return f"{prefix}{key}", got, want
    return None
