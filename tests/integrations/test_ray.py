"""Ray scale-out on a local Ray instance (2 CPUs): the Runner's Ray executor, the CLI and
RayVecEnv.

Skipped when Ray is not installed (extra ``ray``). One Ray instance serves the module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="needs the ray extra (pip install grid_vec[ray])")

import functools  # noqa: E402

import gymnasium as gym  # noqa: E402
from gymnasium import spaces  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from grid_vec.cli import main as cli_main  # noqa: E402
from grid_vec.env.make import env_factory  # noqa: E402
from grid_vec.integrations.ray import RayExecutor  # noqa: E402
from grid_vec.integrations.ray_launch import RayWorkerLauncher  # noqa: E402
from grid_vec.integrations.ray_vec_env import RayVecEnv  # noqa: E402
from grid_vec.runner import DoNothingAgent, RandomAgent, Runner, load_run  # noqa: E402
from grid_vec.runner.runner import EpisodeSpec  # noqa: E402
from grid_vec.vector.errors import WorkerCrashedError  # noqa: E402
from grid_vec.vector.vec_env import GridVecEnv  # noqa: E402

pytestmark = pytest.mark.ray

CASE14 = env_factory("case14")
# Timings differ from run to run; num_envs is the layout of the run, not part of an episode.
VOLATILE_META = {"result", "num_envs"}
VOLATILE_ARRAYS = {"step_time", "agent_time"}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def case14_actions() -> spaces.Space:
    env = CASE14()
    try:
        return env.action_space
    finally:
        env.close()


def recorded(root: Path) -> dict[int, tuple[dict, dict[str, np.ndarray]]]:
    """meta (minus volatile entries) and arrays (minus timings) of each episode under root."""
    out = {}
    for episode in load_run(root):
        meta = {k: v for k, v in episode.meta.items() if k not in VOLATILE_META}
        with np.load(episode.path / "arrays.npz", allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files if k not in VOLATILE_ARRAYS}
        out[episode.result.episode] = (meta, arrays)
    return out


def assert_same_recordings(a: Path, b: Path) -> None:
    left, right = recorded(a), recorded(b)
    assert sorted(left) == sorted(right)
    for index, (meta, arrays) in left.items():
        assert meta == right[index][0], index
        assert sorted(arrays) == sorted(right[index][1])
        for key, value in arrays.items():
            np.testing.assert_array_equal(value, right[index][1][key], err_msg=f"{index} {key}")


def test_ray_results_and_recordings_equal_local(tmp_path):
    agent = RandomAgent(case14_actions())
    with Runner([CASE14], agent, seed=5, executor=RayExecutor(num_actors=2)) as runner:
        assert runner.env is None
        remote = runner.run(5, max_iter=40, path_save=tmp_path / "ray")
    with Runner([CASE14, CASE14], agent, seed=5) as runner:
        local = runner.run(5, max_iter=40, path_save=tmp_path / "local")
    assert remote == local
    assert [r.episode for r in remote] == list(range(5))
    assert len({r.steps for r in local}) > 1  # random actions end some episodes early
    assert_same_recordings(tmp_path / "ray", tmp_path / "local")
    assert not [p for p in (tmp_path / "ray").iterdir() if p.name.startswith(".")]


def episode_files(root: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of each episode's files: a rewritten episode changes them."""
    return {
        str(f.relative_to(root)): (f.stat().st_ino, f.stat().st_mtime_ns)
        for f in root.glob("episode_*/*")
    }


def test_resume_on_ray_plays_only_missing_episodes(tmp_path):
    with Runner([CASE14], DoNothingAgent(), seed=2, executor=RayExecutor(num_actors=1)) as runner:
        first = runner.run(2, max_iter=10, path_save=tmp_path)
        recorded_first = episode_files(tmp_path)
        again = runner.run(3, max_iter=10, path_save=tmp_path, resume=True)
    assert again[:2] == first
    assert again[2].episode == 2 and again[2].steps == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"episode_0000{i}" for i in range(3)]
    after = episode_files(tmp_path)
    assert len(recorded_first) == 4 and len(after) == 6  # meta and arrays per episode
    assert {k: after[k] for k in recorded_first} == recorded_first  # not played again


