"""A disk cache of compiled grids, so that a new process skips pandapower altogether.

Compiling a grid (:func:`grid_vec.grid.compile.compile_net`) imports pandapower, builds its
net (for a dataset folder: parses ``grid.json``) and runs a base-case power flow: 2-4 s of a
process's start-up, for a result of a few hundred KB that never changes. The result is
stored here as one ``.npz`` file per grid, named by a hash of everything it depends on: the
caller's description of the inputs (the embedded grid's name and limits, or the bytes of a
folder's ``grid.json`` and ``config.py``), the transformer model, the installed pandapower and
lightsim2grid (their versions and files) and the code that compiles. A stale entry is
therefore never found; nothing is ever invalidated by hand.

Where: ``$GRID_VEC_CACHE_DIR`` when set (an empty value or ``off`` turns the cache off),
else ``$XDG_CACHE_HOME/grid_vec/models``, else ``~/.cache/grid_vec/models``.

The cache is an optimisation and is treated as untrusted input all the same: a file is read
only up to :data:`MAX_ENTRY_BYTES`, with ``numpy.load(allow_pickle=False)``, and only the
expected fields of the expected kinds and consistent sizes are accepted (solver states are
tagged JSON of plain values, not pickles). Any fault -- a missing, truncated, foreign or
unreadable entry, a directory that cannot be written -- makes :func:`load_model` return
``None`` (the caller compiles and stores anew) and :func:`store_model` do nothing: the cache
never turns a working ``make`` into a failing one. Entries are written to a temporary file
and renamed into place, so concurrent processes see a whole entry or none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec.grid.model import GridModel

CACHE_DIR_VARIABLE = "GRID_VEC_CACHE_DIR"
FORMAT_VERSION = 1
MAX_ENTRY_BYTES = 64 * 2**20
"""Largest entry read (a compiled 118-bus grid takes about 0.5 MB)."""
MAX_STATE_DEPTH = 16
"""Deepest nesting of a solver state (lightsim2grid's is 7 levels)."""

# the code whose change changes what compiles: part of every key
_COMPILER_FILES = ("compile.py", "model.py", "model_cache.py")
_DISTRIBUTIONS = ("pandapower", "lightsim2grid")
_FIELDS = {f.name: f for f in dataclasses.fields(GridModel)}
_SCALARS = {"name": str, "n_line": int}
_STATES = "solver_states"
# array fields by kind: what numpy calls unicode, integer and floating
_TEXT = ("sub_names", "branch_names", "load_names", "gen_names", "gen_kind", "storage_names")
_INTEGER = ("branch_or_sub", "branch_ex_sub", "load_sub", "gen_sub", "storage_sub")
# sizes: every array field has the length of the names of its element kind
_SIZED_BY = {
    "sub_names": ("sub_vn_kv",),
    "branch_names": ("branch_or_sub", "branch_ex_sub", "thermal_limit_a"),
    "load_names": ("load_sub", "load_p0", "load_q0"),
    "gen_names": ("gen_sub", "gen_kind", "gen_p0", "gen_v0", "gen_pmin", "gen_pmax"),
    "storage_names": ("storage_sub", "storage_p0"),
}
_SUBSTATION_INDICES = ("branch_or_sub", "branch_ex_sub", "load_sub", "gen_sub", "storage_sub")


def cache_dir() -> Path | None:
    """The directory of the cache, or None when ``$GRID_VEC_CACHE_DIR`` turns it off."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured is not None:
        if configured.strip() in ("", "off"):
            return None
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grid_vec" / "models"


def model_key(*inputs: str | bytes) -> str:
    """The name of the entry for a grid compiled from ``inputs``.

    Args:
        inputs: everything the compiled model depends on besides the library versions and
            the compiling code, which are added here (for example the embedded grid's name
            and limits, or a folder's file contents and the transformer model).

    Returns:
        A hex digest: equal inputs, versions and code give the same key, anything else not.
    """
    digest = hashlib.sha256(f"grid_vec model cache {FORMAT_VERSION}".encode())
    for part in (*_environment(), *inputs):
        data = part.encode() if isinstance(part, str) else bytes(part)
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def cached_model(
    inputs: tuple[str | bytes, ...], compile_model: Callable[[], GridModel]
) -> GridModel:
    """The model compiled from ``inputs``: from the cache, else ``compile_model()``, stored.

    Args:
        inputs: what :func:`model_key` hashes (everything the model depends on).
        compile_model: compiles the model when the cache has no entry for ``inputs``.

    Returns:
        The model; its errors are ``compile_model``'s.
    """
    key = model_key(*inputs)
    model = load_model(key)
    if model is None:
        model = compile_model()
        store_model(key, model)
    return model


def load_model(key: str) -> GridModel | None:
    """The model stored under ``key``, or None when there is none or it cannot be trusted.

    Args:
        key: from :func:`model_key`.

    Returns:
        The model (its arrays writeable, as a fresh compile's), or None: no cache, no entry,
        or an entry that is unreadable, too large or not exactly what :func:`store_model`
        writes.
    """
    path = _entry_path(key)
    if path is None:
        return None
    try:
        if not path.is_file() or path.stat().st_size > MAX_ENTRY_BYTES:
            return None
        with np.load(path, allow_pickle=False) as archive:
            return _decode({name: archive[name] for name in archive.files})
    except (OSError, ValueError, KeyError, TypeError, RecursionError, zipfile.BadZipFile, EOFError):
        return None


def store_model(key: str, model: GridModel) -> None:
    """Store ``model`` under ``key`` (atomically); does nothing when the cache is off or its
    directory cannot be written.

    Args:
        key: from :func:`model_key`.
        model: the compiled model.
    """
    path = _entry_path(key)
    if path is None:
        return
    buffer = io.BytesIO()
    np.savez(buffer, **_encode(model))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(buffer.getvalue())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return


def _entry_path(key: str) -> Path | None:
    directory = cache_dir()
    if directory is None or not isinstance(key, str) or not key.isalnum():
        return None
    return directory / f"{key}.npz"


_ENVIRONMENT: tuple[str, ...] | None = None


def _environment() -> tuple[str, ...]:
    """What identifies the installed pandapower and lightsim2grid and the code that compiles
    (computed once). A library is identified by its package's top-level files, their names
    and sizes, and the bytes of its ``__init__.py`` and ``_version.py`` (where the versions
    are written): found without importing it (importing pandapower takes seconds) nor
    ``importlib.metadata`` (tens of milliseconds), and changed by any install or upgrade."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        parts = []
        for name in _DISTRIBUTIONS:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.origin:
                parts.append(f"{name} missing")
                continue
            package = Path(spec.origin).parent
            digest = hashlib.sha256(name.encode())
            with os.scandir(package) as entries:
                files = sorted((e.name, e.stat().st_size) for e in entries if e.is_file())
            digest.update(repr(files).encode())
            for version_file in ("__init__.py", "_version.py"):
                if (package / version_file).is_file():
                    digest.update((package / version_file).read_bytes())
            parts.append(digest.hexdigest())
        here = Path(__file__).parent
        parts += [hashlib.sha256((here / f).read_bytes()).hexdigest() for f in _COMPILER_FILES]
        _ENVIRONMENT = tuple(parts)
    return _ENVIRONMENT


def _encode(model: GridModel) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for name in _FIELDS:
        value = getattr(model, name)
        if name == _STATES:
            arrays[name] = np.array(json.dumps(_tagged(value, arrays)))
        elif name in _SCALARS:
            arrays[name] = np.array(value)
        else:  # names may be object arrays (from pandas): stored as unicode, pickle-free
            arrays[name] = np.asarray(value).astype(str) if name in _TEXT else np.asarray(value)
    return arrays


def _tagged(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A solver state as JSON values: tuples, complex numbers and arrays tagged (arrays go
    to ``arrays`` under a name of their own), lists, dicts of str keys and scalars as they
    are."""
    if isinstance(value, tuple):
        return {"tuple": [_tagged(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_tagged(v, arrays) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _tagged(v, arrays) for k, v in value.items()}}
    if isinstance(value, np.ndarray):
        name = f"state_{len(arrays)}"
        arrays[name] = value
        return {"array": name}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a solver state")


def _decode(arrays: dict[str, np.ndarray]) -> GridModel:
    """The model of an entry; ValueError / KeyError / TypeError for anything unexpected."""
    values: dict[str, Any] = {}
    for name in _FIELDS:
        array = arrays[name]
        if name == _STATES:
            values[name] = _untagged(json.loads(str(array[()])), arrays, 0)
        elif name in _SCALARS:
            values[name] = _SCALARS[name](array[()].item())
        else:
            kind = "U" if name in _TEXT else "i" if name in _INTEGER else "f"
            if array.ndim != 1 or (array.dtype.kind != kind and array.size):
                raise ValueError(f"field {name} is not a 1-d array of kind {kind}")
            values[name] = array
    for names, sized in _SIZED_BY.items():
        if any(len(values[s]) != len(values[names]) for s in sized):
            raise ValueError(f"fields sized by {names} disagree")
    n_sub = len(values["sub_names"])
    for name in _SUBSTATION_INDICES:
        if values[name].size and not (0 <= values[name].min() <= values[name].max() < n_sub):
            raise ValueError(f"field {name} refers to no substation")
    if not 0 <= values["n_line"] <= len(values["branch_names"]):
        raise ValueError("n_line exceeds the number of branches")
    if not isinstance(values[_STATES], dict):
        raise ValueError("the solver states are not a mapping")
    return GridModel(**values)


def _untagged(value: Any, arrays: dict[str, np.ndarray], depth: int) -> Any:
    if depth > MAX_STATE_DEPTH:
        raise ValueError("solver state nests too deep")
    if isinstance(value, list):
        return [_untagged(v, arrays, depth + 1) for v in value]
    if isinstance(value, dict):
        if len(value) != 1:
            raise ValueError("a tagged value has exactly one tag")
        ((tag, inner),) = value.items()
        if tag == "tuple" and isinstance(inner, list):
            return tuple(_untagged(v, arrays, depth + 1) for v in inner)
        if tag == "dict" and isinstance(inner, dict):
            return {k: _untagged(v, arrays, depth + 1) for k, v in inner.items()}
        if tag == "array" and isinstance(inner, str) and inner.startswith("state_"):
            return arrays[inner]
        if tag == "complex" and isinstance(inner, list) and len(inner) == 2:
            return complex(float(inner[0]), float(inner[1]))
        raise ValueError(f"unknown tag {tag!r} in a solver state")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise ValueError(f"unexpected {type(value).__name__} in a solver state")
