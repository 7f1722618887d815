"""grid2op's limits on look-ahead, per env: ``max_simulate_per_step`` and
``max_simulate_per_episode`` (:class:`~grid_vec.core.parameters.Parameters`; negative: no
limit), counted for the envs of a batch. A ``simulate_candidates`` call of ``k`` candidates
counts ``k`` simulates, all or none.
"""

from __future__ import annotations

import numpy as np

from grid_vec.core.parameters import Parameters


class SimulateBudget:
    """The simulates each of ``n`` envs has played this step and this episode.

    Args:
        n: the number of envs.
    """

    def __init__(self, n: int) -> None:
        # simulates since the step counted in at_step (a step does not zero the count: the
        # first simulate after it does)
        self.this_step = np.zeros(n, dtype=np.int64)
        self.at_step = np.zeros(n, dtype=np.int64)
        self.this_episode = np.zeros(n, dtype=np.int64)

    def new_episode(self, rows: np.ndarray) -> None:
        """``rows`` start an episode: nothing simulated yet."""
        self.this_step[rows] = 0
        self.this_episode[rows] = 0

    def charge(self, rows: np.ndarray, k: int, steps: np.ndarray, parameters: Parameters) -> None:
        """Count ``k`` simulates of each of ``rows``, whose envs have played ``steps`` steps
        in all, or raise counting nothing.

        Raises:
            RuntimeError: a limit would be exceeded (naming it).
        """
        this_step = np.where(self.at_step[rows] != steps, 0, self.this_step[rows])
        for name, count, limit in (
            ("max_simulate_per_step", this_step, parameters.max_simulate_per_step),
            ("max_simulate_per_episode", self.this_episode[rows],
             parameters.max_simulate_per_episode),
        ):  # fmt: skip
            if limit >= 0 and (count + k > limit).any():
                raise RuntimeError(f"{name}={limit} reached")
        self.at_step[rows] = steps
        self.this_step[rows] = this_step + k
        self.this_episode[rows] += k

    def used(self, row: int, steps: int) -> tuple[int, int]:
        """Env ``row``'s simulates this step (the env has played ``steps`` steps in all) and
        this episode."""
        this_step = int(self.this_step[row]) if self.at_step[row] == steps else 0
        return this_step, int(self.this_episode[row])

    def set_used(self, row: int, used: tuple[int, int], steps: int) -> None:
        """Env ``row`` has played ``used`` (a :meth:`used`) simulates this step (it has
        played ``steps`` steps in all) and this episode."""
        self.at_step[row] = steps
        self.this_step[row], self.this_episode[row] = used
