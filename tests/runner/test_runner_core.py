"""Runner scheduling, determinism and argument checks over gymnasium's own vector envs."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from runner_toy_envs import StatefulRandomAgent, ToyEnv

from grid_vec.runner import (
    DoNothingAgent,
    RandomAgent,
    Runner,
    derive_seed,
    format_results_table,
)

DISABLED, NEXT_STEP = AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP


def sync(n: int, mode=DISABLED, **kwargs) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: ToyEnv(**kwargs) for _ in range(n)], autoreset_mode=mode)


def run_with(n_envs: int, agent, nb_episode: int = 7, mode=DISABLED, **run_kwargs):
    env = sync(n_envs, mode)
    try:
        return Runner(env, agent, seed=3).run(nb_episode, **run_kwargs)
    finally:
        env.close()


@pytest.mark.parametrize(
    "make_agent",
    [lambda: StatefulRandomAgent(3), lambda: RandomAgent(spaces.Discrete(3)), DoNothingAgent],
    ids=["stateful-random", "random", "do-nothing"],
)
def test_results_do_not_depend_on_number_of_envs(make_agent):
    reference = run_with(1, make_agent())
    assert [r.episode for r in reference] == list(range(7))
    assert len({r.steps for r in reference}) > 1  # episodes of different lengths
    for n in (2, 3):
        assert run_with(n, make_agent()) == reference


def test_next_step_autoreset_gives_same_results_as_disabled():
    agent = StatefulRandomAgent(3)
    assert run_with(2, agent, mode=NEXT_STEP) == run_with(2, agent, mode=DISABLED)


def test_async_vector_env_gives_same_results_as_sync():
    reference = run_with(1, StatefulRandomAgent(3), nb_episode=5)
    env = AsyncVectorEnv([ToyEnv, ToyEnv], autoreset_mode=DISABLED)
    try:
        assert Runner(env, StatefulRandomAgent(3), seed=3).run(5) == reference
    finally:
        env.close()


def test_env_factories_build_and_close_a_vector_env():
    runner = Runner([ToyEnv, ToyEnv], StatefulRandomAgent(3), seed=3)
    with runner:
        results = runner.run(4)
    assert runner.env.closed
    assert results == run_with(1, StatefulRandomAgent(3), nb_episode=4)


def test_seeds_reward_and_steps_are_consistent():
    results = run_with(
        2, DoNothingAgent(), nb_episode=3, env_seeds=[5, 6, 7], agent_seeds=[1, 2, 3]
    )
    assert [r.env_seed for r in results] == [5, 6, 7]
    assert [r.agent_seed for r in results] == [1, 2, 3]
    env = ToyEnv()
    env.reset(seed=6)
    total, steps, done = 0.0, 0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(0)
        total, steps, done = total + reward, steps + 1, terminated or truncated
    assert results[1].cum_reward == pytest.approx(total)
    assert results[1].steps == steps
    assert results[1].truncated and not results[1].terminated


def test_default_seeds_derive_from_master_seed_per_episode():
    results = run_with(2, DoNothingAgent(), nb_episode=3)
    assert [r.env_seed for r in results] == [derive_seed(3, i, 0) for i in range(3)]
    assert [r.agent_seed for r in results] == [derive_seed(3, i, 1) for i in range(3)]
    assert len({r.env_seed for r in results} | {r.agent_seed for r in results}) == 6
    assert run_with(2, DoNothingAgent(), nb_episode=5)[:3] == results


def test_episode_id_and_reset_options_reach_the_env():
    results = run_with(2, DoNothingAgent(), nb_episode=4, episode_id=[4, 1, 4, 9])
    assert [r.scenario_id for r in results] == [4, 1, 4, 9]
    assert [r.scenario_name for r in results] == ["toy-4", "toy-1", "toy-4", "toy-9"]
    per_episode = [{"scenario_id": s} for s in (4, 1, 4, 9)]
    assert run_with(3, DoNothingAgent(), nb_episode=4, reset_options=per_episode) == results
    assert (
        run_with(1, DoNothingAgent(), nb_episode=2, reset_options={"scenario_id": 2})[
            1
        ].scenario_name
        == "toy-2"
    )


def test_max_iter_truncates_episodes():
    results = run_with(2, DoNothingAgent(), nb_episode=6, max_iter=3)
    assert max(r.steps for r in results) == 3
    capped = [r for r in results if r.steps == 3]
    assert capped and all(r.truncated and r.max_steps == 3 for r in capped)


def test_zero_episodes_and_more_envs_than_episodes():
    assert run_with(2, DoNothingAgent(), nb_episode=0) == []
    assert run_with(3, StatefulRandomAgent(3), nb_episode=2) == run_with(
        1, StatefulRandomAgent(3), nb_episode=2
    )


def test_results_table_has_one_row_per_episode_with_its_values_and_a_mean_row():
    results = run_with(2, StatefulRandomAgent(3), nb_episode=3)
    lines = format_results_table(results).splitlines()
    assert lines[0].split() == [
        "episode", "scenario", "reward", "steps", "max", "env", "seed", "agent", "s", "env",
        "s", "pf", "s", "trips", "ended",
    ]  # fmt: skip
    assert len(lines) == 2 + 3 + 1
    for line, r in zip(lines[2:5], results, strict=True):
        cells = line.split()
        assert cells[:6] == [
            str(r.episode), "toy-0", f"{r.cum_reward:.2f}", str(r.steps), "-", str(r.env_seed)
        ]  # fmt: skip
        assert cells[6:9] == [f"{r.timings.agent:.3f}", f"{r.timings.env:.3f}", "-"]
        # the toy env reports no trips; how the episode ended comes last
        ended = "game over" if r.terminated else "truncated"
        assert cells[9] == "-" and " ".join(cells[10:]) == ended
    mean = lines[5].split()
    assert mean == [
        "mean", f"{np.mean([r.cum_reward for r in results]):.2f}",
        f"{np.mean([r.steps for r in results]):.1f}",
    ]  # fmt: skip


class CountingBar:
    instances: ClassVar[list[CountingBar]] = []

    def __init__(self, total=None, desc=""):
        self.total, self.desc, self.count, self.closed = total, desc, 0, False
        CountingBar.instances.append(self)

    def update(self, n=1):
        self.count += n

    def close(self):
        self.closed = True


def test_progress_bar_class_instance_and_tqdm(capsys):
    CountingBar.instances = []
    results = run_with(2, DoNothingAgent(), nb_episode=3, pbar=CountingBar)
    episodes, steps = CountingBar.instances
    assert (episodes.total, episodes.count, episodes.closed) == (3, 3, True)
    assert steps.count == sum(r.steps for r in results) and steps.closed
    bar = CountingBar(total=3)
    run_with(2, DoNothingAgent(), nb_episode=3, pbar=bar)
    assert bar.count == 3 and not bar.closed
    run_with(2, DoNothingAgent(), nb_episode=3, pbar=True)
    assert "episodes" in capsys.readouterr().err


class NoSeed:
    def act(self, obs, reward, done):
        return 0

    def reset(self, obs):
        pass


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"nb_episode": -1}, ValueError, "nb_episode"),
        ({"nb_episode": 2.0}, TypeError, "nb_episode"),
        ({"nb_episode": 3, "env_seeds": [1, 2]}, ValueError, "env_seeds has 2 entries"),
        ({"nb_episode": 2, "agent_seeds": [1, 2, 3]}, ValueError, "agent_seeds has 3"),
        ({"nb_episode": 2, "env_seeds": [1, -2]}, ValueError, r"env_seeds\[1\]"),
        ({"nb_episode": 2, "episode_id": [1]}, ValueError, "episode_id has 1"),
        ({"nb_episode": 2, "reset_options": [{}]}, ValueError, "reset_options has 1"),
        ({"nb_episode": 2, "max_iter": 0}, ValueError, "max_iter"),
        ({"nb_episode": 2, "resume": True}, ValueError, "resume=True needs path_save"),
        ({"nb_episode": 2, "pbar": 3}, TypeError, "pbar"),
    ],
)
def test_bad_run_arguments_rejected_before_any_step(kwargs, error, message):
    env = sync(1)
    runner = Runner(env, DoNothingAgent())
    with pytest.raises(error, match=message):
        runner.run(**kwargs)
    assert env.envs[0].unwrapped._t == 0  # never stepped
    env.close()


def test_unwritable_path_save_rejected(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = sync(1)
    with pytest.raises(ValueError, match="not a writable directory"):
        Runner(env, DoNothingAgent()).run(1, path_save=blocker / "run")
    env.close()


def test_bad_agents_and_envs_rejected():
    env = sync(2)
    with pytest.raises(TypeError, match=r"lacks method\(s\) \['seed'\]"):
        Runner(env, NoSeed())
    with pytest.raises(TypeError, match="neither a batched policy"):
        Runner(env, object())
    with pytest.raises(ValueError, match="action_space"):
        Runner(env, RandomAgent(spaces.Discrete(5)))
    with pytest.raises(ValueError, match="not in Discrete"):
        Runner(env, DoNothingAgent(action=7))
    with pytest.raises(ValueError, match="seed must be"):
        Runner(env, DoNothingAgent(), seed=-1)
    with pytest.raises(TypeError, match="env must be"):
        Runner(ToyEnv(), DoNothingAgent())
    env.close()
    same_step = sync(1, AutoresetMode.SAME_STEP)
    with pytest.raises(ValueError, match="SAME_STEP"):
        Runner(same_step, DoNothingAgent())
    same_step.close()


def test_batched_policy_sees_the_whole_batch():
    seen = []

    def policy(obs):
        seen.append(obs.shape)
        return np.ones(obs.shape[0], dtype=np.int64)

    results = run_with(3, policy, nb_episode=4)
    assert set(seen) == {(3, 4)}
    assert sum(r.steps for r in results) <= len(seen) * 3
