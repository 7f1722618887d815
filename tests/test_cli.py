import subprocess
import sys

from grid_vec import __version__
from grid_vec.cli import main


def test_version_flag_prints_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_console_script_runs_as_module():
    out = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "grid-vec" in out.stdout
