"""RayVecEnv on a running Ray cluster, checked against the in-process batch.

Builds ``make_vec(grid, envs, vectorization="ray", envs_per_worker=...)`` on the cluster at
ADDRESS (one actor per slice, each stepping its slice as one batch of the engine), lists the
cluster's alive nodes, plays ``--steps`` steps of seeded random catalog actions beside
``make_vec(grid, envs, vectorization="batched")`` in this process and stops at the first
observation, reward or flag that differs (none should).

    python examples/ray_vec_env_cluster.py HEAD_IP:6379 [--envs 8] [--envs-per-actor 4]

Needs the ray extra (``pip install -e '.[ray]'``) on the driver and every node; on a cluster
with token authentication, ``RAY_AUTH_MODE=token`` and the cluster's token (see
docs/scaling.md, "Starting a cluster").
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ray

import grid_vec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="the cluster's address, e.g. HEAD_IP:6379, or auto")
    parser.add_argument("--grid", default="case14")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--envs-per-actor", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    envs = grid_vec.make_vec(
        args.grid,
        args.envs,
        vectorization="ray",
        envs_per_worker=args.envs_per_actor,
        vector_kwargs={"ray_address": args.address},
    )
    reference = grid_vec.make_vec(args.grid, args.envs, vectorization="batched")
    try:
        print(f"RayVecEnv up in {time.perf_counter() - start:.1f} s; batched: {envs.batched}")
        nodes = [node for node in ray.nodes() if node["Alive"]]
        print(f"{len(nodes)} alive nodes, CPUs {[n['Resources'].get('CPU') for n in nodes]}")
        obs, _ = envs.reset(seed=args.seed)
        np.testing.assert_array_equal(obs, reference.reset(seed=args.seed)[0])
        rng = np.random.default_rng(args.seed)
        for t in range(args.steps):
            actions = rng.integers(0, envs.single_action_space.n, args.envs)
            for name, a, b in zip(
                ("observations", "rewards", "terminated", "truncated"),
                envs.step(actions)[:4],
                reference.step(actions)[:4],
                strict=True,
            ):
                np.testing.assert_array_equal(a, b, err_msg=f"step {t}: {name}")
        print(f"{args.steps} random steps equal to make_vec(..., vectorization='batched')")
    finally:
        envs.close()
        reference.close()


if __name__ == "__main__":
    main()
