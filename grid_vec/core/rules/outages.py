"""Line outages the scenarios plan (maintenance, hazards), played as grid2op plays them.

Each step, after the agent's action and before the power flow (grid2op's order: the
agent's action, then the environment's, then the opponent's attack, which grid_vec plays
first on lines that were connected, so the order changes nothing), every line that a
maintenance or a hazard takes out at this step is disconnected, whatever the agent asked
for it. After the power flow and the timers of the step (:func:`~grid_vec.core.state.
update_timers`), a line in maintenance gets ``time_before_cooldown_line`` of at least the
steps its maintenance still lasts, and a line hit by a hazard at least the steps the hazard
still lasts; so the agent cannot reconnect it (illegal) while the outage lasts, and once it
is over the line stays disconnected until the agent reconnects it. On reset the outages of
the first step are played too, then every timer starts at 0 (grid2op's reset step).

The observation carries, per line, ``time_next_maintenance`` (steps before the next
maintenance, 0 while it lasts, -1 when none is planned) and ``duration_next_maintenance``
(its duration; while it lasts, the steps left; 0 when none is planned).

A scenario source without outages (synthetic scenarios, folders without the files, or
``maintenance=False``) costs one check per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grid_vec.core.state import BatchState, any_true, disconnect
from grid_vec.core.topology import TopologyLayout


@dataclass
class OutageRows:
    """The outages of one step of ``k`` envs, ``(k, n_branch)`` int arrays."""

    time: np.ndarray  # steps before the next maintenance, 0 while it lasts, -1: none
    duration: np.ndarray  # its duration (while it lasts: the steps left), 0: none
    hazard: np.ndarray  # while a hazard lasts: the steps left, else 0

    @property
    def out(self) -> np.ndarray:
        """Lines the environment disconnects at this step."""
        return (self.time == 0) | (self.hazard > 0)

    def next_step(self) -> OutageRows:
        """What the next step will hold as far as this step tells (for ``simulate``): a
        running outage goes on or ends, the next maintenance comes one step closer."""
        time, duration = self.time, self.duration
        ahead = time >= 1
        going_on = (time == 0) & (duration >= 2)
        return OutageRows(
            np.where(ahead, time - 1, np.where(going_on, 0, -1)),
            np.where(ahead, duration, np.where(going_on, duration - 1, 0)),
            np.maximum(self.hazard - 1, 0),
        )


def take_out(
    state: BatchState, layout: TopologyLayout, rows: np.ndarray, outages: OutageRows
) -> None:
    """Disconnect the lines the outages of this step take out (the environment's action)."""
    out = outages.out
    if not any_true(out):
        return
    mask = np.zeros_like(state.line_status)
    mask[rows] = out
    disconnect(state, layout, mask)


def hold_cooldowns(
    state: BatchState, rows: np.ndarray, outages: OutageRows, alive: np.ndarray
) -> None:
    """After the step's timers: a line in maintenance or hit by a hazard cannot change
    status while it lasts. ``alive``: (k,) the rows still playing (no game over)."""
    held = np.maximum(np.where(outages.time == 0, outages.duration, 0), outages.hazard)
    if not any_true(held[alive]):
        return
    r = rows[alive]
    state.cooldown_line[r] = np.maximum(state.cooldown_line[r], held[alive])
