"""Execute every notebook of notebooks/ with the small budget; any failing cell fails the test.

Each notebook runs in a fresh temporary working directory (recordings stay out of the repo)
in a kernel started with this interpreter, so it sees the same installed packages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
kernelspec = pytest.importorskip("ipykernel.kernelspec")
pytest.importorskip("matplotlib")
pytest.importorskip("stable_baselines3")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402 (nbclient's dependency)

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
KERNEL_NAME = "grid-vec-tests"
CELL_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernelspec whose command is this interpreter, in a directory of its own."""
    prefix = tmp_path_factory.mktemp("jupyter")
    kernelspec.install(kernel_name=KERNEL_NAME, prefix=str(prefix))
    return prefix / "share" / "jupyter"


def test_notebooks_exist() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01_quick_start.ipynb",
        "02_vector_throughput.ipynb",
        "03_train_ppo_sb3.ipynb",
        "04_replay_a_run.ipynb",
        "05_task_learning_curve.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(
    path: Path, kernel_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    monkeypatch.setenv("GRID_VEC_NOTEBOOK_BUDGET", "small")
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    assert spec.argv[0] == sys.executable, spec.argv
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        f"{path.name} is committed with outputs; clear them"
    )
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell and its traceback
