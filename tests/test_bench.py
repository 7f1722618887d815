"""grid-vec bench: the protocol pieces, and small end-to-end runs (no timing assertions)."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from grid_vec.bench import (
    SCHEMA,
    SCHEMA_VERSION,
    BenchConfig,
    Protocol,
    describe_machine,
    format_markdown,
    format_table,
    measure,
    plot,
    run_suite,
)
from grid_vec.bench.subjects import SUBJECTS, Subject
from grid_vec.bench.workloads import action_table
from grid_vec.cli import main

ROW_KEYS = {
    "subject",
    "workload",
    "num_envs",
    "actions",
    "steps_per_s",
    "min",
    "max",
    "samples",
    "batch_steps_per_rep",
    "startup_s",
}


def test_measure_follows_the_protocol():
    calls = []

    def run(k: int) -> int:
        calls.append(k)
        return 3 * k

    m = measure(run, Protocol(warmup_s=0.01, reps=4, rep_s=0.005, min_warmup_steps=5))
    timed = calls[-4:]
    assert len(m.samples) == 4 and len(calls) >= 5 + 4
    assert all(k == m.batch_steps_per_rep >= 1 for k in timed)
    assert m.low <= m.median <= m.high and m.low > 0


@pytest.mark.parametrize(
    "kwargs", [{"reps": 0}, {"rep_s": 0}, {"warmup_s": -1.0}, {"min_warmup_steps": True}]
)
def test_protocol_rejects_bad_values(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Protocol(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"workloads": ("case15",)},
        {"subjects": ("RayVecEnv",)},
        {"actions": ()},
        {"num_envs": (0,)},
        {"budget_s": 0},
        {"seed": -1},
    ],
)
def test_config_rejects_bad_values(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs)).rstrip("s")):
        BenchConfig(**kwargs)


def test_action_tables_are_seeded():
    assert not action_table(10, 3, "do-nothing", 0).any()
    a, b = action_table(10, 3, "random", 7), action_table(10, 3, "random", 7)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (256, 3) and a.min() >= 0 and a.max() < 10 and len(np.unique(a)) > 1
    with pytest.raises(ValueError, match="actions must be one of"):
        action_table(10, 3, "greedy", 0)


def test_missing_package_is_named():
    subject = Subject("x", SUBJECTS["GridEnv"].open, frozenset(), requires=("numpy", "no_such_m0d"))
    assert subject.missing() == "no_such_m0d"
    assert SUBJECTS["GridEnv"].missing() is None


def test_machine_description():
    m = describe_machine().as_dict()
    assert m["cpu_model"] and m["usable_cores"] >= 1 and m["python"].count(".") == 2
    assert m["packages"]["numpy"] == np.__version__


def _check_schema(doc: dict, reps: int) -> None:
    assert doc["schema"] == SCHEMA and doc["schema_version"] == SCHEMA_VERSION
    assert {"config", "machine", "results", "ratios", "skipped", "errors", "duration_s"} <= set(doc)
    assert doc["errors"] == []
    for row in doc["results"]:
        assert set(row) == ROW_KEYS
        assert len(row["samples"]) == reps
        assert row["min"] <= row["steps_per_s"] <= row["max"]
    by_key = {(r["subject"], r["workload"], r["num_envs"], r["actions"]): r for r in doc["results"]}
    for q in doc["ratios"]:
        ref = by_key[(q["reference"], q["workload"], q["num_envs"], q["actions"])]
        sub = by_key[(q["subject"], q["workload"], q["num_envs"], q["actions"])]
        assert math.isclose(q["ratio"], ref["steps_per_s"] / sub["steps_per_s"])


@pytest.mark.slow
def test_cli_quick_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "results" / "t.json"
    argv = ["bench", "--quick", "--workloads", "case14", "trivial", "--reps", "2"]
    argv += ["--subjects", "GridEnv", "GridVecEnv", "SyncVectorEnv", "AsyncVectorEnv"]
    # a budget no machine exhausts: which cells run must not depend on the machine's speed
    argv += ["--actions", "do-nothing", "random", "--budget", "3600"]
    argv += ["--out", str(out), "--markdown", "--no-plot"]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    _check_schema(doc, reps=2)
    assert doc["mode"] == "quick" and doc["config"]["num_envs"] == [1, 2]
    assert isinstance(doc["command"], str)
    cells = {(r["subject"], r["workload"], r["num_envs"], r["actions"]) for r in doc["results"]}
    assert ("GridEnv", "case14", 1, "random") in cells
    assert ("AsyncVectorEnv", "trivial", 1, "do-nothing") in cells
    assert not any(s == "GridEnv" and n > 1 for s, _, n, _ in cells)  # single env only
    assert not any(w == "trivial" and a == "random" for _, w, _, a in cells)
    ratio = {(q["subject"], q["workload"], q["num_envs"], q["actions"]) for q in doc["ratios"]}
    assert ("AsyncVectorEnv", "case14", 1, "do-nothing") in ratio
    text = capsys.readouterr().out
    assert "case14 - do-nothing" in text and "trivial - do-nothing" in text
    assert "| workload | actions | subject | 1 envs | 2 envs |" in text
    assert f"wrote {out}" in text


def test_exhausted_budget_skips_cells():
    config = BenchConfig(
        num_envs=(1, 32), workloads=("case14",), subjects=("GridVecEnv",), budget_s=1e-3
    )
    doc = run_suite(config, log=lambda _: None)
    assert doc["results"] == [] and doc["ratios"] == []
    assert [(s["num_envs"], s["reason"][:6]) for s in doc["skipped"]] == [
        (1, "budget"),
        (32, "budget"),
    ]
    assert "skipped subject=GridVecEnv workload=case14 num_envs=32" in format_table(doc)


@pytest.mark.grid2op
def test_grid2op_side_by_side_on_the_same_folder():
    pytest.importorskip("grid2op")
    config = BenchConfig(
        num_envs=(1,),
        workloads=("l2rpn_case14_sandbox",),
        subjects=("GridEnv", "grid2op LightSim"),
        protocol=Protocol(warmup_s=0.05, reps=2, rep_s=0.05),
        budget_s=3600,  # never exhausted: both subjects run whatever the machine's speed
    )
    doc = run_suite(config, log=lambda _: None)
    _check_schema(doc, reps=2)
    assert {(r["subject"], r["actions"]) for r in doc["results"]} == {
        ("GridEnv", "do-nothing"),
        ("GridEnv", "random"),
        ("grid2op LightSim", "do-nothing"),  # grid2op's actions are not GridEnv's catalog
    }
    assert [(q["subject"], q["reference"]) for q in doc["ratios"]] == [
        ("grid2op LightSim", "GridEnv")
    ]
    assert "grid2op LightSim" in format_markdown(doc)


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="needs the bench extra (matplotlib)"
)
def test_plot_writes_a_png(tmp_path):
    config = BenchConfig(
        num_envs=(1,),
        workloads=("trivial",),
        subjects=("SyncVectorEnv",),
        protocol=Protocol(warmup_s=0.01, reps=1, rep_s=0.01),
    )
    png = plot(run_suite(config, log=lambda _: None), tmp_path / "t.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_config_mistake_is_one_line_on_stderr_and_exit_2(capsys):
    from grid_vec.cli import main

    # a negative seed passes the parser and is refused by the run configuration
    assert main(["bench", "--quick", "--seed", "-1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("grid-vec bench:")
    assert "seed" in err and "Traceback" not in err
