"""A dataset folder as grid2op may open it: without running the folder's ``config.py``.

``grid2op.make(folder)`` executes the folder's ``config.py`` (its ``config`` dict names the
classes of the env). A dataset folder, or a recorded run naming one, is untrusted input, and
grid_vec reads the same folder without running anything (``docs/untrusted_input.md``). So
grid2op is handed a copy: a fresh directory named as the folder (grid2op names its env after
it), its entries linked to the folder's, and a ``config.py`` written here from the values
:func:`~grid_vec.chronics.opponent_config.read_config_entries` reads as data. What that file
holds can be read off this module: imports of classes of the installed grid2op and
lightsim2grid packages only (each checked to be a class there before anything is written),
literal values written with ``repr``, and calls of those classes with such values
(``RulesByArea([[0, 1], [2]])``). No Python file of the folder is linked.
"""

from __future__ import annotations

import importlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from grid_vec.chronics.config_file import folder_config
from grid_vec.chronics.opponent_config import ClassCall, ClassRef, read_config_entries
from grid_vec.chronics.untrusted import FolderFormatError, inside, short

__all__ = ["TRUSTED_PACKAGES", "runnable_copy"]

TRUSTED_PACKAGES = ("grid2op", "lightsim2grid")
"""The packages whose classes a written ``config.py`` may import: installed code, not the
folder's."""

# entries of a folder grid2op never needs and that are code: not linked
_CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd")
_NOT_LINKED = ("__pycache__", "_grid2op_classes", "config.py")
_MAX_ENTRIES = 10_000  # entries of a dataset folder's top level (its scenarios are one entry)
# a dotted module path of public parts: no ``__main__`` (a command line) nor private module
_MODULE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")


def runnable_copy(folder: str | Path) -> Path:
    """A directory grid2op may ``make``: the folder's entries linked, a ``config.py``
    written from its values (see the module docstring). The caller removes its parent
    (``shutil.rmtree(path.parent)``) once grid2op no longer reads it.

    Args:
        folder: the grid2op dataset folder.

    Returns:
        The copy, ``<a new temporary directory>/<the folder's name>``.

    Raises:
        FolderFormatError: (naming the file and the entry) ``config.py`` is missing or holds
            what cannot be read as data, names a class that is not one of grid2op's or
            lightsim2grid's, or an entry of the folder leads out of it.
    """
    root = Path(folder).resolve()
    config = folder_config(root)
    if config is None:
        raise FolderFormatError(f"{root}: no config.py (grid2op needs one)")
    source = _config_source(config)
    entries = []
    for count, entry in enumerate(sorted(root.iterdir())):
        if count >= _MAX_ENTRIES:
            raise FolderFormatError(f"{root}: more than {_MAX_ENTRIES} entries")
        if entry.name in _NOT_LINKED or entry.name.endswith(_CODE_SUFFIXES):
            continue
        entries.append((entry.name, inside(root, entry)))
    parent = Path(tempfile.mkdtemp(prefix="grid_vec_grid2op_"))
    try:
        copy = parent / root.name
        copy.mkdir()
        for name, target in entries:
            (copy / name).symlink_to(target, target_is_directory=target.is_dir())
        (copy / "config.py").write_text(source, encoding="utf-8")
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise
    return copy


def _config_source(path: Path) -> str:
    """The text of the ``config.py`` grid2op is handed for the folder of ``path``."""
    writer = _ConfigWriter(path)
    entries = read_config_entries(path)
    body = ",\n".join(f"    {key!r}: {writer.value(key, v)}" for key, v in entries.items())
    imports = "".join(
        f"from {module} import {name} as {alias}\n"
        for (module, name), alias in writer.aliases.items()
    )
    return (
        f"# written by grid_vec from the values of {short(str(path), 200)}, read as data:\n"
        "# the folder's own config.py is never run\n"
        f"{imports}\nconfig = {{\n{body}\n}}\n"
    )


class _ConfigWriter:
    """Writes the values of one ``config`` as Python source; each class checked and given
    an alias (``_class_0``...), so that no name of the file reaches the source unchecked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.aliases: dict[tuple[str, str], str] = {}

    def value(self, key: str, value: Any) -> str:
        if isinstance(value, ClassRef):
            return self._alias(key, value)
        if isinstance(value, ClassCall):
            args = [self.value(key, a) for a in value.args]
            args += [f"{name}={self.value(key, v)}" for name, v in value.kwargs.items()]
            return f"{self._alias(key, value.cls)}({', '.join(args)})"
        if isinstance(value, list):
            return "[" + ", ".join(self.value(key, v) for v in value) + "]"
        if isinstance(value, dict):
            items = (f"{k!r}: {self.value(key, v)}" for k, v in value.items())
            return "{" + ", ".join(items) + "}"
        if value is None or isinstance(value, (bool, int, float, str)):
            return repr(value)  # the reader gives finite numbers only: repr reads back as is
        raise FolderFormatError(f"{self.path}: config[{key!r}]: {short(value)} is refused")

    def _alias(self, key: str, ref: ClassRef) -> str:
        where = f"{self.path}: config[{key!r}]"
        module = ref.module
        if (
            module is None
            or not _MODULE.fullmatch(module)
            or module.split(".")[0] not in TRUSTED_PACKAGES
            or not ref.name.isidentifier()
        ):
            raise FolderFormatError(
                f"{where}: {short(ref.name)} is not imported from {' or '.join(TRUSTED_PACKAGES)}"
                " (the folder's own code is never run)"
            )
        if (module, ref.name) not in self.aliases:
            try:
                found = getattr(importlib.import_module(module), ref.name, None)
            except ImportError:
                found = None
            if not isinstance(found, type):
                raise FolderFormatError(
                    f"{where}: {module}.{ref.name} is not a class of the installed {module}"
                )
            self.aliases[(module, ref.name)] = f"_class_{len(self.aliases)}"
        return self.aliases[(module, ref.name)]
