"""The Runner over a GridVecEnv whose workers crash (``restart_on_crash=True``): an episode lost
to a crash is played again, never recorded truncated; one that always crashes is named."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cloudpickle
import pytest
import runner_toy_envs
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from runner_toy_envs import StatefulRandomAgent, ToyEnv

from grid_vec.runner import Runner
from grid_vec.runner.episode_loop import MAX_LOSSES, EpisodeLostError
from grid_vec.vector import GridVecEnv

# the envs travel by value into the workers, which need not import tests/
cloudpickle.register_pickle_by_value(runner_toy_envs)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CRASHING_SCENARIO = 3


class CrashingEnv(ToyEnv):
    """ToyEnv whose worker process dies (``os._exit``) at step 2 of scenario 3; only the first
    time when ``once`` (a file in ``flags`` then remembers it, across processes)."""

    def __init__(self, flags: str, once: bool) -> None:
        super().__init__()
        self.flags, self.once = Path(flags), once

    def step(self, action):
        if self._scenario == CRASHING_SCENARIO and self._t == 1:
            crashed = self.flags / "crashed"
            if not (self.once and crashed.exists()):
                crashed.touch()
                os._exit(3)
        return super().step(action)


def _run(env, nb_episode: int = 6):
    return Runner(env, StatefulRandomAgent(3), seed=3).run(
        nb_episode, episode_id=list(range(nb_episode))
    )


def _crashing_vec_env(tmp_path: Path, once: bool) -> GridVecEnv:
    fns = [lambda: CrashingEnv(str(tmp_path), once)] * 2
    return GridVecEnv(fns, envs_per_worker=1, restart_on_crash=True)


@pytest.mark.filterwarnings("ignore:.*restarting sub-envs")
def test_episode_lost_to_a_worker_crash_is_played_again_not_recorded_truncated(tmp_path):
    reference_env = SyncVectorEnv([ToyEnv], autoreset_mode=AutoresetMode.NEXT_STEP)
    reference = _run(reference_env)
    reference_env.close()
    env = _crashing_vec_env(tmp_path, once=True)
    try:
        results = _run(env)
        assert env.restarts == 1  # the crash happened, in episode 3's sub-env
    finally:
        env.close()
    assert results == reference  # episode 3 included: replayed whole, with its seeds
    assert reference[CRASHING_SCENARIO].steps > 1


@pytest.mark.filterwarnings("ignore:.*restarting sub-envs")
def test_episode_that_always_crashes_its_worker_is_named(tmp_path):
    env = _crashing_vec_env(tmp_path, once=False)
    try:
        with pytest.raises(EpisodeLostError, match=r"episode 3 \(scenario 'toy-3'.*sub-env"):
            _run(env)
        assert env.restarts == MAX_LOSSES
    finally:
        env.close()
