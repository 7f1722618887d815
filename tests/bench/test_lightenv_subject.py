"""The ``LightEnv`` subject of ``grid-vec bench``: lightsim2grid's C++ env set up from a GridEnv
(no timing assertions; grid2op is not needed)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import grid_vec
from grid_vec.bench import BenchConfig, Protocol, run_suite
from grid_vec.bench.subjects import SUBJECTS
from grid_vec.bench.workloads import WORKLOADS

NO_LIGHTENV = "this lightsim2grid has no LightEnv (lightsim2grid_cpp.LightEnv)"


def _lightenv():
    return pytest.importorskip("grid_vec.bench.lightenv", reason=NO_LIGHTENV, exc_type=ImportError)


def test_lightenv_session_steps_case14_with_both_action_modes():
    lightenv = _lightenv()
    session = SUBJECTS["LightEnv"].open(WORKLOADS["case14"], 1, 0)
    try:
        assert isinstance(session, lightenv.LightEnvSession)
        assert session.num_envs == 1 and session.n_actions == 126  # GridEnv's case14 catalog
        assert session.runner("do-nothing")(20) == 20
        assert session.runner("random")(60) == 60  # episodes that end are reset inside
        assert session.episodes >= 1  # random catalog actions end case14 episodes quickly
    finally:
        session.close()


def test_lightenv_subject_does_not_need_grid2op():
    _lightenv()
    code = (
        "import sys; sys.modules['grid2op'] = None  # import grid2op now fails\n"
        "from grid_vec.bench.subjects import SUBJECTS\n"
        "from grid_vec.bench.workloads import WORKLOADS\n"
        "assert SUBJECTS['LightEnv'].missing() is None\n"
        "session = SUBJECTS['LightEnv'].open(WORKLOADS['case14'], 1, 0)\n"
        "print(session.runner('random')(30))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "30"


def test_lightenv_plays_grid_env_catalog_and_flows():
    lightenv = _lightenv()
    env = grid_vec.make("case14")
    env.reset(seed=0)
    scenario = env.scenario_info.id
    light = lightenv.build_light_env(env, scenario)
    assert light.nb_actions == len(env.catalog)
    action = 1 + env.model.n_branch  # the first substation configuration of the catalog
    for act in (0, action):
        env.reset(options={"scenario_id": scenario})
        light.reset()
        env_obs, _, terminated, _, _ = env.step(act)
        obs, _, done, _, info = light.step(act)
        assert not terminated and not done and info["is_illegal"] == "false"
        # same compiled grid, injections and topology: the same flows (LightEnv gives kA)
        np.testing.assert_allclose(
            np.asarray(obs.a_or) * 1000.0, env.view(env_obs).a_or, rtol=1e-5, atol=1e-3
        )


def test_lightenv_subject_in_a_suite_run():
    _lightenv()
    config = BenchConfig(
        num_envs=(1,),
        workloads=("case14",),
        subjects=("GridEnv", "LightEnv"),
        protocol=Protocol(warmup_s=0.02, reps=2, rep_s=0.02),
        budget_s=3600,  # never exhausted: both subjects run whatever the machine's speed
    )
    doc = run_suite(config, log=lambda _: None)
    assert doc["errors"] == []
    assert {(r["subject"], r["actions"]) for r in doc["results"]} == {
        (s, a) for s in ("GridEnv", "LightEnv") for a in ("do-nothing", "random")
    }
    assert {(q["subject"], q["reference"]) for q in doc["ratios"]} == {("LightEnv", "GridEnv")}
