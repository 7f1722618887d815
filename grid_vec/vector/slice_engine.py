"""The slice engine: GridEnvs that are the rows of one batched core, stepped together.

One implementation of a batch step with gymnasium's autoreset (``NEXT_STEP``, ``SAME_STEP``,
``DISABLED``), used in this process by :class:`~grid_vec.vector.batched.BatchedGridVecEnv`
(its whole batch) and in a GridVecEnv worker (its slice), as PufferLib's worker hosts the
in-process ``Serial`` engine. It writes the observations, rewards and flags into arrays it
is given (the worker's: its rows of the shared block) and keeps the infos columns: the
batch's result as gymnasium batches N GridEnvs' infos (an array per key and its ``_key``
mask, :func:`step_infos`), or, on the usual step where every env's info holds only its
fixed-layout entries, the step's result itself (:attr:`SliceStep.fixed`), whose columns
(:func:`info_columns`) a worker writes into raw records without building an info per env.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import Env
from gymnasium.vector.vector_env import AutoresetMode

from grid_vec.core.batch import GridBatch
from grid_vec.core.records import INFO_COLUMNS, REASONS, ActionBatch, StepBatch, has_reasons
from grid_vec.core.state import any_true, selector
from grid_vec.env.action_input import batch_actions
from grid_vec.vector.declared import is_grid_env


@dataclass(frozen=True)
class SliceStep:
    """What a step of the slice gives besides the arrays the engine writes.

    ``infos``: the batched infos (gymnasium's layout over the slice's ``n`` rows) of a step
    with something beyond the fixed layout (a reset, a reason, an env not stepped); empty
    when ``fixed`` is set. ``fixed``: the result of a step of every row in which every env's
    info is exactly its fixed-layout entries (:func:`info_columns`), else None.
    """

    infos: dict[str, Any]
    fixed: StepBatch | None = None

    def batched_infos(self) -> dict[str, Any]:
        """The infos in gymnasium's batched layout, whichever form the step took."""
        return self.infos if self.fixed is None else fixed_infos(self.fixed)


