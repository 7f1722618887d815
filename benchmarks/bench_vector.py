"""Per-batch-step overhead of GridVecEnv beside PufferLib, AsyncVectorEnv and SB3's SubprocVecEnv.

Default workload: a trivial env (observation Box(550,) float32, Discrete(2) actions, no
work in step), so the time measured is the vector env's own overhead. Each configuration
(envs x GridVecEnv/PufferLib workers; AsyncVectorEnv and SubprocVecEnv always run one
process per env) builds every contender once; repetitions then alternate between them
within one run (machine noise hits all alike), each of up to ``--steps`` batch steps or
``--rep-seconds``. The table shows medians and the spread (min-max) in µs per batch step;
the JSON goes to OUT/bench_vector.json (with --out OUT). The resident memory of the parent and
of one GridVecEnv worker carrying 1 and 16 envs is reported too.

GridVecEnv runs twice: as built by default (``copy=True``: fresh observation arrays every
step, as AsyncVectorEnv returns them) and with ``copy=False``, which returns views of the
shared block as PufferLib returns views of its buffers (the like-for-like comparison: a
copy of the observations costs a few µs a step where the worker's core wrote them).

PufferLib (``pufferlib-core``) runs in its own interpreter through ``puffer_probe.py``:
``--puffer-python``, else ``$PUFFER_PYTHON``, else this interpreter if it imports pufferlib,
else ``.venv-puffer/bin/python`` in the repository, made with::

    python3 -m venv .venv-puffer
    .venv-puffer/bin/pip install pufferlib-core==3.0.23 gymnasium numpy scipy pandapower \
        lightsim2grid cloudpickle tqdm

(the probe imports the env factory from this repository, and ``import grid_vec`` registers its
tasks, which import the game's run-time dependencies).

    python benchmarks/bench_vector.py                        # 1x1 8x1 8x2: envs x workers
    python benchmarks/bench_vector.py --configs 1x1 4x1 --with-sync
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from grid_vec.bench import add_out_argument, write_result
from grid_vec.vector import GridVecEnv

ROOT = Path(__file__).resolve().parent.parent
TRIVIAL = "grid_vec.bench.workloads:TrivialEnv"


def _load_factory(spec: str, kwargs: dict[str, Any]) -> Callable[[], gym.Env]:
    module, _, name = spec.partition(":")
    return functools.partial(getattr(importlib.import_module(module), name), **kwargs)


def _rss_kb(pid: int) -> dict[str, int]:
    """Resident set (VmRSS) and private (unshared) memory of a process, in kB."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    with open(f"/proc/{pid}/smaps_rollup") as f:
        private = sum(int(line.split()[1]) for line in f if line.startswith("Private_"))
    return {"rss_kb": rss, "private_kb": private}


def _time_steps(step: Callable[[], Any], steps: int, max_s: float) -> float:
    """Seconds per call of ``step`` over up to ``steps`` calls or ``max_s`` seconds."""
    start = time.perf_counter()
    done = 0
    while done < steps and time.perf_counter() - start < max_s:
        step()
        done += 1
    return (time.perf_counter() - start) / done


class _Local:
    """A vector env of this interpreter, timed here."""

    settle_s = 0.0

    def __init__(self, envs: Any, num_envs: int) -> None:
        self.envs = envs
        actions = np.zeros(num_envs, dtype=np.int64)
        self.step = functools.partial(envs.step, actions)
        envs.reset()

    def time(self, steps: int, max_s: float) -> float:
        return _time_steps(self.step, steps, max_s)

    def close(self) -> None:
        self.envs.close()


