"""Line outages (maintenance, hazards) of grid2op-format scenarios: grid2op's layout per
step, hostile files, random maintenance, and how an env plays them (no grid2op needed)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest
from test_folder import N_ROWS, net14, write_folder  # noqa: F401 (net14 is a fixture)

import grid_vec
from grid_vec.chronics import FolderFormatError, FolderSource
from grid_vec.chronics.handler import ScenarioHandler
from grid_vec.chronics.outages import (
    events_of,
    outage_window,
    read_maintenance_plan,
)
from grid_vec.chronics.scenario_cache import DiskTier, shared_cache
from grid_vec.chronics.synthetic import SyntheticSource
from grid_vec.core.config import GameConfig
from grid_vec.core.parameters import Parameters
from grid_vec.env.grid_env import GridEnv

# grid2op's documented examples (GridValue.get_maintenance_time_1d and friends)
FLAGS = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0], dtype=bool)
TIME = [5, 4, 3, 2, 1, 0, 0, 0, 4, 3, 2, 1, 0, 0, -1, -1, -1]
DURATION = [3, 3, 3, 3, 3, 3, 2, 1, 2, 2, 2, 2, 2, 1, 0, 0, 0]
HAZARD = [0, 0, 0, 0, 0, 3, 2, 1, 0, 0, 0, 0, 2, 1, 0, 0, 0]


def test_outages_are_laid_out_as_grid2op_does():
    flags = np.zeros((len(FLAGS), 3), dtype=bool)
    flags[:, 1] = FLAGS
    events = events_of(flags)
    time, duration, hazard = outage_window(events, events, 3, 0, len(FLAGS))
    assert time[:, 1].tolist() == TIME and duration[:, 1].tolist() == DURATION
    assert hazard[:, 1].tolist() == HAZARD
    assert (time[:, [0, 2]] == -1).all() and (duration[:, [0, 2]] == 0).all()
    assert time.dtype == np.int32
    for first, stop in ((0, 4), (3, 9), (6, 13), (13, 17)):  # windows are slices of the whole
        window = outage_window(events, events, 3, first, stop)
        for part, whole in zip(window, (time, duration, hazard), strict=True):
            np.testing.assert_array_equal(part, whole[first:stop])
    assert outage_window(events_of(np.zeros((5, 3), bool)), None, 3, 0, 5) == (None,) * 3


def _maintenance_csv(model, rows: np.ndarray, names=None) -> str:
    names = list(map(str, model.branch_names)) if names is None else names
    return ";".join(names) + "\n" + "\n".join(";".join(f"{v:g}" for v in r) for r in rows) + "\n"


@pytest.fixture
def folder(tmp_path, case14_model, net14):  # noqa: F811
    shared_cache.clear()
    yield write_folder(tmp_path / "env14", case14_model, net14, n_scenarios=1)
    shared_cache.clear()


def _with_maintenance(folder, model, line: int = 3, start: int = 5, stop: int = 9):
    flags = np.zeros((N_ROWS, model.n_branch))
    flags[start:stop, line] = 1
    (folder / "chronics" / "0000" / "maintenance.csv").write_text(_maintenance_csv(model, flags))
    return flags


def test_folder_source_reads_maintenance(folder, case14_model):
    _with_maintenance(folder, case14_model)
    inj = FolderSource(folder, case14_model).read(0, 0, N_ROWS)
    assert inj.maintenance_time[:, 3].tolist()[:10] == [5, 4, 3, 2, 1, 0, 0, 0, 0, -1]
    assert inj.maintenance_duration[4:10, 3].tolist() == [4, 4, 3, 2, 1, 0]
    assert inj.hazard_duration is None


def _set(rows: np.ndarray, r: int, c: int, value: float) -> np.ndarray:
    rows = rows.copy()
    rows[r, c] = value
    return rows


HOSTILE = {
    "a value other than 0 or 1": (
        lambda m, rows: _maintenance_csv(m, _set(rows, 0, 7, 2)),
        r"maintenance\.csv: line 2 \(data row 0\), column 8 .*: 2\.0 is neither 0 nor 1",
    ),
    "a fraction": (
        lambda m, rows: _maintenance_csv(m, np.where(rows == 0, 0.5, rows)),
        r"maintenance\.csv: line 2 \(data row 0\), column 1 .*neither 0 nor 1",
    ),
    "too many rows": (
        lambda m, rows: _maintenance_csv(m, np.vstack([rows, rows[:1]])),
        rf"maintenance\.csv: has more than {N_ROWS} data rows",
    ),
    "too few rows": (
        lambda m, rows: _maintenance_csv(m, rows[:-2]),
        rf"maintenance\.csv: has {N_ROWS - 2} data rows, needs at least {N_ROWS}",
    ),
    "a short row": (
        lambda m, rows: _maintenance_csv(m, rows).replace("\n0;0;", "\n0;", 1),
        r"maintenance\.csv: line 2 \(data row 0\): has 19 columns, the header has 20",
    ),
    "too many columns": (
        lambda m, rows: _maintenance_csv(
            m, np.hstack([rows, rows[:, :1]]), [*map(str, m.branch_names), "extra"]
        ),
        r"maintenance\.csv: column 'extra' names no powerline",
    ),
    "a missing column": (
        lambda m, rows: _maintenance_csv(m, rows[:, 1:], list(map(str, m.branch_names[1:]))),
        r"maintenance\.csv: no column for powerline",
    ),
    "not a number": (
        lambda m, rows: _maintenance_csv(m, rows).replace("\n0;", "\nx;", 1),
        r"maintenance\.csv: line 2 \(data row 0\), column 1 .*'x' is not a number",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_maintenance_files_are_named_errors(folder, case14_model, case):
    write, message = HOSTILE[case]
    rows = np.zeros((N_ROWS, case14_model.n_branch))
    (folder / "chronics" / "0000" / "maintenance.csv").write_text(write(case14_model, rows))
    env = grid_vec.make(folder)
    with pytest.raises(FolderFormatError, match=message) as info:
        env.reset(options={"scenario_id": 0})
    assert "\n" not in str(info.value)


def test_env_plays_maintenance_and_its_off_switch(folder, case14_model):
    _with_maintenance(folder, case14_model, line=3, start=5, stop=9)
    env = grid_vec.make(folder, parameters=Parameters(nb_timestep_cooldown_line=0))
    off = grid_vec.make(folder, maintenance=False)
    toggle = 1 + 3  # the catalog's toggle of branch 3
    obs, _ = env.reset(options={"scenario_id": 0})
    obs_off, _ = off.reset(options={"scenario_id": 0})
    seen = []
    for t in range(1, 13):
        obs, _, _, _, info = env.step(toggle if t >= 5 else 0)
        obs_off, *_ = off.step(0)
        v, w = env.view(obs), off.view(obs_off)
        seen.append(
            (int(v.line_status[3]), int(v.time_next_maintenance[3]),
             int(v.duration_next_maintenance[3]), int(v.time_before_cooldown_line[3]),
             info["is_illegal"])
        )  # fmt: skip
        assert (w.time_next_maintenance == -1).all() and (w.duration_next_maintenance == 0).all()
        assert w.line_status.all()
    assert seen[:4] == [(1, 4, 4, 0, False), (1, 3, 4, 0, False), (1, 2, 4, 0, False),
                        (1, 1, 4, 0, False)]  # fmt: skip
    # steps 5..8: out, the agent's toggle is legal at 5 (no cooldown yet), then illegal
    assert seen[4] == (0, 0, 4, 4, False)
    assert seen[5:8] == [(0, 0, 3, 3, True), (0, 0, 2, 2, True), (0, 0, 1, 1, True)]
    # step 9: over, cooldown 0 after the step but the toggle was checked before it: illegal;
    # step 10 reconnects (the line stayed out until the agent brought it back)
    assert seen[8] == (0, -1, 0, 0, True)
    assert seen[9] == (1, -1, 0, 0, False)


def test_maintenance_switch_is_checked(folder):
    with pytest.raises(TypeError, match="maintenance must be a bool"):
        grid_vec.make(folder, maintenance="no")


def test_synthetic_scenarios_plan_no_outage():
    env = grid_vec.make("case14")
    obs, _ = env.reset(seed=3)
    trajectory = [obs]
    for _ in range(20):
        trajectory.append(env.step(0)[0])
    off = grid_vec.make("case14", maintenance=False)
    obs_off, _ = off.reset(seed=3)
    np.testing.assert_array_equal(obs_off, trajectory[0])
    for obs in trajectory[1:]:
        np.testing.assert_array_equal(off.step(0)[0], obs)
        v = env.view(obs)
        assert (v.time_next_maintenance == -1).all() and (v.duration_next_maintenance == 0).all()
    assert env.unwrapped._batch.game.scenarios.handlers[0].outage_rows() is None


def test_disk_cache_keeps_the_outage_fields(tmp_path, folder, case14_model):
    _with_maintenance(folder, case14_model)
    inj = FolderSource(folder, case14_model).read(0, 0, N_ROWS)
    disk = DiskTier(tmp_path / "cache")
    disk.get("k", lambda: inj)
    back = disk.get("k", lambda: pytest.fail("parsed again"))
    np.testing.assert_array_equal(back.maintenance_time, inj.maintenance_time)
    np.testing.assert_array_equal(back.maintenance_duration, inj.maintenance_duration)
    assert back.hazard_duration is None and disk.hits == 1


# --- random maintenance (maintenance_meta.json) ----------------------------------------

META = {
    "maintenance_starting_hour": 9,
    "maintenance_ending_hour": 17,
    "line_to_maintenance": ["0_1_0", "1_2_2", "3_4_6"],
    "daily_proba_per_month_maintenance": [0.5] * 12,
    "max_daily_number_per_month_maintenance": [2] * 12,
}


def test_random_maintenance_follows_grid2op_distribution(tmp_path, case14_model):
    (tmp_path / "meta.json").write_text(json.dumps(META))
    plan = read_maintenance_plan(tmp_path / "meta.json", case14_model.branch_names)
    assert plan.lines.tolist() == [0, 2, 6] and plan.days_of_week == (0, 1, 2, 3, 4)
    step = dt.timedelta(minutes=5)
    start = dt.datetime(2019, 1, 7, 0, 5)  # a Monday; row 0 is one step after midnight
    length = 288 * 14
    per_line_days = np.zeros(3)
    for seed in range(40):
        events = plan.draw(np.random.default_rng(seed), start, step, length, 20)
        assert set(events.line.tolist()) <= {0, 2, 6}
        assert ((events.start % 288) == 9 * 12).all() and ((events.stop % 288) == 17 * 12).all()
        days = events.start // 288
        assert (days % 7 < 5).all()  # weekdays only
        assert (days < 13).all()  # the scenario's last calendar day is left out
        assert np.bincount(days, minlength=14).max() <= 2  # max_daily
        per_line_days += np.bincount([(0, 2, 6).index(x) for x in events.line], minlength=3)
    assert 0.3 < per_line_days.sum() / (40 * 9 * 3) < 0.55  # p = 0.5, some days capped at 2


def test_random_maintenance_is_drawn_per_seed_and_scenario(folder, case14_model):
    config = (folder / "config.py").read_text()
    (folder / "config.py").write_text(
        "from grid2op.Chronics import GridStateFromFileWithForecastsWithMaintenance\n"
        + config.replace(
            '"backend": None,',
            '"backend": None, "grid_value_class": GridStateFromFileWithForecastsWithMaintenance,',
        )
    )
    meta = dict(META, maintenance_starting_hour=0, maintenance_ending_hour=1)
    meta["maintenance_day_of_week"] = list(range(7))
    meta["daily_proba_per_month_maintenance"] = [1.0] * 12
    (folder / "maintenance_meta.json").write_text(json.dumps(meta))
    source = FolderSource(folder, case14_model)
    assert source.random_maintenance and source.maintenance_plan(0) is not None

    def drawn(seed):
        handler = ScenarioHandler(source)
        handler.seed(seed)
        handler.reset(scenario_id=0)
        return handler._drawn

    a, b = drawn(1), drawn(1)
    assert len(a)
    for x, y in zip(vars(a).values(), vars(b).values(), strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(
        not np.array_equal(drawn(1).line, drawn(s).line) for s in range(2, 12)
    )  # other seeds, other lines
    # the file-based maintenance.csv is not read then (grid2op's class does not read it)
    (folder / "chronics" / "0000" / "maintenance.csv").write_text("garbage")
    grid_vec.make(folder).reset(options={"scenario_id": 0})
    assert ScenarioHandler(source, outages=False).source is source


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"line_to_maintenance": ["nope"]}, r"line_to_maintenance\[0\]: 'nope' names no powerline"),
        ({"maintenance_starting_hour": 25}, r"maintenance_starting_hour: 25.* not an hour"),
        ({"daily_proba_per_month_maintenance": [2] * 12}, r"\[0\]: 2.* not a probability"),
        ({"max_daily_number_per_month_maintenance": [1] * 11}, "a list of 12 numbers"),
        ({"maintenance_day_of_week": [7]}, "maintenance_day_of_week"),
        ({"maintenance_ending_hour": None}, "maintenance_ending_hour"),
    ],
)
def test_hostile_maintenance_meta_is_a_named_error(tmp_path, case14_model, change, message):
    path = tmp_path / "maintenance_meta.json"
    path.write_text(json.dumps({**META, **change}))
    with pytest.raises(FolderFormatError, match=message) as info:
        read_maintenance_plan(path, case14_model.branch_names)
    assert str(path) in str(info.value)


def test_grid_env_keyword_defaults_on(case14_model):
    # GridEnv's keywords are GameConfig.build's (written there once)
    assert GameConfig.build.__kwdefaults__["maintenance"] is True
    assert GridEnv(case14_model, SyntheticSource(case14_model, length=8)).config.maintenance