def crashing_agent(marker: Path | None, victim_seed: int):
    """A do-nothing per-episode agent whose process dies when it starts the episode seeded
    ``victim_seed``: the first time only when ``marker`` (a file it creates) is given,
    every time otherwise. Defined in a function so that Ray pickles the class by value."""

    class Crashing:
        def seed(self, seed):
            if seed == victim_seed and (marker is None or not marker.exists()):
                if marker is not None:
                    marker.touch()
                os._exit(1)

        def reset(self, obs):
            pass

        def act(self, obs, reward, done):
            return 0

    return Crashing()


def test_dead_actor_episodes_are_replayed_elsewhere(tmp_path):
    marker = tmp_path / "crashed"
    with Runner([CASE14], DoNothingAgent(), seed=9) as runner:
        reference = runner.run(6, max_iter=20)
    agent = crashing_agent(marker, reference[3].agent_seed)  # dies mid-run
    with Runner([CASE14], agent, seed=9, executor=RayExecutor(num_actors=2)) as runner:
        results = runner.run(6, max_iter=20, path_save=tmp_path / "run")
    assert marker.exists()  # an actor did die
    assert results == reference
    assert sorted(recorded(tmp_path / "run")) == list(range(6))


def test_too_many_actor_deaths_stop_the_run_naming_the_episodes(tmp_path):
    agent = crashing_agent(None, victim_seed=0)
    specs = [EpisodeSpec(i, env_seed=i, agent_seed=0, options=None) for i in range(2)]
    executor = RayExecutor(num_actors=1, max_actor_failures=0)
    executor.start([CASE14], agent, None)
    try:
        with pytest.raises(RuntimeError, match=r"episodes \[0, 1\] were not played"):
            executor.play(specs, 5, None, _Bar(), _Bar())
    finally:
        executor.close()


class _Bar:
    def update(self, n=1):
        pass


def failing_agent(log: Path):
    """A per-episode agent that writes each episode's seed to ``log`` and then raises (a bug,
    not a machine failure). Defined in a function so that Ray pickles the class by value."""

    class Failing:
        def seed(self, seed):
            with log.open("a") as f:
                f.write(f"{seed}\n")

        def reset(self, obs):
            pass

        def act(self, obs, reward, done):
            raise KeyError("policy bug")

    return Failing()


def test_agent_error_is_raised_with_its_type_not_retried(tmp_path):
    log = tmp_path / "seeds.txt"
    with (
        Runner([CASE14], failing_agent(log), seed=3, executor=RayExecutor(num_actors=1)) as runner,
        pytest.raises(KeyError, match="policy bug"),
    ):
        runner.run(2, max_iter=5)
    started = log.read_text().split()
    assert started and len(set(started)) == len(started), started  # no episode started twice


def test_argument_errors():
    with pytest.raises(ValueError, match="num_actors must be None or a positive int"):
        RayExecutor(num_actors=0)
    with pytest.raises(TypeError, match="picklable env factories"):
        Runner(CASE14, DoNothingAgent(), executor=RayExecutor())
    with pytest.raises(TypeError, match="ray_address must be a str"):
        RayExecutor(address=6379)


def test_a_ray_executor_serves_one_runner():
    executor = RayExecutor(num_actors=1)
    with (
        Runner([CASE14], DoNothingAgent(), executor=executor),
        pytest.raises(RuntimeError, match="already serves a Runner"),
    ):
        Runner([CASE14], DoNothingAgent(), executor=executor)


def test_cli_run_on_ray(tmp_path, capsys):
    save = tmp_path / "run"
    argv = ["run", "--ray", "--num-actors", "2", "--episodes", "3", "--max-iter", "8"]
    assert cli_main([*argv, "--save", str(save), "--no-progress"]) == 0
    assert "saved 3 episodes" in capsys.readouterr().out
    assert sorted(recorded(save)) == [0, 1, 2]
    meta = json.loads((save / "episode_00000" / "meta.json").read_text())
    assert meta["max_iter"] == 8
    assert cli_main(["run", "--num-actors", "2", "--no-save"]) == 2
    assert "--num-actors needs --ray" in capsys.readouterr().err


