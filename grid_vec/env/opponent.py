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
    """The configuration of a random branch attacker (its state per env: OpponentBatch)."""

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
        self.targets = np.zeros(0, dtype=np.int64)  # branch indices, set by bind()

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
        self.targets = np.unique(np.asarray(targets, dtype=np.int64))


class OpponentBatch:
    """The state of one opponent per env of a batch (the rule of the module docstring,
    applied to every env at once); each env draws its targets from its own RNG."""

    def __init__(self, config: RandomLineOpponent, n_envs: int) -> None:
        self.config = config
        self.budget = np.full(n_envs, config.initial_budget)
        self.attacked = np.full(n_envs, -1, dtype=np.int64)  # branch under attack, -1 = none
        self.remaining = np.zeros(n_envs, dtype=np.int64)  # steps it stays down, this one too
        self.cooldown = np.zeros(n_envs, dtype=np.int64)
        self.rngs: list[np.random.Generator] = [np.random.default_rng(0)] * n_envs

    def reset(self, rows: np.ndarray, rngs: list[np.random.Generator]) -> None:
        """Start the episodes of ``rows``: full initial budget, no attack, their RNGs."""
        self.budget[rows] = self.config.initial_budget
        self.attacked[rows] = -1
        self.remaining[rows] = 0
        self.cooldown[rows] = 0
        for row, rng in zip(rows.tolist(), rngs, strict=True):
            self.rngs[row] = rng

    def step(self, rows: np.ndarray, line_status: np.ndarray) -> np.ndarray:
        """Advance ``rows`` one step; return, per row, the branch newly attacked or -1."""
        c = self.config
        self.budget[rows] += c.budget_per_step
        attacking = self.attacked[rows] >= 0
        remaining = self.remaining[rows] - attacking
        self.remaining[rows] = remaining
        going_on = attacking & (remaining > 0)
        self.budget[rows[going_on]] -= c.attack_cost
        over = rows[attacking & ~going_on]
        self.attacked[over] = -1
        self.cooldown[over] = c.attack_cooldown
        free = ~going_on
        cooling = free & (self.cooldown[rows] > 0)
        self.cooldown[rows[cooling]] -= 1
        ready = free & ~cooling & (self.budget[rows] >= c.attack_cost * c.attack_duration)
        attacks = np.full(len(rows), -1, dtype=np.int64)
        targets = c.targets
        for j in np.flatnonzero(ready).tolist():
            row = int(rows[j])
            candidates = targets[line_status[row, targets]]
            if len(candidates) == 0:
                continue
            branch = int(candidates[self.rngs[row].integers(len(candidates))])
            self.attacked[row] = attacks[j] = branch
            self.remaining[row] = c.attack_duration
            self.budget[row] -= c.attack_cost
        return attacks

    def info(self, row: int) -> dict:
        """One env's opponent: budget, branch under attack (-1: none), steps it stays down."""
        return {
            "budget": float(self.budget[row]),
            "attacked_branch": int(self.attacked[row]),
            "remaining_steps": int(self.remaining[row]),
        }
