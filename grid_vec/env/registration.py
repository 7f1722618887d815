"""Gymnasium registration of the embedded environments (imports gymnasium only).

``gymnasium.make("grid_vec/Case14-v0", **kwargs)`` calls :func:`grid_vec.env.make.make`.
``VECTOR_ENTRY_POINT`` is the slot for ``gymnasium.make_vec``: the integrator sets it to the
GridVecEnv factory once the vector layer lands (None: gymnasium's own vectorisation).
"""

from __future__ import annotations

from collections.abc import Callable

# gymnasium ids -> embedded grid names
GYM_IDS = {"grid_vec/Case14-v0": "case14", "grid_vec/Case118-v0": "case118"}

VECTOR_ENTRY_POINT: str | Callable | None = None


def register_envs() -> None:
    """Register every gymnasium id once (idempotent)."""
    import gymnasium as gym

    for env_id, name in GYM_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="grid_vec.env.make:make",
            vector_entry_point=VECTOR_ENTRY_POINT,
            kwargs={"id_or_path": name},
        )
