"""The zero-copy observation view on one observation and on batches of them."""

import numpy as np
import pytest

import grid_vec


@pytest.fixture(scope="module")
def env():
    return grid_vec.make("case14")


def test_view_of_a_batch_has_the_batch_axes_and_shares_memory(env):
    obs, _ = env.reset(seed=0)
    steps = [obs] + [env.step(0)[0] for _ in range(4)]
    batch = np.stack(steps)
    view = env.unwrapped.view(batch)
    assert view.rho.shape == (5, env.unwrapped.model.n_branch)
    for t, single in enumerate(steps):
        np.testing.assert_array_equal(view.rho[t], env.unwrapped.view(single).rho)
    view.rho[0, 0] = 42.0  # a view, not a copy
    assert batch[0][env.unwrapped.obs_layout.slices["rho"]][0] == 42.0


def test_view_rejects_arrays_of_another_size_and_scalars(env):
    with pytest.raises(ValueError, match=r"shape \(\d+,\) or \(\.\.\., \d+\)"):
        env.unwrapped.view(np.zeros((3, 7), dtype=np.float32))
    with pytest.raises(ValueError, match="got float"):
        env.unwrapped.view(1.0)


def test_plot_episode_draws_rho_and_reward_and_replay_saves_the_plot(tmp_path, env):
    pytest.importorskip("matplotlib", reason="needs the bench extra (matplotlib)")
    from grid_vec.cli import main
    from grid_vec.runner import load_run, plot_episode

    save = tmp_path / "run"
    argv = ["run", "--episodes", "1", "--num-envs", "1", "--max-iter", "10", "--no-progress"]
    assert main([*argv, "--save", str(save)]) == 0
    (episode,) = load_run(save)
    assert episode.meta["env_id"] == "grid_vec/Case14-v0"
    fig = plot_episode(episode, view=env.unwrapped.view, path=tmp_path / "ep.png")
    rho_axes, reward_axes = fig.axes  # rho per branch above the reward
    rho = env.unwrapped.view(episode.observations).rho
    assert rho.shape == (len(episode.observations), env.unwrapped.model.n_branch)
    curves = rho_axes.lines[: rho.shape[1]]  # one per branch, then the limit at rho = 1
    assert len(rho_axes.lines) == rho.shape[1] + 1
    for branch, line in enumerate(curves):
        np.testing.assert_array_equal(line.get_ydata(), rho[:, branch])
    (reward_line,) = reward_axes.lines
    # the default reward pays 1 a step: drawn as its running sum (a flat line says nothing)
    assert np.all(episode.rewards == episode.rewards[0])
    np.testing.assert_array_equal(reward_line.get_ydata(), np.cumsum(episode.rewards))
    assert (tmp_path / "ep.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["replay", str(save)]) == 0
    assert (episode.path / "episode.png").read_bytes()[:4] == b"\x89PNG"
