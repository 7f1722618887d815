"""Snapshots: one env's whole game state as plain arrays, and putting it back.

A :class:`GridSnapshot` holds everything that a step of an env reads and that changes while
its episode is played, so that an env restored from it (the env it was taken from, another
env of the same make arguments, or another row of a batch) plays, for the same actions,
bitwise what the original played from there on:

* one row of every :class:`~grid_vec.core.state.BatchState` array (topology, the bus bars
  to reconnect on, every counter and timer, the dispatch and storage rules' state, the last
  solve's flows);
* the scenario handler's place (:class:`~grid_vec.chronics.handler.EpisodeState`: which
  scenario, the step, the limits, the maintenance drawn, what the next reset plays);
* the opponent's row and its RNG's state (:class:`~grid_vec.core.rules.opponent.OpponentRow`);
* the backend's solver state (:meth:`~grid_vec.grid.backend.Backend.solver_state`: the
  power flow starts from the last solution, so without it the floats of a restored env
  would differ in their last digits);
* the generators' setpoints of the last step, the simulates spent, whether the episode is
  over, and the env's RNG (its resets draw from it: fast-forward, the opponent's seed).

What is derived from these is rebuilt on restore (the scenario's chunk and time features,
the step clock), and what is configuration (the grid, the rules, the rewards) is the env's:
a snapshot is restored into an env of the same make arguments. Counters of the env's
lifetime (``timings()``) are not part of the game and are left alone.

:meth:`GridSnapshot.to_arrays` gives it as a flat dict of numpy arrays (``np.savez`` stores
it, ``np.load(allow_pickle=False)`` reads it back), :meth:`GridSnapshot.from_arrays` builds
it again. This module holds the record, taking it (:func:`capture`) and putting it back
(:func:`hand_over_solvers`, :func:`put`); whether a snapshot is valid for an env, every
value in its domain, is :mod:`grid_vec.core.snapshot_checks`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

from grid_vec.chronics.handler import EpisodeState
from grid_vec.chronics.outages import Events
from grid_vec.core.game_state import GameRow
from grid_vec.core.rng_state import RngState
from grid_vec.core.rules.opponent import OpponentRow
from grid_vec.core.state import ROW_FIELDS, BatchState, push_topology
from grid_vec.core.topology import TopologyLayout
from grid_vec.grid.model import GridModel

# the arrays of a state row a snapshot holds (every array but the column views into
# ``timers`` and ``flows``)
STATE_FIELDS = ROW_FIELDS


@dataclass(frozen=True)
class GridSnapshot:
    """One env's game state (see the module docstring). Its arrays are its own: treat them
    as read-only (a restore copies them into the env).

    Attributes:
        grid: the grid's name (a snapshot is restored into an env of the same grid).
        state: one row of every :data:`STATE_FIELDS` array of the env's state, by name.
        scenario: the scenario handler's place.
        opponent: the opponent's row, None without an opponent.
        solver: the backend's solver state (warm start).
        setpoints: ``(n_gen,)`` the generators' setpoints of the last step (MW).
        done: the episode is over.
        simulates: simulates spent this step and this episode.
        rng: the env's RNG state, None when the snapshot was taken without it.
    """

    grid: str
    state: dict[str, np.ndarray]
    scenario: EpisodeState
    opponent: OpponentRow | None
    solver: np.ndarray
    setpoints: np.ndarray
    done: bool
    simulates: tuple[int, int]
    rng: RngState | None

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The snapshot as a flat dict of numpy arrays (no object array: ``np.savez``
        stores it and ``np.load(allow_pickle=False)`` reads it), keys such as
        ``"state.topo"`` or ``"scenario.step"``; a field that is None has no key."""
        out: dict[str, np.ndarray] = {
            "grid": np.array(self.grid),
            **{f"state.{name}": array for name, array in self.state.items()},
            "solver": self.solver,
            "setpoints": self.setpoints,
            "done": np.array(self.done),
            "simulates": np.array(self.simulates, dtype=np.int64),
        }
        _flatten(out, "scenario", self.scenario)
        if self.opponent is not None:
            _flatten(out, "opponent", self.opponent)
        if self.rng is not None:
            _flatten(out, "rng", self.rng)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> GridSnapshot:
        """The snapshot :meth:`to_arrays` gave (any mapping of its keys: a dict, or what
        ``np.load`` returns).

        Raises:
            ValueError: a key missing, unknown, or a value of the wrong kind (naming it).
        """
        reader = _Reader(arrays)
        state = {name: reader.array(f"state.{name}") for name in STATE_FIELDS}
        snapshot = cls(
            grid=reader.text("grid"),
            state=state,
            scenario=reader.record("scenario", EpisodeState),
            opponent=reader.record("opponent", OpponentRow, optional=True),
            solver=reader.array("solver"),
            setpoints=reader.array("setpoints"),
            done=reader.flag("done"),
            simulates=tuple(int(v) for v in reader.array("simulates", (2,), kinds="iu")),
            rng=reader.record("rng", RngState, optional=True),
        )
        reader.check_all_read()
        return snapshot


