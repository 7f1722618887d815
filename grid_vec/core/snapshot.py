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
it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

from grid_vec.chronics.handler import EpisodeState, ScenarioHandler
from grid_vec.chronics.outages import Events
from grid_vec.chronics.scenario import ScenarioInfo
from grid_vec.core.parameters import Parameters
from grid_vec.core.rng_state import RngState
from grid_vec.core.rules.opponent import OpponentBatch, OpponentRow
from grid_vec.core.state import BatchState, push_topology
from grid_vec.core.topology import TopologyLayout, unsolvable
from grid_vec.grid.compile import N_BUSBAR
from grid_vec.grid.model import GridModel

# every array of a BatchState row but the column views into ``timers`` and ``flows``
STATE_FIELDS = (
    "topo", "last_or", "last_ex", "line_status", "timers", "target_dispatch",
    "actual_dispatch", "already_redispatched", "gen_p_redisp", "gen_p_before_curtail",
    "curtail_limit", "curtail_limit_prev", "curtailment_mw", "dispatching", "storage_charge",
    "storage_charge_prev", "storage_target", "storage_power", "storage_power_prev",
    "storage_amount", "flows", "topo_dirty",
)  # fmt: skip


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


class StateRows:
    """Each row's views into a batch's state arrays, made on a row's first snapshot: a
    snapshot then copies them (``ndarray.copy`` of each) without indexing every array again;
    the arrays of no element (no storage unit) are one shared empty array each.

    Args:
        state: the batch's state (its arrays are never replaced: views stay valid).
    """

    def __init__(self, state: BatchState) -> None:
        self.state = state
        self._rows: dict[int, tuple[tuple[str, ...], tuple[np.ndarray, ...]]] = {}
        self._empty: dict[str, np.ndarray] = {}
        for name in STATE_FIELDS:
            array = getattr(state, name)
            if array[0, ...].size == 0:
                empty = np.empty(array.shape[1:], dtype=array.dtype)
                empty.flags.writeable = False
                self._empty[name] = empty

    def copy(self, row: int) -> dict[str, np.ndarray]:
        """A copy of every :data:`STATE_FIELDS` array's row ``row``, by name."""
        views = self._rows.get(row)
        if views is None:
            names = tuple(name for name in STATE_FIELDS if name not in self._empty)
            arrays = tuple(getattr(self.state, name)[row, ...] for name in names)
            views = self._rows[row] = (names, arrays)
        names, arrays = views
        copied = dict(zip(names, map(_copy, arrays), strict=True))
        if self._empty:
            copied.update(self._empty)
        return copied


_copy = np.ndarray.copy  # the method itself: a map over views without an attribute lookup


def capture(
    rows: StateRows,
    row: int,
    model: GridModel,
    handler: ScenarioHandler,
    opponent: OpponentBatch | None,
    setpoints: np.ndarray,
    done: bool,
    simulates: tuple[int, int],
    rng: np.random.Generator | None,
) -> GridSnapshot:
    """The snapshot of env ``row`` of a batch (its parts given by the batch); the env is
    left bitwise as it was (everything is copied or read)."""
    # a frozen dataclass's __init__ sets each field with object.__setattr__ (0.3 µs each):
    # the record's __dict__ is filled at once instead, every field given
    snapshot = object.__new__(GridSnapshot)
    snapshot.__dict__.update(
        grid=model.name,
        state=rows.copy(row),
        scenario=handler.episode_state(),
        opponent=None if opponent is None else opponent.row_state(row),
        solver=rows.state.backends[row].solver_state(),
        setpoints=setpoints.copy(),  # a view of the scenario's rows, or of a dispatch's
        done=done,
        simulates=simulates,
        rng=None if rng is None else RngState.of(rng),
    )
    return snapshot


