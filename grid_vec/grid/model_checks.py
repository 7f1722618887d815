"""The values a :class:`~grid_vec.grid.model.GridModel` can have, checked for a model that was
not compiled in this process (read back from the disk cache of compiled grids).

A compiled model inherits the checks its source went through (a dataset's ``grid.json`` is
checked by :mod:`grid_vec.chronics.grid_values` before it is compiled); a model read from a
file has to be checked again, on the compiled arrays themselves: sizes that agree, element
maps that point at substations, and the numbers no real grid has (a NaN, a zero or negative
thermal limit or nominal voltage, a NaN or inverted generator limit), which would otherwise
surface as NaN observations or a failure deep in an episode.
"""

from __future__ import annotations

import numpy as np

from grid_vec.grid.model import GridModel

# every array field has the length of the names of its element kind
_SIZED_BY = {
    "sub_names": ("sub_vn_kv",),
    "branch_names": ("branch_or_sub", "branch_ex_sub", "thermal_limit_a"),
    "load_names": ("load_sub", "load_p0", "load_q0"),
    "gen_names": ("gen_sub", "gen_kind", "gen_p0", "gen_v0", "gen_pmin", "gen_pmax"),
    "storage_names": ("storage_sub", "storage_p0"),
}
_SUBSTATION_INDICES = ("branch_or_sub", "branch_ex_sub", "load_sub", "gen_sub", "storage_sub")
# field -> the rule its values follow besides being finite
_RULES = {
    "sub_vn_kv": "> 0",
    "thermal_limit_a": "> 0",
    "load_p0": "finite",
    "load_q0": "finite",
    "gen_p0": "finite",
    "gen_v0": "> 0",
    "storage_p0": "finite",
}
_GEN_KINDS = ("gen", "sgen", "slack")


def check_model_values(model: GridModel, where: str) -> None:
    """Raise ``ValueError`` naming ``where``, the field and the index of the first value a
    compiled grid cannot have.

    Generator limits may be infinite (compiling gives ``-inf``/``inf`` where the net states
    none) but not NaN, and ``gen_pmin <= gen_pmax``.

    Args:
        model: the model to check.
        where: what the model was read from (a file), for the message.

    Raises:
        ValueError: sizes that disagree, an element on no substation, ``n_line`` beyond the
            branches, an unknown generator kind, or a value breaking its rule.
    """
    for names, sized in _SIZED_BY.items():
        n = len(getattr(model, names))
        for field in sized:
            if len(getattr(model, field)) != n:
                raise ValueError(f"{where}: field {field} does not have the {n} rows of {names}")
    for field in _SUBSTATION_INDICES:
        ok = (getattr(model, field) >= 0) & (getattr(model, field) < model.n_sub)
        _refuse(where, field, getattr(model, field), ok, f"a substation index < {model.n_sub}")
    if not 0 <= model.n_line <= model.n_branch:
        raise ValueError(f"{where}: n_line {model.n_line} exceeds the {model.n_branch} branches")
    kinds = model.gen_kind
    _refuse(where, "gen_kind", kinds, np.isin(kinds, _GEN_KINDS), " or ".join(_GEN_KINDS))
    for field, rule in _RULES.items():
        values = getattr(model, field)
        ok = np.isfinite(values) & ((values > 0) if rule == "> 0" else True)
        _refuse(where, field, values, ok, "finite" if rule == "finite" else f"finite and {rule}")
    pmin, pmax = model.gen_pmin, model.gen_pmax
    _refuse(where, "gen_pmin", pmin, pmin < np.inf, "a number < inf")  # NaN fails too
    _refuse(where, "gen_pmax", pmax, (pmax > -np.inf) & (pmax >= pmin), "> -inf and >= gen_pmin")


def _refuse(where: str, field: str, values: np.ndarray, ok: np.ndarray, rule: str) -> None:
    """ValueError naming the first value of ``field`` where ``ok`` is False."""
    bad = np.flatnonzero(~np.asarray(ok, dtype=bool))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{where}: {field}[{i}] is {values[i].item()!r}, must be {rule}")