def test_importing_grid_vec_does_not_import_ray():
    code = (
        "import sys, grid_vec, grid_vec.runner, grid_vec.cli, grid_vec.integrations; "
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # a bound on hangs


CARTPOLE = functools.partial(gym.make, "CartPole-v1")


def assert_same_tree(a, b, where=""):
    """Equal observations/infos: arrays element-wise, dicts key by key."""
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for key in a:
            assert_same_tree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, np.ndarray) and a.dtype == object:  # e.g. SAME_STEP's final_obs
        assert a.shape == b.shape, where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_ray_vec_env_steps_like_sync_vector_env(mode):
    """Three CartPoles on two actors (2 + 1) against gymnasium's SyncVectorEnv, through
    several automatic resets (random actions end CartPole episodes within ~20 steps)."""
    ray_env = RayVecEnv([CARTPOLE] * 3, envs_per_actor=2, autoreset_mode=mode)
    sync_env = SyncVectorEnv([CARTPOLE] * 3, autoreset_mode=mode)
    try:
        assert ray_env.single_observation_space == sync_env.single_observation_space
        assert ray_env.action_space == sync_env.action_space
        assert ray_env.metadata["autoreset_mode"] == mode
        assert_same_tree(
            dict(enumerate(ray_env.reset(seed=4))), dict(enumerate(sync_env.reset(seed=4)))
        )
        sync_env.action_space.seed(1)
        resets = 0
        for t in range(60):
            actions = sync_env.action_space.sample()
            got, expected = ray_env.step(actions), sync_env.step(actions)
            resets += int(np.sum(expected[2] | expected[3]))
            assert_same_tree(dict(enumerate(got)), dict(enumerate(expected)), f"step {t}")
        assert resets >= 3
    finally:
        ray_env.close()
        sync_env.close()


def test_runner_over_ray_vec_env_matches_local():
    """DISABLED mode with reset_mask (the Runner's partial resets) on case14."""
    agent = RandomAgent(case14_actions())
    ray_env = RayVecEnv([CASE14] * 2, autoreset_mode=AutoresetMode.DISABLED)
    try:
        remote = Runner(ray_env, agent, seed=1).run(3, max_iter=15)
    finally:
        ray_env.close()
    with Runner([CASE14], agent, seed=1) as runner:
        assert remote == runner.run(3, max_iter=15)


def test_ray_vec_env_attributes_and_close():
    env = RayVecEnv([CARTPOLE] * 2)
    try:
        assert env.get_attr("spec")[0].id == "CartPole-v1" == env.spec.id
        env.set_attr("marker", [1, 2])
        assert env.get_attr("marker") == (1, 2)
        env.set_attr("marker", 7)
        assert env.call("get_wrapper_attr", "marker") == (7, 7)
        with pytest.raises(ValueError, match="values has 3 entries, expected 2"):
            env.set_attr("marker", [1, 2, 3])
        with pytest.raises(ValueError, match="length must match num_envs=2"):
            env.reset(seed=[1])
        with pytest.raises(ValueError, match=r"reset_mask'\]` must have shape `\(2,\)`"):
            env.reset(options={"reset_mask": np.ones(3, dtype=bool)})
    finally:
        env.close()
    env.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="envs_per_actor must be >= 1"):
        RayVecEnv([CARTPOLE], envs_per_actor=0)
    with pytest.raises(ValueError, match="transport must be one of"):
        RayVecEnv([CARTPOLE], transport="grpc")
    with pytest.raises(ValueError, match="spin_us must be a number >= 0"):
        RayVecEnv([CARTPOLE], spin_us=-1)


