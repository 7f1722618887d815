"""An evaluation as users run it: grid2op's Runner against grid_vec's, start-up included.

Both play 4 do-nothing episodes of at most 288 steps on grid2op's ``l2rpn_case14_sandbox``
folder with 2 processes, recording every episode to a temporary directory:

* grid2op: ``grid2op.make(folder, backend=LightSimBackend())``, then
  ``grid2op.Runner.Runner(..., agentClass=DoNothingAgent).run(nb_episode=4, nb_process=2,
  max_iter=288, path_save=tmp)``;
* grid_vec: ``grid-vec run --env folder --episodes 4 --num-envs 2 --max-iter 288 --save tmp``
  (the console script's ``main``, called in-process: a GridVecEnv of 2 workers and the
  Runner).

Each repetition runs each side in a fresh Python process, alternating which goes first,
after one untimed run of each (what a user's second run sees: Python's bytecode caches
written, and grid_vec's compiled grid in its disk cache, ``grid_vec.grid.model_cache``).
The probes run with bytecode caching on, as Python runs by default, whatever
``PYTHONDONTWRITEBYTECODE`` says here. A third subject, grid_vec with its disk cache off
(``GRID_VEC_CACHE_DIR=off``), shows what a first run on a machine costs (the grid compiled
from ``grid.json``, pandapower imported).

Two times per run: ``run`` from just before building the env (or the runner) to the end of
the evaluation, the libraries already imported (what the comparison is about), and
``process``, the whole process from its start to its exit (imports and interpreter start-up
too). Note that ``import grid2op`` loads pandapower, outside grid2op's ``run`` window,
whereas grid_vec without its cache loads it when it compiles the folder's grid, inside its
own.
Medians over ``--reps`` repetitions, their spread, and the ratios grid2op / grid_vec. JSON:
OUT/bench_eval_grid2op.json (with --out OUT).

    python benchmarks/bench_eval_grid2op.py [--reps 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grid_vec.bench import add_out_argument, write_result

EPISODES, PROCESSES, MAX_ITER = 4, 2, 288

# Each probe prints one JSON line: {"run_s": ..., "steps": [steps of each episode]}.
GRID2OP = """
import json, sys, time, warnings
warnings.filterwarnings("ignore")  # grid2op's notices (numba, ...) are not the point here
import grid2op
from grid2op.Agent import DoNothingAgent
from grid2op.Runner import Runner
from lightsim2grid import LightSimBackend

def main(folder, save, episodes, processes, max_iter):
    t0 = time.perf_counter()
    env = grid2op.make(folder, backend=LightSimBackend())
    runner = Runner(**env.get_params_for_runner(), agentClass=DoNothingAgent)
    results = runner.run(
        nb_episode=episodes, nb_process=processes, max_iter=max_iter, path_save=save
    )
    elapsed = time.perf_counter() - t0
    env.close()
    print(json.dumps({"run_s": elapsed, "steps": [int(r[3]) for r in results]}))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:]))
"""

GRID_VEC = """
import json, sys, time
from pathlib import Path
from grid_vec.cli import main as grid_vec_main

def main(folder, save, episodes, processes, max_iter):
    argv = ["run", "--env", folder, "--episodes", str(episodes), "--num-envs",
            str(processes), "--max-iter", str(max_iter), "--save", save, "--no-progress"]
    t0 = time.perf_counter()
    status = grid_vec_main(argv)
    elapsed = time.perf_counter() - t0
    if status:
        raise SystemExit(status)
    metas = sorted(Path(save).glob("episode_*/meta.json"))
    steps = [json.loads(m.read_text())["result"]["steps"] for m in metas]
    print(json.dumps({"run_s": elapsed, "steps": steps}))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:]))