def capture(at: GameRow, rng: np.random.Generator | None = None) -> GridSnapshot:
    """The snapshot of a row of the game's state (:meth:`GameState.at
    <grid_vec.core.game_state.GameState.at>`), with its env's RNG when given; the env is
    left bitwise as it was (everything is copied or read)."""
    game, row = at
    steps = int(game.scenarios.steps[row])
    # a frozen dataclass's __init__ sets each field with object.__setattr__ (0.3 µs each):
    # the record's __dict__ is filled at once instead, every field given
    snapshot = object.__new__(GridSnapshot)
    snapshot.__dict__.update(
        grid=game.grid.solver.model.name,
        state=game.row_copy(row),
        scenario=game.scenarios.handler(row).episode_state(),
        opponent=None if game.opponent is None else game.opponent.row_state(row),
        solver=game.grid.solver.solver_state(row),
        setpoints=game.setpoints[row].copy(),
        done=bool(game.done[row]),
        simulates=game.simulates.used(row, steps),
        rng=None if rng is None else RngState.of(rng),
    )
    return snapshot


def hand_over_solvers(
    snapshots: Sequence[GridSnapshot], state: BatchState, rows: Sequence[int]
) -> None:
    """Give each of ``rows``' solver rows its checked snapshot's solver state
    (:func:`grid_vec.core.snapshot_checks.check`), before anything else of their envs
    changes: a solver state is the solver's to judge (check sees its shape, not what it
    holds), and the solver refuses one before it changes. When one is refused, the rows
    that took theirs are given back their own (a row's own solver state leaves its next
    solve as it was): then no env has changed. :func:`put` gives them again once their
    topologies are pushed.

    Raises:
        ValueError: a solver state the solver refuses (naming the field).
    """
    taken: list[tuple[int, np.ndarray]] = []
    solver = state.solver
    last = len(rows) - 1
    try:
        for i, (snapshot, row) in enumerate(zip(snapshots, rows, strict=True)):
            # the last row's own is never given back: none is refused after it
            own = solver.solver_state(row) if i < last else snapshot.solver
            solver.set_solver_state(row, snapshot.solver)
            taken.append((row, own))
    except ValueError as exc:
        for row, own in taken:
            solver.set_solver_state(row, own)
        raise ValueError(f"snapshot field 'solver': {exc}") from None


def put(
    snapshot: GridSnapshot,
    at: GameRow,
    model: GridModel,
    layout: TopologyLayout,
    rng: np.random.Generator | None,
) -> None:
    """Put a checked ``snapshot`` (:func:`grid_vec.core.snapshot_checks.check`) whose solver
    state its solver row took (:func:`hand_over_solvers`) back into a row of the game's
    state: the grid's row, the scenario handler's place, the opponent's row, the setpoints,
    the episode's flags and the simulates spent, the env's RNG (when both are given) and
    the solver's row. The caller then moves the restored rows' scenario clocks to their
    handlers' places (:meth:`ScenarioRows.follow
    <grid_vec.core.scenario_rows.ScenarioRows.follow>`, all rows at once). Nothing here
    refuses: what could was checked before."""
    game, row = at
    state, handler, opponent = game.grid, game.scenarios.handlers[row], game.opponent
    handler.restore_episode(snapshot.scenario)
    for name in STATE_FIELDS:
        getattr(state, name)[row] = snapshot.state[name]
    if opponent is not None:
        opponent.restore_row(row, snapshot.opponent)
    if rng is not None and snapshot.rng is not None:
        snapshot.rng.put(rng)
    if not snapshot.state["topo_dirty"]:
        # the snapshot's solver row had its topology: this one gets it now (its solver state,
        # set below, is of that topology; a push later would start from the base case)
        state.topo_dirty[row] = True
        push_topology(state, model, layout, np.array([row], dtype=np.intp))
    # again after the push, which may have started the solver from the base case
    state.solver.set_solver_state(row, snapshot.solver)
    game.setpoints[row] = snapshot.setpoints
    game.done[row] = snapshot.done
    game.started[row] = True
    game.simulates.set_used(row, snapshot.simulates, game.scenarios.steps[row])


