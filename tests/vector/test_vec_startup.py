"""Workers that die while starting are reported, never waited on forever."""

import subprocess
import sys
import textwrap


def test_unguarded_script_with_a_large_factory_raises_instead_of_hanging(tmp_path):
    # A script run from stdin cannot be re-imported by 'spawn' workers: they die at start-up,
    # before reading their factories. A factory far larger than a pipe buffer (64 KiB) used
    # to leave the parent blocked writing it.
    script = textwrap.dedent(
        """
        import gymnasium as gym
        import numpy as np
        from grid_vec.vector import GridVecEnv

        payload = np.ones(200_000, dtype=np.uint8)  # travels inside the factory

        def make():
            assert payload.size
            return gym.make("CartPole-v1")

        GridVecEnv([make, make])
        """
    )
    out = subprocess.run(
        [sys.executable, "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "WorkerCrashedError" in out.stderr and "while starting" in out.stderr
    assert "__name__ == '__main__'" in out.stderr
