"""Argument checks shared by the backends: validate everything before any state is written."""

from __future__ import annotations

import functools
import math

import numpy as np

from grid_vec.grid.model import GridModel


def check_injections(
    model: GridModel, load_p, load_q, gen_p, gen_v
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The injections as float64 arrays; ``ValueError`` naming the element kind and index.

    Arrays that are already float64 are returned as they are (not copied): the backends only
    read them.
    """
    checked = (
        _as_float("load_p", load_p, model.n_load),
        _as_float("load_q", load_q, model.n_load),
        _as_float("gen_p", gen_p, model.n_gen),
        _as_float("gen_v", gen_v, model.n_gen),
    )
    # one cheap dot product: NaN and inf propagate into it, so a finite result means finite
    # values (an overflow from huge values falls through to the exact check)
    values = np.concatenate(checked)
    if not math.isfinite(values @ values):
        for kind, array in zip(("load_p", "load_q", "gen_p", "gen_v"), checked, strict=True):
            bad = np.flatnonzero(~np.isfinite(array))
            if bad.size:
                raise ValueError(
                    f"{kind}[{int(bad[0])}] is {array[bad[0]]}; injections must be finite"
                )
    return checked


def _as_float(kind: str, values, size: int) -> np.ndarray:
    if type(values) is np.ndarray and values.dtype == np.float64:
        array = values
    else:
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{kind} must be a numeric array of shape ({size},): {exc}") from exc
    if array.shape != (size,):
        raise ValueError(f"{kind} must have shape ({size},), got {array.shape}")
    return array


def check_storage_p(model: GridModel, p_mw) -> np.ndarray:
    """Storage setpoints as a float64 array of shape ``(n_storage,)``; ``ValueError`` naming
    the index of a non-finite value."""
    array = _as_float("storage_p", p_mw, model.n_storage)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"storage_p[{int(bad[0])}] is {array[bad[0]]}; setpoints must be finite")
    return array


@functools.lru_cache(maxsize=64)
def bus_bar_one(n: int) -> np.ndarray:
    """A read-only int32 array of ``n`` ones: every element on bus bar 1 (shared, cached)."""
    ones = np.ones(n, dtype=np.int32)
    ones.flags.writeable = False
    return ones


def check_topology(
    model: GridModel, load_bus, gen_bus, branch_or_bus, branch_ex_bus, storage_bus=None
) -> np.ndarray:
    """All bus assignments in one new int32 array (loads, gens, branch origins, extremities,
    storage units; ``storage_bus=None``: every unit on bus bar 1).

    ``ValueError`` naming the element kind and index on anything but 1, 2 or -1.
    """
    if storage_bus is None:
        storage_bus = bus_bar_one(model.n_storage)
    kinds = ("load_bus", "gen_bus", "branch_or_bus", "branch_ex_bus", "storage_bus")
    sizes = (model.n_load, model.n_gen, model.n_branch, model.n_branch, model.n_storage)
    arrays = [
        _as_array(kind, values, None, size)
        for kind, values, size in zip(
            kinds,
            (load_bus, gen_bus, branch_or_bus, branch_ex_bus, storage_bus),
            sizes,
            strict=True,
        )
    ]
    for kind, array in zip(kinds, arrays, strict=True):
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{kind} must be numeric, got dtype {array.dtype}")
    values = np.concatenate(arrays)
    if not ((values == 1) | (values == 2) | (values == -1)).all():
        for kind, array in zip(kinds, arrays, strict=True):
            bad = np.flatnonzero((array != 1) & (array != 2) & (array != -1))
            if bad.size:
                raise ValueError(
                    f"{kind}[{int(bad[0])}] is {array[bad[0]]}; allowed bus values are 1, 2 or -1"
                )
    return values.astype(np.int32)


def _as_array(kind: str, values, dtype, size: int) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{kind} must be a numeric array of shape ({size},): {exc}") from exc
    if array.shape != (size,):
        raise ValueError(f"{kind} must have shape ({size},), got {array.shape}")
    return array
