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

An entry is a file like any other (a shared cache directory, a copied home folder, a damaged
or planted entry), so it is read as a dataset file is, and guarantees:

* nothing it holds is executed, imported or unpickled: it is read by
  :func:`grid_vec._untrusted_npz.read_npz` (no object arrays), and it holds no pandapower
  JSON (whose loader imports the modules it names). The lightsim2grid state is tagged JSON
  of plain values and arrays. The pandapower state is never stored: a model read from the
  cache carries a :class:`PandapowerRecompile` instead, which compiles the grid again from
  its own source (the embedded network, the folder's files) the first time the pandapower
  backend is built on it, and refuses a result that differs from the cached model;
* memory is bounded: the file by :data:`MAX_ENTRY_BYTES`, every member's declared inflated
  size (all together, by :data:`MAX_ENTRY_BYTES` too) before it is inflated, every header's
  shape by its member's size;
* it is what it claims: exactly the fields of a :class:`GridModel` of the expected kinds,
  every value checked (:func:`grid_vec.grid.model_checks.check_model_values`: finite,
  positive thermal limits and voltages, generator limits in order, element maps pointing at
  substations), and the key it was written under recorded inside and verified (the key
  hashes the content of the grid's files, so an entry copied under another grid's name, or
  one left from other files, is refused). Its lightsim2grid state must build a backend and
  run a power flow whose results have the model's sizes (tried at load: a poisoned state
  that would raise ``IndexError`` or ``RuntimeError`` later is refused here);
* a refused entry costs one warning naming the file and the reason; the grid is compiled
  again and the entry rewritten. A directory that cannot be written (read-only, full, not a
  directory) costs at most one warning; the cache never turns a working ``make`` into a
  failing one. Entries are written to a temporary file and renamed into place, so
  concurrent processes see a whole entry or none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from grid_vec._untrusted import UntrustedFileError, parse_json
from grid_vec._untrusted_npz import read_npz
from grid_vec.grid.lightsim import LightSimBackend
from grid_vec.grid.model import GridModel
from grid_vec.grid.model_checks import check_model_values

CACHE_DIR_VARIABLE = "GRID_VEC_CACHE_DIR"
FORMAT_VERSION = 2
MAX_ENTRY_BYTES = 64 * 2**20
"""Largest entry read, and most bytes its arrays may inflate to (a compiled 118-bus grid takes
about 0.5 MB)."""
MAX_STATE_DEPTH = 16
"""Deepest nesting of a solver state (lightsim2grid's is 7 levels)."""

# the code whose change changes what compiles: part of every key
_COMPILER_FILES = ("compile.py", "model.py", "model_cache.py")
_DISTRIBUTIONS = ("pandapower", "lightsim2grid")
_FIELDS = {f.name: f for f in dataclasses.fields(GridModel)}
_SCALARS = {"name": str, "n_line": int}
_STATES = "solver_states"
_STORED_STATE = "lightsim2grid"  # the one solver state an entry holds (plain values)
_KEY = "key"  # the member recording the key the entry was written under
_STATE_ARRAY = re.compile(r"state_\d{1,6}")
# array fields by kind: what numpy calls unicode, integer and floating
_TEXT = ("sub_names", "branch_names", "load_names", "gen_names", "gen_kind", "storage_names")
_INTEGER = ("branch_or_sub", "branch_ex_sub", "load_sub", "gen_sub", "storage_sub")


class CacheEntryError(UntrustedFileError):
    """An entry of the cache that cannot be trusted; the message names the file and why."""


