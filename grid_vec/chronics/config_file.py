"""Values from a grid2op ``config.py``, read as data with :mod:`ast`: the file is never run.

A dataset folder is untrusted input, and ``config.py`` is Python code. Only literal values
are taken: an entry of the module-level ``config = {...}`` dict, either written in place or
naming a module-level variable assigned a literal. Anything else (calls, attributes,
comprehensions) is refused with an error naming the file and the key. The file's size is
bounded, a parse that fails on deep nesting is an error like any other, and the values read
are type-checked here (:data:`KEYS`), so that callers get well-formed data or one
:class:`FolderFormatError` naming ``config.py`` and the key.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grid_vec.chronics.untrusted import (
    MAX_SMALL_FILE_BYTES,
    FolderFormatError,
    check_number,
    inside,
    read_text,
    short,
)

# The smallest thermal limit accepted, in amperes: no conductor is rated below a milliamp
# (grid2op's datasets go down to 7.4 A, four orders of magnitude above). A value like 1e-300
# reads as a number, but every current is divided by it (rho): far below the flows, the
# lines trip at the reset and the grid falls apart with an error that cannot name this file.
MIN_THERMAL_LIMIT_A = 1e-3


def _thermal_limits(path: Path, value: Any) -> list[float] | dict[str, float] | None:
    """None, a list of numbers >= ``MIN_THERMAL_LIMIT_A`` (branch order) or a dict branch
    name -> such a number."""
    where = "config['thermal_limits']"
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_thermal_limit(v, path, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        limits = {}
        for name, v in value.items():
            if not isinstance(name, str):
                raise FolderFormatError(f"{path}: {where}: key {short(name)} is not a string")
            limits[name] = _thermal_limit(v, path, f"{where}[{short(name)}]")
        return limits
    raise FolderFormatError(
        f"{path}: {where}: expected a list or a dict of numbers, got {type(value).__name__}"
    )


def _thermal_limit(value: Any, path: Path, where: str) -> float:
    limit = check_number(value, path, where, positive=True)
    if limit < MIN_THERMAL_LIMIT_A:
        raise FolderFormatError(
            f"{path}: {where}: a thermal limit of {short(value)} A is below the "
            f"{MIN_THERMAL_LIMIT_A:g} A minimum"
        )
    return limit


def _names_chronics_to_grid(path: Path, value: Any) -> dict[str, dict[str, str]] | None:
    """None, or a dict of kinds ('loads', 'prods', ...) -> dict CSV column -> grid name."""
    where = "config['names_chronics_to_grid']"
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FolderFormatError(f"{path}: {where}: expected a dict, got {type(value).__name__}")
    renames: dict[str, dict[str, str]] = {}
    for kind, mapping in value.items():
        if not isinstance(kind, str):
            raise FolderFormatError(f"{path}: {where}: key {short(kind)} is not a string")
        if mapping is None:
            continue
        if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            raise FolderFormatError(
                f"{path}: {where}[{short(kind)}]: expected a dict of strings to strings"
            )
        renames[kind] = dict(mapping)
    return renames


# the keys that can be read, each with the check that types its value
KEYS: dict[str, Callable[[Path, Any], Any]] = {
    "thermal_limits": _thermal_limits,
    "names_chronics_to_grid": _names_chronics_to_grid,
}


def parse_config(path: Path) -> ast.Module:
    """``config.py`` parsed (bounded read; never run).

    Raises:
        FolderFormatError: naming ``path``: too large, unreadable, or not valid Python source.
    """
    source = read_text(path, MAX_SMALL_FILE_BYTES)
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise FolderFormatError(
            f"{path}: not valid Python source (line {e.lineno}: {short(e.msg)})"
        ) from None
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, deep nesting
        raise FolderFormatError(
            f"{path}: not valid Python source ({type(e).__name__}: {short(str(e))})"
        ) from None


def config_dict(tree: ast.Module, path: Path) -> ast.Dict:
    """The module-level ``config = {...}`` dict literal (the last one, as when run).

    Raises:
        FolderFormatError: naming ``path``: there is none.
    """
    config = next(
        (
            node.value
            for node in reversed(tree.body)
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "config"
        ),
        None,
    )
    if not isinstance(config, ast.Dict):
        raise FolderFormatError(f"{path}: no module-level 'config = {{...}}' dict literal")
    return config


def class_name(node: ast.expr | None) -> str | None:
    """The name an entry gives a class, bare or dotted (``RedispReward``,
    ``grid2op.Reward.RedispReward``: ``"RedispReward"``); None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def config_values(tree: ast.Module, path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The checked literal values of ``keys`` in ``config``; keys absent from it are omitted.

    Args:
        tree: the file, parsed (:func:`parse_config`).
        path: the ``config.py`` file it was read from (for messages).
        keys: names among :data:`KEYS`.

    Returns:
        Each key present in ``config`` mapped to its value, checked by :data:`KEYS`.

    Raises:
        FolderFormatError: naming ``path`` and, where it applies, the key and line.
    """
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        raise ValueError(f"keys must be among {sorted(KEYS)}, got {unknown[0]!r}")
    variables: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                variables[target.id] = node.value
    config = config_dict(tree, path)
    values: dict[str, Any] = {}
    for key_node, value_node in zip(config.keys, config.values, strict=True):
        if not isinstance(key_node, ast.Constant) or key_node.value not in keys:
            continue
        key = key_node.value
        if isinstance(value_node, ast.Name) and value_node.id in variables:
            value_node = variables[value_node.id]
        try:
            value = ast.literal_eval(value_node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
            raise FolderFormatError(
                f"{path}: config[{key!r}] (line {value_node.lineno}) is not a literal value; "
                f"only literals are read, the file is never executed"
            ) from e
        values[key] = KEYS[key](path, value)
    return values


def config_name(tree: ast.Module, path: Path, key: str) -> str | None:
    """The name ``config[key]`` gives, when it is a bare name or a dotted one
    (``RedispReward``, ``grid2op.Reward.RedispReward``: ``"RedispReward"``); None when ``config``
    has no such key or gives something else. Read as data: nothing is imported or run.

    Args:
        tree: the file, parsed (:func:`parse_config`).
        path: the ``config.py`` file it was read from (for messages).
        key: the entry.

    Raises:
        FolderFormatError: the file has no ``config`` dict.
    """
    config = config_dict(tree, path)
    for key_node, value_node in zip(config.keys, config.values, strict=True):
        if isinstance(key_node, ast.Constant) and key_node.value == key:
            return class_name(value_node)
    return None


def folder_config(root: Path) -> Path | None:
    """The ``config.py`` of the dataset folder ``root``, None when it has none.

    Raises:
        FolderFormatError: the file resolves outside the folder (a link out of it).
    """
    root = root.resolve()
    path = root / "config.py"
    if not path.is_file() and not path.is_symlink():
        return None
    inside(root, path)
    return path


MAX_FORECAST_HORIZONS = 288  # a day of 5-minute forecasts per step, far above any dataset's


def forecast_horizons(tree: ast.Module, path: Path) -> int:
    """How many forecasts per step the ``*_forecasted`` files hold: the length of
    ``config["data_feeding_kwargs"]["h_forecast"]`` (grid2op's scenario class reads that many
    rows per step, step-major), 1 without it.

    Args:
        tree: the file, parsed (:func:`parse_config`).
        path: the ``config.py`` file it was read from (for messages).

    Raises:
        FolderFormatError: naming ``path``: no ``config`` dict, or an ``h_forecast`` that is
            not a literal list of 1 to 288 numbers.
    """
    config = config_dict(tree, path)
    entries = {k.value: v for k, v in zip(config.keys, config.values, strict=True)
               if isinstance(k, ast.Constant)}  # fmt: skip
    kwargs = entries.get("data_feeding_kwargs")
    if not isinstance(kwargs, ast.Dict):
        return 1
    node = next(
        (v for k, v in zip(kwargs.keys, kwargs.values, strict=True)
         if isinstance(k, ast.Constant) and k.value == "h_forecast"),
        None,
    )  # fmt: skip
    if node is None:
        return 1
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if (
        not isinstance(value, (list, tuple))
        or not 1 <= len(value) <= MAX_FORECAST_HORIZONS
        or not all(isinstance(h, (int, float)) and not isinstance(h, bool) for h in value)
    ):
        raise FolderFormatError(
            f"{path}: config['data_feeding_kwargs']['h_forecast'] (line {node.lineno}) must be "
            f"a literal list of 1 to {MAX_FORECAST_HORIZONS} numbers"
        )
    return len(value)