def check(
    snapshot: Any,
    state: BatchState,
    row: int,
    model: GridModel,
    layout: TopologyLayout,
    handler: ScenarioHandler,
    opponent: OpponentBatch | None,
    parameters: Parameters,
    rng: np.random.Generator | None,
) -> None:
    """Whether ``snapshot`` can be restored into env ``row`` of a batch, checked whole before
    anything of the env changes: a snapshot may come from a file (:meth:`GridSnapshot.
    from_arrays`), so every value is checked in its domain, what the game itself can produce
    and nothing else (a tampered snapshot would otherwise be put in part, or played from a
    state no game reaches: NaN flows, negative timers, bus bars the grid does not have).

    Args:
        snapshot: what to restore.
        state: the batch's state.
        row: the env to restore.
        model: the batch's grid.
        layout: ``model``'s topology layout.
        handler: the env's scenario handler.
        opponent: the batch's opponent, None without one.
        parameters: the batch's rules (the cooldowns' and the simulates' maxima).
        rng: the env's RNG the snapshot's is put into, None when it is not put.

    Raises:
        TypeError: not a GridSnapshot.
        ValueError: a snapshot of another grid or configuration, or a value outside its
            domain: the message names the first field that does not fit and its value.
    """
    if not isinstance(snapshot, GridSnapshot):
        raise TypeError(f"a snapshot must be a GridSnapshot, got {type(snapshot).__name__}")
    if snapshot.grid != model.name:
        raise ValueError(
            f"snapshot field 'grid': a snapshot of grid {snapshot.grid!r} cannot be restored "
            f"into an env of grid {model.name!r}"
        )
    if not isinstance(snapshot.state, dict):
        raise ValueError(
            f"snapshot field 'state': expected a dict, got {type(snapshot.state).__name__}"
        )
    if set(snapshot.state) != set(STATE_FIELDS):
        wrong = sorted(set(snapshot.state) ^ set(STATE_FIELDS))
        raise ValueError(f"snapshot field 'state': keys {wrong} missing or unknown")
    floats: list[str] = []  # the state row's float and bool arrays, checked below
    bools: list[str] = []
    for name in STATE_FIELDS:
        array = snapshot.state[name]
        _fits(f"state.{name}", array, getattr(state, name)[row, ...])
        kind = array.dtype.kind
        if kind == "f":
            floats.append(name)
        elif kind == "b":
            bools.append(name)
    _fits("solver", snapshot.solver, state.backends[row].solver_state())
    _fits("setpoints", snapshot.setpoints, np.zeros(model.n_gen))
    if (opponent is None) != (snapshot.opponent is None):
        raise ValueError(
            "snapshot field 'opponent': "
            + ("the env has no opponent" if opponent is None else "the env has an opponent")
            + (", the snapshot's has one" if opponent is None else ", the snapshot has none")
        )
    done = _flag("done", snapshot.done)
    info = _check_scenario(snapshot.scenario, handler, model)
    played = snapshot.scenario.steps_played
    _check_numbers(snapshot.state, floats, bools, state.slices)
    _check_state(
        snapshot.state,
        done,
        info,
        played,
        model,
        layout,
        parameters,
        handler.outages,
        opponent,
    )
    setpoints = snapshot.setpoints
    _refuse("setpoints", setpoints, ~np.isfinite(setpoints), "is not finite", model.gen_names)
    # NaN may be a backend's own (pandapower's voltages of an unsupplied bus): the rest of the
    # solver state's domain is its backend's, which judges it first (hand_over_solvers)
    _refuse("solver", snapshot.solver, np.isinf(snapshot.solver), "is not finite")
    _check_simulates(snapshot.simulates, parameters)
    if opponent is not None:
        _check_opponent(snapshot.opponent, opponent, info)
    if snapshot.rng is not None:
        _check_rng("rng", snapshot.rng, None if rng is None else type(rng.bit_generator).__name__)


