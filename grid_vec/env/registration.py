"""Gymnasium registration of the embedded environments (imports gymnasium only).

``gymnasium.make("grid_vec/Case14-v0", **kwargs)`` calls :func:`grid_vec.env.make.make`; so
does a named task's id (``gymnasium.make("grid_vec/Case14Topology-v0", split="test")``).
``gymnasium.make_vec("grid_vec/Case14-v0", num_envs)`` builds a GridVecEnv through
:func:`grid_vec.vector.make_vec` (pass ``vectorization_mode="sync"`` or ``"async"`` for
gymnasium's own vector envs).
"""

from __future__ import annotations

# gymnasium ids -> embedded grid names
GYM_IDS = {"grid_vec/Case14-v0": "case14", "grid_vec/Case118-v0": "case118"}

VECTOR_ENTRY_POINT = "grid_vec.vector.make_vec:make_vec"


def register_envs() -> None:
    """Register every gymnasium id once (idempotent): the embedded grids and the named tasks
    (:mod:`grid_vec.env.tasks`)."""
    import gymnasium as gym

    from grid_vec.env.tasks import TASKS

    for env_id, name in {**GYM_IDS, **{task_id: task_id for task_id in TASKS}}.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="grid_vec.env.make:make",
            vector_entry_point=VECTOR_ENTRY_POINT,
            kwargs={"id_or_path": name},
        )
