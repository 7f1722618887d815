"""The rules files of a grid2op-format folder (``difficulty_levels.json``, ``parameters.json``)
and grid2op's choice among them (:func:`rules_dict`), read as untrusted input: bounded JSON,
flat scalar values only, each fault a ``FolderFormatError`` naming the file (and level).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grid_vec.chronics.untrusted import FolderFormatError, load_json, short

_MAX_PARAM_CHARS = 100  # a rules string value: grid2op writes "True", "2", ...
_MAX_LEVELS = 100  # difficulty levels of difficulty_levels.json
DIFFICULTY_FILE = "difficulty_levels.json"
PARAMETERS_FILE = "parameters.json"
COMPETITION_LEVEL = "competition"  # the level grid2op's make picks first


def read_json(path: Path | None) -> dict | None:
    if path is None:
        return None
    value = load_json(path)
    if not isinstance(value, dict):
        raise FolderFormatError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def read_params(path: Path | None) -> dict | None:
    """parameters.json's entries, None without the file."""
    if path is None:
        return None
    return _check_flat(read_json(path), path, "")


def _check_flat(params: Any, path: Path, where: str) -> dict:
    """A rules dict: grid2op writes flat scalars; anything else is refused here, so that the
    env layer's conversion to ``Parameters`` only meets scalars."""
    if not isinstance(params, dict):
        raise FolderFormatError(
            f"{path}: {where}expected a JSON object, got {type(params).__name__}"
        )
    for key, value in params.items():
        if value is None or isinstance(value, (bool, int, float)):
            continue
        if not isinstance(value, str) or len(value) > _MAX_PARAM_CHARS:
            raise FolderFormatError(
                f"{path}: {where}key {short(key)}: expected a number, a boolean or a short "
                f"string, got {short(value)}"
            )
    return params


def read_levels(path: Path | None) -> dict[str, dict] | None:
    """difficulty_levels.json: level name -> flat rules dict, None without the file."""
    levels = read_json(path)
    if levels is None:
        return None
    if not levels:
        raise FolderFormatError(f"{path}: no difficulty level")
    if len(levels) > _MAX_LEVELS:
        raise FolderFormatError(f"{path}: {len(levels)} levels (at most {_MAX_LEVELS})")
    return {
        name: _check_flat(value, path, f"level {short(name)}: ") for name, value in levels.items()
    }


def rules_dict(folder: Any, difficulty: str | None = None) -> tuple[dict, str]:
    """The grid2op-named rules a folder gives (a ``GridFolder``: its ``path``,
    ``difficulty_levels`` and ``parameters``), and where they come from (the file and level,
    for messages).

    grid2op's ``make`` rule: with ``difficulty_levels.json``, the level ``difficulty``, else
    the level ``"competition"``, else the highest numbered level; otherwise
    ``parameters.json``; otherwise no entry (every rule at its default). A folder with both
    files takes its rules from ``difficulty_levels.json``.

    Raises:
        TypeError: ``difficulty`` is not a str.
        ValueError: ``difficulty`` names no level, or is given to a folder without
            ``difficulty_levels.json``.
        FolderFormatError: ``difficulty_levels.json`` has neither ``"competition"`` nor a
            numbered level to choose by default.
    """
    if difficulty is not None and not isinstance(difficulty, str):
        raise TypeError(f"difficulty must be a str (a level name), got {difficulty!r}")
    levels = folder.difficulty_levels
    if levels is None:
        if difficulty is not None:
            raise ValueError(
                f"difficulty={difficulty!r}: {folder.path} has no {DIFFICULTY_FILE} "
                "(difficulty levels)"
            )
        if folder.parameters is not None:
            return folder.parameters, str(folder.path / PARAMETERS_FILE)
        return {}, f"{folder.path} (grid2op's default rules)"
    where = folder.path / DIFFICULTY_FILE
    if difficulty is None:
        numbered = {int(k): k for k in levels if k.isascii() and k.isdigit() and len(k) < 10}
        if COMPETITION_LEVEL in levels:
            difficulty = COMPETITION_LEVEL
        elif numbered:
            difficulty = numbered[max(numbered)]
        else:
            raise FolderFormatError(
                f"{where}: neither a {COMPETITION_LEVEL!r} level nor a numbered one to choose "
                "by default; pass difficulty="
            )
    elif difficulty not in levels:
        raise ValueError(
            f"difficulty={difficulty!r} is not a level of {where}; its levels: "
            + ", ".join(repr(k) for k in sorted(levels))
        )
    return levels[difficulty], f"{where}: level {short(difficulty)}"
