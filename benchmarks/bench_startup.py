"""Start-up: ``grid_vec.make`` (first call, then cached) and a vector env to its first step.

Each repetition runs in a fresh Python process, so imports and compiling count as a user
sees them, with bytecode caching on (as Python runs by default, whatever
``PYTHONDONTWRITEBYTECODE`` says here), after one untimed run that fills the caches.
Measured side by side, alternating:

* ``make("case14")``: the first call in a process (the compiled grid read from the disk
  cache, ``grid_vec.grid.model_cache``), the same with that cache off
  (``GRID_VEC_CACHE_DIR=off``: pandapower imported, the grid compiled), then a second call
  (the compiled model is also cached per process);
* with grid2op installed, the same first and second calls of ``make`` on its
  ``l2rpn_case14_sandbox`` folder (a dataset folder: ``config.py``, the rules files and
  the scenarios' folder read; the second call reads only what changes per env, the folder's
  ``config.py`` record kept with its compiled entry);
* ``make_vec("case14", N)`` (GridVecEnv) against gymnasium's ``AsyncVectorEnv`` over the same
  ``env_factory("case14")`` factories: seconds from the constructor call to the end of the
  first ``reset`` + ``step``, the grid already compiled in the parent (as in training scripts
  that build envs after ``make``). GridVecEnv as it starts by default (the probe runs one
  thread, so its workers are forked, see grid_vec/vector/launch.py) and with
  ``context="spawn"`` (fresh interpreters, what a parent running threads gets);
  AsyncVectorEnv with the platform's default start method (``fork`` on Linux) and with
  ``spawn``.

Medians over ``--reps`` repetitions and their spread. JSON:
OUT/bench_startup.json (with --out OUT).

    python benchmarks/bench_startup.py [--envs 8] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from grid_vec.bench import add_out_argument, write_result
from grid_vec.bench.workloads import SANDBOX, grid_target

MAKE = """
import time
t0 = time.perf_counter()
import grid_vec
t1 = time.perf_counter()
grid_vec.make({target!r})
t2 = time.perf_counter()
grid_vec.make({target!r})
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""

VECTOR = """
import time
import numpy as np
from gymnasium.vector import AsyncVectorEnv
from grid_vec.env.make import env_factory
from grid_vec.vector import make_vec

def main():
    factory = env_factory("case14")
    t0 = time.perf_counter()
    if {kind!r} == "GridVecEnv":
        kwargs = {{}} if {context!r} is None else {{"context": {context!r}}}
        envs = make_vec("case14", {n}, vector_kwargs=kwargs)
    else:
        envs = AsyncVectorEnv([factory] * {n}, context={context!r})
    envs.reset(seed=0)
    envs.step(np.zeros({n}, dtype=np.int64))
    print(time.perf_counter() - t0)
    envs.close()

if __name__ == "__main__":
    main()
"""


def _run(code: str, workdir: Path, variables: dict[str, str] | None = None) -> list[float]:
    script = workdir / "startup_probe.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=workdir,
        env={**env, **(variables or {})},
    )
    return [float(x) for x in out.stdout.split()]


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--reps", type=int, default=5)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="grid_vec_startup_"))  # the probes' scripts
    samples: dict[str, list[float]] = {
        "import grid_vec": [],
        "make, first call": [],
        "make, second call": [],
        "make, first call, no disk cache": [],
        "GridVecEnv": [],
        "GridVecEnv, spawn": [],
        "AsyncVectorEnv": [],
        "AsyncVectorEnv, spawn": [],
    }
    vector_kinds = [k for k in samples if k.startswith(("GridVecEnv", "AsyncVectorEnv"))]
    make_case14 = MAKE.format(target="case14")
    try:
        folder = grid_target(SANDBOX)
    except ImportError:  # no grid2op: no folder to make
        folder = None
    else:
        samples["make(folder), first call"] = []
        samples["make(folder), second call"] = []
    try:
        _run(make_case14, workdir)  # untimed: fills the disk cache and the bytecode caches
        if folder is not None:
            _run(MAKE.format(target=folder), workdir)
        for _ in range(args.reps):
            first = _run(make_case14, workdir)
            for key, value in zip(list(samples)[:3], first, strict=True):
                samples[key].append(value)
            if folder is not None:
                _, first_call, second_call = _run(MAKE.format(target=folder), workdir)
                samples["make(folder), first call"].append(first_call)
                samples["make(folder), second call"].append(second_call)
            uncached = _run(make_case14, workdir, {"GRID_VEC_CACHE_DIR": "off"})
            samples["make, first call, no disk cache"].append(uncached[1])
            for key in vector_kinds:
                kind, _, context = key.partition(", ")
                code = VECTOR.format(kind=kind, n=args.envs, context=context or None)
                samples[key].append(_run(code, workdir)[0])
    finally:
        for path in workdir.iterdir():
            path.unlink()
        workdir.rmdir()
    table = {key: _summary(values) for key, values in samples.items()}
    print(f"start-up, case14, {args.envs} envs for the vector envs, {args.reps} repetitions")
    for key, row in table.items():
        print(f"  {key:<32} {row['median_s']:7.3f} s  ({row['min_s']:.3f}-{row['max_s']:.3f})")
    grid = table["GridVecEnv"]["median_s"]
    ratio = table["AsyncVectorEnv"]["median_s"] / grid
    spawn = table["AsyncVectorEnv, spawn"]["median_s"] / grid
    print(f"  AsyncVectorEnv (default start method) / GridVecEnv to the first step: {ratio:.2f}x")
    print(f"  AsyncVectorEnv (spawn) / GridVecEnv: {spawn:.2f}x")
    document = {
        "envs": args.envs,
        "reps": args.reps,
        "results": table,
        "ratio": ratio,
        "ratio_spawn": spawn,
    }
    write_result(document, args.out, "bench_startup.json", indent=2)


if __name__ == "__main__":
    main()