def _wait_dead(actor, timeout_s: float = 30.0) -> None:
    """Return once calls to ``actor`` fail as those to a dead actor do."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.spaces.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"actor still alive {timeout_s} s after ray.kill")


def _crash(actor) -> None:
    """SIGKILL the actor's process (as a segfault, the OOM killer or a lost node end it),
    then wait for Ray to report it dead. (``ray.kill`` marks an actor dead at once, while its
    process may still answer a socket link for a moment before it exits.)"""
    os.kill(ray.get(actor.pid.remote()), signal.SIGKILL)
    _wait_dead(actor)


def test_ray_vec_env_dead_actor_is_named():
    env = RayVecEnv([CARTPOLE] * 3, envs_per_actor=2)
    try:
        env.reset(seed=0)
        _crash(env._actors[1])  # the actor of sub-env 2
        with pytest.raises(WorkerCrashedError, match=r"sub-envs \[2\] died") as info:
            env.step(np.zeros(3, dtype=np.int64))
        assert info.value.env_ids == (2,)
    finally:
        env.close()


# --- RayVecEnv actors hosting batched blocks (issue #57) ---------------------------------

import grid_vec  # noqa: E402


def play_side_by_side(ray_env, batched_env, steps: int, seed: int) -> int:
    """Step both envs with the same random catalog actions, resetting the sub-envs whose
    episode ended when the mode does not (DISABLED: a masked reset, as the Runner does);
    assert every step's observations, rewards, flags and infos equal to the bit. Returns
    the number of episodes that ended."""
    assert_same_tree(
        dict(enumerate(ray_env.reset(seed=seed))), dict(enumerate(batched_env.reset(seed=seed)))
    )
    rng = np.random.default_rng(seed)
    n_actions = batched_env.single_action_space.n
    ended_total = 0
    for t in range(steps):
        actions = rng.integers(0, n_actions, batched_env.num_envs)
        got, expected = ray_env.step(actions), batched_env.step(actions)
        names = ("obs", "rewards", "terminated", "truncated")
        for name, a, b in zip(names, got[:4], expected[:4], strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape, (t, name)
            np.testing.assert_array_equal(a, b, err_msg=f"step {t} {name}")
        assert_same_tree(got[4], expected[4], f"step {t} infos")
        ended = expected[2] | expected[3]
        ended_total += int(ended.sum())
        if batched_env.autoreset_mode == AutoresetMode.DISABLED and ended.any():
            options = {"reset_mask": ended}
            assert_same_tree(
                dict(enumerate(ray_env.reset(options=options))),
                dict(enumerate(batched_env.reset(options=options))),
                f"reset after step {t}",
            )
    return ended_total


@pytest.mark.parametrize(
    ("mode", "transport", "spin_us", "step_in_driver", "steps"),
    [
        (AutoresetMode.NEXT_STEP, "socket", 1000, None, 300),
        (AutoresetMode.NEXT_STEP, "socket", 1000, False, 200),
        (AutoresetMode.SAME_STEP, "socket", 0, None, 200),  # every process sleeps at once
        (AutoresetMode.DISABLED, "ray", 0, False, 100),
        (AutoresetMode.DISABLED, "ray", 0, None, 100),
    ],
)
def test_make_vec_ray_two_batched_slices_equal_make_vec_batched_bitwise(
    mode, transport, spin_us, step_in_driver, steps
):
    """``make_vec(..., vectorization="ray")``: 16 case14 envs spread over the cluster's 2
    CPUs in 2 slices of 8, each stepped as one batch — by default the driver's own and one
    actor's (``step_in_driver``), else 2 actors' — play exactly what one in-process batch
    of 16 plays (same seeds, random catalog actions, the game overs' resets included)."""
    ray_env = grid_vec.make_vec(
        "case14",
        16,
        vectorization="ray",
        autoreset_mode=mode,
        vector_kwargs={
            "transport": transport,
            "spin_us": spin_us,
            "step_in_driver": step_in_driver,
        },
    )
    batched_env = grid_vec.make_vec("case14", 16, vectorization="batched", autoreset_mode=mode)
    try:
        assert ray_env.batched == (True, True)
        assert ray_env.step_in_driver is (step_in_driver is None)
        assert len(ray_env._actors) == (1 if step_in_driver is None else 2)
        assert ray_env.autoreset_mode == mode == ray_env.metadata["autoreset_mode"]
        assert ray_env.single_action_space == batched_env.single_action_space
        assert ray_env.observation_space == batched_env.observation_space
        assert play_side_by_side(ray_env, batched_env, steps, seed=11) >= 3
    finally:
        ray_env.close()
        batched_env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_node_transport_is_grid_vec_env_on_ray_actors_playing_like_one_batch(mode):
    """``transport="node"``: a GridVecEnv whose worker is a Ray actor of this node (not a child
    of this process), stepping its slice through the shared block: 16 case14 envs in 2
    slices of 8 play exactly what one in-process batch of 16 plays; closing it leaves the
    module's Ray running (the launcher did not start it) and no actor."""
    env = grid_vec.make_vec(
        "case14",
        16,
        envs_per_worker=8,
        vectorization="ray",
        autoreset_mode=mode,
        vector_kwargs={"transport": "node"},
    )
    batched_env = grid_vec.make_vec("case14", 16, vectorization="batched", autoreset_mode=mode)
    try:
        assert isinstance(env, GridVecEnv) and isinstance(env.worker_launcher, RayWorkerLauncher)
        (actor_pid,) = [pid for pid in env.worker_pids() if pid != os.getpid()]
        assert os.getpid() in env.worker_pids()  # the parent steps the other slice
        assert _parent_of(actor_pid) != os.getpid()  # Ray started it, not this process
        assert play_side_by_side(env, batched_env, 200, seed=11) >= 3
    finally:
        env.close()
        batched_env.close()
    assert ray.is_initialized()
    assert not env.worker_launcher._actors


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


class _HostFailingAtStart:
    """An actor that never connects: its ``serve`` raises, and Ray's workers cannot even
    import this class (it lives in a test module), so its creation fails first."""

    def serve(self, path, token, parent_fds):
        raise RuntimeError("no worker here")


def test_an_actor_failing_before_it_connects_is_reported_at_once_not_at_the_timeout():
    launcher = RayWorkerLauncher(start_timeout=30.0)
    launcher._host = ray.remote(_HostFailingAtStart)
    read_end, write_end = os.pipe()
    started = time.monotonic()
    try:
        with pytest.raises(OSError, match=r"a Ray actor for a worker failed to start \("):
            launcher.start(read_end, write_end, [])
        assert time.monotonic() - started < 20.0  # not the 30 s timeout
    finally:
        os.close(read_end)
        os.close(write_end)
        launcher.close()
    assert ray.is_initialized()  # the module's Ray: not the launcher's to shut down


def test_a_killed_node_actor_is_a_crashed_worker_naming_its_sub_envs():
    env = grid_vec.make_vec(
        "case14", 5, envs_per_worker=3, vectorization="ray", vector_kwargs={"transport": "node"}
    )
    try:
        env.reset(seed=0)
        (actor_pid,) = [pid for pid in env.worker_pids() if pid != os.getpid()]
        os.kill(actor_pid, signal.SIGKILL)  # the actor of sub-envs 0-2 (this process steps 3, 4)
        with pytest.raises(WorkerCrashedError, match=r"sub-envs \[0, 1, 2\]") as info:
            env.step(np.zeros(5, dtype=np.int64))
        assert info.value.env_ids == (0, 1, 2)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("transport", "step_in_driver"), [("socket", None), ("socket", False), ("ray", None)]
)
def test_crashed_batched_actor_raises_worker_crashed_error_naming_its_sub_envs(
    transport, step_in_driver
):
    env = RayVecEnv(
        [CASE14] * 5, envs_per_actor=3, transport=transport, step_in_driver=step_in_driver
    )
    try:
        assert env.batched == (True, True)
        env.reset(seed=0)
        _crash(env._actors[-1])  # the actor of sub-envs 3 and 4 (the driver steps 0-2)
        with pytest.raises(WorkerCrashedError, match=r"sub-envs \[3, 4\] died") as info:
            env.step(np.zeros(5, dtype=np.int64))
        assert info.value.env_ids == (3, 4)
    finally:
        env.close()