class PandapowerRecompile:
    """The pandapower solver state of a model read from the cache, computed when first asked.

    The state is a pandapower net, whose only serialisation is pandapower JSON (its loader
    imports the modules an entry names), so the cache never stores it: the pandapower
    backend asks this object for it, and the grid is compiled again from its own source.

    Args:
        compile_model: compiles the grid as the cache's caller does (picklable -- a
            module-level function or a ``functools.partial`` of one -- so that the model
            still ships to worker processes).
    """

    def __init__(self, compile_model: Callable[[], GridModel]) -> None:
        self.compile_model = compile_model
        self._state: str | None = None  # computed once per process

    def state(self, model: GridModel) -> str:
        """The pandapower state of ``model``, compiled again (once per process).

        Raises:
            ValueError: the grid compiled now differs from ``model`` (its source changed
                since the entry was written); and whatever ``compile_model`` raises.
        """
        if self._state is None:
            fresh = self.compile_model()
            if not same_model_arrays(fresh, model):
                raise ValueError(
                    f"grid {model.name!r} compiles differently from its cached model (its "
                    "files changed since); make the environment again"
                )
            self._state = fresh.solver_states["pandapower"]
        return self._state

    def __getstate__(self) -> dict:
        return {"compile_model": self.compile_model, "_state": None}


