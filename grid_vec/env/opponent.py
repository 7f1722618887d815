"""A random branch attacker (grid2op's ``RandomLineOpponent`` with a budget, re-imagined).

Each step the opponent earns ``budget_per_step``. When no attack is running, its cooldown
has elapsed and its budget covers a whole attack (``attack_cost * attack_duration``), it
disconnects one connected branch drawn uniformly from ``branches`` for ``attack_duration``
steps, paying ``attack_cost`` per step of attack. The attacked branch cannot be reconnected
while the attack lasts. After an attack it waits ``attack_cooldown`` steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class RandomLineOpponent:
    """Configuration and state of a random branch attacker (state reset per episode)."""

    def __init__(
        self,
        branches: Sequence[int | str],
        *,
        budget_per_step: float = 0.5,
        attack_cost: float = 1.0,
        attack_duration: int = 48,
        attack_cooldown: int = 24,
        initial_budget: float = 0.0,
    ) -> None:
        if isinstance(branches, (str, bytes)) or len(branches) == 0:
            raise ValueError(
                f"branches must be a non-empty list of names or indices, got {branches!r}"
            )
        for name, value in (
            ("budget_per_step", budget_per_step),
            ("attack_cost", attack_cost),
            ("initial_budget", initial_budget),
        ):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
        if attack_cost == 0:
            raise ValueError("attack_cost must be > 0 (a free attack has no budget limit)")
        for name, value in (
            ("attack_duration", attack_duration),
            ("attack_cooldown", attack_cooldown),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if attack_duration == 0:
            raise ValueError("attack_duration must be >= 1")
        self.branches = list(branches)
        self.budget_per_step = float(budget_per_step)
        self.attack_cost = float(attack_cost)
        self.attack_duration = int(attack_duration)
        self.attack_cooldown = int(attack_cooldown)
        self.initial_budget = float(initial_budget)
        self._targets = np.zeros(0, dtype=np.int64)
        self.reset(np.random.default_rng(0))

    def bind(self, branch_names: np.ndarray) -> None:
        """Resolve branch names/indices against the grid (ValueError naming a bad one)."""
        names = list(map(str, branch_names))
        targets = []
        for b in self.branches:
            if isinstance(b, str):
                if b not in names:
                    raise ValueError(f"opponent: unknown branch {b!r}; known: {', '.join(names)}")
                targets.append(names.index(b))
            elif (
                isinstance(b, (int, np.integer)) and not isinstance(b, bool) and 0 <= b < len(names)
            ):
                targets.append(int(b))
            else:
                raise ValueError(
                    f"opponent: branch {b!r} is not a name nor an index in [0, {len(names) - 1}]"
                )
        self._targets = np.unique(np.asarray(targets, dtype=np.int64))

    def reset(self, rng: np.random.Generator) -> None:
        """Start an episode: full initial budget, no attack, using ``rng`` for draws."""
        self._rng = rng
        self.budget = self.initial_budget
        self.attacked = -1  # branch under attack, -1 = none
        self.remaining = 0  # steps the attacked branch stays down, this one included
        self.cooldown = 0

    def step(self, line_status: np.ndarray) -> int:
        """Advance one step; return the branch newly attacked this step, or -1."""
        self.budget += self.budget_per_step
        if self.attacked >= 0:
            self.remaining -= 1
            if self.remaining > 0:
                self.budget -= self.attack_cost
                return -1
            self.attacked = -1
            self.cooldown = self.attack_cooldown
        if self.cooldown > 0:
            self.cooldown -= 1
            return -1
        if self.budget < self.attack_cost * self.attack_duration:
            return -1
        candidates = self._targets[line_status[self._targets]]
        if len(candidates) == 0:
            return -1
        self.attacked = int(candidates[self._rng.integers(len(candidates))])
        self.remaining = self.attack_duration
        self.budget -= self.attack_cost
        return self.attacked

    def info(self) -> dict:
        return {
            "budget": self.budget,
            "attacked_branch": self.attacked,
            "remaining_steps": self.remaining,
        }