"""

PROBES = {"grid2op Runner": GRID2OP, "grid_vec (grid-vec run)": GRID_VEC}
NO_MODEL_CACHE = "grid_vec, no compiled-grid cache"
# subject -> (probe, environment variables set for it)
SUBJECTS = {
    "grid2op Runner": ("grid2op Runner", {}),
    "grid_vec (grid-vec run)": ("grid_vec (grid-vec run)", {}),
    NO_MODEL_CACHE: ("grid_vec (grid-vec run)", {"GRID_VEC_CACHE_DIR": "off"}),
}


def _fail(message: str) -> None:
    print(f"bench_eval_grid2op: {message}", file=sys.stderr)
    sys.exit(2)


def _sandbox() -> Path:
    """grid2op's l2rpn_case14_sandbox folder; exits 2 with one line when it is missing."""
    # found, not imported: importing grid2op here would cost seconds and print notices
    specs = {name: importlib.util.find_spec(name) for name in ("grid2op", "lightsim2grid")}
    missing = [name for name, spec in specs.items() if spec is None]
    if missing:
        _fail(f"needs grid2op and lightsim2grid; missing: {', '.join(missing)}")
    folder = Path(specs["grid2op"].origin).parent / "data" / "l2rpn_case14_sandbox"
    if not folder.is_dir():
        _fail(f"{folder} is missing (grid2op ships it)")
    return folder


def _run(probe: Path, folder: Path, workdir: Path, variables: dict[str, str]) -> dict:
    """One fresh process running ``probe`` (bytecode caching on, ``variables`` set): its
    JSON line plus the whole process's time."""
    save = Path(tempfile.mkdtemp(prefix="run_", dir=workdir))
    shutil.rmtree(save)  # both sides create their own run directory
    argv = [str(folder), str(save), str(EPISODES), str(PROCESSES), str(MAX_ITER)]
    t0 = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, str(probe), *argv],
        capture_output=True,
        text=True,
        cwd=workdir,
        env={**env, **variables},
    )
    process_s = time.perf_counter() - t0
    shutil.rmtree(save, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{probe.name} failed (exit {out.returncode}):\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {**result, "process_s": process_s}


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    add_out_argument(parser)
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    folder = _sandbox()
    runs: dict[str, list[dict]] = {name: [] for name in SUBJECTS}
    with tempfile.TemporaryDirectory(prefix="bench_eval_") as tmp:
        workdir = Path(tmp)
        probes = {}
        for name, code in PROBES.items():
            probes[name] = workdir / f"probe_{len(probes)}.py"
            probes[name].write_text(code, encoding="utf-8")
        for probe, variables in SUBJECTS.values():  # warm-up, untimed
            _run(probes[probe], folder, workdir, variables)
        for rep in range(args.reps):
            order = list(SUBJECTS) if rep % 2 == 0 else list(reversed(SUBJECTS))
            for name in order:
                probe, variables = SUBJECTS[name]
                runs[name].append(_run(probes[probe], folder, workdir, variables))
    table = {
        name: {
            "run": _summary([r["run_s"] for r in rows]),
            "process": _summary([r["process_s"] for r in rows]),
            "steps": rows[0]["steps"],
        }
        for name, rows in runs.items()
    }
    reference, ours = list(PROBES)
    ratios = {
        kind: table[reference][kind]["median_s"] / table[ours][kind]["median_s"]
        for kind in ("run", "process")
    }
    cold = {
        kind: table[reference][kind]["median_s"] / table[NO_MODEL_CACHE][kind]["median_s"]
        for kind in ("run", "process")
    }
    print(
        f"{EPISODES} do-nothing episodes x {MAX_ITER} steps, l2rpn_case14_sandbox, "
        f"{PROCESSES} processes, recording on; {args.reps} repetitions, alternating"
    )
    print(f"  {'':<26} {'run (median, min-max)':>27} {'whole process':>27}  steps")
    for name, row in table.items():
        cells = [
            f"{row[k]['median_s']:6.3f} s ({row[k]['min_s']:.3f}-{row[k]['max_s']:.3f})"
            for k in ("run", "process")
        ]
        print(f"  {name:<26} {cells[0]:>27} {cells[1]:>27}  {row['steps']}")
    print(
        f"  grid2op / grid_vec: {ratios['run']:.2f}x (run), {ratios['process']:.2f}x "
        f"(whole process); without the compiled-grid cache: {cold['run']:.2f}x, "
        f"{cold['process']:.2f}x"
    )
    document = {
        "episodes": EPISODES,
        "processes": PROCESSES,
        "max_iter": MAX_ITER,
        "reps": args.reps,
        "results": table,
        "ratio_run": ratios["run"],
        "ratio_process": ratios["process"],
        "ratio_run_no_model_cache": cold["run"],
        "ratio_process_no_model_cache": cold["process"],
        "samples": runs,
    }
    write_result(document, args.out, "bench_eval_grid2op.json", indent=2)


if __name__ == "__main__":
    main()
