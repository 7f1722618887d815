"""core layer: the batched game of N envs of one grid, without gymnasium (see
docs/architecture.md). ``GridBatch`` (:mod:`~grid_vec.core.batch`) plays reset, step and
simulate over a leading env axis; the records at its seams are in
:mod:`~grid_vec.core.records`, the rules in :mod:`grid_vec.core.rules`, the rewards in
:mod:`grid_vec.core.rewards`. The gymnasium face (GridEnv, make) is :mod:`grid_vec.env`."""
