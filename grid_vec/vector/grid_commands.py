"""Grid commands of a vector env whose sub-envs are GridEnvs (the seed's command set).

Mixed into :class:`~grid_vec.vector.vec_env.GridVecEnv`. Each command is a per-env
``call_each`` of the GridEnv method of the same meaning, so the vector layer needs to know
only the method names, not the env layer itself. Being calls, they are bounded by
``step_timeout`` as a step is: a worker that exceeds it is killed (restarted with
``restart_on_crash``) and the command raises ``WorkerTimeoutError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array, iterate


class GridCommands:
    """Scenario control, look-ahead simulation, parameters and timings for every sub-env."""

    num_envs: int
    single_observation_space: Any
    action_space: Any
    call_each: Callable[..., tuple[Any, ...]]
    call: Callable[..., tuple[Any, ...]]
    reset: Callable[..., tuple[Any, dict[str, Any]]]

    def _per_env(self, name: str, value: Any, what: str) -> list[Any]:
        """``value`` for every sub-env: one value for all, or a sequence of ``num_envs``."""
        if isinstance(value, Sequence) and not isinstance(value, str):
            if len(value) != self.num_envs:
                raise ValueError(
                    f"{name} needs one {what} for all envs or a sequence of {self.num_envs}, "
                    f"got {len(value)}"
                )
            return list(value)
        return [value] * self.num_envs

    def _each(self, method: str, values: list[Any]) -> tuple[Any, ...]:
        return self.call_each(method, args=[(v,) for v in values])

    def set_scenario_id(self, ids: int | str | Sequence[int | str]) -> None:
        """Choose the scenario each sub-env plays at its next reset.

        Args:
            ids: a scenario index or name for all sub-envs, or one per sub-env.

        Raises:
            ValueError: a sequence whose length is not ``num_envs``.
            Exception: a sub-env's own error (e.g. an unknown scenario), re-raised with its
                index; and the errors of :meth:`GridVecEnv.call`.
        """
        self._each("set_scenario_id", self._per_env("set_scenario_id", ids, "id"))

    def set_scenario_filter(self, fns: Callable[[str], bool] | Sequence[Callable]) -> None:
        """Restrict each sub-env's scenarios to the names a callable accepts.

        Args:
            fns: one ``name -> bool`` callable for all sub-envs, or one per sub-env.

        Raises:
            TypeError: a value that is not callable.
            ValueError: a sequence whose length is not ``num_envs``.
            Exception: a sub-env's own error, re-raised with its index.
        """
        values = self._per_env("set_scenario_filter", fns, "callable")
        for fn in values:
            if not callable(fn):
                raise TypeError(f"set_scenario_filter needs callables, got {fn!r}")
        self._each("set_scenario_filter", values)

    def set_fast_forward(self, max_steps: int | Sequence[int]) -> None:
        """At each reset, skip a random number of steps in ``[0, max_steps)`` (0: none).

        Args:
            max_steps: one bound for all sub-envs, or one per sub-env.

        Raises:
            ValueError: a sequence whose length is not ``num_envs``.
            Exception: a sub-env's own error (e.g. an unknown scenario), re-raised with its
                index; and the errors of :meth:`GridVecEnv.call`.
        """
        self._each("set_fast_forward", self._per_env("set_fast_forward", max_steps, "int"))

    def set_chunk_size(self, n: int | None) -> None:
        """Set the steps each sub-env reads from its scenario source at a time.

        Args:
            n: steps per read, or None for whole scenarios.

        Raises:
            Exception: a sub-env's own error (e.g. ``n`` < 1), re-raised with its index.
        """
        self.call("set_chunk_size", n)

    def set_max_iter(self, n: int | None) -> None:
        """Cap the steps of every episode of every sub-env.

        Args:
            n: the cap, or None for the scenario's length.

        Raises:
            Exception: a sub-env's own error, re-raised with its index.
        """
        self.call("set_max_iter", n)

    def get_parameters(self) -> tuple[Any, ...]:
        """Read the game rules of each sub-env.

        Returns:
            One ``Parameters`` per sub-env.
        """
        return self.call("get_wrapper_attr", "parameters")

    def set_parameters(self, parameters: Any) -> None:
        """Apply game rules to the sub-envs.

        Args:
            parameters: one ``Parameters`` for all sub-envs, or one per sub-env.

        Raises:
            ValueError: a sequence whose length is not ``num_envs``.
            Exception: a sub-env's own error (e.g. an unknown scenario), re-raised with its
                index; and the errors of :meth:`GridVecEnv.call`.
        """
        self._each("set_parameters", self._per_env("set_parameters", parameters, "Parameters"))

    def timings(self) -> tuple[dict[str, float], ...]:
        """Read each sub-env's cumulative timings and counts.

        Returns:
            One dict per sub-env: the cumulative seconds per phase of ``step`` (action, power
            flow, observation, total) and of ``simulate``, and the counts of steps, simulates
            and resets.
        """
        return self.call("timings")

    def simulate(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, tuple[dict, ...]]:
        """Look one step ahead on each sub-env's forecast with its action, states untouched.

        Args:
            actions: one action per sub-env, batched as in ``action_space``.

        Returns:
            Batched ``(observations, rewards, terminated, infos)``; ``infos`` is one dict per
            sub-env.

        Raises:
            ValueError: ``actions`` outside ``action_space``.
            WorkerTimeoutError: a worker exceeded ``step_timeout`` (see the module).
            Exception: a sub-env's own error, re-raised with its index.
        """
        if not self.action_space.contains(actions):
            raise ValueError(f"simulate needs actions in {self.action_space}, got {actions!r}")
        per_env = list(iterate(self.action_space, actions))
        results = self.call_each("simulate", args=[(a,) for a in per_env])
        obs = create_empty_array(self.single_observation_space, n=self.num_envs)
        obs = concatenate(self.single_observation_space, [r[0] for r in results], obs)
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=np.bool_)
        return obs, rewards, terminated, tuple(r[3] for r in results)

    def simulate_candidates(self, candidates: Any, horizon: int = 1) -> Any:
        """Simulate ``K`` candidate actions of every sub-env at once, each on the forecast
        of the sub-env's next step from its current state, or with ``horizon`` H > 1, ``K``
        sequences of H actions on the forecasts of the next H steps
        (``GridEnv.simulate_candidates``); states untouched (each candidate's step counts as
        one simulate of its sub-env).

        Args:
            candidates: ``(num_envs, K)`` catalog indices, ``(num_envs, K, size)`` floats,
                or a dict of both (combined actions): the same ``K`` for every sub-env; for
                ``horizon`` > 1, with a horizon axis after ``K``.
            horizon: the steps ahead.

        Returns:
            A :class:`~grid_vec.core.records.CandidateResults` of ``(num_envs, K, ...)``
            arrays (``(num_envs, K, H, ...)`` for ``horizon`` > 1): observations, rewards,
            terminated, illegal, ambiguous, max_rho, overloaded, game_over_reason, played.

        Raises:
            ValueError: candidates not shaped ``(num_envs, K, ...)``, or outside the action
                space (naming the sub-env), or a horizon a sub-env does not forecast.
            RuntimeError: a sub-env whose episode is over, or a simulate budget.
            WorkerTimeoutError: a worker exceeded ``step_timeout`` (see the module).
        """
        self._candidate_count(candidates)
        if isinstance(candidates, dict):
            arrays = {key: np.asarray(v) for key, v in candidates.items()}
            per_env = [{key: v[i] for key, v in arrays.items()} for i in range(self.num_envs)]
        else:
            per_env = list(np.asarray(candidates))
        results = self.call_each("simulate_candidates", args=[(c, horizon) for c in per_env])
        return type(results[0]).stack(list(results))

    def _candidate_count(self, candidates: Any) -> int:
        """``K``, the candidates per sub-env (checked: ``num_envs`` of the same ``K``)."""
        n = self.num_envs
        leaves = list(candidates.values()) if isinstance(candidates, dict) else [candidates]
        shapes = [np.shape(leaf) for leaf in leaves]
        if any(len(s) < 2 or s[0] != n or s[1] != shapes[0][1] for s in shapes):
            raise ValueError(
                f"candidates must be shaped (num_envs={n}, K, ...), the same K in every part; "
                f"got shapes {shapes}"
            )
        return shapes[0][1]

    def snapshot(self, index: int) -> Any:
        """Sub-env ``index``'s whole game state as plain arrays (``GridEnv.snapshot``'s
        :class:`~grid_vec.core.snapshot.GridSnapshot`); every sub-env untouched.

        Raises:
            IndexError: no sub-env ``index``.
            RuntimeError: that sub-env was never reset.
        """
        return self.call_each("snapshot", [self._index(index)])[0]  # that sub-env's worker only

    def restore(self, index: int, snapshot: Any) -> tuple[Any, dict[str, Any]]:
        """Put sub-env ``index`` in the state of ``snapshot`` (of any sub-env, or any env of
        the same make arguments): from there it plays bitwise what the snapshot's env
        played. The same as ``reset(options={"state": snapshot, "reset_mask": mask})`` with
        ``mask`` the sub-env alone (which restores several sub-envs at once).

        Returns:
            ``reset``'s batched observations and infos (the other sub-envs' unchanged).

        Raises:
            IndexError: no sub-env ``index``.
            TypeError, ValueError: not a snapshot, or one of another grid or configuration
                (naming the field).
        """
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[self._index(index)] = True
        return self.reset(options={"state": snapshot, "reset_mask": mask})

    def _index(self, index: Any) -> int:
        if (
            isinstance(index, bool)
            or not isinstance(index, (int, np.integer))
            or not 0 <= index < self.num_envs
        ):
            raise IndexError(f"no sub-env {index!r}: num_envs is {self.num_envs}")
        return int(index)

    def contingencies(self, branches: Any = None) -> Any:
        """The N-1 screening of every sub-env's current state: every branch's flow with each
        of ``branches`` out alone (states untouched).

        Args:
            branches: branch names or indices (None: every branch), the same for all.

        Returns:
            A :class:`~grid_vec.core.contingency.ContingencyResults` of ``(num_envs, m, ...)``
            arrays: ``rho``, ``max_rho``, ``game_over_reason``.

        Raises:
            ValueError: an unknown branch (naming the sub-env).
            RuntimeError: a sub-env whose episode is over.
        """
        results = self.call("contingencies", branches)
        return type(results[0]).stack(list(results))