def same_model_arrays(a: GridModel, b: GridModel) -> bool:
    """Whether two models have equal names, sizes, maps and values (solver states aside;
    names compare as text, whether object or unicode arrays)."""

    def comparable(value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            return np.asarray(value)
        return value.astype(str) if value.dtype.kind in "OU" else value

    return all(
        np.array_equal(comparable(getattr(a, name)), comparable(getattr(b, name)))
        for name in _FIELDS
        if name != _STATES
    )


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
            and limits, or a digest of a folder's file contents and the transformer model).

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
        compile_model: compiles the model when the cache has no usable entry for ``inputs``;
            picklable (see :class:`PandapowerRecompile`, which a model from the cache keeps
            as its pandapower state).

    Returns:
        The model; its errors are ``compile_model``'s.

    Warns:
        UserWarning: once, naming the file, for an entry refused (then compiled anew and
            rewritten) or a cache directory that cannot be written.
    """
    key = model_key(*inputs)
    warned = False
    try:
        model = read_entry(key)
    except CacheEntryError as e:
        warnings.warn(f"{e}; compiling the grid again", stacklevel=2)
        model, warned = None, True
    if model is not None:
        states = {**model.solver_states, "pandapower": PandapowerRecompile(compile_model)}
        return dataclasses.replace(model, solver_states=states)
    model = compile_model()
    try:
        store_model(key, model)
    except OSError as e:
        if not warned:
            warnings.warn(f"cannot write the cache of compiled grids ({e})", stacklevel=2)
    return model


def load_model(key: str) -> GridModel | None:
    """The model stored under ``key``, or None when there is none or it cannot be trusted.

    Args:
        key: from :func:`model_key`.

    Returns:
        The model (its arrays writeable, as a fresh compile's; without a pandapower state),
        or None: no cache, no entry, or a refused entry (with a warning naming the file and
        the reason).
    """
    try:
        return read_entry(key)
    except CacheEntryError as e:
        warnings.warn(str(e), stacklevel=2)
        return None


def read_entry(key: str) -> GridModel | None:
    """The model stored under ``key``; None when the cache is off or holds no entry.

    Raises:
        CacheEntryError: naming the file and the reason, for an entry that is there but is
            not exactly what :func:`store_model` writes under ``key`` (see the module's
            guarantees).
    """
    path = _entry_path(key)
    if path is None or not os.path.lexists(path):
        return None
    arrays = read_npz(
        path,
        error=CacheEntryError,
        max_file_bytes=MAX_ENTRY_BYTES,
        max_array_bytes=MAX_ENTRY_BYTES,
        what="compiled grid cache entry",
    )
    where = f"{path}: compiled grid cache entry"
    try:
        if _KEY not in arrays or arrays[_KEY].shape != () or str(arrays[_KEY]) != key:
            raise ValueError("written under another key (another grid, or other files)")
        model = _decode(arrays)
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise CacheEntryError(f"{where}: {e}") from None
    try:
        check_model_values(model, where)
    except ValueError as e:
        raise CacheEntryError(str(e)) from None
    _try_lightsim_state(model, where)
    return model


def store_model(key: str, model: GridModel) -> None:
    """Store ``model`` under ``key`` (atomically); does nothing when the cache is off.

    Args:
        key: from :func:`model_key`.
        model: the compiled model (its lightsim2grid state is stored, not its pandapower one).

    Raises:
        OSError: the directory cannot be made or written (the caller goes on without it).
    """
    path = _entry_path(key)
    if path is None:
        return
    buffer = io.BytesIO()
    np.savez(buffer, **_encode(model), **{_KEY: np.array(key)})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(buffer.getvalue())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
            digest.update(json.dumps(files).encode())
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
        if name == _STATES:  # the lightsim2grid state only: plain values and arrays
            stored = {_STORED_STATE: value[_STORED_STATE]}
            arrays[name] = np.array(json.dumps(_tagged(stored, arrays)))
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
    """The model of an entry; ValueError / KeyError / TypeError for anything unexpected
    (its values are checked apart, by :func:`check_model_values`)."""
    unknown = sorted(n for n in arrays if n not in _FIELDS and n != _KEY)
    if any(not _STATE_ARRAY.fullmatch(n) for n in unknown):
        raise ValueError(f"unexpected members {unknown[:5]}")
    values: dict[str, Any] = {}
    for name in _FIELDS:
        if name not in arrays:
            raise ValueError(f"no field {name}")
        array = arrays[name]
        if name == _STATES:
            if array.dtype.kind != "U" or array.shape != ():
                raise ValueError("the solver states are not one JSON text")
            text = str(array[()])  # bounded like every JSON we read (a ValueError on a fault)
            values[name] = _untagged(
                parse_json(text, "the solver states:", error=UntrustedFileError), arrays, 0
            )
        elif name in _SCALARS:
            want = "U" if name == "name" else "i"
            if array.shape != () or array.dtype.kind != want:
                raise ValueError(f"field {name} is not a scalar of kind {want}")
            values[name] = _SCALARS[name](array[()].item())
        else:
            kind = "U" if name in _TEXT else "i" if name in _INTEGER else "f"
            if array.ndim != 1 or (array.dtype.kind != kind and array.size):
                raise ValueError(f"field {name} is not a 1-d array of kind {kind}")
            values[name] = array
    states = values[_STATES]
    if not isinstance(states, dict) or set(states) != {_STORED_STATE}:
        raise ValueError(f"the solver states are not one {_STORED_STATE!r} state")
    state = states[_STORED_STATE]
    if not isinstance(state, dict) or set(state) != {"grid", "v_init"}:
        raise ValueError("the lightsim2grid state is not {grid, v_init}")
    v_init = state["v_init"]
    n_bus = 2 * len(values["sub_names"])
    if not isinstance(v_init, np.ndarray) or v_init.dtype.kind != "c" or v_init.shape != (n_bus,):
        raise ValueError(f"the first guess is not {n_bus} complex voltages")
    if not np.isfinite(v_init).all():
        raise ValueError("the first guess holds non-finite voltages")
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
        if tag == "array" and isinstance(inner, str) and _STATE_ARRAY.fullmatch(inner):
            return arrays[inner]
        if tag == "complex" and isinstance(inner, list) and len(inner) == 2:
            return complex(float(inner[0]), float(inner[1]))
        raise ValueError(f"unknown tag {tag!r} in a solver state")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise ValueError(f"unexpected {type(value).__name__} in a solver state")


def _try_lightsim_state(model: GridModel, where: str) -> None:
    """Build the lightsim2grid backend of ``model`` and run one power flow, so that a state
    lightsim2grid cannot use fails here, as one :class:`CacheEntryError`, rather than as an
    ``IndexError`` or ``RuntimeError`` when an env is built. A milliseconds' trial: the state
    is lightsim2grid's own serialisation, which only lightsim2grid can vouch for."""
    try:
        backend = LightSimBackend(model)
        if backend.run_ac():
            results = backend.results()
            sizes = (len(results.p_or), len(results.load_p), len(results.gen_p))
            if sizes != (model.n_branch, model.n_load, model.n_gen):
                raise ValueError(f"its power flow gives {sizes} branches, loads, generators")
    except Exception as e:  # lightsim2grid raises many kinds on a state it cannot use
        raise CacheEntryError(
            f"{where}: the lightsim2grid state is unusable ({type(e).__name__}: {e})"[:400]
        ) from None
