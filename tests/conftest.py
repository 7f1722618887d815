"""Suite-wide policy for optional dependencies.

Optional suites skip themselves when their extra is missing (``pytest.importorskip`` before any
import that needs it). With ``GRID_VEC_REQUIRE_EXTRAS=1`` (the every-extra phase of ``.ci/run``)
such a skip is a failure instead: the extra was installed, so its suite must run.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import pytest

pytest_plugins = ["pytester"]

# compiled grids are cached on disk (grid_vec.grid.model_cache): the suite uses a cache of its
# own, shared by its subprocesses, rather than the user's, and removes it at the end
_CACHE_DIR_VARIABLE = "GRID_VEC_CACHE_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if _CACHE_DIR_VARIABLE not in os.environ:
        os.environ[_CACHE_DIR_VARIABLE] = tempfile.mkdtemp(prefix="grid_vec_test_cache_")
        config._grid_vec_cache = os.environ[_CACHE_DIR_VARIABLE]


def pytest_unconfigure(config: pytest.Config) -> None:
    directory = getattr(config, "_grid_vec_cache", None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


REQUIRE_EXTRAS_ENV = "GRID_VEC_REQUIRE_EXTRAS"
# pytest.importorskip's own reason, and the reason this suite passes to it
_MISSING_DEPENDENCY = re.compile(r"could not import|needs the [\w-]+ extra")


def _missing_dependency_reason(report: pytest.CollectReport | pytest.TestReport) -> str | None:
    if not report.skipped:
        return None
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason if _MISSING_DEPENDENCY.search(reason) else None


def _fail_if_extras_required(report: pytest.CollectReport | pytest.TestReport) -> None:
    if os.environ.get(REQUIRE_EXTRAS_ENV) != "1":
        return
    reason = _missing_dependency_reason(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = (
            f"skipped for a missing optional dependency while {REQUIRE_EXTRAS_ENV}=1 "
            f"(every extra should be installed): {reason}"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    _fail_if_extras_required(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    outcome = yield
    _fail_if_extras_required(outcome.get_result())


# CI's second phase runs what its first did not (.ci/run): the first writes the node ids of
# the tests that passed to GRID_VEC_PASSED_LOG, the second deselects those named in
# GRID_VEC_SKIP_PASSED, so that it runs only the slow tests and those the first phase skipped
# for a missing extra, instead of the whole suite again.
PASSED_LOG_ENV = "GRID_VEC_PASSED_LOG"
SKIP_PASSED_ENV = "GRID_VEC_SKIP_PASSED"
_MAX_PASSED_LOG_BYTES = 16 << 20


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(PASSED_LOG_ENV)
    if path and report.when == "call" and report.passed:
        with open(path, "a", encoding="utf-8") as log:
            log.write(report.nodeid + "\n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = os.environ.get(SKIP_PASSED_ENV)
    if not path:
        return
    with open(path, "rb") as log:
        data = log.read(_MAX_PASSED_LOG_BYTES + 1)
    if len(data) > _MAX_PASSED_LOG_BYTES:
        raise pytest.UsageError(f"{path}: more than {_MAX_PASSED_LOG_BYTES} bytes of test ids")
    passed = set(data.decode("utf-8").splitlines())
    kept = [item for item in items if item.nodeid not in passed]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in passed])
        items[:] = kept
