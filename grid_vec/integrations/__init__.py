"""Bridges to RL libraries; each submodule imports its library, this package imports none.

- :mod:`grid_vec.integrations.sb3`: any gymnasium vector env (GridVecEnv, Sync/Async) as a
  Stable-Baselines3 ``VecEnv`` (``pip install grid_vec[sb3]``).
"""
