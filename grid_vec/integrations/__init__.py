"""Bridges to RL libraries and engines; each submodule imports its library, this package none.

- :mod:`grid_vec.integrations.grid2op`: grid2op's agents, unchanged, on a GridEnv of the same
  folder (``Grid2opAgentPolicy``: grid2op's observation objects built from grid_vec's, their
  ``simulate`` grid_vec's, grid2op's actions as the general topology action;
  ``pip install grid_vec[grid2op]``).
- :mod:`grid_vec.integrations.sb3`: any gymnasium vector env (GridVecEnv, Sync/Async) as a
  Stable-Baselines3 ``VecEnv`` (``pip install grid_vec[sb3]``).
- :mod:`grid_vec.integrations.ray`: the Runner's Ray executor (episodes played by Ray actors,
  ``Runner(..., executor=RayExecutor())``, ``grid-vec run --ray``; ``pip install grid_vec[ray]``).
- :mod:`grid_vec.integrations.ray_vec_env`: ``RayVecEnv``, a gymnasium vector env whose
  sub-envs live in Ray actors (for sub-envs slower than a Ray round trip, or many machines).
"""
