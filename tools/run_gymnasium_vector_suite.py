"""Run gymnasium's own vector tests against AsyncVectorEnv and against GridVecEnv.

Gymnasium's ``tests/`` folder is not shipped with the package, so this takes a Gymnasium
checkout (a work tree, or a bare git directory whose ``--rev`` is extracted with
``git archive``), and runs the files of :data:`SUITE` twice, each in a fresh interpreter:
once as they are, once with ``gymnasium.vector.AsyncVectorEnv`` replaced by
:class:`~grid_vec.vector.GridVecEnv` before the test modules are imported (so their
``from gymnasium.vector import AsyncVectorEnv`` and ``gym.make_vec(..., "async")`` get
GridVecEnv). Nothing is downloaded and nothing of gymnasium is copied into this project.

Usage::

    python tools/run_gymnasium_vector_suite.py /path/to/Gymnasium [--rev REV] [-- PYTEST_ARGS]

Prints the pass/fail counts of both runs and the tests that pass with AsyncVectorEnv but
not with GridVecEnv; exits 1 when there is any such test. Use the commit whose
``gymnasium/__init__.py`` has the installed ``__version__`` (``--rev``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SUITE = (
    "tests/vector/test_async_vector_env.py",
    "tests/vector/test_autoreset_mode.py",
    "tests/vector/test_vector_env_info.py",
    "tests/vector/test_observation_mode.py",
    "tests/vector/test_vector_wrapper.py",
)
_INNER = "--inner"


def _tests_root(checkout: Path, rev: str, scratch: Path) -> Path:
    """A folder holding Gymnasium's ``tests/``: the work tree itself, or ``rev`` extracted."""
    if (checkout / "tests" / "vector").is_dir():
        return checkout
    archive = scratch / "tests.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "--git-dir", str(checkout), "archive", rev, "tests"], stdout=out, check=True
        )
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
    return scratch


def _outcomes(report: Path) -> dict[str, str]:
    """Test id -> "passed", "failed" or "skipped", from a junit XML report."""
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        # parametrised ids name the class (``[AsyncVectorEnv]``): key both runs alike
        name = case.get("name", "").replace("GridVecEnv", "AsyncVectorEnv")
        test_id = f"{case.get('classname')}::{name}"
        if case.find("failure") is not None or case.find("error") is not None:
            out[test_id] = "failed"
        elif case.find("skipped") is not None:
            out[test_id] = "skipped"
        else:
            out[test_id] = "passed"
    return out


def _run(impl: str, root: Path, report: Path, extra: list[str]) -> dict[str, str]:
    args = ["-q", "-p", "no:cacheprovider", f"--junitxml={report}", *extra, *SUITE]
    subprocess.run([sys.executable, str(Path(__file__).resolve()), _INNER, impl, *args], cwd=root)
    return _outcomes(report)


def _summary(outcomes: dict[str, str]) -> str:
    values = list(outcomes.values())
    return ", ".join(f"{values.count(k)} {k}" for k in ("passed", "failed", "skipped"))


def _inner(impl: str, pytest_args: list[str]) -> int:
    """Run pytest in this process, with AsyncVectorEnv replaced when ``impl`` is "grid"."""
    import gymnasium.vector
    import pytest

    sys.path.insert(0, str(Path.cwd()))  # gymnasium's tests import ``tests.*``
    if impl == "grid":
        from grid_vec.vector import GridVecEnv

        gymnasium.vector.AsyncVectorEnv = GridVecEnv
        gymnasium.vector.async_vector_env.AsyncVectorEnv = GridVecEnv
    return int(pytest.main(pytest_args))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gymnasium", type=Path, help="a Gymnasium work tree or git directory")
    parser.add_argument("--rev", default="HEAD", help="commit to extract from a git directory")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = _tests_root(ns.gymnasium.resolve(), ns.rev, Path(scratch))
        results = {
            impl: _run(impl, root, Path(scratch) / f"{impl}.xml", ns.pytest_args)
            for impl in ("async", "grid")
        }
    print(f"AsyncVectorEnv: {_summary(results['async'])}")
    print(f"GridVecEnv:     {_summary(results['grid'])}")
    regressions = sorted(
        t for t, r in results["async"].items() if r == "passed" and results["grid"].get(t) != r
    )
    print(f"regressions (pass with AsyncVectorEnv, not with GridVecEnv): {len(regressions)}")
    for test_id in regressions:
        print(f"  {test_id}")
    return 1 if regressions else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == _INNER:
        sys.exit(_inner(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
