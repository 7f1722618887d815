"""benchmarks/bench_lookahead.py runs end to end and reports every subject (figures are
never asserted: benchmarks are not timed in tests)."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark


@pytest.mark.slow
def test_bench_lookahead_reports_every_subject(tmp_path, capsys):
    pytest.importorskip("grid2op", reason="needs the grid2op extra")
    module = load_benchmark("bench_lookahead")
    doc = module.main(
        [
            "--reps",
            "1",
            "--seconds",
            "0.05",
            "--batch",
            "2",
            "--horizon",
            "2",
            "--chains",
            "3",
            "--out",
            str(tmp_path),
        ]
    )
    names = set(doc["results"])
    assert {
        "grid2op obs.simulate",
        "GridEnv simulate",
        "GridEnv simulate_candidates",
        "batched x2 simulate_candidates",
        "case118 simulate_candidates",
        "GridEnv snapshot",
        "GridEnv restore",
        "idf_2023 grid2op chained obs.simulate",
        "idf_2023 simulate_candidates horizon=2",
    } <= names
    assert all(row["per_s"] > 0 for row in doc["results"].values())
    assert (tmp_path / "bench_lookahead.json").exists()
    out = capsys.readouterr().out
    assert "candidates/s" in out and "µs per call" in out
