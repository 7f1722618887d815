"""benchmarks/bench_scaling.py runs end to end: every subject at each worker count, the
one-core reference, the JSON and the plot (figures are never asserted: benchmarks are not
timed in tests)."""

from __future__ import annotations

import importlib.util
import json

from benchmark_scripts import load_benchmark

# the plot needs matplotlib (the bench extra): without it, everything but the plot is checked
PLOTTING = importlib.util.find_spec("matplotlib") is not None


def test_bench_scaling_reports_every_subject_per_worker_count(tmp_path, capsys):
    module = load_benchmark("bench_scaling")
    argv = ["--grids", "case14", "--workers", "1", "2", "--envs-per-worker", "2", "--reps", "1"]
    plot = tmp_path / "scaling.png"
    drawn = ["--plot", str(plot)] if PLOTTING else []
    doc = module.main([*argv, "--seconds", "0.05", *drawn, "--out", str(tmp_path)])
    subjects = {(r["workers"], r["subject"]) for r in doc["rows"]}
    for workers in (1, 2):
        for name in (module.GRIDVEC, module.IN_WORKERS, module.ASYNC):
            assert (workers, name) in subjects
    assert (1, module.ONE) in subjects and (2, module.ONE) not in subjects
    for row in doc["rows"]:
        assert row["env_steps_per_s"] > 0 and len(row["samples"]) == 1
        assert row["of_one_core"] > 0
    assert json.loads((tmp_path / "bench_scaling.json").read_text())["rows"]
    assert plot.stat().st_size > 0 if PLOTTING else not plot.exists()
    assert "| case14 | random | 2 | GridVecEnv |" in capsys.readouterr().out
