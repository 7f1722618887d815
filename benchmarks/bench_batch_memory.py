"""Memory of the batched engine: resident memory per extra env of a batch, and of a
GridVecEnv worker process hosting 16 envs.

Each measurement runs in a fresh process: it builds a batch of N envs, resets it and plays
50 do-nothing steps (so that every env has solved and holds its results), then reads its
resident set size (``VmRSS``). The cost of an extra env is the slope between N = 1 and
N = 65 (the parent process holds pandapower, imported to compile the grid; workers never
import it). The worker's figure is its ``VmRSS`` after the same 50 steps.
JSON: OUT/bench_batch_memory.json (with --out OUT).

    python benchmarks/bench_batch_memory.py [--grids case14 case118]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from grid_vec.bench import add_out_argument, write_result

PROBE = """
import sys, warnings
import numpy as np
import grid_vec
warnings.simplefilter("ignore")
grid, n = sys.argv[1], int(sys.argv[2])
envs = grid_vec.make_vec(grid, n, vectorization="batched")
envs.reset(seed=0)
for _ in range(50):
    envs.step(np.zeros(n, dtype=np.int64))
for line in open("/proc/self/status"):
    if line.startswith("VmRSS"):
        print(int(line.split()[1]) / 1024)
"""


WORKER_PROBE = """
import os, sys, warnings
import numpy as np
import grid_vec
warnings.simplefilter("ignore")
envs = grid_vec.make_vec(sys.argv[1], 16, envs_per_worker=16)
envs.reset(seed=0)
for _ in range(50):
    envs.step(np.zeros(16, dtype=np.int64))
for pid in os.listdir("/proc"):
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        continue
    if f"PPid:\\t{os.getpid()}\\n" in status:
        print(int(status.split("VmRSS:")[1].split()[0]) / 1024)
envs.close()
"""


def rss_mb(grid: str, n: int, probe: str = PROBE) -> float:
    out = subprocess.run(
        [sys.executable, "-c", probe, grid, str(n)], capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="+", default=["case14", "case118"])
    add_out_argument(parser)
    args = parser.parse_args()
    rows = []
    for grid in args.grids:
        one, sixteen, many = rss_mb(grid, 1), rss_mb(grid, 16), rss_mb(grid, 65)
        worker = rss_mb(grid, 16, WORKER_PROBE)
        per_env = (many - one) / 64
        rows.append({"grid": grid, "rss_1_mb": one, "rss_16_mb": sixteen, "rss_65_mb": many,
                     "mb_per_extra_env": per_env, "worker_16_envs_mb": worker})  # fmt: skip
        print(f"{grid}: batch of 1 {one:.1f} MB, 16 {sixteen:.1f} MB, 65 {many:.1f} MB: "
              f"{per_env * 1024:.0f} KB per extra env; a GridVecEnv worker of 16 envs "
              f"{worker:.1f} MB")  # fmt: skip
    write_result(rows, args.out, "bench_batch_memory.json", indent=2)


if __name__ == "__main__":
    main()