class SliceEngine:
    """``n`` GridEnvs, rows ``0 .. n-1`` of one batched core, stepped with autoreset.

    Args:
        envs: the GridEnvs, as ``GridEnv.sharing_one_batch`` makes them (or one GridEnv).
        autoreset_mode: gymnasium's autoreset mode.
        obs, rewards, terminated, truncated: the arrays to write each env's outputs in
            (rows ``0 .. n-1``); fresh ones by default.

    Raises:
        ValueError: ``envs`` are not every row of one batch, in order.
    """

    def __init__(
        self,
        envs: Sequence[Any],
        autoreset_mode: AutoresetMode,
        *,
        obs: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
        terminated: np.ndarray | None = None,
        truncated: np.ndarray | None = None,
    ) -> None:
        batch = shared_batch(envs)
        if batch is None:
            raise ValueError("envs must be every row of one batch, in order")
        self.envs = list(envs)
        self.batch: GridBatch = batch
        self.n = n = batch.n
        self.mode = AutoresetMode(autoreset_mode)
        size = envs[0].observation_space.shape
        self.obs = np.zeros((n, *size), dtype=np.float32) if obs is None else obs
        self.rewards = np.zeros(n) if rewards is None else rewards
        self.terminated = np.zeros(n, dtype=bool) if terminated is None else terminated
        self.truncated = np.zeros(n, dtype=bool) if truncated is None else truncated
        self.autoreset = np.zeros(n, dtype=bool)  # NEXT_STEP: reset at the next step
        self.all = np.arange(n, dtype=np.intp)

    def reset(
        self, rows: np.ndarray, seeds: list[int | None], options: list[dict | None]
    ) -> dict[str, Any]:
        """Reset ``rows`` (sorted), each as its own ``GridEnv.reset(seed, options)`` would.

        Returns:
            Their batched infos (``scenario_id``, ``scenario_name``, ``action_mask`` when
            the envs give it), laid out over the slice's ``n`` rows.

        Raises:
            TypeError, ValueError: bad options. RuntimeError: a scenario whose first state
                is already a game over.
        """
        rngs = []
        for row, seed in zip(rows.tolist(), seeds, strict=True):
            env = self.envs[row]
            Env.reset(env, seed=seed)  # the env's RNG, seeded as its own reset seeds it
            rngs.append(env.np_random)
        result = self.batch.reset(rows, rngs, seeds, options)
        self.obs[rows] = result.obs
        self.rewards[rows] = 0.0
        self.terminated[rows] = False
        self.truncated[rows] = False
        # False but for a restored snapshot of an episode over (NEXT_STEP then resets it)
        self.autoreset[rows] = self.batch.game.done[rows]
        return self._reset_infos(rows, result)

    def step(self, rows: np.ndarray, actions: ActionBatch) -> SliceStep:
        """Step ``rows`` (sorted, their episodes running unless ``NEXT_STEP`` resets them
        now) with their parsed ``actions`` (row by row; checked already: the engine plays
        them as they are).

        Raises:
            Exception: the batch's own errors (a row's ``env_index`` may name it).
        """
        infos: dict[str, Any] = {}
        stepping = rows
        if self.mode == AutoresetMode.NEXT_STEP:
            resetting = self.autoreset[rows]
            if any_true(resetting):
                kept = np.flatnonzero(~resetting)
                reset_rows = rows[resetting]
                infos = self.reset(reset_rows, [None] * len(reset_rows), [None] * len(reset_rows))
                stepping = rows[kept]
                actions = actions.rows(kept)
        fixed = None
        if len(stepping):
            fixed = self._played(infos, stepping, self.batch.step(stepping, actions))
        if self.mode == AutoresetMode.NEXT_STEP:
            self.autoreset[rows] = self.terminated[rows] | self.truncated[rows]
        return SliceStep(infos, fixed)

    def begin(self, rows: np.ndarray, actions: ActionBatch) -> None:
        """Pool mode (``SAME_STEP`` or ``DISABLED``): play the agent's step of ``rows``
        (sorted, running, not in a turn); :meth:`finish` plays the rest of their turns
        (:mod:`grid_vec.core.pool`).

        Raises:
            ValueError: ``NEXT_STEP`` autoreset, or some of ``rows`` in a turn already.
        """
        if self.mode == AutoresetMode.NEXT_STEP:
            raise ValueError("pool mode plays SAME_STEP or DISABLED autoreset, not NEXT_STEP")
        self.batch.begin_turns(rows, actions)

    def finish(self, count: int) -> tuple[np.ndarray, dict[str, Any]]:
        """Pool mode: the first ``count`` envs whose turn ended (sorted), their outputs
        written as :meth:`step` writes them, and the batched infos over the slice's rows.

        Raises:
            ValueError: fewer than ``count`` envs in a turn.
        """
        rows, result = self.batch.finish_turns(count)
        infos: dict[str, Any] = {}
        fixed = self._played(infos, rows, result)
        return rows, infos if fixed is None else fixed_infos(fixed)

    def _played(self, infos: dict[str, Any], stepping: np.ndarray, result: StepBatch) -> Any:
        """Write the step of ``stepping`` (reset those it ended with ``SAME_STEP``); its
        infos added to ``infos``, or the step itself returned when it is every row's and
        its infos are the fixed layout (see :attr:`SliceStep.fixed`), else None."""
        at = selector(stepping, self.n)  # every row: slices, no gather-scatter of the block
        self.obs[at] = result.obs
        self.rewards[at] = result.reward
        self.terminated[at] = result.terminated
        self.truncated[at] = result.truncated
        ended = result.terminated | result.truncated
        if self.mode == AutoresetMode.SAME_STEP and any_true(ended):
            self._reset_ended(infos, result, stepping, ended)
        elif not infos and len(stepping) == self.n and not has_reasons(result):
            return result
        else:
            _merge(infos, step_infos(result, self.all[: len(stepping)], stepping, self.n))
        return None

    def _reset_ended(
        self, infos: dict[str, Any], result: StepBatch, stepping: np.ndarray, ended: np.ndarray
    ) -> None:
        """SAME_STEP: reset the envs whose episode just ended, their last step's infos under
        ``final_info`` and observations under ``final_obs`` (gymnasium's layout)."""
        n = self.n
        done_pos = np.flatnonzero(ended)
        kept_pos = np.flatnonzero(~ended)
        done_rows = stepping[done_pos]
        final_obs = np.full(n, None, dtype=object)
        for j, row in zip(done_pos.tolist(), done_rows.tolist(), strict=True):
            final_obs[row] = result.obs[j].copy()
        infos["final_obs"] = final_obs
        infos["_final_obs"] = _mask(n, done_rows)
        infos["final_info"] = step_infos(result, done_pos, done_rows, n)
        infos["_final_info"] = _mask(n, done_rows)
        _merge(infos, step_infos(result, kept_pos, stepping[kept_pos], n))
        # the flags stay those of the step that ended; the observation is the new episode's
        terminated, truncated = self.terminated[done_rows], self.truncated[done_rows]
        _merge(infos, self.reset(done_rows, [None] * len(done_rows), [None] * len(done_rows)))
        self.terminated[done_rows], self.truncated[done_rows] = terminated, truncated
        self.rewards[done_rows] = result.reward[done_pos]

    def _reset_infos(self, rows: np.ndarray, result: StepBatch) -> dict[str, Any]:
        n = self.n
        ids = np.zeros(n, dtype=int)
        names = np.full(n, None, dtype=object)
        for row in rows.tolist():
            info = self.batch.game.scenarios.handlers[row].info
            ids[row], names[row] = info.id, info.name
        return {
            "scenario_id": ids,
            "_scenario_id": _mask(n, rows),
            "scenario_name": names,
            "_scenario_name": _mask(n, rows),
            **_masks("action_mask", result.action_mask, self.all[: len(rows)], rows, n),
            **_masks("safe_mask", result.safe_mask, self.all[: len(rows)], rows, n),
        }


