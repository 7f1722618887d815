"""N-1 screening: each env's flows if one branch went out now, every branch of a list in
turn, from the env's current state (its injections and topology after its last step), the
env untouched. Operators screen contingencies this way; grid2op's ``N1Reward`` and
lightsim2grid's ``ContingencyAnalysis`` compute the same. The flows come from each env's
backend (:meth:`~grid_vec.grid.backend.Backend.outage_currents`: lightsim2grid's compiled
analysis on the default backend); an outage that cuts a load or a generator off, or whose
power flow diverges, is a game over, as the same outage in a step would be.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from grid_vec.core.state import BatchState
from grid_vec.core.topology import TopologyLayout, unsolvable
from grid_vec.grid.model import GridModel


@dataclass(kw_only=True)
class ContingencyResults:
    """The N-1 screening of ``N`` envs over ``m`` branches (a GridEnv's: ``N`` = 1 dropped,
    so arrays start with ``m``).

    Attributes:
        branches: (m,) the branches taken out, one at a time.
        rho: (N, m, n_branch) float64, every branch's flow over its thermal limit with that
            branch out (NaN where the outage ends the game).
        max_rho: (N, m) float64, the highest of them (``inf`` where the outage ends the game).
        game_over_reason: (N, m) object array of str, why the outage ends the game ("" where
            it does not).
    """

    branches: np.ndarray
    rho: np.ndarray
    max_rho: np.ndarray
    game_over_reason: np.ndarray

    def env(self, i: int) -> ContingencyResults:
        """Env ``i``'s results (arrays starting with ``m``)."""
        per_env = {f.name: getattr(self, f.name)[i] for f in fields(self) if f.name != "branches"}
        return ContingencyResults(branches=self.branches, **per_env)

    @classmethod
    def stack(cls, per_env: list[ContingencyResults]) -> ContingencyResults:
        """Several envs' results (each a GridEnv's) as one record of ``(N, m, ...)`` arrays."""
        stacked = {
            f.name: np.stack([getattr(r, f.name) for r in per_env])
            for f in fields(cls)
            if f.name != "branches"
        }
        return cls(branches=per_env[0].branches, **stacked)


def branch_indices(model: GridModel, branches: Any) -> np.ndarray:
    """Branch names or indices as (m,) int64 indices (None: every branch of ``model``).

    Raises:
        ValueError: an unknown name, an index out of range, or no branch.
    """
    n = model.n_branch
    if branches is None:
        return np.arange(n)
    names = {str(name): i for i, name in enumerate(model.branch_names)}
    out = []
    for b in np.atleast_1d(np.asarray(branches, dtype=object)).tolist():
        if isinstance(b, str) and b in names:
            out.append(names[b])
        elif isinstance(b, (int, np.integer)) and not isinstance(b, bool) and 0 <= b < n:
            out.append(int(b))
        else:
            raise ValueError(f"branches: {b!r} is not a branch name nor an index in [0, {n - 1}]")
    if not out:
        raise ValueError("branches: give at least one branch")
    return np.array(out, dtype=np.int64)


def screen(
    state: BatchState,
    model: GridModel,
    layout: TopologyLayout,
    inv_limit: np.ndarray,
    rows: np.ndarray,
    branches: np.ndarray,
) -> ContingencyResults:
    """The N-1 screening of ``rows`` of ``state`` (solved: their episodes running).

    Args:
        state: the batch's state.
        model: its grid.
        layout: its topology layout.
        inv_limit: (1, n_branch) the inverse of the thermal limits.
        rows: the envs.
        branches: (m,) the branches to take out, one at a time.

    Returns:
        The results, ``(len(rows), m, ...)``.
    """
    m, n_branch = len(branches), model.n_branch
    rho = np.full((len(rows), m, n_branch), np.nan)
    reasons = np.full((len(rows), m), "", dtype=object)
    topos = state.topo[rows]
    # every row's outages solved in one call (the rows' topologies as the solver last got them)
    currents = state.solver.outage_currents(
        rows, branches, topos[:, layout.pos_load], topos[:, layout.pos_gen],
        topos[:, layout.pos_or], topos[:, layout.pos_ex],
    )  # fmt: skip
    for i, topo in enumerate(topos):
        amps = currents[i]
        # each outage's topology, all checked in one call (a cut-off load or generator)
        outs = np.repeat(topo[None], m, axis=0)
        outs[np.arange(m), layout.pos_or[branches]] = -1
        outs[np.arange(m), layout.pos_ex[branches]] = -1
        for j, reason in enumerate(unsolvable(model, layout, outs)):
            if reason is None and np.isnan(amps[j]).any():
                reason = "power flow diverged"
            if reason is None:
                rho[i, j] = amps[j] * inv_limit[0]
            else:
                reasons[i, j] = reason
    max_rho = np.where(reasons == "", rho.max(axis=2), np.inf)  # NaN rows: the game ends
    return ContingencyResults(
        branches=branches.copy(), rho=rho, max_rho=max_rho, game_over_reason=reasons
    )


class OutageFlows:
    """The N-1 currents of the rows of a turn just played, computed when first asked for:
    what a reward that prices a contingency reads (grid2op's ``N1Reward``), at no cost to the
    turns of the rewards that read none (:class:`~grid_vec.core.rewards.base.RewardInputs`'
    ``outages``).

    Args:
        state: the batch's state after the turn.
        model: its grid.
        layout: its topology layout.
        rows: the turn's rows (indices of ``state``).
        solved: (len(rows),) bool, the rows whose state is solved (no game over): the others
            get NaN currents.
    """

    def __init__(
        self,
        state: BatchState,
        model: GridModel,
        layout: TopologyLayout,
        rows: np.ndarray,
        solved: np.ndarray,
        *,
        one_env: bool = False,
    ) -> None:
        self._state, self._model, self._layout = state, model, layout
        self._rows, self._solved = rows, solved
        self._one_env = one_env  # a per-env reward's view: currents without the env axis
        self._currents: dict[int, np.ndarray] = {}

    def __getitem__(self, i: int) -> OutageFlows:
        """Row ``i``'s alone, its currents ``(n_branch,)`` (what a per-env reward gets)."""
        return OutageFlows(
            self._state, self._model, self._layout, self._rows[i : i + 1],
            self._solved[i : i + 1], one_env=True,
        )  # fmt: skip

    def currents(self, branch: int | str) -> np.ndarray:
        """Each row's origin currents (A) with ``branch`` (an index or a name) out (already
        out: as the row stands), NaN where that outage cuts a load or a generator off,
        disconnects the slack or diverges, and in the rows not solved.

        Returns:
            (len(rows), n_branch) float64; a per-env view's: (n_branch,).

        Raises:
            ValueError: ``branch`` is not one branch's index or name.
        """
        indices = branch_indices(self._model, branch)
        if len(indices) != 1:
            raise ValueError(f"currents: give one branch, got {branch!r}")
        branch = int(indices[0])
        if branch not in self._currents:
            out = np.full((len(self._rows), self._model.n_branch), np.nan)
            alive = np.flatnonzero(self._solved)
            if len(alive):
                ones = np.ones((1, self._model.n_branch))  # rho = amps * 1
                found = screen(
                    self._state, self._model, self._layout, ones, self._rows[alive],
                    np.array([branch]),
                )  # fmt: skip
                out[alive] = found.rho[:, 0]
            self._currents[branch] = out
        found = self._currents[branch]
        return found[0] if self._one_env else found