def hand_over_solvers(
    snapshots: Sequence[GridSnapshot], state: BatchState, rows: Sequence[int]
) -> None:
    """Give each of ``rows``' backends its :func:`check`-ed snapshot's solver state, before
    anything else of their envs changes: a solver state is its backend's to judge (check sees
    its shape, not what it holds), and a backend refuses one before it changes. When one is
    refused, the backends that took theirs are given back their own (a backend's own solver
    state leaves its next solve as it was): then no env has changed. :func:`put` gives them
    again once their topologies are pushed.

    Raises:
        ValueError: a solver state a backend refuses (naming the field).
    """
    taken: list[tuple[Any, np.ndarray]] = []
    last = len(rows) - 1
    try:
        for i, (snapshot, row) in enumerate(zip(snapshots, rows, strict=True)):
            backend = state.backends[row]
            # the last backend's own is never given back: none is refused after it
            own = backend.solver_state() if i < last else snapshot.solver
            backend.set_solver_state(snapshot.solver)
            taken.append((backend, own))
    except ValueError as exc:
        for backend, own in taken:
            backend.set_solver_state(own)
        raise ValueError(f"snapshot field 'solver': {exc}") from None


def put(
    snapshot: GridSnapshot,
    state: BatchState,
    row: int,
    model: GridModel,
    layout: TopologyLayout,
    handler: ScenarioHandler,
    opponent: OpponentBatch | None,
    rng: np.random.Generator | None,
) -> None:
    """Restore env ``row`` of a batch from a :func:`check`-ed ``snapshot`` whose solver state
    its backend took (:func:`hand_over_solvers`): its state row, its handler, its opponent,
    its RNG (when both are given) and its backend. Nothing here refuses: what could was
    checked before."""
    handler.restore_episode(snapshot.scenario)
    for name in STATE_FIELDS:
        getattr(state, name)[row] = snapshot.state[name]
    if opponent is not None:
        opponent.restore_row(row, snapshot.opponent)
    if rng is not None and snapshot.rng is not None:
        snapshot.rng.put(rng)
    if not snapshot.state["topo_dirty"]:
        # the snapshot's backend had its topology: this one gets it now (its solver state,
        # set below, is of that topology; a push later would start from the base case)
        state.topo_dirty[row] = True
        push_topology(state, model, layout, np.array([row], dtype=np.intp))
    # again after the push, which may have started the solver from the base case
    state.backends[row].set_solver_state(snapshot.solver)


def _fits(name: str, given: Any, expected: np.ndarray) -> None:
    if not isinstance(given, np.ndarray):
        raise ValueError(f"snapshot field {name!r}: expected an array, got {type(given).__name__}")
    if given.shape != expected.shape or given.dtype != expected.dtype:
        raise ValueError(
            f"snapshot field {name!r}: this env's is {expected.dtype} of shape "
            f"{expected.shape}, the snapshot's {given.dtype} of shape {given.shape} (a "
            "snapshot of another grid or configuration?)"
        )


# what the rules of the game can produce, the checks of check() below

# OpponentBatch.next_time when no countdown runs (the opponent module's own marker)
_NO_COUNTDOWN = int(np.iinfo(np.int64).min)
_U128 = (1 << 128) - 1  # a PCG64's state and increment are 128-bit numbers


def _refuse(
    name: str,
    array: np.ndarray,
    bad: np.ndarray,
    what: str,
    labels: Callable[[int], str] | np.ndarray | None = None,
) -> None:
    """Raise naming field ``name`` and the first value of ``array`` where ``bad`` holds (with
    its label, or its index), unless ``bad`` holds nowhere."""
    flat = np.asarray(bad).reshape(-1)
    if not flat.any():
        return
    i = int(np.argmax(flat))
    value = np.asarray(array).reshape(-1)[i].item()
    where = ""
    if labels is not None:
        where = f" at {labels(i) if callable(labels) else labels[i]}"
    elif np.ndim(array):
        where = f" at index {i}"
    raise ValueError(f"snapshot field {name!r}: {value!r}{where} {what}")