def parse(batch: GridBatch, actions: np.ndarray, *, checked: bool) -> ActionBatch:
    """The batch's form of a slice's actions (a ``Discrete`` or ``Box`` space's array),
    checked as GridEnvs check them (``batch_actions``) unless ``checked`` already (by
    GridVecEnv, for the whole batch, before sending it): then only parsed.

    Raises:
        ValueError: unchecked actions outside the envs' action space.
    """
    if not checked:
        return batch_actions(batch, actions)
    if batch.continuous is None:
        return ActionBatch(actions.astype(np.int64, copy=False))
    return ActionBatch(np.zeros(len(actions), dtype=np.int64), **batch.continuous.split(actions))


def shared_batch(envs: Sequence[Any]) -> GridBatch | None:
    """The batched core whose rows 0..n-1 are exactly ``envs`` (GridEnvs), or None."""
    if not envs or not all(is_grid_env(env) for env in envs):
        return None
    batch = envs[0].batch_row[0]
    if batch.n != len(envs):
        return None
    for k, env in enumerate(envs):
        if env.batch_row != (batch, k):
            return None
    return batch


def info_columns(result: StepBatch) -> dict[str, Any]:
    """The fixed-layout info entries of a step, one column per key (one row per env played;
    ``other_rewards`` a dict of columns), in the order of a GridEnv's ``info``
    (:func:`grid_vec.core.records.env_info`): what every step's info holds, reasons aside."""
    columns: dict[str, Any] = {column.key: getattr(result, column.field) for column in INFO_COLUMNS}
    if result.other_rewards:
        columns["other_rewards"] = result.other_rewards
    if result.action_mask is not None:
        columns["action_mask"] = result.action_mask
    if result.safe_mask is not None:
        columns["safe_mask"] = result.safe_mask
    if result.skipped is not None:
        columns["skipped_steps"] = result.skipped
    return columns