@pytest.mark.parametrize("bad", [4, 1])
def test_a_slice_s_error_is_raised_with_its_type_and_ray_vec_env_index(bad):
    """An action outside the space of sub-env ``bad``: 4 is row 1 of the actor's batch, 1 a
    row of the slice the driver steps itself. The batch's ValueError with the RayVecEnv's
    ``env_index``; every slice's reply to the step was read, so the env stays usable."""
    env = RayVecEnv([CASE14] * 6, envs_per_actor=3)
    try:
        assert env.step_in_driver and len(env._actors) == 1
        env.reset(seed=0)
        actions = np.zeros(6, dtype=np.int64)
        actions[bad] = 10**6
        with pytest.raises(ValueError, match="actions must be ints") as info:
            env.step(actions)
        assert info.value.env_index == bad
        assert any(f"sub-env {bad} of RayVecEnv" in note for note in info.value.__notes__)
        obs, rewards, *_ = env.step(np.zeros(6, dtype=np.int64))
        assert obs.shape == (6, *env.single_observation_space.shape) and rewards.shape == (6,)
    finally:
        env.close()
    assert env._links == [] and env._actors == []


def test_step_in_driver_defaults_on_for_one_factory_of_grid_envs_in_several_slices():
    """The driver steps the first slice in its own process (the slice's host is here: an
    attribute set through the RayVecEnv is on its envs) by default for GridEnvs of one
    factory in several slices; other envs, or a single slice, keep every slice in actors."""
    env = RayVecEnv([CASE14] * 4, envs_per_actor=2)
    try:
        assert env.step_in_driver and len(env._actors) == 1 and env.batched == (True, True)
        env.set_attr("marker", [1, 2, 3, 4])
        assert env._links[0].host.env.get_attr("marker") == (1, 2)
        assert env.get_attr("marker") == (1, 2, 3, 4)
    finally:
        env.close()
    assert env._links == []
    for fns, per_actor in (([CARTPOLE] * 4, 2), ([CASE14] * 2, 2)):
        env = RayVecEnv(fns, envs_per_actor=per_actor)
        try:
            assert not env.step_in_driver and len(env._actors) == len(fns) // per_actor
        finally:
            env.close()
    with pytest.raises(TypeError, match="step_in_driver must be a bool or None"):
        RayVecEnv([CASE14] * 2, step_in_driver="yes")