class _Puffer:
    """PufferLib's Multiprocessing vector env in ``puffer_probe.py``, timed there."""

    # its idle workers busy-wait 0.5 s after the last step before they back off: the next
    # contender would otherwise be timed with a core taken
    settle_s = 0.6

    def __init__(self, python: str, num_envs: int, workers: int, factory: str, kwargs: str):
        command = [python, str(Path(__file__).with_name("puffer_probe.py"))]
        command += ["--envs", str(num_envs), "--workers", str(workers)]
        command += ["--factory", factory, "--kwargs", kwargs]
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        )
        # a session of its own: closing kills its workers too (they outlive a dead parent)
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"PufferLib probe did not start: {' '.join(command)}")

    def time(self, steps: int, max_s: float) -> float:
        self.proc.stdin.write(f"{steps} {max_s}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def puffer_python(choice: str | None) -> str | None:
    """The interpreter that runs PufferLib (see the module docstring), or None."""
    if choice:
        return choice
    if os.environ.get("PUFFER_PYTHON"):
        return os.environ["PUFFER_PYTHON"]
    if importlib.util.find_spec("pufferlib") is not None:
        return sys.executable
    venv = ROOT / ".venv-puffer" / "bin" / "python"
    return str(venv) if venv.exists() else None


def _contenders(
    config: tuple[int, int], args: argparse.Namespace, factory: Callable[[], gym.Env]
) -> dict[str, Any]:
    num_envs, workers = config
    fns = [factory] * num_envs
    per_worker = -(-num_envs // workers)
    out: dict[str, Any] = {
        "GridVecEnv": _Local(GridVecEnv(fns, envs_per_worker=per_worker), num_envs),
        # what PufferLib returns: views of the shared buffers, overwritten by the next step
        "GridVecEnv copy=False": _Local(
            GridVecEnv(fns, envs_per_worker=per_worker, copy=False), num_envs
        ),
    }
    if args.puffer_python:
        try:
            out["PufferLib"] = _Puffer(
                args.puffer_python, num_envs, workers, args.factory, args.kwargs
            )
        except (OSError, RuntimeError) as exc:
            print(f"PufferLib skipped: {exc}", file=sys.stderr)
    out["AsyncVectorEnv"] = _Local(AsyncVectorEnv(fns, shared_memory=True), num_envs)
    if importlib.util.find_spec("stable_baselines3") is not None:
        from stable_baselines3.common.vec_env import SubprocVecEnv

        out["SB3 SubprocVecEnv"] = _Local(SubprocVecEnv(fns), num_envs)
    if args.with_sync:
        out["SyncVectorEnv"] = _Local(SyncVectorEnv(fns), num_envs)
    return out


def compare(
    config: tuple[int, int], args: argparse.Namespace, factory: Callable[[], gym.Env]
) -> dict[str, Any]:
    """Median, min and max seconds per batch step of each contender, repetitions alternating."""
    contenders = _contenders(config, args, factory)
    try:
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for c in contenders.values():
            c.time(max(args.steps // 5, 10), args.rep_seconds)  # warm-up
            time.sleep(c.settle_s)
        for _ in range(args.reps):
            for name, c in contenders.items():
                times[name].append(c.time(args.steps, args.rep_seconds))
                time.sleep(c.settle_s)
        return {
            "num_envs": config[0],
            "workers": config[1],
            "s_per_batch_step": {
                name: {"median": statistics.median(v), "min": min(v), "max": max(v), "all": v}
                for name, v in times.items()
            },
        }
    finally:
        for c in contenders.values():
            c.close()


def memory(factory: Callable[[], gym.Env], counts: tuple[int, ...] = (1, 16)) -> dict[str, Any]:
    """RSS of one worker carrying each count of envs after a reset and a few steps."""
    out: dict[str, Any] = {"parent": _rss_kb(os.getpid())}
    for count in counts:
        envs = GridVecEnv([factory] * count, envs_per_worker=count)
        envs.reset(seed=0)
        for _ in range(10):
            envs.step(np.zeros(count, np.int64))
        out[f"worker_{count}_envs"] = _rss_kb(envs.worker_pids()[0])
        envs.close()
    return out


def _config(text: str) -> tuple[int, int]:
    envs, _, workers = text.partition("x")
    return int(envs), int(workers or 1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--configs",
        type=_config,
        nargs="+",
        default=[(1, 1), (8, 1), (8, 2)],
        help="ENVSxWORKERS of GridVecEnv and PufferLib (default: 1x1 8x1 8x2)",
    )
    parser.add_argument("--steps", type=int, default=2000, help="batch steps per repetition")
    parser.add_argument("--rep-seconds", type=float, default=0.3, help="time cap of a repetition")
    parser.add_argument("--reps", type=int, default=9, help="repetitions (median)")
    parser.add_argument("--factory", default=TRIVIAL, help="module:callable building one env")
    parser.add_argument("--kwargs", default="{}", help="JSON keyword arguments of --factory")
    parser.add_argument("--puffer-python", default=None, help="interpreter with pufferlib-core")
    parser.add_argument("--with-sync", action="store_true", help="also time SyncVectorEnv")
    parser.add_argument("--name", default="bench_vector", help="results file name")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    args.puffer_python = puffer_python(args.puffer_python)
    if args.puffer_python is None:
        print("PufferLib skipped: no interpreter with pufferlib (see --help)", file=sys.stderr)

    factory = _load_factory(args.factory, json.loads(args.kwargs))
    rows = [compare(config, args, factory) for config in args.configs]
    print(f"µs per batch step, median [min-max] of {args.reps} alternating repetitions")
    for row in rows:
        print(f"{row['num_envs']} envs, {row['workers']} worker(s):")
        for name, t in row["s_per_batch_step"].items():
            low, high = t["min"] * 1e6, t["max"] * 1e6
            print(f"  {name:<22} {t['median'] * 1e6:9.1f}  [{low:.1f}-{high:.1f}]")
    mem = memory(factory)
    for key, value in mem.items():
        print(
            f"memory {key}: RSS {value['rss_kb'] / 1024:.1f} MB, private "
            f"{value['private_kb'] / 1024:.1f} MB"
        )
    result = {
        "args": vars(args),
        "cpus": os.cpu_count(),
        "rows": rows,
        "memory": mem,
    }
    write_result(result, args.out, f"{args.name}.json", indent=2)
    return result


if __name__ == "__main__":
    main()
