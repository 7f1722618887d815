"""A reset puts each env's backend back in place (no copy of the grid) and must leave nothing
of the episodes before: after many steps of random topology actions, with lines tripped by
overflows, taken out by maintenance and hazards, and substations split, a row reset in the
middle of the batch plays bitwise what a new env (whose backend never solved) plays with the
same seed and actions: observations, rewards, flags and the float64 flows of every step."""

from __future__ import annotations

import numpy as np
import pytest
from batch_compare import OutageSource, cascade_limits, factory
from env_helpers import loose_limits

from grid_vec.grid import BACKEND_NAMES
from grid_vec.vector.batched import BatchedGridVecEnv

N = 4
STEPS_AFTER = 30  # steps compared after the reset (or up to the end of its episode)


class History:
    """What the rows of a batch went through before the reset that is checked."""

    def __init__(self) -> None:
        self.topologies: set[bytes] = set()  # distinct topologies met (all rows)
        self.tripped = 0  # lines tripped by the protections
        self.maintained = 0  # env-steps with a line in maintenance or hit by a hazard
        self.ended = 0  # episodes ended (each reset in place at the next step)

    def note(self, envs: BatchedGridVecEnv, obs: np.ndarray, info: dict, ended: np.ndarray):
        batch = envs._batch
        self.topologies.update(row.tobytes() for row in batch.game.grid.topo)
        self.tripped += int(np.count_nonzero(info.get("tripped_branches", 0)))
        maintenance = obs[:, batch.obs_layout.slices["time_next_maintenance"]]
        self.maintained += int(np.count_nonzero((maintenance == 0).any(axis=1)))
        self.ended += int(np.count_nonzero(ended))


def _play_before(envs: BatchedGridVecEnv, steps: int, rng: np.random.Generator):
    """``steps`` random catalog actions (ended episodes reset at the next step), then on
    until a running row stands on a split substation with a line out: the state its reset
    has to undo. Returns the history and that row."""
    history = History()
    envs.reset(seed=list(range(100, 100 + N)))
    state = envs._batch.game.grid
    for t in range(10 * steps):
        obs, _, terminated, truncated, info = envs.step(
            rng.integers(0, envs.single_action_space.n, N)
        )
        ended = terminated | truncated
        history.note(envs, obs, info, ended)
        undone = (state.topo == 2).any(axis=1) & ~state.line_status.all(axis=1) & ~ended
        if t >= steps and undone.any():
            return history, int(np.argmax(undone))
    raise AssertionError("no running row stood on a split substation with a line out")


def _trajectory(envs: BatchedGridVecEnv, row: int, seed: int, actions: np.ndarray) -> list:
    """Row ``row`` reset with ``seed`` (the others go on with action 0), then played with
    ``actions`` up to the end of its episode: every observation, reward, flag and flow."""
    mask = np.zeros(envs.num_envs, dtype=bool)
    mask[row] = True
    seeds = [None] * envs.num_envs
    seeds[row] = seed
    obs, _ = envs.reset(seed=seeds, options={"reset_mask": mask})
    flows = envs._batch.game.grid.flows
    out = [obs[row].copy(), flows[row].copy()]
    for action in actions:
        batch_actions = np.zeros(envs.num_envs, dtype=np.int64)
        batch_actions[row] = action
        obs, reward, terminated, truncated, _ = envs.step(batch_actions)
        flags = np.array([reward[row], terminated[row], truncated[row]])
        out += [obs[row].copy(), flags, flows[row].copy()]
        if terminated[row] or truncated[row]:
            break
    return out


@pytest.mark.parametrize(
    ("backend", "steps"),
    [("lightsim2grid", 200), pytest.param("pandapower", 30, marks=pytest.mark.slow)],
)
def test_a_row_reset_in_place_plays_what_a_new_env_plays(case14, backend, steps):
    if backend == "pandapower":
        pytest.importorskip("pandapower")
    env_factory = factory(
        case14,
        source=OutageSource(case14, seed=0, length=40),
        thermal_limits=cascade_limits(case14),
        backend=backend,
    )
    used = BatchedGridVecEnv.from_factory(env_factory, N)
    solver = used._batch.game.grid.solver
    history, row = _play_before(used, steps, np.random.default_rng(3))
    assert len(history.topologies) >= 10 and history.tripped and history.maintained
    assert history.ended >= 5  # resets in place before the one checked
    rng = np.random.default_rng(4)
    for seed in (7, 8):  # two episodes: the second resets a row that played the first
        actions = rng.integers(0, used.single_action_space.n, STEPS_AFTER)
        _assert_plays_as_new(used, env_factory, row, seed, actions)
    # the same solver all along: its rows restored, never replaced by copies
    assert used._batch.game.grid.solver is solver


@pytest.mark.parametrize(
    "backend",
    [pytest.param(n, marks=pytest.mark.slow) if n == "pandapower" else n for n in BACKEND_NAMES],
)
def test_a_reset_that_keeps_the_topology_starts_the_solver_afresh(case14, backend):
    """After do-nothing steps (limits that never bind, no outage) the reset changes no
    topology: only the solver's state (its first guess, lightsim2grid's caches) could tell
    the new episode from a new env's."""
    if backend == "pandapower":
        pytest.importorskip("pandapower")
    env_factory = factory(case14, thermal_limits=loose_limits(case14), backend=backend)
    used = BatchedGridVecEnv.from_factory(env_factory, 2)
    used.reset(seed=[1, 2])
    nothing = np.zeros(2, dtype=np.int64)
    for _ in range(5):
        used.step(nothing)
    for seed in (7, 8, 9):
        assert (used._batch.game.grid.topo[1] == 1).all()
        _assert_plays_as_new(used, env_factory, 1, seed, nothing[:1].repeat(5))


def _assert_plays_as_new(
    used: BatchedGridVecEnv, env_factory, row: int, seed: int, actions: np.ndarray
) -> None:
    """Row ``row`` of ``used``, reset with ``seed`` and played with ``actions``, plays
    bitwise what a new env of ``env_factory`` plays."""
    ours = _trajectory(used, row, seed, actions)
    new = _trajectory(BatchedGridVecEnv.from_factory(env_factory, 1), 0, seed, actions)
    assert len(ours) == len(new) >= 5
    for i, (a, b) in enumerate(zip(ours, new, strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"output {i}: {a} != {b}"