def test_batched_actors_serve_call_get_attr_and_set_attr_in_sub_env_order():
    env = RayVecEnv([CASE14] * 4, envs_per_actor=2)
    try:
        assert env.batched == (True, True)
        assert [spec.id for spec in env.get_attr("spec")] == ["grid_vec/Case14-v0"] * 4
        env.set_attr("marker", [1, 2, 3, 4])
        assert env.get_attr("marker") == (1, 2, 3, 4)
        assert env.call("get_wrapper_attr", "marker") == (1, 2, 3, 4)
        with pytest.raises(AttributeError):
            env.get_attr("no_such_attribute")
    finally:
        env.close()


def test_ray_executor_actor_plays_its_chunk_as_one_batch_equal_to_local():
    """``[factory] * 3`` on one actor: one batch of 3 envs playing the Runner's episodes
    (DISABLED, masked resets, idle sub-envs at the end) as a local run does."""
    agent = RandomAgent(case14_actions())
    with Runner([CASE14] * 3, agent, seed=7, executor=RayExecutor(num_actors=1)) as runner:
        remote = runner.run(4, max_iter=30)
    with Runner([CASE14] * 2, agent, seed=7) as runner:
        assert remote == runner.run(4, max_iter=30)


def test_bench_ray_vec_reports_both_subjects_and_their_ratio(tmp_path, capsys):
    """benchmarks/bench_ray_vec.py runs end to end on the module's Ray (figures are never
    asserted: benchmarks are not timed in tests)."""
    from benchmark_scripts import load_benchmark

    module = load_benchmark("bench_ray_vec")
    argv = [
        "--grid",
        "case14",
        "--actions",
        "random",
        "--envs",
        "4",
        "--reps",
        "2",
        "--subjects",
        "GridVecEnv",
        "RayVecEnv",
    ]
    doc = module.main([*argv, "--seconds", "0.05", "--out", str(tmp_path)])
    (result,) = doc["results"]
    assert set(result["subjects"]) == {"GridVecEnv", "RayVecEnv"}  # the module's 2 CPUs
    for subject in result["subjects"].values():
        assert subject["env_steps_per_s"] > 0 and len(subject["samples"]) == 2
    assert result["ray_over_grid_vec_env"] > 0
    assert json.loads((tmp_path / "bench_ray_vec.json").read_text())["results"]
    assert "| case14 | random | 4 | RayVecEnv |" in capsys.readouterr().out
    assert ray.is_initialized()  # the module's Ray, left running
