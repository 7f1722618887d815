"""grid2op opens a dataset folder without running its ``config.py``: ``reference_env`` (the
export, grid2op's agents) hands grid2op a copy whose ``config.py`` is written from the values
read as data; the env it makes is the one grid2op makes of the folder itself. And the
export's other faults (its output, a recording's seed) are one line each."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("grid2op", reason="needs the grid2op extra")

import grid2op

from grid_vec.chronics.untrusted import FolderFormatError
from grid_vec.cli import main
from grid_vec.integrations.grid2op import reference_env
from grid_vec.integrations.grid2op_folder import runnable_copy

pytestmark = pytest.mark.grid2op
DATA = Path(grid2op.__file__).parent / "data"
SANDBOX = DATA / "l2rpn_case14_sandbox"
PAYLOAD = """
import pathlib
pathlib.Path({marker!r}).write_text("the folder's code ran")
"""


def hostile_copy(tmp_path: Path, source: Path = SANDBOX) -> tuple[Path, Path]:
    """``source`` copied, its config.py writing a marker file when run; (folder, marker)."""
    folder = tmp_path / source.name
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "ran.txt"
    config = folder / "config.py"
    config.write_text(config.read_text() + PAYLOAD.format(marker=str(marker)))
    return folder, marker


def test_the_hostile_payload_runs_when_grid2op_opens_the_folder_itself(tmp_path):
    """The check below is meaningful: grid2op.make runs the payload."""
    folder, marker = hostile_copy(tmp_path)
    grid2op.make(str(folder)).close()
    assert marker.read_text() == "the folder's code ran"


def test_a_run_on_a_folder_whose_config_writes_a_file_exports_without_running_it(tmp_path, capsys):
    folder, marker = hostile_copy(tmp_path)
    run, out = tmp_path / "run", tmp_path / "export"
    argv = ["run", "--env", str(folder), "--agent", "random", "--episodes", "1"]
    assert main([*argv, "--max-iter", "5", "--save", str(run), "--no-progress"]) == 0
    assert main(["export", str(run), "--grid2op", str(out)]) == 0
    capsys.readouterr()
    assert not marker.exists()
    exported = [p for p in out.iterdir() if p.is_dir()]
    assert len(exported) == 1 and (exported[0] / "actions.npz").is_file()
    # grid2op's own agents on the CLI open the folder the same way
    argv = ["run", "--env", str(folder), "--agent", "grid2op-reco-powerline", "--episodes", "1"]
    assert main([*argv, "--max-iter", "3", "--no-save", "--no-progress"]) == 0
    assert not marker.exists()


@pytest.mark.parametrize(
    "name", ["l2rpn_case14_sandbox", "l2rpn_idf_2023", "rte_case14_opponent", "educ_case14_storage"]
)
def test_the_env_of_the_copy_is_the_one_grid2op_makes_of_the_folder(name):
    from lightsim2grid import LightSimBackend

    ours = reference_env(DATA / name)
    theirs = grid2op.make(str(DATA / name), backend=LightSimBackend())
    try:
        assert ours.name == theirs.name
        for space in ("action_space", "observation_space", "_opponent_action_space"):
            assert getattr(ours, space).cls_to_dict() == getattr(theirs, space).cls_to_dict()
        assert ours.parameters.to_dict() == theirs.parameters.to_dict()
        assert ours._rewardClass is theirs._rewardClass
        assert type(ours._game_rules.legal_action) is type(theirs._game_rules.legal_action)
        assert (ours.get_thermal_limit() == theirs.get_thermal_limit()).all()
        assert type(ours._opponent) is type(theirs._opponent)
        assert ours.chronics_handler.max_timestep() == theirs.chronics_handler.max_timestep()
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("from os import system\nconfig = {'backend': system}", "is not imported from grid2op"),
        ("config = {'backend': Unknown}", "'Unknown' is not imported from grid2op"),
        ("import os\nconfig = {'backend': os.path.join}", "is not imported from grid2op"),
        (
            "from grid2op.Backend import NoSuchClass\nconfig = {'backend': NoSuchClass}",
            "is not a class of the installed",
        ),
        (
            "config = {'backend': __import__('os').system('true')}",
            "a class must be a name or a dotted name",
        ),
        ("config = {'backend': len('x')}", "is not imported from grid2op"),
        ("config = {'x': [i for i in range(3)]}", "is refused"),
        ("config = 1", "no module-level 'config"),
    ],
)
def test_a_config_naming_anything_but_grid2ops_classes_is_refused_naming_the_file(
    tmp_path, config, message
):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "config.py").write_text(config)
    with pytest.raises(FolderFormatError, match=message) as caught:
        runnable_copy(folder)
    assert str(folder.resolve() / "config.py") in str(caught.value)


def test_the_copy_links_no_python_file_of_the_folder(tmp_path):
    folder, _ = hostile_copy(tmp_path)
    (folder / "helper.py").write_text("raise SystemExit")
    (folder / "__init__.py").write_text("raise SystemExit")
    copy = runnable_copy(folder)
    try:
        assert copy.name == folder.name
        names = {p.name for p in copy.iterdir()}
        assert "helper.py" not in names and "__init__.py" not in names
        assert "config.py" in names and not (copy / "config.py").is_symlink()
        assert "grid_vec" in (copy / "config.py").read_text().splitlines()[0]
    finally:
        shutil.rmtree(copy.parent)


@pytest.fixture(scope="module")
def sandbox_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("run") / "run"
    argv = ["run", "--env", str(SANDBOX), "--episodes", "1", "--max-iter", "3"]
    assert main([*argv, "--save", str(run), "--no-progress"]) == 0
    return run


@pytest.mark.parametrize("kind", ["a file", "under /proc"])
def test_an_export_into_a_place_it_cannot_write_is_one_line(sandbox_run, tmp_path, kind, capsys):
    if kind == "a file":
        out = tmp_path / "a_file"
        out.write_text("")
    else:
        out = Path("/proc/grid_vec_export")
    capsys.readouterr()
    assert main(["export", str(sandbox_run), "--grid2op", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the export there" in err, err


def test_an_export_of_a_recording_with_a_negative_seed_is_one_line(sandbox_run, tmp_path, capsys):
    import json

    run = tmp_path / "run"
    shutil.copytree(sandbox_run, run)
    meta = next(run.glob("*/meta.json"))
    data = json.loads(meta.read_text())
    data["env_seed"] = -5
    meta.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["export", str(run), "--grid2op", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "env_seed (-5" in err, err
