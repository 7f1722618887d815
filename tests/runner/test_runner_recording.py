"""Recording episodes, loading them back, resuming, and surviving a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from runner_toy_envs import StatefulRandomAgent, ToyEnv

from grid_vec.runner import (
    DoNothingAgent,
    EpisodeData,
    ResumeError,
    Runner,
    load_run,
    plot_episode,
)

HERE = Path(__file__).parent
DISABLED = AutoresetMode.DISABLED


def toy_runner(n_envs: int = 2, **env_kwargs) -> Runner:
    env = SyncVectorEnv(
        [lambda: ToyEnv(**env_kwargs) for _ in range(n_envs)],
        autoreset_mode=AutoresetMode.DISABLED,
    )
    return Runner(env, StatefulRandomAgent(3), seed=11)


def test_recorded_episodes_match_results(tmp_path):
    results = toy_runner().run(4, path_save=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"episode_0000{i}" for i in range(4)]
    for result, data in zip(results, load_run(tmp_path), strict=True):
        assert data.result == result
        assert len(data) == result.steps
        assert data.observations.shape == (result.steps + 1, 4)
        assert data.rewards.sum() == pytest.approx(result.cum_reward)
        assert data.truncated[-1] or data.terminated[-1]
        assert not (data.truncated[:-1] | data.terminated[:-1]).any()
        assert data.illegal.dtype == bool and data.illegal.tolist() == (data.actions == 2).tolist()
        np.testing.assert_allclose(data.other_rewards["double"], 2 * data.rewards)
        trips = data.info("tripped_branches")
        assert [t.tolist() for t in trips] == [list(range(s % 3)) for s in range(1, len(data) + 1)]
        assert data.arrays["step_time"].shape == (result.steps,)
        assert data.meta["env_seed"] == result.env_seed
        assert data.meta["scenario"]["name"] == "toy-0"
        assert data.meta["versions"]["gymnasium"]


def test_recorded_first_observation_is_the_reset_one(tmp_path):
    result = toy_runner(1).run(1, path_save=tmp_path)[0]
    env = ToyEnv()
    first, _ = env.reset(seed=result.env_seed)
    np.testing.assert_array_equal(
        EpisodeData.load(tmp_path / "episode_00000").observations[0], first
    )


def test_existing_episodes_need_resume(tmp_path):
    toy_runner().run(2, path_save=tmp_path)
    with pytest.raises(ValueError, match=r"already holds episodes \[0, 1\]"):
        toy_runner().run(3, path_save=tmp_path)


def test_resume_keeps_recorded_episodes_and_plays_the_rest(tmp_path):
    reference = toy_runner(3).run(6)
    toy_runner().run(6, path_save=tmp_path)
    os.rename(tmp_path / "episode_00003", tmp_path / ".episode_00003.tmp-999")  # a killed write
    for name in ("episode_00004", "episode_00001"):
        for child in (tmp_path / name).iterdir():
            child.unlink()
        (tmp_path / name).rmdir()
    recorded = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("episode_*")}
    assert toy_runner(1).run(6, path_save=tmp_path, resume=True) == reference
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"episode_0000{i}" for i in range(6)]
    assert all((tmp_path / n).stat().st_mtime_ns == t for n, t in recorded.items())


def test_resume_refuses_other_seeds(tmp_path):
    toy_runner().run(2, path_save=tmp_path)
    with pytest.raises(ResumeError, match="episode_00000 was recorded with env_seed=") as caught:
        toy_runner().run(2, path_save=tmp_path, resume=True, env_seeds=[1, 2])
    assert (caught.value.key, caught.value.asked) == ("env_seed", 1)


def test_resume_refuses_another_agent_or_env_and_deletes_nothing(tmp_path):
    toy_runner().run(3, path_save=tmp_path)
    blob = (tmp_path / "episode_00001" / "arrays.npz").read_bytes()
    (tmp_path / "episode_00001" / "arrays.npz").write_bytes(blob[:100])  # damaged
    other_agent = Runner(
        SyncVectorEnv([ToyEnv], autoreset_mode=DISABLED), DoNothingAgent(), seed=11
    )
    with pytest.raises(ResumeError, match="recorded with agent='StatefulRandomAgent'") as caught:
        other_agent.run(3, path_save=tmp_path, resume=True)
    assert caught.value.asked == "DoNothingAgent"
    with pytest.raises(ResumeError, match=r"observation_space='Box\(-inf, inf, \(4,\)"):
        toy_runner(obs_dim=5).run(3, path_save=tmp_path, resume=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"episode_0000{i}" for i in range(3)]


def test_resume_plays_a_damaged_episode_again(tmp_path, caplog):
    reference = toy_runner(3).run(5)
    toy_runner().run(5, path_save=tmp_path)
    damaged = tmp_path / "episode_00002" / "arrays.npz"
    damaged.write_bytes(damaged.read_bytes()[:-40])  # a truncated copy
    kept = {p.parent.name: p.stat().st_mtime_ns for p in tmp_path.glob("episode_*/arrays.npz")}
    assert toy_runner(1).run(5, path_save=tmp_path, resume=True) == reference
    assert "episode 2 is damaged, playing it again" in caplog.text
    assert [e.result for e in load_run(tmp_path)] == reference
    changed = [
        name for name, t in kept.items() if (tmp_path / name / "arrays.npz").stat().st_mtime_ns != t
    ]
    assert changed == ["episode_00002"]


def test_plot_episode_writes_a_png_or_names_the_missing_extra(tmp_path):
    toy_runner().run(1, path_save=tmp_path)
    data = EpisodeData.load(tmp_path / "episode_00000")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install"):
            plot_episode(data, path=tmp_path / "plot.png")
    else:
        plot_episode(
            data, view=lambda obs: type("V", (), {"rho": obs[:, :2]}), path=tmp_path / "p.png"
        )
        assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_memory_stays_flat_over_many_recorded_episodes(tmp_path):
    runner = toy_runner(2, obs_dim=200, max_len=30)
    tracemalloc.start()
    try:
        runner.run(5, path_save=tmp_path / "a")
        _, peak_few = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        runner.run(50, path_save=tmp_path / "b")
        _, peak_many = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(list((tmp_path / "b").iterdir())) == 50
    assert peak_many < 1.5 * peak_few, (peak_few, peak_many)


KILLED_RUN = textwrap.dedent(
    """
    import sys
    from gymnasium.vector import AutoresetMode, SyncVectorEnv
    from runner_toy_envs import StatefulRandomAgent, ToyEnv
    from grid_vec.runner import Runner

    fns = [lambda: ToyEnv(step_sleep=0.01)] * 2
    env = SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)
    Runner(env, StatefulRandomAgent(3), seed=11).run(40, path_save=sys.argv[1])
    """
)


def test_sigkill_mid_run_leaves_whole_episodes_and_resume_finishes(tmp_path):
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(run_dir)], env=env)
    try:
        deadline = time.monotonic() + 60
        while len(list(run_dir.glob("episode_*"))) < 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no episode recorded within 60 s"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    complete = list(run_dir.glob("episode_*"))
    assert 3 <= len(complete) < 40
    for path in complete:
        EpisodeData.load(path)
    assert all(p.name.startswith((".episode_", "episode_")) for p in run_dir.iterdir())
    resumed = toy_runner(3).run(40, path_save=run_dir, resume=True)
    assert resumed == toy_runner(2).run(40)
    assert len(list(run_dir.iterdir())) == 40
