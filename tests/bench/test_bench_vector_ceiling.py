"""benchmarks/bench_vector_ceiling.py runs end to end and reports every subject, its ratio to
the two side-by-side batches, and the load (figures are never asserted: benchmarks are not
timed in tests)."""

from __future__ import annotations

import json

from benchmark_scripts import load_benchmark


def test_bench_vector_ceiling_reports_every_subject_against_the_two_batches(tmp_path, capsys):
    module = load_benchmark("bench_vector_ceiling")
    argv = ["--grids", "case14", "--actions", "random", "--envs", "2", "--reps", "1"]
    doc = module.main([*argv, "--seconds", "0.05", "--out", str(tmp_path)])
    (result,) = doc["results"]
    assert set(result["subjects"]) == set(module.SUBJECTS)
    assert result["subjects"]["two batches"]["of_the_ceiling"] == 1.0
    for subject in result["subjects"].values():
        assert subject["env_steps_per_s"] > 0 and len(subject["samples"]) == 1
    assert json.loads((tmp_path / "bench_vector_ceiling.json").read_text())["results"]
    out = capsys.readouterr().out
    assert "| case14 | random | 2 | GridVecEnv 2 workers spin_us=0 |" in out