def fixed_infos(result: StepBatch) -> dict[str, Any]:
    """The batched infos of a step of every env whose infos hold the fixed layout only."""
    n = len(result.reward)

    def batched(columns: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        present = np.ones((len(columns), n), dtype=np.bool_)  # a row each: one allocation
        for (key, column), mask in zip(columns.items(), present, strict=True):
            out[key] = batched(column) if isinstance(column, dict) else _as_info(column)
            out[f"_{key}"] = mask
        return out

    return batched(info_columns(result))


def _as_info(column: np.ndarray) -> np.ndarray:
    """A column as gymnasium batches the envs' values: int64, float64 or bool, copied."""
    kind = column.dtype.kind
    dtype = np.bool_ if kind == "b" else np.int64 if kind in "iu" else np.float64
    return np.array(column, dtype=dtype)


def step_infos(result: StepBatch, positions: np.ndarray, rows: np.ndarray, n: int) -> dict:
    """The infos of the given rows of a step (``positions`` in ``result``), laid out as
    gymnasium's ``_add_info`` lays out the infos of N GridEnvs (an array per key, a ``_key``
    mask of the envs that have it)."""
    if not len(rows):
        return {}
    mask = _mask(n, rows)

    def placed(column: np.ndarray) -> np.ndarray:
        array = np.zeros((n, *column.shape[1:]), dtype=_as_info(column[:0]).dtype)
        array[rows] = column[positions]
        return array

    infos: dict[str, Any] = {}
    reasons_added = False
    for key, column in info_columns(result).items():
        if key in ("action_mask", "safe_mask", "skipped_steps") and not reasons_added:
            _add_reasons(infos, result, positions, rows, n)  # a GridEnv's info order
            reasons_added = True
        if isinstance(column, dict):
            others: dict[str, Any] = {}
            for name, values in column.items():
                others[name], others[f"_{name}"] = placed(values), mask.copy()
            infos[key], infos[f"_{key}"] = others, mask.copy()
        else:
            infos[key], infos[f"_{key}"] = placed(column), mask.copy()
    if not reasons_added:
        _add_reasons(infos, result, positions, rows, n)
    return infos


def _add_reasons(
    infos: dict[str, Any], result: StepBatch, positions: np.ndarray, rows: np.ndarray, n: int
) -> None:
    """The reasons of the rows that have one (an object column, masked)."""
    for key in REASONS:
        reasons = getattr(result, key)
        if not reasons:
            continue
        pairs = zip(positions.tolist(), rows.tolist(), strict=True)
        present = [(r, reasons[j]) for j, r in pairs if j in reasons]
        if present:
            array = np.full(n, None, dtype=object)
            where = np.zeros(n, dtype=bool)
            for r, text in present:
                array[r], where[r] = text, True
            infos[key], infos[f"_{key}"] = array, where


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


def _masks(
    key: str, masks: np.ndarray | None, positions: np.ndarray, rows: np.ndarray, n: int
) -> dict[str, Any]:
    """The ``key`` infos (an action mask: ``action_mask``, ``safe_mask``) of the given rows
    (none when the envs give none)."""
    if masks is None:
        return {}
    array = np.zeros((n, masks.shape[1]), dtype=bool)
    array[rows] = masks[positions]
    return {key: array, f"_{key}": _mask(n, rows)}


def _merge(infos: dict[str, Any], more: dict[str, Any]) -> None:
    """Add the infos of other envs (``more``) to ``infos``, as gymnasium's ``_add_info``
    adds them: a key both have (a reset's and a step's ``action_mask``) keeps each env's
    value."""
    for key, value in more.items():
        if key.startswith("_") and key[1:] in more:
            continue  # a mask: with its key
        has = more[f"_{key}"]
        if key in infos and not isinstance(value, dict):
            infos[key][has] = value[has]
            has = infos[f"_{key}"] | has
        else:
            infos[key] = value
        infos[f"_{key}"] = has
