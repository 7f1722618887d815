"""The options of a reset (``RESET_OPTIONS``): their checks, and the initial state that
``init_state`` sets (``line_status`` and ``bus`` of the first state of an episode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from grid_vec.core.state import BatchState, disconnect
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel

# "state": a snapshot to restore (grid_vec.core.snapshot), given alone
RESET_OPTIONS = ("scenario_id", "fast_forward", "max_steps", "init_state", "maintenance", "state")
# an explicit maintenance schedule: at most this many steps (four weeks at 5 minutes: 8,064)
MAX_SCHEDULE_STEPS = 1_000_000


def check_options(options: Any) -> dict[str, Any]:
    """The reset options as a dict (None: none).

    Raises:
        TypeError, ValueError: not a dict, or an unknown option.
    """
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = sorted(set(options) - set(RESET_OPTIONS))
    if unknown:
        raise ValueError(f"unknown reset options {unknown}; allowed: {list(RESET_OPTIONS)}")
    if "state" in options and len(options) > 1:
        others = sorted(set(options) - {"state"})
        raise ValueError(
            f"reset option 'state' restores a snapshot whole: give it alone, not with {others}"
        )
    return options


def check_init_state(init: Any, model: GridModel, layout: TopologyLayout) -> dict[str, np.ndarray]:
    """``{"line_status": (n_branch,) bool, "bus": (n_elem,) topo vector of 1/2}``.

    Raises:
        TypeError, ValueError: not a dict, an unknown key, or a value of the wrong shape.
    """
    if not isinstance(init, dict):
        raise TypeError(f"init_state must be a dict, got {type(init).__name__}")
    unknown = sorted(set(init) - {"line_status", "bus"})
    if unknown:
        raise ValueError(f"unknown init_state keys {unknown}; allowed: ['line_status', 'bus']")
    checked = {}
    if "bus" in init:
        bus = np.asarray(init["bus"])
        if bus.shape != (layout.n_elem,) or not np.isin(bus, (1, 2)).all():
            raise ValueError(
                f"init_state['bus'] must be {layout.n_elem} values in {{1, 2}} "
                f"(topology-vector order), got shape {bus.shape}"
            )
        checked["bus"] = bus.astype(np.int8)
    if "line_status" in init:
        status = np.asarray(init["line_status"])
        if status.shape != (model.n_branch,) or status.dtype != bool:
            raise ValueError(
                f"init_state['line_status'] must be {model.n_branch} bools, got "
                f"{status.dtype} of shape {status.shape}"
            )
        checked["line_status"] = status
    return checked


def apply_init_state(
    state: BatchState, layout: TopologyLayout, row: int, init: dict[str, np.ndarray]
) -> None:
    """Set env ``row``'s bus bars and branch statuses to a checked ``init_state``."""
    if "bus" in init:
        bus = init["bus"]
        state.topo[row] = bus
        state.last_or[row] = bus[layout.pos_or]
        state.last_ex[row] = bus[layout.pos_ex]
    if "line_status" in init:
        mask = np.zeros_like(state.line_status)
        mask[row] = ~init["line_status"]
        disconnect(state, layout, mask)
    state.topo_dirty[row] = True


def check_maintenance(schedule: Any, model: GridModel) -> np.ndarray:
    """An explicit maintenance schedule: a ``(steps, n_branch)`` array of 0/1 (or bools), row
    ``t`` saying which lines are in maintenance at step ``t`` of the scenario (grid2op's
    ``maintenance.csv`` layout). It replaces the scenario's own maintenance (from its files,
    or drawn at random) for the episode: a schedule grid2op drew can be replayed this way.

    Raises:
        TypeError, ValueError: not an array of that shape, values other than 0/1, too long.
    """
    flags = np.asarray(schedule)
    if flags.ndim != 2 or flags.shape[1] != model.n_branch:
        raise ValueError(
            f"options['maintenance'] must be a (steps, {model.n_branch}) array (a column per "
            f"branch), got shape {flags.shape}"
        )
    if not 1 <= flags.shape[0] <= MAX_SCHEDULE_STEPS:
        raise ValueError(
            f"options['maintenance'] must have 1 to {MAX_SCHEDULE_STEPS} rows, got {flags.shape[0]}"
        )
    if flags.dtype != bool and (flags.dtype.kind not in "iuf" or not np.isin(flags, (0, 1)).all()):
        raise ValueError("options['maintenance'] must hold only 0 and 1 (or bools)")
    return flags.astype(bool)
