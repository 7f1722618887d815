"""Pool stepping of a batch with heuristics: the turns that end first are handed out first.

With heuristics (:mod:`grid_vec.core.rules.heuristics`) one agent step is followed by the
steps the env plays on its own until the grid needs a decision, so the turns of a batch's
envs end after a different number of steps each. A lockstep ``step`` waits for the longest:
towards its end every ``play_step`` moves one or two envs, and its cost per call, not per
env, dominates (on ``Case14Topology-v0``, 16 envs, about 40 ``play_step`` calls per
lockstep step with 1.6 envs in each).

:class:`TurnPool` plays the same turns (the same rules, in the same order: each env's
trajectory depends only on its own seed and actions) but hands them out as a pool, as
envpool's asynchronous mode does: :meth:`TurnPool.begin` plays the agent's step of some envs,
:meth:`TurnPool.finish` plays the env's own steps of every env whose turn goes on, together,
until ``count`` turns have ended, and returns those (the earliest ended first). The envs
whose turn goes on keep it, with what it has summed so far, for the next call.
"""

from __future__ import annotations

from collections import deque
from dataclasses import fields

import numpy as np

from grid_vec.core.records import REASONS, ActionBatch, StepBatch
from grid_vec.core.rules.heuristics import (
    GridBatch,
    Heuristics,
    agent_step,
    ended_masks,
    merge_own_step,
    own_step,
    still_idle,
)


class TurnPool:
    """The turns of a batch's envs, begun and ended as a pool (see the module docstring).

    Args:
        batch: the batched core.
        heuristics: what the env plays on its own.
        n: the batch's number of envs.
    """

    def __init__(self, batch: GridBatch, heuristics: Heuristics, n: int) -> None:
        self.batch, self.heuristics, self.n = batch, heuristics, n
        self.turns: StepBatch | None = None  # (n rows) each env's turn so far
        self.idle = np.zeros(n, dtype=bool)  # its turn goes on
        self.ended: deque[np.ndarray] = deque()  # rows whose turn ended, earliest first

    @property
    def in_turn(self) -> np.ndarray:
        """(n,) bool: the envs begun and not yet handed out."""
        busy = self.idle.copy()
        for rows in self.ended:
            busy[rows] = True
        return busy

    def ended_count(self) -> int:
        """How many turns have ended and wait to be handed out."""
        return sum(len(rows) for rows in self.ended)

    def begin(self, rows: np.ndarray, action: ActionBatch) -> None:
        """Play the agent's step of ``rows`` (sorted, not in a turn; catalog indices).

        Raises:
            ValueError: some of ``rows`` are in a turn already.
        """
        if self.in_turn[rows].any():
            busy = rows[self.in_turn[rows]].tolist()
            raise ValueError(f"envs {busy} are in a turn already: finish it first")
        result = agent_step(self.batch, self.heuristics, rows, action)
        result.skipped = np.zeros(len(rows), dtype=np.int64)
        self._put(rows, result)
        going = still_idle(self.batch, self.heuristics, rows, result, result.skipped)
        self.idle[rows[going]] = True
        if not going.all():
            self.ended.append(rows[~going])

    def finish(self, count: int) -> tuple[np.ndarray, StepBatch]:
        """Play the env's own steps of every env in a turn until ``count`` turns have ended,
        and hand out the ``count`` that ended first.

        Returns:
            The envs (sorted) and their turns' records, as ``step_with_heuristics`` gives
            them.

        Raises:
            ValueError: fewer than ``count`` envs are in a turn.
        """
        if count > int(self.in_turn.sum()):
            raise ValueError(f"{count} turns asked, {int(self.in_turn.sum())} are begun")
        batch, heuristics, turns = self.batch, self.heuristics, self.turns
        while self.ended_count() < count:  # some turn goes on: enough are begun
            rows = np.flatnonzero(self.idle)
            step = own_step(batch, heuristics, rows)
            assert turns is not None and turns.skipped is not None  # begin() wrote them
            merge_own_step(turns, step, rows)
            turns.skipped[rows] += 1
            going = still_idle(batch, heuristics, rows, step, turns.skipped[rows])
            done = rows[~going]
            if len(done):
                ended_masks(batch, turns, done, done)
                self.idle[done] = False
                self.ended.append(done)
        taken: list[np.ndarray] = []
        need = count
        while need:
            rows = self.ended.popleft()
            if len(rows) > need:
                self.ended.appendleft(rows[need:])
                rows = rows[:need]
            taken.append(rows)
            need -= len(rows)
        rows = np.sort(np.concatenate(taken)) if taken else np.zeros(0, dtype=np.intp)
        return rows, self._take(rows)

    def discard(self, rows: np.ndarray) -> None:
        """Forget the turns of ``rows`` (reset: their episodes start again)."""
        self.idle[rows] = False
        drop = np.zeros(self.n, dtype=bool)
        drop[rows] = True
        kept = (r[~drop[r]] for r in self.ended)
        self.ended = deque(r for r in kept if len(r))

    # --- the turns' records: one row per env of the batch -----------------------------

    def _put(self, rows: np.ndarray, result: StepBatch) -> None:
        """Write the agent's steps of ``rows`` as the start of their turns."""
        if self.turns is None:
            self.turns = _blank(result, self.n)
        turns = self.turns
        for name in _ARRAYS:
            value = getattr(result, name)
            if value is not None:
                getattr(turns, name)[rows] = value
        for name, values in result.other_rewards.items():
            turns.other_rewards[name][rows] = values
        for key in REASONS:
            reasons = getattr(turns, key)
            for row in rows.tolist():
                reasons.pop(row, None)
            for j, text in getattr(result, key).items():
                reasons[int(rows[j])] = text

    def _take(self, rows: np.ndarray) -> StepBatch:
        """The records of ``rows``' turns (row ``j``: env ``rows[j]``), copied."""
        turns = self.turns
        assert turns is not None
        at = {row: j for j, row in enumerate(rows.tolist())}
        arrays = {
            name: None if getattr(turns, name) is None else getattr(turns, name)[rows]
            for name in _ARRAYS
        }
        reasons = {
            key: {at[row]: text for row, text in getattr(turns, key).items() if row in at}
            for key in REASONS
        }
        others = {name: values[rows] for name, values in turns.other_rewards.items()}
        return StepBatch(**arrays, other_rewards=others, **reasons)


# the StepBatch fields that are arrays with one row per env (or None): all but the dicts
_ARRAYS = tuple(
    f.name for f in fields(StepBatch) if f.name not in REASONS and f.name != "other_rewards"
)


def _blank(result: StepBatch, n: int) -> StepBatch:
    """An ``n``-row record laid out as ``result`` (its arrays zero, no reason)."""

    def rows_of(value: np.ndarray | None) -> np.ndarray | None:
        return None if value is None else np.zeros((n, *value.shape[1:]), dtype=value.dtype)

    arrays = {name: rows_of(getattr(result, name)) for name in _ARRAYS}
    others = {name: np.zeros(n, dtype=v.dtype) for name, v in result.other_rewards.items()}
    return StepBatch(**arrays, other_rewards=others)
