"""Scenario sources: reading one week from a grid2op-format folder, generating one synthetic week.

References measured in the same run: reading the same CSV files with ``pandas.read_csv``
(what a pandas-based reader pays), and for the synthetic weeks, reading a week from disk.
A synthetic scenario is generated a block (one day) at a time, so the first block, what a
reset generates, is timed too. A folder scenario is parsed once per process and then served
from the scenario cache: a read from the cache (what a later reset pays) is timed too.
Also the handler's per-step cost (``advance`` + ``current``), paid on every env step.

    /work/venv/bin/python benchmarks/bench_scenarios.py [--reps 7]

Prints a table and writes OUT/scenarios.json (with --out OUT).
"""

from __future__ import annotations

import argparse
import bz2
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from grid_vec.bench import add_out_argument, write_result
from grid_vec.chronics import FolderSource, ScenarioHandler, SyntheticSource, load_folder
from grid_vec.chronics.scenario_cache import shared_cache
from grid_vec.chronics.synthetic import BLOCK
from grid_vec.grid.compile import compile_net
from grid_vec.grid.networks import load_network

WEEK = 2016
STEMS = ("load_p", "load_q", "prod_p", "prod_v")


def median_time(fn, reps: int) -> float:
    times = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def write_week_folder(root: Path, model, net) -> Path:
    """A case14 grid2op-format folder with one synthetic week, bz2-compressed like grid2op's."""
    import pandapower as pp

    root.mkdir(parents=True)
    pp.to_json(net, str(root / "grid.json"))
    folder = root / "chronics" / "0000"
    folder.mkdir(parents=True)
    inj = SyntheticSource(model, length=WEEK).read(0, 0, WEEK)
    for stem, names, actual, forecast in (
        ("load_p", model.load_names, inj.load_p, inj.load_p_forecast),
        ("load_q", model.load_names, inj.load_q, inj.load_q_forecast),
        ("prod_p", model.gen_names, inj.gen_p, inj.gen_p_forecast),
        ("prod_v", model.gen_names, inj.gen_v, inj.gen_v_forecast),
    ):
        for name, rows in ((stem, actual), (f"{stem}_forecasted", forecast)):
            text = ";".join(names) + "\n"
            text += "\n".join(";".join(f"{v:.1f}" for v in r) for r in rows) + "\n"
            (folder / f"{name}.csv.bz2").write_bytes(bz2.compress(text.encode()))
    return root


def pandas_read(folder: Path) -> None:
    import pandas as pd

    for stem in STEMS:
        for name in (stem, f"{stem}_forecasted"):
            pd.read_csv(folder / f"{name}.csv.bz2", sep=";").to_numpy()


def bench_folder(path: Path, reps: int, rows: list[dict]) -> float:
    folder = load_folder(path)
    model = compile_net(folder.net, name=folder.name, thermal_limits=folder.thermal_limits)
    length = FolderSource(folder.path, model).info(0).length

    def ours(_: int) -> None:  # a fresh source and cache each time: no cached row counts
        shared_cache.clear()
        src = FolderSource(folder.path, model)
        src.read(0, 0, src.info(0).length)

    t_ours = median_time(ours, reps)
    scenario_dir = folder.path / "chronics" / FolderSource(folder.path, model).names[0]
    t_ref = median_time(lambda _: pandas_read(scenario_dir), reps)
    rows.append(
        {
            "case": f"folder read {folder.name} ({length} steps)",
            "grid_vec_ms": t_ours * 1e3,
            "reference": "pandas.read_csv x8",
            "reference_ms": t_ref * 1e3,
        }
    )
    warm = FolderSource(folder.path, model)
    warm.read(0, 0, length)  # parsed once: what every later reset of the scenario finds

    def cached(_: int) -> None:
        warm.read(0, 0, length)

    rows.append(
        {
            "case": f"folder read {folder.name}, from the scenario cache (a later reset)",
            "grid_vec_ms": median_time(cached, reps) * 1e3,
            "reference": "the same read parsed from the files",
            "reference_ms": t_ours * 1e3,
        }
    )
    return t_ours * WEEK / length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    add_out_argument(parser)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows: list[dict] = []

    net14 = load_network("case14")
    model14 = compile_net(net14, name="case14")
    with tempfile.TemporaryDirectory() as tmp:
        week_read = bench_folder(
            write_week_folder(Path(tmp) / "case14_week", model14, net14), args.reps, rows
        )
    try:
        import grid2op

        sandbox = Path(grid2op.__file__).parent / "data" / "l2rpn_case14_sandbox"
        bench_folder(sandbox, args.reps, rows)
    except ImportError:
        print("grid2op not installed: l2rpn_case14_sandbox skipped", file=sys.stderr)

    for name in ("case14", "case118"):
        model = model14 if name == "case14" else compile_net(load_network(name), name=name)
        source = SyntheticSource(model, seed=1)
        source.read(0, 0, 1)  # what every scenario of the source shares, computed once
        for what, steps in (("week", WEEK), ("first block: a reset", BLOCK)):

            def generate(i: int, source=source, steps=steps) -> None:  # a new id: not cached
                source.read(1 + i + 1000 * steps, 0, steps)

            t = median_time(generate, args.reps)
            rows.append(
                {
                    "case": f"synthetic {what} {name} ({steps} steps)",
                    "grid_vec_ms": t * 1e3,
                    "reference": "folder read, case14 week",
                    "reference_ms": week_read * 1e3,
                }
            )

    handler = ScenarioHandler(SyntheticSource(model14, length=WEEK), chunk_size=288)

    def play(_: int) -> None:
        handler.reset()
        while handler.advance():
            handler.current()

    t = median_time(play, args.reps) / (WEEK - 1)
    rows.append(
        {
            "case": "handler advance+current per step (chunks of 288)",
            "grid_vec_ms": t * 1e3,
            "reference": "-",
            "reference_ms": None,
        }
    )

    print(f"{'case':<52} {'grid_vec ms':>12} {'reference ms':>13} {'ratio':>7}  reference")
    for r in rows:
        ref = r["reference_ms"]
        ratio = f"{ref / r['grid_vec_ms']:.1f}x" if ref else "-"
        ref_s = f"{ref:.3f}" if ref else "-"
        print(f"{r['case']:<52} {r['grid_vec_ms']:>12.3f} {ref_s:>13} {ratio:>7}  {r['reference']}")
    doc = {"reps": args.reps, "numpy": np.__version__, "rows": rows}
    write_result(doc, args.out, "scenarios.json", indent=2)


if __name__ == "__main__":
    main()
