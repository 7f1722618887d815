"""The replay plot says why an episode ended: the most loaded branches named in a legend, a
marker at every step where a branch tripped, the game-over reason in the title."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import grid_vec
from grid_vec.runner import Runner, load_run, plot_episode
from grid_vec.runner.agents import DoNothingAgent
from grid_vec.runner.plot import LEGEND_BRANCHES

pytest.importorskip("matplotlib", reason="needs the bench extra (matplotlib)")


def _tight_case14():
    """case14 with its branches rated 60% of the calibration: lines trip within a day."""
    limits = grid_vec.make("case14").unwrapped.model.thermal_limit_a * 0.6
    return grid_vec.make("case14", thermal_limits=limits)


@pytest.fixture(scope="module")
def tripping_episode(tmp_path_factory):
    save = tmp_path_factory.mktemp("run")
    runner = Runner([functools.partial(_tight_case14)], agent=DoNothingAgent())
    try:
        runner.run(1, max_iter=288, path_save=save)
    finally:
        runner.close()
    (episode,) = load_run(save)
    return episode


def test_the_replay_plot_names_the_most_loaded_branches_in_its_legend(tripping_episode):
    env = _tight_case14()
    names = env.unwrapped.model.branch_names
    fig = plot_episode(tripping_episode, view=env.unwrapped.view, branch_names=names)
    rho = env.unwrapped.view(tripping_episode.observations).rho
    most_loaded = np.argsort(-rho.max(axis=0), kind="stable")[:LEGEND_BRANCHES]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [label.split(" (max")[0] for label in legend] == sorted(
        (names[b] for b in most_loaded), key=lambda n: list(names).index(n)
    )


def test_the_replay_plot_marks_every_step_where_a_branch_tripped(tripping_episode):
    tripped = tripping_episode.info("tripped_branches")
    trip_steps = (np.flatnonzero(tripped.any(axis=1)) + 1).tolist()
    assert trip_steps, "the tight grid trips a line (else this test shows nothing)"
    fig = plot_episode(tripping_episode)
    reward_axes = fig.axes[-1]
    markers = [line.get_xdata()[0] for line in reward_axes.lines[1:]]  # after the reward
    assert markers == trip_steps


def test_the_plot_title_and_ending_give_the_game_over_reason(tripping_episode):
    assert tripping_episode.result.terminated
    reason = str(tripping_episode.info("game_over_reason")[-1])
    assert reason and tripping_episode.ending == reason
    fig = plot_episode(tripping_episode)
    assert f"ended: {reason}" in fig.texts[0].get_text()


def test_a_reward_paying_the_same_every_step_is_drawn_as_its_running_sum(tripping_episode):
    rewards = np.asarray(tripping_episode.rewards, dtype=float)
    reward_axes = plot_episode(tripping_episode).axes[-1]
    drawn = reward_axes.lines[0].get_ydata()
    if np.all(rewards == rewards[0]):
        np.testing.assert_array_equal(drawn, np.cumsum(rewards))
        assert reward_axes.get_ylabel().startswith("reward summed")
    else:
        np.testing.assert_array_equal(drawn, rewards)
        assert reward_axes.get_ylabel() == "reward"
    assert len(np.unique(drawn)) > 1, "the reward panel is a flat line"
