"""A scenario source restricted to some of another's scenarios: the split of a task
(training, validation, test), so that an env of one split never plays another's scenarios."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from grid_vec.chronics.scenario import Injections, ScenarioInfo, ScenarioSource


class SubsetSource:
    """The scenarios ``ids`` of ``source``, as ids ``0 .. len(ids) - 1`` (names kept).

    Args:
        source: any scenario source.
        ids: distinct scenario ids of ``source``, in the order the subset numbers them.

    Raises:
        ValueError: no id, a repeated id, or an id ``source`` does not have.
    """

    def __init__(self, source: ScenarioSource, ids: Sequence[int]) -> None:
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError("a scenario subset needs at least one scenario id")
        if len(set(ids)) != len(ids):
            raise ValueError("scenario ids of a subset must be distinct")
        bad = [i for i in ids if not 0 <= i < len(source)]
        if bad:
            raise ValueError(
                f"scenario id {bad[0]} is not one of the source's 0..{len(source) - 1}"
            )
        self.inner = source
        self.ids = tuple(ids)
        self.model = getattr(source, "model", None)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def names(self) -> list[str]:
        inner = self.inner.names
        return [inner[i] for i in self.ids]

    def _inner_id(self, scenario_id: int) -> int:
        if not 0 <= int(scenario_id) < len(self.ids):
            raise ValueError(f"scenario id must be in [0, {len(self.ids) - 1}], got {scenario_id}")
        return self.ids[int(scenario_id)]

    def info(self, scenario_id: int) -> ScenarioInfo:
        info = self.inner.info(self._inner_id(scenario_id))
        return dataclasses.replace(info, id=int(scenario_id))

    def read(self, scenario_id: int, start: int, stop: int) -> Injections:
        return self.inner.read(self._inner_id(scenario_id), start, stop)

    @property
    def forecasts_chain(self) -> bool:
        """The inner source's (see :class:`~grid_vec.chronics.handler.ScenarioHandler`)."""
        return bool(getattr(self.inner, "forecasts_chain", False))

    def maintenance_plan(self, scenario_id: int) -> Any:
        plan_of = getattr(self.inner, "maintenance_plan", None)
        return None if plan_of is None else plan_of(self._inner_id(scenario_id))
