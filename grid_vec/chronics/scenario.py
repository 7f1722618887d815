"""What the environment reads from any scenario source (synthetic or grid2op-format folder).

A scenario is a time series at a fixed resolution (5 minutes by default) of every injection,
in :class:`~grid_vec.grid.model.GridModel` element order, plus the forecast of the next step.
The environment only ever sees :class:`ScenarioInfo` and :class:`Injections`, never which
source produced them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScenarioInfo:
    """Identity and extent of one scenario."""

    id: int  # index of the scenario in its source (stable, not the shuffled position)
    name: str
    start: dt.datetime
    step_duration: dt.timedelta
    length: int  # number of steps in the scenario


@dataclass(frozen=True)
class Injections:
    """Injections over a window of steps, arrays of shape ``(steps, n_elements)``, float64.

    ``load_p``/``load_q`` in MW/MVAr per load, ``gen_p`` in MW and ``gen_v`` in kV per
    generator (slack included: its ``gen_p`` is a target the slack may deviate from).
    The ``*_forecast`` arrays hold, at row ``t``, the forecast made at step ``t`` of step
    ``t + 1``.
    """

    load_p: np.ndarray
    load_q: np.ndarray
    gen_p: np.ndarray
    gen_v: np.ndarray
    load_p_forecast: np.ndarray
    load_q_forecast: np.ndarray
    gen_p_forecast: np.ndarray
    gen_v_forecast: np.ndarray

    def __len__(self) -> int:
        return self.load_p.shape[0]
