"""Snapshot checks: whether a snapshot is valid for an env, every value in its domain.

A :class:`~grid_vec.core.snapshot.GridSnapshot` may come from a file
(:meth:`~grid_vec.core.snapshot.GridSnapshot.from_arrays`): :func:`check` checks it whole
against the env it is to be restored into (its grid, its configuration, its rules, its
scenario handler and opponent) before anything of the env changes, each field's shape and
dtype and each value in what the game itself can produce and nothing else (bus bars,
branch statuses against the topology, timers and counters, finite numbers, the scenario's
place, the opponent's row, RNG states). Restoring a checked snapshot is
:mod:`grid_vec.core.snapshot`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import numpy as np

from grid_vec.chronics.handler import EpisodeState, ScenarioHandler
from grid_vec.chronics.outages import Events
from grid_vec.chronics.scenario import ScenarioInfo
from grid_vec.core.game_state import GameRow
from grid_vec.core.parameters import Parameters
from grid_vec.core.rng_state import RngState
from grid_vec.core.rules.opponent import OpponentBatch, OpponentRow
from grid_vec.core.snapshot import STATE_FIELDS, GridSnapshot
from grid_vec.core.topology import TopologyLayout, unsolvable
from grid_vec.grid.compile import N_BUSBAR
from grid_vec.grid.model import GridModel


def check(
    snapshot: Any,
    at: GameRow,
    model: GridModel,
    layout: TopologyLayout,
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
        at: the row of the game's state to restore it into.
        model: the batch's grid.
        layout: ``model``'s topology layout.
        parameters: the batch's rules (the cooldowns' and the simulates' maxima).
        rng: the env's RNG the snapshot's is put into, None when it is not put.

    Raises:
        TypeError: not a GridSnapshot.
        ValueError: a snapshot of another grid or configuration, or a value outside its
            domain: the message names the first field that does not fit and its value.
    """
    if not isinstance(snapshot, GridSnapshot):
        raise TypeError(f"a snapshot must be a GridSnapshot, got {type(snapshot).__name__}")
    game, row = at
    state, handler, opponent = game.grid, game.scenarios.handlers[row], game.opponent
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
    _fits("solver", snapshot.solver, state.solver.solver_state(row))
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
