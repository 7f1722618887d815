"""A slice of sub-envs stepped in this process as a GridVecEnv worker steps its slice: one
batch of the engine when the envs are GridEnvs that can share one, else gymnasium's
``SyncVectorEnv``.

For hosts of a slice that are neither a worker process nor the parent's own slice: a Ray
actor of :class:`~grid_vec.integrations.ray_vec_env.RayVecEnv`, or of the Runner's
:class:`~grid_vec.integrations.ray.RayExecutor`. The test of what can be one batch is the
worker's (:func:`~grid_vec.vector.worker.sharing_one_batch`), and the batch is stepped by
the worker's engine (:class:`~grid_vec.vector.slice_engine.SliceEngine`, behind
:class:`~grid_vec.vector.batched.BatchedGridVecEnv`), so a slice plays here exactly what it
plays in a GridVecEnv worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from grid_vec.vector.worker import close_envs, sharing_one_batch


def slice_vector_env(
    env_fns: Sequence[Callable[[], gym.Env]],
    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
    *,
    copy: bool = True,
) -> VectorEnv:
    """The vector env of a slice of sub-envs, in this process.

    Args:
        env_fns: the slice's env factories, unpickled as one list (one factory repeated,
            as ``make_vec`` hands it out, must stay one object to make one batch).
        autoreset_mode: gymnasium's autoreset mode.
        copy: return copies of the observations (False: the env's own buffers, for a host
            that pickles them at once).

    Returns:
        A :class:`~grid_vec.vector.batched.BatchedGridVecEnv` over the envs as the rows of
        one batch when :func:`~grid_vec.vector.worker.sharing_one_batch` builds them so,
        else a ``SyncVectorEnv`` over ``env_fns``.

    Raises:
        Exception: a factory's error, with its own type.
    """
    envs = sharing_one_batch(env_fns)
    if not envs:
        return SyncVectorEnv(list(env_fns), autoreset_mode=autoreset_mode, copy=copy)
    try:
        # the batched core, imported only for GridEnvs (a slice of other envs never loads it)
        from grid_vec.vector.batched import BatchedGridVecEnv

        return BatchedGridVecEnv(envs, autoreset_mode=autoreset_mode, copy=copy)
    except BaseException:
        close_envs(envs)
        raise
