"""The suite's optional-dependency policy (tests/conftest.py), run on throwaway test files."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py").read_text(encoding="utf-8")
MISSING = "grid_vec_no_such_optional_package"
MODULE_SKIP = f"""
import pytest
pytest.importorskip("{MISSING}", reason="needs the sb3 extra")

def test_never_collected():
    pass
"""
FUNCTION_SKIP = f"""
import pytest

def test_inside():
    pytest.importorskip("{MISSING}")

def test_other_reason_still_skips():
    pytest.skip("not on this platform")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    return pytester


def test_missing_extra_skips_by_default(suite, monkeypatch):
    monkeypatch.delenv("GRID_VEC_REQUIRE_EXTRAS", raising=False)
    suite.makepyfile(test_module_skip=MODULE_SKIP, test_function_skip=FUNCTION_SKIP)
    result = suite.runpytest_subprocess()
    result.assert_outcomes(skipped=3)
    assert result.ret == 0


def test_module_skip_for_a_missing_extra_is_an_error_when_extras_are_required(suite, monkeypatch):
    monkeypatch.setenv("GRID_VEC_REQUIRE_EXTRAS", "1")
    suite.makepyfile(test_module_skip=MODULE_SKIP)
    result = suite.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*GRID_VEC_REQUIRE_EXTRAS=1*needs the sb3 extra*"])


def test_test_skip_for_a_missing_extra_fails_when_extras_are_required(suite, monkeypatch):
    monkeypatch.setenv("GRID_VEC_REQUIRE_EXTRAS", "1")
    suite.makepyfile(test_function_skip=FUNCTION_SKIP)
    result = suite.runpytest_subprocess()
    # a skip for another reason stays a skip
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*GRID_VEC_REQUIRE_EXTRAS=1*could not import*"])


TWO_PHASES = f"""
import pytest

def test_runs_everywhere():
    pass

def test_needs_an_extra():
    pytest.importorskip("{MISSING}")

@pytest.mark.slow
def test_long():
    pass
"""


def test_the_second_ci_phase_runs_only_what_the_first_did_not_pass(suite, monkeypatch, tmp_path):
    """Phase 1 logs the tests that passed (GRID_VEC_PASSED_LOG); phase 2
    (GRID_VEC_SKIP_PASSED) deselects them and runs the rest: the slow test and the one
    skipped for a missing extra."""
    log = tmp_path / "passed.txt"
    suite.makeini("[pytest]\nmarkers =\n    slow: long\naddopts = -m 'not slow'\n")
    suite.makepyfile(test_two_phases=TWO_PHASES)
    monkeypatch.delenv("GRID_VEC_REQUIRE_EXTRAS", raising=False)
    monkeypatch.delenv("GRID_VEC_SKIP_PASSED", raising=False)
    monkeypatch.setenv("GRID_VEC_PASSED_LOG", str(log))
    first = suite.runpytest_subprocess()
    first.assert_outcomes(passed=1, skipped=1, deselected=1)
    assert log.read_text().splitlines() == ["test_two_phases.py::test_runs_everywhere"]
    monkeypatch.delenv("GRID_VEC_PASSED_LOG")
    monkeypatch.setenv("GRID_VEC_SKIP_PASSED", str(log))
    second = suite.runpytest_subprocess("-m", "slow or not slow", "-v")
    second.assert_outcomes(passed=1, skipped=1, deselected=1)
    second.stdout.fnmatch_lines(["*test_long PASSED*"])
