"""(observation, action) pairs of a recorded run, for imitation (behaviour cloning).

A run recorded by ``grid-vec run`` (or ``Runner(..., path_save=DIR)``) holds, per episode,
the observations (the reset's first, then one per step) and the actions played
(:mod:`grid_vec.runner.recording`). The pair of step ``t`` is the observation the agent
decided on, ``observations[t]``, and the action it played, ``actions[t]``; with a task's
heuristics those are the decision points only (the steps the env played on its own are
inside a step). To record an expert on a task's training split and read it back::

    grid-vec run --env grid_vec/Case14Combined-v0 --agent expert --episodes 64 \\
        --num-envs 2 --max-iter 2016 --save runs/expert14

.. code-block:: python

    import grid_vec
    from grid_vec.runner.imitation import load_pairs

    env = grid_vec.make("grid_vec/Case14Combined-v0")
    pairs = load_pairs("runs/expert14", env.action_space)
    pairs.observations  # (N, obs_dim) float32
    pairs.actions  # {"continuous": (N, 5) float32, "topology": (N,) int64}

A recorded run may come from anyone: its files are read by
:func:`~grid_vec.runner.episode_data.iter_run` (bounded reads, nothing unpickled, arrays
checked against ``meta.json``), one episode at a time, at most ``max_pairs`` pairs in all;
every action is checked against the action space the caller names (the one recorded must be
it; a ``Dict`` action, stored flattened, must have exactly one 1 in each ``Discrete``
one-hot part; a ``Box`` value must be finite and within its bounds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from grid_vec.runner.episode_data import EpisodeDataError, iter_run

__all__ = ["MAX_PAIRS", "Pairs", "load_pairs", "unflatten_actions"]

MAX_PAIRS = 10_000_000  # about 10 GB of case14 observations: a bound, not a target
_TOL = 1e-5  # a Box value this far past its bounds is accepted (float32 rounding)


@dataclass(frozen=True)
class Pairs:
    """The (observation, action) pairs of a run, in episode then step order.

    Attributes:
        observations: ``(N, ...)`` the observation of each decision, as recorded.
        actions: the action of each decision, batched as the action space batches them:
            ``(N,)`` int64 (``Discrete``), ``(N, ...)`` (``Box``), a dict of those
            (``Dict``, e.g. ``{"continuous": (N, size), "topology": (N,)}``).
        episodes: ``(N,)`` the episode index of each pair.
    """

    observations: np.ndarray
    actions: Any
    episodes: np.ndarray

    def __len__(self) -> int:
        return len(self.episodes)


def load_pairs(
    path: str | os.PathLike[str], action_space: spaces.Space, *, max_pairs: int = MAX_PAIRS
) -> Pairs:
    """The (observation, action) pairs of every complete episode recorded under ``path``.

    Args:
        path: the run directory.
        action_space: the single action space the run was recorded with (an env's
            ``action_space``); the actions are read back in its form.
        max_pairs: the most pairs read (a run holding more is refused before the episode
            that passes it is kept).

    Returns:
        The pairs (none for a run without a complete episode).

    Raises:
        EpisodeDataError: (an ``UntrustedFileError``, a ValueError) the run cannot be read
            (:func:`~grid_vec.runner.episode_data.iter_run`), was recorded with another
            action space or observations of other shapes, holds more than ``max_pairs``
            pairs, or an action outside ``action_space``; the message names the file.
    """
    observations, actions, episodes = [], [], []
    total = 0
    for episode in iter_run(path):
        where = episode.path / "arrays.npz"
        recorded = episode.meta.get("action_space")
        if recorded != repr(action_space):
            raise EpisodeDataError(
                f"{episode.path / 'meta.json'}: recorded with action space "
                f"{str(recorded)[:120]}, not {repr(action_space)[:120]}"
            )
        if not len(episode):  # ended at its reset: no decision (its actions hold none)
            continue
        total += len(episode)
        if total > max_pairs:
            raise EpisodeDataError(f"{path}: more than max_pairs={max_pairs} pairs")
        if observations and episode.observations.shape[1:] != observations[0].shape[1:]:
            raise EpisodeDataError(
                f"{where}: observations of shape {episode.observations.shape[1:]}, the "
                f"run's first episode's are {observations[0].shape[1:]}"
            )
        observations.append(episode.observations[:-1])
        actions.append(unflatten_actions(action_space, episode.actions, where=str(where)))
        episodes.append(np.full(len(episode), episode.result.episode, dtype=np.int64))
    if not episodes:
        empty = np.zeros((0, 0), dtype=np.float32)
        none = unflatten_actions(action_space, _empty(action_space))
        return Pairs(empty, none, np.zeros(0, dtype=np.int64))
    return Pairs(
        np.concatenate(observations),
        _concatenate(action_space, actions),
        np.concatenate(episodes),
    )


def unflatten_actions(space: spaces.Space, recorded: np.ndarray, where: str = "actions") -> Any:
    """Recorded actions in the batched form of ``space``, checked against it.

    Args:
        space: a ``Discrete``, ``Box`` or ``Dict`` of those (a ``Dict`` action is recorded
            flattened: each part's columns in key order, a ``Discrete`` part one-hot).
        recorded: ``(T, ...)`` the recorded actions.
        where: what to name in an error (the file).

    Returns:
        ``(T,)`` int64 indices, ``(T, ...)`` Box values (the space's dtype), or a dict of
        them.

    Raises:
        EpisodeDataError: an action outside ``space`` or of another shape.
        TypeError: a space of another kind.
    """
    recorded = np.asarray(recorded)
    if isinstance(space, spaces.Dict):
        _check(recorded.ndim == 2 and recorded.shape[1] == spaces.flatdim(space), where, space)
        out, start = {}, 0
        for key, part in space.spaces.items():
            stop = start + spaces.flatdim(part)
            columns = recorded[:, start:stop]
            if isinstance(part, spaces.Discrete):
                ones = columns == 1
                _check(
                    bool(((columns == 0) | ones).all() and (ones.sum(1) == 1).all()), where, part
                )
                out[key] = np.argmax(columns, axis=1).astype(np.int64) + int(part.start)
            else:
                out[key] = unflatten_actions(part, columns.reshape(-1, *part.shape), where)
            start = stop
        return out
    if isinstance(space, spaces.Discrete):
        _check(recorded.ndim == 1 and recorded.dtype.kind in "iu", where, space)
        lo, hi = int(space.start), int(space.start) + int(space.n)
        _check(bool(((recorded >= lo) & (recorded < hi)).all()), where, space)
        return recorded.astype(np.int64)
    if isinstance(space, spaces.Box):
        _check(recorded.shape[1:] == space.shape and recorded.dtype.kind in "fiu", where, space)
        values = recorded.astype(space.dtype)
        inside = (values >= space.low - _TOL) & (values <= space.high + _TOL)
        _check(bool(np.isfinite(values).all() and inside.all()), where, space)
        return values
    raise TypeError(f"recorded actions of a {type(space).__name__} space are not read back")


def _check(ok: bool, where: str, space: spaces.Space) -> None:
    if not ok:
        raise EpisodeDataError(f"{where}: recorded actions outside {repr(space)[:120]}")


def _empty(space: spaces.Space) -> np.ndarray:
    """No recorded action, as :func:`unflatten_actions` reads ``space``'s."""
    if isinstance(space, spaces.Dict):
        return np.zeros((0, spaces.flatdim(space)))
    if isinstance(space, spaces.Discrete):
        return np.zeros(0, dtype=np.int64)
    return np.zeros((0, *space.shape), dtype=space.dtype)


def _concatenate(space: spaces.Space, parts: list[Any]) -> Any:
    if isinstance(space, spaces.Dict):
        return {key: np.concatenate([p[key] for p in parts]) for key in space.spaces}
    return np.concatenate(parts)
