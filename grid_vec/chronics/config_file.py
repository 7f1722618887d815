"""Values from a grid2op ``config.py``, read as data with :mod:`ast`: the file is never run.

A dataset folder is untrusted input, and ``config.py`` is Python code. Only literal values
are taken: an entry of the module-level ``config = {...}`` dict, either written in place or
naming a module-level variable assigned a literal. Anything else (calls, attributes,
comprehensions) is refused with an error naming the file and the key.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from grid_vec.chronics.csv_table import FolderFormatError


def read_config_values(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The literal values of ``keys`` in ``config``; keys absent from the dict are omitted."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as e:
        raise FolderFormatError(f"{path}: not valid Python source ({e})") from e
    variables: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                variables[target.id] = node.value
    config = variables.get("config")
    if not isinstance(config, ast.Dict):
        raise FolderFormatError(f"{path}: no module-level 'config = {{...}}' dict literal")
    values: dict[str, Any] = {}
    for key_node, value_node in zip(config.keys, config.values, strict=True):
        if not isinstance(key_node, ast.Constant) or key_node.value not in keys:
            continue
        key = key_node.value
        if isinstance(value_node, ast.Name) and value_node.id in variables:
            value_node = variables[value_node.id]
        try:
            values[key] = ast.literal_eval(value_node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
            raise FolderFormatError(
                f"{path}: config[{key!r}] (line {value_node.lineno}) is not a literal value; "
                f"only literals are read, the file is never executed"
            ) from e
    return values
