"""A snapshot is untrusted input (a file's arrays read back with ``GridSnapshot.from_arrays``):
``restore`` checks every value in its domain before anything is put, and a refused snapshot
leaves the env bitwise as its untouched twin (same state, same observations, the same steps
played afterwards); a snapshot the game itself produced, even at the edges of the domain (a
game over, cooldowns and an attack running, maintenance), still restores and replays."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest

import grid_vec
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.opponent import GeometricOpponent, RandomLineOpponent
from grid_vec.core.snapshot import GridSnapshot

# catalog actions of case14 (Discrete): a few topology changes that keep the game going
BEFORE = [0, 3, 0, 5, 0, 0]
AFTER = [0, 37, 0, 42, 0, 70, 0, 22]


def _make(**kwargs):
    """case14 with an opponent that draws an attack schedule (its row holds the most)."""
    kwargs.setdefault(
        "opponent",
        GeometricOpponent(
            [1, 2, 3], budget_per_step=1.0, attack_duration=24, attack_cooldown=6,
            attack_every_xxx_hour=1.0, average_attack_duration_hour=0.5,
            minimum_attack_duration_hour=0.25,
        ),
    )  # fmt: skip
    return grid_vec.make("case14", **kwargs)


def _maintenance(env) -> np.ndarray:
    """Two branches in maintenance around the steps played (an explicit schedule: the
    snapshot holds its runs)."""
    schedule = np.zeros((60, env.unwrapped.model.n_branch), dtype=bool)
    schedule[2:5, 4] = True
    schedule[9:12, 13] = True
    return schedule


def _twins() -> tuple:
    """Two envs of the same make arguments, seed, maintenance and actions, bitwise alike, and
    a snapshot of the first a few steps back (so that a snapshot put in part shows)."""
    envs = [_make() for _ in range(2)]
    earlier = None
    for env in envs:
        env.reset(seed=3, options={"maintenance": _maintenance(env)})
        for t, action in enumerate(BEFORE):
            if t == 3 and earlier is None:
                earlier = env.unwrapped.snapshot()
            assert not env.step(action)[2]
    return (*envs, earlier)


def _state_bytes(env) -> dict[str, bytes]:
    return {key: value.tobytes() for key, value in env.unwrapped.snapshot().to_arrays().items()}


def _assert_twins(env, twin) -> None:
    """``env`` is bitwise ``twin``: its whole game state (a snapshot's arrays), its
    observation (what a restore of that state returns), and the steps both play next."""
    assert _state_bytes(env) == _state_bytes(twin)
    viewer = _make()
    obs = viewer.unwrapped.restore(env.unwrapped.snapshot())[0].copy()
    assert obs.tobytes() == viewer.unwrapped.restore(twin.unwrapped.snapshot())[0].tobytes()
    for t, action in enumerate(AFTER):
        got, expected = env.step(action), twin.step(action)
        assert got[0].tobytes() == expected[0].tobytes(), f"step {t}: observations differ"
        assert got[1:4] == expected[1:4], f"step {t}: reward / terminated / truncated differ"
        assert got[4].keys() == expected[4].keys()
        for key in got[4]:
            np.testing.assert_array_equal(got[4][key], expected[4][key], err_msg=key)
        if got[2] or got[3]:
            break


def _set(key: str, index, value) -> Callable:
    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        arrays[key][index] = value

    return tamper


def _put(key: str, make: Callable) -> Callable:
    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        arrays[key] = make(arrays[key], env.unwrapped)

    return tamper


def _timer(part: int, value: int | Callable) -> Callable:
    """Set the first entry of a part of the timers row (0: timestep_overflow, 1:
    cooldown_line, 2: cooldown_sub, 3: protection_counter)."""

    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        n_b, n_s = env.unwrapped.model.n_branch, env.unwrapped.model.n_sub
        start = (0, n_b, 2 * n_b, 2 * n_b + n_s)[part]
        arrays["state.timers"][start] = value(arrays) if callable(value) else value

    return tamper


def _topo(positions: Callable, value: int) -> Callable:
    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        arrays["state.topo"][positions(env.unwrapped.topology)] = value

    return tamper


def _all_disconnected(arrays: dict[str, np.ndarray], env) -> None:
    """Every element at -1, every branch status False: loads and generators cut off in an
    episode not over."""
    arrays["state.topo"][:] = -1
    arrays["state.line_status"][:] = False


def _flow(field: str, value: float) -> Callable:
    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        batch, _ = env.unwrapped.batch_row
        arrays["state.flows"][batch.game.grid.slices[field].start] = value

    return tamper


def _bool_byte(arrays: dict[str, np.ndarray], env) -> None:
    arrays["state.line_status"].view(np.uint8)[0] = 2  # numpy reads it as True


def _steady_count(arrays: dict[str, np.ndarray], env) -> None:
    """lightsim2grid's solver state: real and imaginary voltages, the steady solve count, the
    voltage setpoints sent; a negative count only the backend knows to refuse."""
    solver = arrays["solver"]
    n_bus = (len(solver) - 1 - env.unwrapped.model.n_gen) // 2
    solver[2 * n_bus] = -1.0


def _rng_word(index: int, value: Callable) -> Callable:
    def tamper(arrays: dict[str, np.ndarray], env) -> None:
        words = arrays["rng.words"]
        words[index] = value(int(words[index]))

    return tamper


def _length(env) -> int:
    return env.scenario_info.length


# (tamper, the field the refusal names); each sets one field to a value outside its domain
TAMPERS = {
    "nan flow": (_set("state.flows", 3, np.nan), r"'state\.flows': nan"),
    "inf injection": (_flow("load_p", np.inf), r"'state\.flows': inf at load_p\[0\]"),
    "inf setpoint": (_set("setpoints", 0, np.inf), r"'setpoints': inf"),
    "nan dispatch": (_set("state.target_dispatch", 0, np.nan), r"'state\.target_dispatch'"),
    "negative overflow timer": (_timer(0, -(10**12)), r"'state\.timers'.*timestep_overflow"),
    "negative cooldown": (_timer(1, -(10**12)), r"'state\.timers'.*cooldown_line"),
    "cooldown above the rules'": (_timer(2, 10**12), r"'state\.timers'.*cooldown_sub"),
    "counter above the steps played": (
        _timer(3, lambda arrays: int(arrays["scenario.steps_played"]) + 1),
        r"'state\.timers'.*protection_counter",
    ),
    "all bus bars -1": (_put("state.topo", lambda a, e: np.full_like(a, -1)), r"'state\.topo'"),
    "all disconnected": (_all_disconnected, r"'state\.topo'.*done is False"),
    "bus bar 7": (_topo(lambda layout: 0, 7), r"'state\.topo': 7"),
    "bus bar 0": (_topo(lambda layout: 0, 0), r"'state\.topo': 0"),
    "connected branch with an end off": (
        _topo(lambda layout: layout.pos_or[0], -1),
        r"'state\.topo'.*branch .* connected",
    ),
    "a load alone on bus bar 2": (
        _topo(lambda layout: layout.pos_load[3], 2),
        r"'state\.topo'.*cannot be solved",
    ),
    "reconnection bus bar -1": (_set("state.last_or", 0, -1), r"'state\.last_or'"),
    "bool byte 2": (_bool_byte, r"'state\.line_status': 2"),
    "topology of int64": (_put("state.topo", lambda a, e: a.astype(np.int64)), r"'state\.topo'"),
    "topology of a wrong shape": (_put("state.topo", lambda a, e: a[:-1]), r"'state\.topo'"),
    "float step": (_put("scenario.step", lambda a, e: a.astype(float)), r"'scenario\.step'"),
    "step beyond the scenario": (
        _put("scenario.step", lambda a, e: np.array(_length(e))),
        r"'scenario\.step'",
    ),
    "negative steps played": (
        _put("scenario.steps_played", lambda a, e: np.array(-1)),
        r"'scenario\.steps_played'",
    ),
    "episode beyond the scenario": (
        _put("scenario.max_steps", lambda a, e: np.array(2 * _length(e))),
        r"'scenario\.max_steps'",
    ),
    "cursor outside the order": (
        _put("scenario.cursor", lambda a, e: np.array(10**6)),
        r"'scenario\.cursor'",
    ),
    "negative seed": (_put("scenario.seed", lambda a, e: np.array(-5)), r"'scenario\.seed'"),
    "maintenance of no branch": (
        _set("scenario.maintenance.line", 0, 99),
        r"'scenario\.maintenance\.line'",
    ),
    "maintenance ending before it starts": (
        _set("scenario.maintenance.stop", 0, 0),
        r"'scenario\.maintenance\.stop'",
    ),
    "negative simulates": (_set("simulates", 0, -1), r"'simulates'"),
    "float simulates": (_put("simulates", lambda a, e: a.astype(float)), r"'simulates'"),
    "done as an int": (_put("done", lambda a, e: np.array(1)), r"'done'"),
    "nan budget": (_put("opponent.budget", lambda a, e: np.array(np.nan)), r"'opponent\.budget'"),
    "negative attack steps": (
        _put("opponent.remaining", lambda a, e: np.array(-(10**12))),
        r"'opponent\.remaining'",
    ),
    "opponent cooldown above its rules'": (
        _put("opponent.cooldown", lambda a, e: np.array(10**12)),
        r"'opponent\.cooldown'",
    ),
    "attack on a branch not targeted": (
        _put("opponent.attacked", lambda a, e: np.array(0)),
        r"'opponent\.attacked'",
    ),
    "countdown of -10**12": (
        _put("opponent.next_time", lambda a, e: np.array(-(10**12))),
        r"'opponent\.next_time'",
    ),
    "negative wait": (_set("opponent.waits", 0, -3), r"'opponent\.waits'"),
    "schedule counter beyond the schedule": (
        _put("opponent.counter", lambda a, e: np.array(10**6)),
        r"'opponent\.counter'",
    ),
    "rng draw flag 5": (_rng_word(4, lambda w: 5), r"'rng\.has_uint32'"),
    "rng even increment": (_rng_word(3, lambda w: w & ~1), r"'rng\.inc'"),
    "inf solver": (_set("solver", 0, np.inf), r"'solver'"),
    "solver refused by its backend": (_steady_count, r"'solver'.*steady"),
}


@pytest.mark.parametrize("case", TAMPERS, ids=list(TAMPERS))
def test_a_tampered_snapshot_is_refused_naming_its_field_and_the_env_stays_its_twins(case):
    tamper, field = TAMPERS[case]
    env, twin, earlier = _twins()
    arrays = {key: value.copy() for key, value in earlier.to_arrays().items()}
    tamper(arrays, env)
    with pytest.raises(ValueError, match=field):
        env.unwrapped.restore(GridSnapshot.from_arrays(arrays))
    _assert_twins(env, twin)


def test_a_tampered_snapshot_given_through_reset_leaves_the_env_unchanged():
    env, twin, snapshot = _twins()
    state = dict(snapshot.state, flows=np.full_like(snapshot.state["flows"], np.nan))
    tampered = GridSnapshot(**{**snapshot.__dict__, "state": state})
    with pytest.raises(ValueError, match=r"'state\.flows'"):
        env.reset(options={"state": tampered})
    _assert_twins(env, twin)


def test_a_refused_row_of_a_batch_restore_leaves_every_row_unchanged():
    """Two rows restored together, the second's solver state refused by its backend after
    the first's backend took its own: the first is given back its solver state, so both
    rows play as their twins."""
    rows_a = _make().unwrapped.sharing_one_batch(2)
    rows_b = _make().unwrapped.sharing_one_batch(2)
    earlier = []
    for envs in (rows_a, rows_b):
        for i, env in enumerate(envs):
            env.reset(seed=10 + i)
            env.step(0)
            if envs is rows_a:
                earlier.append(env.snapshot())  # a warm start of its own, one step back
            for action in BEFORE:
                env.step(action)
    arrays = {key: value.copy() for key, value in earlier[1].to_arrays().items()}
    _steady_count(arrays, rows_a[1])
    batch, _ = rows_a[0].batch_row
    rngs = [env.np_random for env in rows_a]
    with pytest.raises(ValueError, match="'solver'"):
        batch.restore(np.array([0, 1]), [earlier[0], GridSnapshot.from_arrays(arrays)], rngs)
    for env, twin in zip(rows_a, rows_b, strict=True):
        _assert_twins(env, twin)


def test_a_valid_snapshot_read_back_from_a_file_restores_and_replays_bitwise():
    env = _make()
    env.reset(seed=3, options={"maintenance": _maintenance(env)})
    for action in BEFORE:
        env.step(action)
    snapshot = env.unwrapped.snapshot()
    buffer = io.BytesIO()
    np.savez(buffer, **snapshot.to_arrays())
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as stored:
        loaded = GridSnapshot.from_arrays(stored)
    expected = [env.step(action) for action in AFTER]
    assert not any(step[2] for step in expected)
    for target in (env, _make()):  # the env itself, moved on, and a fresh one
        target.unwrapped.restore(loaded)
        assert _state_bytes(target) == {k: v.tobytes() for k, v in snapshot.to_arrays().items()}
        for t, action in enumerate(AFTER):
            got = target.step(action)
            assert got[0].tobytes() == expected[t][0].tobytes(), f"step {t}"
            assert got[1:4] == expected[t][1:4], f"step {t}"


def _nothing(env) -> dict[str, np.ndarray]:
    return {
        "set_bus": np.zeros(env.unwrapped.topology.n_elem, dtype=np.int64),
        "set_line_status": np.zeros(env.unwrapped.model.n_branch, dtype=np.int64),
    }


def test_states_the_game_produces_at_the_edges_of_the_domain_are_accepted():
    """A game over by a load cut off (-1, done), cooldowns running at their maxima, an attack
    running, maintenance: each restores into a fresh env, bitwise."""
    params = Parameters(nb_timestep_cooldown_line=3, nb_timestep_cooldown_sub=2)

    def make():
        opponent = RandomLineOpponent(
            [1, 2], budget_per_step=1.0, attack_duration=3, attack_cooldown=6
        )
        return _make(action_type="set_bus", parameters=params, opponent=opponent)

    env = make()
    env.reset(seed=1, options={"maintenance": _maintenance(env)})
    snapshots = []
    attacked = False
    for t in range(40):
        action = _nothing(env)
        if t % 4 == 1:  # a substation and a branch acted on: their cooldowns start
            action["set_bus"][env.unwrapped.topology.sub_start[5]] = 2
            action["set_line_status"][t % env.unwrapped.model.n_branch] = -1
        *_, terminated, _, info = env.step(action)
        attacked |= info["attacked_branch"] >= 0
        snapshots.append(env.unwrapped.snapshot())
        if terminated:
            env.reset(options={"maintenance": _maintenance(env)})
    assert attacked
    n_b, n_s = env.unwrapped.model.n_branch, env.unwrapped.model.n_sub
    timers = np.array([snapshot.state["timers"] for snapshot in snapshots])
    assert timers[:, 2 * n_b : 2 * n_b + n_s].max() == params.nb_timestep_cooldown_sub
    assert timers[:, n_b : 2 * n_b].max() >= params.nb_timestep_cooldown_line
    cut = _nothing(env)
    cut["set_bus"][env.unwrapped.topology.pos_load[0]] = -1
    assert env.step(cut)[2]
    snapshots.append(env.unwrapped.snapshot())
    assert snapshots[-1].done
    assert snapshots[-1].state["topo"][env.unwrapped.topology.pos_load[0]] == -1
    fresh = make()
    for snapshot in snapshots:
        fresh.unwrapped.restore(snapshot)
        restored = fresh.unwrapped.snapshot().to_arrays()
        assert {k: v.tobytes() for k, v in restored.items()} == {
            k: v.tobytes() for k, v in snapshot.to_arrays().items()
        }
