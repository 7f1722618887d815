"""PufferLib's multiprocessing vector env, timed on request: the PufferLib side of
``bench_vector.py``, run by the interpreter that has ``pufferlib-core`` (its own venv when
its dependencies clash with ours).

    python benchmarks/puffer_probe.py --envs 8 --workers 2

Prints ``ready``; then, for each line ``STEPS MAX_SECONDS`` read on stdin, steps the vector
env up to STEPS times (stopping after MAX_SECONDS) and prints the seconds per batch step.
Closes the env at the end of stdin. Needs ``grid_vec`` importable (PYTHONPATH) only for the
env factory.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time

import numpy as np
import pufferlib.emulation
import pufferlib.vector


def _puffer_env(factory, buf=None, seed=0):
    return pufferlib.emulation.GymnasiumPufferEnv(env_creator=factory, buf=buf, seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--factory", default="grid_vec.bench.workloads:TrivialEnv")
    parser.add_argument("--kwargs", default="{}")
    args = parser.parse_args()
    module, _, name = args.factory.partition(":")
    factory = functools.partial(
        getattr(importlib.import_module(module), name), **json.loads(args.kwargs)
    )
    envs = pufferlib.vector.make(
        functools.partial(_puffer_env, factory),
        backend=pufferlib.vector.Multiprocessing,
        num_envs=args.envs,
        num_workers=args.workers,
        batch_size=args.envs,
        overwork=True,  # allowed to run more workers than cores: the case measured
    )
    actions = np.zeros((args.envs, *envs.single_action_space.shape), envs.single_action_space.dtype)
    envs.reset(seed=0)
    print("ready", flush=True)
    try:
        for line in sys.stdin:
            steps, max_s = int(line.split()[0]), float(line.split()[1])
            start = time.perf_counter()
            done = 0
            while done < steps and time.perf_counter() - start < max_s:
                envs.step(actions)
                done += 1
            print((time.perf_counter() - start) / done, flush=True)
    finally:
        envs.close()


if __name__ == "__main__":
    main()
