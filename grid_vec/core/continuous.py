"""The continuous part of an action: where each control (redispatch, curtailment, storage)
lies in the flat float vector an agent gives, its bounds, its check and its split into what
the batched core plays (MW of redispatch per generator, curtailment limits per generator, MW
of storage per unit). The gymnasium spaces built on these bounds are in
:mod:`grid_vec.env.action_types`.

The action types, and which controls each one's continuous part holds, are
:mod:`grid_vec.core.action_kinds`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from grid_vec.core.action_kinds import ActionKind
from grid_vec.core.records import CONTROLS, Control
from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.rules.storage import StorageUnits

_TOL = 1e-5  # actions this far outside the box are accepted (float32 rounding)
# what a control acting on each kind of entity needs of the grid, and whether an action type
# of several controls may go without it (a grid without storage units has no storage columns)
_NEEDS = {
    "generator": (
        "the generators' characteristics (prods_charac.csv), which this grid does not have",
        False,
    ),
    "storage": ("storage units, this grid has none", True),
}


class RefusedActions(ValueError):
    """Actions outside the action space; ``rows`` holds the positions, in the batch, of the
    envs whose action is refused (``(0,)`` for one env's action), so that a vector env can
    name them.

    Args:
        message: what is refused and why.
        refused: a bool array, True where a value is refused, ``(k, ...)``: its first axis
            is the batch's (one action: ``k`` = 1).
    """

    def __init__(self, message: str, refused: np.ndarray) -> None:
        super().__init__(message)
        rows = refused.reshape(len(refused), -1).any(axis=1)
        self.rows = tuple(np.flatnonzero(rows).tolist())


@dataclass(frozen=True, eq=False)
class ControlColumns:
    """One control's columns in a flat continuous action."""

    name: str  # its ActionBatch field
    control: Control
    entities: int  # the width of the core's array (generators or storage units)
    columns: np.ndarray  # the entities with a column, in the columns' order
    start: int  # its first column in the flat action
    stop: int  # past its last


@dataclass(frozen=True, eq=False)
class ContinuousLayout:
    """Where each control lies in a continuous action, and its bounds."""

    parts: tuple[ControlColumns, ...]  # in the order of ActionBatch's fields
    low: np.ndarray  # (size,) float32
    high: np.ndarray  # (size,) float32

    @classmethod
    def of(
        cls, kind: ActionKind, limits: GeneratorLimits, storage: StorageUnits | None = None
    ) -> ContinuousLayout | None:
        """The layout of the continuous part of action type ``kind`` on a grid with these
        generators and storage units (None: none).

        Args:
            kind: the action type's record (its ``controls``).
            limits: the generators' characteristics.
            storage: the storage units' characteristics (None: the grid has none).

        Returns:
            The layout of ``kind.controls``, or None for an action type without a continuous
            part (``"discrete"``, ``"set_bus"``).

        Raises:
            ValueError: a control acting on what the grid does not describe: redispatch or
                curtailment on a grid without the generators' characteristics (a folder
                without ``prods_charac.csv``), ``"storage"`` on a grid without storage units.
        """
        if not kind.continuous:
            return None
        parts, low, high, start = [], [], [], 0
        for name, control in CONTROLS.items():
            if control not in kind.controls:
                continue
            of = _characteristics(control.on, limits, storage)
            if of is None:
                needs, optional = _NEEDS[control.on]
                if optional and not kind.alone:
                    continue
                raise ValueError(f"action_type={kind.name!r} needs {needs}")
            columns = np.asarray(control.columns(of), dtype=np.intp)
            lo, hi = control.bounds(of, columns)
            entities = len(limits.pmax) if control.on == "generator" else of.n
            stop = start + len(columns)
            parts.append(ControlColumns(name, control, entities, columns, start, stop))
            low.append(lo)
            high.append(hi)
            start = stop
        return cls(
            tuple(parts),
            np.concatenate(low).astype(np.float32),
            np.concatenate(high).astype(np.float32),
        )

    @property
    def size(self) -> int:
        return len(self.low)

    @property
    def controls(self) -> tuple[str, ...]:
        """The action types of the controls it holds, in the columns' order."""
        return tuple(part.control.action_type for part in self.parts)

    def columns_of(self, action_type: str) -> np.ndarray:
        """The entities (generators, storage units) with a column of the control of
        ``action_type``, in the columns' order (empty: not in this layout)."""
        for part in self.parts:
            if part.control.action_type == action_type:
                return part.columns
        return np.zeros(0, dtype=np.intp)

    def start_of(self, action_type: str) -> int:
        """The first column of the control of ``action_type``.

        Raises:
            KeyError: a control not in this layout.
        """
        for part in self.parts:
            if part.control.action_type == action_type:
                return part.start
        raise KeyError(f"no {action_type} columns in this layout ({self.controls})")

    @property
    def redispatch_gens(self) -> np.ndarray:
        """The generators of the redispatch columns."""
        return self.columns_of("redispatch")

    @property
    def curtail_gens(self) -> np.ndarray:
        """The generators of the curtailment columns."""
        return self.columns_of("curtailment")

    # the bounds with their tolerance, finite (an infinite bound becomes the largest float):
    # then values within them are finite too, and one test of the bounds makes the check
    @cached_property
    def _low_tol(self) -> np.ndarray:
        return np.maximum(self.low - _TOL, np.finfo(self.low.dtype).min)

    @cached_property
    def _high_tol(self) -> np.ndarray:
        return np.minimum(self.high + _TOL, np.finfo(self.high.dtype).max)

    def split(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """(k, size) checked actions -> each control's array as the core plays it, by
        :class:`~grid_vec.core.records.ActionBatch` field (``(k, n_gen)`` MW of
        redispatch, ``(k, n_gen)`` curtailment limits (NaN off the renewables), ``(k,
        n_storage)`` MW of storage): an entity without a column, or whose column leaves it
        unchanged (a curtailment below 0), at the control's neutral value."""
        split = {}
        for part in self.parts:
            control = part.control
            values = np.full((len(actions), part.entities), control.neutral)
            given = actions[:, part.start : part.stop]
            if control.unchanged_below is not None:
                given = np.where(control.asks(given), given, control.neutral)
            values[:, part.columns] = given
            split[part.name] = values
        return split

    def check(self, actions: np.ndarray, what: str) -> None:
        """Raise :class:`RefusedActions` (naming ``what``) unless ``actions`` (one, or a
        batch) are finite and within the bounds, give or take 1e-5."""
        if ((actions >= self._low_tol) & (actions <= self._high_tol)).all():  # NaN, inf fail
            return
        batch = actions if actions.ndim == 2 else actions[None]  # one action: a batch of one
        finite = np.isfinite(batch)
        if not finite.all():
            raise RefusedActions(f"{what} must be finite, got {actions}", ~finite)
        outside = (batch < self._low_tol) | (batch > self._high_tol)
        if outside.any():  # always, past the checks above
            raise RefusedActions(
                f"{what} outside the action space "
                f"({', '.join(part.control.limits for part in self.parts)}): "
                f"low {self.low}, high {self.high}, got {actions}",
                outside,
            )

    def do_nothing(self) -> np.ndarray:
        """The continuous action that changes nothing: every column at its control's
        do-nothing value (a curtailment left unchanged, no redispatch, no storage power)."""
        action = np.empty(len(self.low), dtype=np.float32)
        for part in self.parts:
            action[part.start : part.stop] = part.control.do_nothing
        return action

    def grid2op_action(self, action: np.ndarray) -> dict[str, list[tuple[int, float]]]:
        """One continuous action in grid2op's vocabulary (the dict its ``action_space``
        takes): ``redispatch``, ``curtail`` and ``set_storage`` on every generator / unit of
        the box, but the curtailments left unchanged (below 0), which grid2op is not given:
        its ``curtail`` of them stays -1, "unchanged" (``curtail`` left out when no
        generator's limit is set, as grid2op's action of an agent that does not curtail)."""
        parts = {}
        for part in self.parts:
            values = action[part.start : part.stop]
            asks = part.control.asks(values)
            pairs = [
                (int(e), float(v))
                for e, v, asked in zip(part.columns, values, asks, strict=True)
                if asked
            ]
            if pairs or part.control.unchanged_below is None:
                parts[part.control.grid2op_key] = pairs
        return parts

    def describe(
        self, action: np.ndarray, gen_names: np.ndarray, storage_names: np.ndarray = ()
    ) -> str:
        """One continuous action in words: the generators it moves or curtails, the storage
        units it charges or discharges."""
        words = []
        for part in self.parts:
            names = gen_names if part.control.on == "generator" else storage_names
            for e, value in zip(part.columns, action[part.start : part.stop].tolist(), strict=True):
                said = part.control.words(str(names[e]), float(value))
                if said is not None:
                    words.append(said)
        return "; ".join(words) or "do nothing"


def _characteristics(on: str, limits: GeneratorLimits, storage: StorageUnits | None) -> Any:
    """What a control acting on ``on`` reads of the grid, or None where the grid lacks it."""
    if on == "generator":
        return limits if limits.available else None
    return storage if storage is not None and storage.n > 0 else None