def _int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value``, an int (not a bool: an int array's item, or a Python int) in ``[low,
    high]`` (no upper bound: None)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(
            f"snapshot field {name!r}: expected an int, got {value!r} ({type(value).__name__})"
        )
    if value < low or (high is not None and value > high):
        raise ValueError(
            f"snapshot field {name!r}: {value!r} is outside [{low}, "
            f"{'...' if high is None else high}]"
        )
    return int(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(
            f"snapshot field {name!r}: expected a bool, got {value!r} ({type(value).__name__})"
        )
    return bool(value)


def _check_numbers(
    arrays: dict[str, np.ndarray],
    floats: list[str],
    bools: list[str],
    slices: dict[str, slice] | None,
) -> None:
    """The state row's bool arrays (``bools``) hold only 0 and 1 bytes (numpy reads any byte
    as a bool: a file's 2 is True to some operations and not to others), its float arrays
    (``floats``) only finite numbers. One pass over all the floats and one over all the
    bools (a pass per field costs more than the values it reads); the field at fault is
    looked for after."""
    if not np.isfinite(np.concatenate([arrays[name].ravel() for name in floats])).all():
        for name in floats:
            array = arrays[name]
            labels = None
            if name == "flows" and slices:

                def labels(i: int, cuts: dict[str, slice] = slices) -> str:
                    field = next(k for k, cut in cuts.items() if cut.start <= i < cut.stop)
                    return f"{field}[{i - cuts[field].start}]"

            _refuse(f"state.{name}", array, ~np.isfinite(array), "is not finite", labels)
    if np.concatenate([arrays[name].ravel() for name in bools]).view(np.uint8).max() > 1:
        for name in bools:
            raw = arrays[name].view(np.uint8)
            _refuse(f"state.{name}", raw, raw > 1, "is not a bool (0 or 1)")


# by an int8 bus bar's byte (-1: 255): a value of the topology vector (a bus bar of the
# substation, or -1: disconnected), and a bus bar
_TOPO_VALUE = np.zeros(256, dtype=bool)
_TOPO_VALUE[[*range(1, N_BUSBAR + 1), 255]] = True
_BUS_BAR = np.zeros(256, dtype=bool)
_BUS_BAR[1 : N_BUSBAR + 1] = True


def _check_state(
    arrays: dict[str, np.ndarray],
    done: bool,
    info: ScenarioInfo,
    played: int,
    model: GridModel,
    layout: TopologyLayout,
    parameters: Parameters,
    outages: bool,
    opponent: OpponentBatch | None,
) -> None:
    """The state row's values (their shapes and dtypes already checked, its numbers too):
    bus bars, branch ends consistent with the branch statuses, timers."""
    topo = arrays["topo"]
    labels = layout.elem_label
    byte = topo.view(np.uint8)
    if not _TOPO_VALUE[byte].all():
        _refuse(
            "state.topo",
            topo,
            ~_TOPO_VALUE[byte],
            f"is not a bus bar of its substation (1 to {N_BUSBAR}) nor -1 (disconnected)",
            labels,
        )
    for name in ("last_or", "last_ex"):  # a branch goes back on a bus bar, never on -1
        last = arrays[name]
        if not _BUS_BAR[last.view(np.uint8)].all():
            _refuse(
                f"state.{name}",
                last,
                ~_BUS_BAR[last.view(np.uint8)],
                f"is not a bus bar of its substation (1 to {N_BUSBAR})",
                model.branch_names,
            )
    status = arrays["line_status"]
    on = _BUS_BAR[byte]
    # the game keeps a branch whole: connected with both ends on a bus bar, or both ends off
    whole = (on[layout.pos_or] == status) & (on[layout.pos_ex] == status)
    if not whole.all():
        b = int(np.argmin(whole))
        raise ValueError(
            f"snapshot field 'state.topo': branch {model.branch_names[b]} has its ends on "
            f"({topo[layout.pos_or[b]]}, {topo[layout.pos_ex[b]]}) while state.line_status "
            f"says it is {'connected' if status[b] else 'disconnected'} (a connected branch "
            "has both ends on a bus bar, a disconnected one both at -1)"
        )
    # a load or generator cut off (-1) ends the episode (set_bus's rules)
    if not done and not (on[layout.pos_load].all() and on[layout.pos_gen].all()):
        injections = np.concatenate([layout.pos_load, layout.pos_gen])
        _refuse(
            "state.topo",
            topo[injections],
            ~on[injections],
            "is disconnected (-1) in an episode not over (done is False): cutting a load "
            "or generator off ends the game",
            labels[injections],
        )
    if not (done and arrays["topo_dirty"]):
        # the game ends the episode of a topology it cannot solve, and leaves it unpushed
        reason = unsolvable(model, layout, topo[None])[0]
        if reason is not None:
            raise ValueError(
                f"snapshot field 'state.topo': a topology that cannot be solved ({reason}) "
                f"with done {done} and topo_dirty {bool(arrays['topo_dirty'])}: the game ends "
                "such an episode and leaves its topology unpushed"
            )
    _check_timers(arrays["timers"], info, played, model, parameters, outages, opponent)


def _check_timers(
    timers: np.ndarray,
    info: ScenarioInfo,
    played: int,
    model: GridModel,
    parameters: Parameters,
    outages: bool,
    opponent: OpponentBatch | None,
) -> None:
    """Each counter and timer within what the rules set: the counters of consecutive steps
    count at most the steps played (a reset zeroes them), a branch's cooldown is at most
    the longest the rules give (a trip's, an action's, an attack's, an outage's: the
    scenario's length), a substation's at most an action's."""
    if not timers.any():  # the usual state: nothing runs (one row: one check)
        return
    p = parameters
    longest = [p.nb_timestep_reconnection, p.nb_timestep_cooldown_line]
    if opponent is not None:
        longest.append(opponent.config.attack_duration)
    if outages:
        longest.append(info.length)
    n_b, n_s = model.n_branch, model.n_sub
    parts = (
        ("timestep_overflow", n_b, played, model.branch_names),
        ("cooldown_line", n_b, max(longest), model.branch_names),
        ("cooldown_sub", n_s, p.nb_timestep_cooldown_sub, model.sub_names),
        ("protection_counter", n_b, played, model.branch_names),
    )
    starts = np.cumsum([0, n_b, n_b, n_s])
    highest = np.maximum.reduceat(timers, starts).tolist()
    if timers.min() >= 0 and all(h <= part[2] for h, part in zip(highest, parts, strict=True)):
        return
    for start, (part, size, most, names) in zip(starts.tolist(), parts, strict=True):
        values = timers[start : start + size]
        _refuse(
            "state.timers",
            values,
            (values < 0) | (values > most),
            f"({part}) is outside [0, {most}]",
            np.char.add(f"{part} of ", names.astype(str)),
        )


def _check_scenario(scenario: Any, handler: ScenarioHandler, model: GridModel) -> ScenarioInfo:
    """The scenario handler's place, within the scenario and the handler's order (before the
    handler takes any of it); the scenario's info."""
    if not isinstance(scenario, EpisodeState):
        raise ValueError(
            f"snapshot field 'scenario': expected an EpisodeState, got {type(scenario).__name__}"
        )
    scenario_id = _int("scenario.scenario_id", scenario.scenario_id, 0)
    try:
        info = handler.source.info(scenario_id)
    except ValueError as exc:
        raise ValueError(f"snapshot field 'scenario.scenario_id': {exc}") from None
    last = info.length - 1
    step = _int("scenario.step", scenario.step, 0, last)
    _int("scenario.chunk_start", scenario.chunk_start, 0, step)
    # a reset fast-forwards to step - steps_played (>= 0), and caps the episode there
    played = _int("scenario.steps_played", scenario.steps_played, 0, step)
    _int("scenario.max_steps", scenario.max_steps, played, last - (step - played))
    explicit = _flag("scenario.explicit", scenario.explicit)
    _check_events(scenario.maintenance, info, model, explicit, handler.outages)
    if scenario.seed is not None:
        _int("scenario.seed", scenario.seed, 0)
    _int("scenario.cursor", scenario.cursor, 0, len(handler.order) - 1)
    if scenario.pending_id is not None:
        pending = _int("scenario.pending_id", scenario.pending_id, 0)
        try:
            handler.source.info(pending)
        except ValueError as exc:
            raise ValueError(f"snapshot field 'scenario.pending_id': {exc}") from None
    return info


def _check_events(
    events: Any, info: ScenarioInfo, model: GridModel, explicit: bool, outages: bool
) -> None:
    """The episode's maintenance: runs of the grid's branches within the scenario, sorted by
    branch then start, runs of one branch apart (what :func:`~grid_vec.chronics.outages.
    events_of` gives); there when it was given to the reset, never without outages."""
    name = "scenario.maintenance"
    if events is None:
        if explicit:
            raise ValueError(f"snapshot field {name!r}: none, while scenario.explicit is True")
        return
    if not isinstance(events, Events):
        raise ValueError(f"snapshot field {name!r}: expected Events, got {type(events).__name__}")
    if not outages:
        raise ValueError(f"snapshot field {name!r}: this env plays no outages")
    runs = np.shape(events.line)
    for f in fields(Events):
        array = getattr(events, f.name)
        if not (
            isinstance(array, np.ndarray)
            and array.dtype == np.int64
            and array.ndim == 1
            and array.shape == runs
        ):
            raise ValueError(
                f"snapshot field '{name}.{f.name}': expected int64 of one 1-D shape, got "
                f"{getattr(array, 'dtype', type(array).__name__)} of shape {np.shape(array)}"
            )
    line, start, stop = events.line, events.start, events.stop
    _refuse(
        f"{name}.line",
        line,
        (line < 0) | (line >= model.n_branch),
        f"is not a branch (0 to {model.n_branch - 1})",
    )
    _refuse(
        f"{name}.start",
        start,
        (start < 0) | (start >= info.length),
        f"is not a step of the scenario (0 to {info.length - 1})",
    )
    _refuse(
        f"{name}.stop",
        stop,
        (stop <= start) | (stop > info.length),
        f"does not end a run after its start, by the scenario's end ({info.length})",
    )
    same = line[1:] == line[:-1]
    _refuse(f"{name}.line", line[1:], line[1:] < line[:-1], "is not sorted")
    _refuse(
        f"{name}.start",
        start[1:],
        same & (start[1:] < stop[:-1]),
        "overlaps the branch's run before it",
    )


def _check_simulates(simulates: Any, parameters: Parameters) -> None:
    """``(this step, this episode)``: counts, this step's within this episode's, each within
    its limit (negative: none)."""
    if not isinstance(simulates, tuple) or len(simulates) != 2:
        raise ValueError(f"snapshot field 'simulates': expected 2 ints, got {simulates!r}")
    p = parameters
    per_episode = p.max_simulate_per_episode if p.max_simulate_per_episode >= 0 else None
    episode = _int("simulates", simulates[1], 0, per_episode)
    per_step = episode if p.max_simulate_per_step < 0 else min(episode, p.max_simulate_per_step)
    _int("simulates", simulates[0], 0, per_step)


def _check_opponent(row: Any, opponent: OpponentBatch, info: ScenarioInfo) -> None:
    """The opponent's row within its rules (:mod:`grid_vec.core.rules.opponent`): a budget
    it can have, an attack on one of its targets for at most its attack duration, a cooldown
    counter of at most twice its cooldown, a countdown within the scenario, a schedule
    exactly when it draws one."""
    if not isinstance(row, OpponentRow):
        raise ValueError(
            f"snapshot field 'opponent': expected an OpponentRow, got {type(row).__name__}"
        )
    c = opponent.config
    if isinstance(row.budget, (bool, np.bool_)) or not isinstance(row.budget, (float, np.floating)):
        raise ValueError(f"snapshot field 'opponent.budget': expected a float, got {row.budget!r}")
    # an attack starts only when the budget pays its whole duration: 0 at the least, give or
    # take the rounding of the sums
    if not (np.isfinite(row.budget) and row.budget >= -1e-9 * c.attack_cost * c.attack_duration):
        raise ValueError(f"snapshot field 'opponent.budget': {row.budget!r} is not a budget (>= 0)")
    targets = c.targets.tolist()
    attacked = _int("opponent.attacked", row.attacked, -1)
    if attacked >= 0 and attacked not in targets:
        raise ValueError(
            f"snapshot field 'opponent.attacked': {attacked} is not one of the opponent's "
            f"targets {targets} (nor -1: none)"
        )
    remaining = _int("opponent.remaining", row.remaining, 0, c.attack_duration)
    if (attacked >= 0) != (remaining > 0):
        raise ValueError(
            f"snapshot field 'opponent.remaining': {remaining} with opponent.attacked "
            f"{attacked} (an attack runs exactly while steps of it remain)"
        )
    _int("opponent.cooldown", row.cooldown, 0, 2 * c.attack_cooldown)
    _flag("opponent.previous_fails", row.previous_fails)
    countdown = row.next_time
    if not (isinstance(countdown, (int, np.integer)) and countdown == _NO_COUNTDOWN):
        # a countdown starts within a wait (and the attack before it) drawn in the scenario,
        # and drops by one a step
        most = 2 * info.length + getattr(c, "attack_period", 0)
        _int("opponent.next_time", countdown, -info.length, most)
    _check_rng("opponent.rng", row.rng, "PCG64")  # restore_row's generator is a PCG64
    scheduled = opponent.extra is not None
    if scheduled != (row.waits is not None) or scheduled != (row.durations is not None):
        raise ValueError(
            f"snapshot field 'opponent.waits': this env's {type(c).__name__} "
            f"{'draws' if scheduled else 'has no'} attack schedule"
        )
    if scheduled:
        n = np.shape(row.waits)[0] if np.ndim(row.waits) == 1 else -1
        for name in ("waits", "durations"):
            array = getattr(row, name)
            if not (
                isinstance(array, np.ndarray)
                and array.dtype == np.int64
                and array.ndim == 1
                and len(array) == n
                and n <= info.length
            ):
                raise ValueError(
                    f"snapshot field 'opponent.{name}': expected int64 of one shape (at most "
                    f"{info.length} attacks), got {getattr(array, 'dtype', type(array).__name__)}"
                    f" of shape {np.shape(array)}"
                )
            _refuse(f"opponent.{name}", array, array < 1, "is not a number of steps (>= 1)")
        _int("opponent.counter", row.counter, 0, n)


def _check_rng(name: str, state: Any, kind: str | None) -> None:
    """An RNG state numpy's generator ``kind`` (None: any) takes as its own (a state and an
    odd increment of 128 bits, a buffered 32-bit draw or none)."""
    if not isinstance(state, RngState):
        raise ValueError(f"snapshot field {name!r}: expected an RngState, got {state!r}")
    if kind is not None and state.bit_generator != kind:
        raise ValueError(
            f"snapshot field '{name}.bit_generator': {state.bit_generator!r} for this env's {kind}"
        )
    _int(f"{name}.state", state.state, 0, _U128)
    if _int(f"{name}.inc", state.inc, 0, _U128) % 2 == 0:
        raise ValueError(f"snapshot field '{name}.inc': {state.inc} is even (a PCG64's is odd)")
    _int(f"{name}.has_uint32", state.has_uint32, 0, 1)
    _int(f"{name}.uinteger", state.uinteger, 0, (1 << 32) - 1)


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