def _flatten(out: dict[str, np.ndarray], prefix: str, record: NamedTuple) -> None:
    """The fields of a record (nested records too) as ``prefix.field`` arrays; None left
    out; an RNG state as its name and words."""
    if isinstance(record, RngState):
        out[f"{prefix}.bit_generator"] = np.array(record.bit_generator)
        out[f"{prefix}.words"] = record.words
        return
    for name, value in record._asdict().items():
        key = f"{prefix}.{name}"
        if value is None:
            continue
        if isinstance(value, Events):
            for f in fields(value):
                out[f"{key}.{f.name}"] = getattr(value, f.name)
        elif isinstance(value, RngState):
            _flatten(out, key, value)
        else:
            out[key] = value if isinstance(value, np.ndarray) else np.array(value)


# the records nested in a snapshot's records, by (record, field)
_NESTED: dict[tuple[type, str], type] = {
    (EpisodeState, "maintenance"): Events,
    (OpponentRow, "rng"): RngState,
}


class _Reader:
    """Reads the arrays of :meth:`GridSnapshot.to_arrays` back, each key once."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        if not isinstance(arrays, Mapping) and not hasattr(arrays, "files"):
            raise ValueError(f"snapshot arrays must be a mapping, got {type(arrays).__name__}")
        self.arrays = arrays
        self.keys = set(arrays.keys())
        self.read: set[str] = set()

    def array(self, key: str, shape: tuple | None = None, kinds: str | None = None) -> np.ndarray:
        """The array of ``key``, of ``shape`` and of one of the dtype ``kinds`` when given
        (the values read into Python numbers: ``int()`` would truncate a float quietly)."""
        if key not in self.keys:
            raise ValueError(f"snapshot arrays: key {key!r} missing")
        self.read.add(key)
        value = np.asarray(self.arrays[key])
        if value.dtype == object:
            raise ValueError(f"snapshot arrays: key {key!r} holds objects")
        if shape is not None and value.shape != shape:
            raise ValueError(f"snapshot arrays: key {key!r} must be of shape {shape}")
        if kinds is not None and value.dtype.kind not in kinds:
            raise ValueError(
                f"snapshot arrays: key {key!r} must be of kind {kinds!r}, got {value.dtype}"
            )
        return value

    def scalar(self, key: str, kinds: str) -> Any:
        return self.array(key, (), kinds).item()

    def text(self, key: str) -> str:
        return str(self.scalar(key, "U"))

    def flag(self, key: str) -> bool:
        return bool(self.scalar(key, "b"))

    def record(self, prefix: str, cls: type, *, optional: bool = False) -> Any:
        """A record's fields under ``prefix.``; None when none is there and ``optional``."""
        if optional and not any(k.startswith(prefix + ".") for k in self.keys):
            return None
        if cls is RngState:
            return RngState.from_words(
                self.text(f"{prefix}.bit_generator"), self.array(f"{prefix}.words")
            )
        if cls is Events:
            return Events(*(self.array(f"{prefix}.{f.name}") for f in fields(Events)))
        values = {}
        for name, kind in cls.__annotations__.items():  # ForwardRefs of strings (PEP 563)
            key = f"{prefix}.{name}"
            nested = _NESTED.get((cls, name))
            if nested is not None:
                values[name] = self.record(key, nested, optional="None" in str(kind))
            elif key not in self.keys:
                if "None" in str(kind):
                    values[name] = None
                elif name not in cls._field_defaults:
                    raise ValueError(f"snapshot arrays: key {key!r} missing")
            else:
                value = self.array(key)
                values[name] = value if value.ndim else value.item()
        return cls(**values)

    def check_all_read(self) -> None:
        unknown = sorted(self.keys - self.read)
        if unknown:
            raise ValueError(f"snapshot arrays: unknown keys {unknown}")
