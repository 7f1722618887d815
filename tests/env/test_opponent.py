"""The opponents without grid2op: their rules step by step, the rho-weighted choice, the
geometric schedule (seeds, parameters, the all-targets-connected rule, the rho-rank choice),
config.py read as data (what is read, what is refused), a folder's opponent switched off or
replaced."""

from __future__ import annotations

import shutil
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from grid_vec.chronics.config_file import parse_config
from grid_vec.chronics.opponent_config import OpponentConfig, opponent_entries
from grid_vec.chronics.untrusted import FolderFormatError
from grid_vec.core.rules.opponent import (
    GeometricOpponent,
    OpponentBatch,
    RandomLineOpponent,
    WeightedRandomOpponent,
)
from grid_vec.env.folder_opponent import UnsupportedOpponentWarning, opponent_of

BRANCHES = np.array([f"line_{i}" for i in range(6)])


def _run(config, steps, status=None, rho=None, seed=0, horizon=None):
    """Step one opponent ``steps`` times; per step (new attack, under attack, remaining,
    budget after)."""
    batch = OpponentBatch(config, 1)
    batch.reset(np.array([0]), [np.random.default_rng(seed)], np.array([horizon or steps]))
    status = np.ones((1, len(BRANCHES)), dtype=bool) if status is None else status
    a_or = np.ones((1, len(BRANCHES))) if rho is None else rho[None]
    out = []
    for _ in range(steps):
        new, under, remaining = batch.step(np.array([0]), status, a_or, np.ones(len(BRANCHES)))
        out.append((int(new[0]), int(under[0]), int(remaining[0]), float(batch.budget[0])))
    return out


def test_random_line_opponent_follows_grid2op_budget_duration_and_cooldown():
    """Budget 1/step, cost 1/step, D = 3, C = 5 (the timeline grid2op's OpponentSpace plays,
    see test_grid2op_opponent.py). An attack needs D * cost = 3 of budget: the first starts
    at step 3, when the cooldown counter (C at reset, -1 a step) is 2; it becomes 2 + 5 = 7.
    The budget is 3 again at step 6 (counter 4 <= C: attack, counter 9); at step 9 the
    budget suffices but the counter (6) is above C: the next attack waits for step 10."""
    config = RandomLineOpponent([0, 1], budget_per_step=1.0, attack_duration=3, attack_cooldown=5)
    config.bind(BRANCHES)
    steps = _run(config, 14)
    starts = [t for t, (new, *_) in enumerate(steps, 1) if new >= 0]
    assert starts == [3, 6, 10]
    assert [r for _, _, r, _ in steps[2:6]] == [3, 2, 1, 3]  # remaining steps, this one too
    assert [b for *_, b in steps[:6]] == [1, 2, 2, 2, 2, 2]  # +1 a step, -1 a step attacked
    assert all(under in (0, 1) for _, under, r, _ in steps if r > 0)


def test_cooldown_counter_blocks_a_second_attack():
    """C = 10 > D = 3: after the attack of step 2 the counter is 8 + 10 = 18; the opponent is
    asked again once it is back to 10 (step 10), and so on every C steps."""
    config = RandomLineOpponent([0], budget_per_step=2.0, attack_duration=3, attack_cooldown=10)
    config.bind(BRANCHES)
    starts = [t for t, (new, *_) in enumerate(_run(config, 30), 1) if new >= 0]
    assert starts == [2, 10, 20, 30]


def test_only_connected_targets_are_attacked():
    config = RandomLineOpponent([0, 1, 2], budget_per_step=5.0, attack_duration=1)
    config.bind(BRANCHES)
    status = np.ones((1, 6), dtype=bool)
    status[0, [0, 2]] = False
    assert {new for new, *_ in _run(config, 50, status) if new >= 0} == {1}
    status[0, 1] = False  # nothing to attack: no attack, nothing spent
    assert all(new == -1 for new, *_ in _run(config, 10, status))


def test_weighted_choice_follows_rho_over_normalization():
    """Shares of 4,000 attacks within 4 binomial standard errors of rho / norm, normalized."""
    rho = np.array([0.2, 0.4, 0.9, 0.3, 0.0, 0.5])
    norm = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0]
    config = WeightedRandomOpponent(
        list(range(6)), rho_normalization=norm, attack_period=1, budget_per_step=1.0,
        attack_duration=1, attack_cooldown=0,
    )  # fmt: skip
    config.bind(BRANCHES)
    new = np.array([n for n, *_ in _run(config, 4000, rho=rho)])
    assert (new >= 0).all()  # period 1: an attack every step
    p = rho / np.array(norm)
    p /= p.sum()
    share = np.bincount(new, minlength=6) / len(new)
    assert share[4] == 0  # rho 0: never
    assert np.all(np.abs(share - p) <= 4 * np.sqrt(p * (1 - p) / len(new)) + 1e-12)


def test_weighted_opponent_waits_uniformly_before_attacking():
    """With a budget that is always enough, the first attack comes after U[0, period) steps
    of waiting: at step 1 + U, spread over the period."""
    firsts = []
    for seed in range(200):
        config = WeightedRandomOpponent(
            [0], attack_period=10, budget_per_step=100.0, attack_duration=1, attack_cooldown=0
        )
        config.bind(BRANCHES)
        batch = OpponentBatch(config, 1)
        batch.reset(np.array([0]), [np.random.default_rng(seed)])
        for t in range(1, 20):
            new, *_ = batch.step(np.array([0]), np.ones((1, 6), bool), np.ones((1, 6)), np.ones(6))
            if new[0] >= 0:
                firsts.append(t)
                break
    assert set(firsts) == set(range(1, 11))


def test_opponent_arguments_are_checked():
    with pytest.raises(ValueError, match="attack_duration"):
        RandomLineOpponent([0], attack_duration=0)
    with pytest.raises(ValueError, match="budget_per_step"):
        RandomLineOpponent([0], budget_per_step=-1)
    with pytest.raises(ValueError, match="rho_normalization"):
        WeightedRandomOpponent([0, 1], rho_normalization=[1.0])
    with pytest.raises(ValueError, match="attack_period"):
        WeightedRandomOpponent([0], attack_period=0)


# --- GeometricOpponent ----------------------------------------------------------------------


def _geometric(targets=(0, 1, 2), **kwargs):
    args = {
        "attack_every_xxx_hour": 3.0, "average_attack_duration_hour": 1.0,
        "minimum_attack_duration_hour": 0.5, "budget_per_step": 100.0,
        "attack_duration": 10**6, "attack_cooldown": 0, **kwargs,
    }  # fmt: skip
    config = GeometricOpponent(list(targets), **args)
    config.bind(BRANCHES)
    return config


def _planned(config, waits, durations, steps, status=None):
    """Step one opponent whose schedule is ``waits`` / ``durations`` (``status``: the branches'
    status, one row per step or one for all): per step (new attack, under attack, remaining,
    budget after)."""
    batch = OpponentBatch(config, 1)
    batch.reset(np.array([0]), [np.random.default_rng(0)], np.array([steps]))
    batch.extra.put(0, waits, durations)
    status = np.ones((1, len(BRANCHES)), dtype=bool) if status is None else status
    out = []
    for t in range(steps):
        up = status[t : t + 1] if len(status) > 1 else status  # per step, or constant
        new, under, remaining = batch.step(np.array([0]), up, np.ones((1, 6)), np.ones(6))
        out.append((int(new[0]), int(under[0]), int(remaining[0]), float(batch.budget[0])))
    return out


def _starts(steps):
    return [(t, r) for t, (new, _, r, _) in enumerate(steps, 1) if new >= 0]


def test_geometric_opponent_plays_its_schedule():
    """Waits 3, 2, 4 and durations 5, 6, 2: the first attack starts at step 1 + 3 and lasts 5
    steps (4 .. 8); the countdown starts again after it: 1 + 2 steps later (11), then 1 + 4
    steps after that one ends (21). No attack is left after the third."""
    steps = _planned(_geometric(), [3, 2, 4], [5, 6, 2], 40)
    assert _starts(steps) == [(4, 5), (11, 6), (21, 2)]
    assert sum(under >= 0 for _, under, _, _ in steps) == 5 + 6 + 2


def test_geometric_opponent_rules_of_failures_cooldown_and_budget():
    """A drawn duration longer than ``attack_duration`` fails: the next attack waits its own
    time plus the failed one's duration. The cooldown counter restarts the countdown; a
    budget short of a whole attack fails it as any attack."""
    config = _geometric(attack_duration=5)
    steps = _planned(config, [2, 3, 1], [9, 2, 2], 30)  # 9 > 5: the first one fails at step 3
    assert _starts(steps) == [(3 + 3 + 9, 2), (15 + 2 + 1, 2)]
    config = _geometric(attack_cooldown=6)  # counter 6 at reset, C added per attack
    steps = _planned(config, [1, 1], [2, 2], 30)
    # step 2: counter 4 -> 10; it drops back to 6 at step 6, then 1 + 1 steps of countdown
    assert _starts(steps) == [(2, 2), (7, 2)]
    config = _geometric(budget_per_step=1.0)  # 3 of budget at step 3: an attack of 4 fails
    steps = _planned(config, [2, 1], [4, 3], 20)
    assert _starts(steps) == [(3 + 1 + 4, 3)]  # then its own wait plus the failed duration


def test_geometric_opponent_attacks_only_when_every_target_is_connected():
    """grid2op's rule: one target down at the scheduled time and the attack is lost; with the
    countdown spent, the next one is launched at the next step asked (if all are up)."""
    status = np.ones((30, len(BRANCHES)), dtype=bool)
    status[3:5, 2] = False  # target 2 down at steps 4 and 5
    steps = _planned(_geometric(), [3, 7, 2], [3, 2, 2], 30, status)
    assert _starts(steps) == [(6, 2)]  # 4 and 5 lost (the first two), the third at once
    status[:, 5] = False  # a branch that is not a target does not matter
    status[3:5, 2] = True
    assert _starts(_planned(_geometric(), [3, 7, 2], [3, 2, 2], 30, status))[0] == (4, 3)
    down = np.ones((1, len(BRANCHES)), dtype=bool)
    down[0, 0] = False
    assert _starts(_run(_geometric(), 3000, down)) == []  # never, whatever the draws


def test_geometric_schedule_follows_its_laws_and_a_seed_replays_it():
    """5-minute steps: waits geometric with mean 12 * (3 - 1) = 24, durations 6 plus a
    geometric part of mean 12 * 0.5 = 6; nothing scheduled past the episode's end."""
    config = _geometric()
    assert config.attack_rate == pytest.approx(1 / 24) and config.minimum_steps == 6
    waits, durations = [], []
    for seed in range(300):
        w, d = config.schedule(np.random.default_rng(seed), 500)
        assert len(w) == len(d) and sum(w) + sum(d[:-1]) < 500
        waits += w
        durations += d
    waits, durations = np.array(waits), np.array(durations)
    assert abs(waits.mean() - 24) <= 4 * np.sqrt(24 * 23 / len(waits))  # var of Geom(p)
    assert abs(durations.mean() - 12) <= 4 * np.sqrt(6 * 5 / len(durations))
    assert durations.min() >= 7 and waits.min() >= 1
    runs = [_run(config, 1000, seed=s) for s in (7, 7, 8)]
    assert _starts(runs[0]) and runs[0] == runs[1] and runs[0] != runs[2]


def test_geometric_choice_follows_rho_ranks():
    """Three targets with pmax_pmin_ratio 4: the ranks 0, 1, 2 of rho weigh 1, 2, 4."""
    config = _geometric(
        (0, 1, 2), attack_every_xxx_hour=1.0 / 6, average_attack_duration_hour=1.0 / 12,
        minimum_attack_duration_hour=0.0, attack_cooldown=0,
    )  # fmt: skip
    assert config.attack_rate == 1.0 and config.recovery_rate == 1.0  # one step each
    rho = np.array([0.9, 0.1, 0.5, 0.0, 0.0, 0.0])  # ranks 2, 0, 1
    new = np.array([n for n, *_ in _run(config, 6000, rho=rho) if n >= 0])
    assert len(new) > 2000
    share = np.bincount(new, minlength=3)[:3] / len(new)
    p = np.array([4, 1, 2]) / 7
    assert np.all(np.abs(share - p) <= 4 * np.sqrt(p * (1 - p) / len(new)))
    one = _geometric((4,), attack_every_xxx_hour=1.0 / 6, average_attack_duration_hour=1 / 12,
                     minimum_attack_duration_hour=0.0)  # fmt: skip
    assert {n for n, *_ in _run(one, 200) if n >= 0} == {4}


def test_geometric_opponent_arguments_are_checked():
    with pytest.raises(ValueError, match="greater than minimum_attack_duration_hour"):
        GeometricOpponent([0], average_attack_duration_hour=2, minimum_attack_duration_hour=2)
    with pytest.raises(ValueError, match="greater than average_attack_duration_hour"):
        GeometricOpponent([0], attack_every_xxx_hour=4, average_attack_duration_hour=4)
    with pytest.raises(ValueError, match="at least one step"):
        GeometricOpponent([0], attack_every_xxx_hour=4.05, average_attack_duration_hour=4)
    with pytest.raises(ValueError, match="at least one step"):
        GeometricOpponent([0], step_seconds=3600 * 5)  # 2 hours of minimum, 4 of average
    for name, bad in (
        ("pmax_pmin_ratio", 0), ("pmax_pmin_ratio", float("nan")), ("step_seconds", -1),
        ("minimum_attack_duration_hour", -1), ("attack_every_xxx_hour", "24"),
        ("average_attack_duration_hour", True),
    ):  # fmt: skip
        with pytest.raises(ValueError, match=name):
            GeometricOpponent([0], **{name: bad})
    config = GeometricOpponent([0])
    config.bind(BRANCHES)
    with pytest.raises(ValueError, match="episode's length"):
        OpponentBatch(config, 1).reset(np.array([0]), [np.random.default_rng(0)])


def test_geometric_opponent_from_config(tmp_path):
    text = GOOD.replace('class": RandomLineOpponent', 'class": GeometricOpponent').replace(
        '"kwargs_opponent": {"lines_attacked": lines}',
        '"kwargs_opponent": {"lines_attacked": lines, "attack_every_xxx_hour": 12, '
        '"minimum_attack_duration_hour": 1}',
    )
    path = _config(tmp_path, text)
    opponent = opponent_of(_entries(path), BRANCHES, step_seconds=600.0)
    assert isinstance(opponent, GeometricOpponent)
    assert opponent.attack_every_xxx_hour == 12 and opponent.minimum_attack_duration_hour == 1
    assert opponent.average_attack_duration_hour == 4 and opponent.pmax_pmin_ratio == 4
    assert opponent.minimum_steps == 6 and opponent.attack_cooldown == 288  # 6 steps an hour
    bad = text.replace('"attack_every_xxx_hour": 12', '"attack_every_xxx_hour": "x"')
    with pytest.raises(FolderFormatError, match=r"kwargs_opponent'\]\['attack_every_xxx_hour"):
        opponent_of(_entries(_config(tmp_path, bad)), BRANCHES)
    bad = text.replace('"attack_every_xxx_hour": 12', '"attack_every_xxx_hour": 2')
    with pytest.raises(FolderFormatError, match="greater than average_attack_duration_hour"):
        opponent_of(_entries(_config(tmp_path, bad)), BRANCHES)


# --- config.py, read as data ----------------------------------------------------------------

# a config.py as grid2op datasets write them (indented here, so that no line of this test
# file reads as an import of grid2op)
GOOD = textwrap.dedent(
    """
    from grid2op.Opponent import RandomLineOpponent, BaseActionBudget
    import grid2op.Action as actions
    hours = 12
    cooldown = hours * 24  # names and arithmetic
    cooldown = cooldown + 0
    lines = ["line_1", "line_3"]
    config = {
        "backend": PandaPowerBackend,
        "thermal_limits": [1.0, 2.0],
        "opponent_attack_cooldown": cooldown,
        "opponent_attack_duration": 2 ** 2 * 12,
        "opponent_budget_per_ts": -(-1) / 2,
        "opponent_init_budget": 144.0 - 144 % 7 // 2,
        "opponent_action_class": actions.PowerlineSetAction,
        "opponent_class": RandomLineOpponent,
        "opponent_budget_class": BaseActionBudget,
        "kwargs_opponent": {"lines_attacked": lines},
    }
    """
)


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.py"
    path.write_text(text)
    return path


def _entries(path: Path) -> OpponentConfig:
    """The opponent entries of a config.py file."""
    return opponent_entries(parse_config(path), path)


def test_config_reader_takes_literals_arithmetic_names_and_class_names(tmp_path):
    values = _entries(_config(tmp_path, GOOD)).values
    assert values == {
        "opponent_attack_cooldown": 288,
        "opponent_attack_duration": 48,
        "opponent_budget_per_ts": 0.5,
        "opponent_init_budget": 144.0 - 144 % 7 // 2,
        "opponent_action_class": "PowerlineSetAction",
        "opponent_class": "RandomLineOpponent",
        "opponent_budget_class": "BaseActionBudget",
        "kwargs_opponent": {"lines_attacked": ["line_1", "line_3"]},
    }
    opponent = opponent_of(_entries(tmp_path / "config.py"), BRANCHES)
    assert isinstance(opponent, RandomLineOpponent)
    assert opponent.branches == ["line_1", "line_3"] and opponent.attack_cooldown == 288


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').getcwd()", "Call is refused"),
        ("open('/etc/passwd').read()", "Call is refused"),
        ("os.environ", "Attribute is refused"),
        ("[1, 2][0]", "Subscript is refused"),
        ("[x for x in range(3)]", "ListComp is refused"),
        ("later", "not assigned above"),
        ("undefined_name", "not assigned above"),
        ("'a' * 3", "not a number"),
        ("[0] * 10 ** 9", "not a number"),
        ("10 ** 100", "exponent|number beyond"),
        ("2 ** 10 ** 9", "exponent"),
        ("1e300 * 1e300", "number beyond"),
        ("123456789012345678901234567890", "number beyond"),
        ("1 / 0", "arithmetic fails"),
        ("(-8) ** 0.5", "complex"),
        ("[" * 40 + "]" * 40, "nested more than"),
        ("lambda: 0", "Lambda is refused"),
        ("f'{later}'", "JoinedStr is refused"),
    ],
)
def test_config_reader_refuses_what_is_not_data(tmp_path, expression, message):
    text = f"config = {{'opponent_attack_cooldown': {expression}}}\nlater = 1\n"
    with pytest.raises(FolderFormatError, match=message) as info:
        _entries(_config(tmp_path, text))
    assert str(tmp_path / "config.py") in str(info.value)
    assert "opponent_attack_cooldown" in str(info.value)


def test_config_reader_bounds_names_through_names(tmp_path):
    chain = "v0 = 1\n" + "".join(f"v{i} = v{i - 1} + 1\n" for i in range(1, 60))
    with pytest.raises(FolderFormatError, match="nested more than"):
        _entries(_config(tmp_path, chain + "config = {'kwargs_opponent': v59}\n"))


def test_config_reader_refuses_calls_in_class_keys(tmp_path):
    text = "config = {'opponent_class': make_class('RandomLineOpponent')}\n"
    with pytest.raises(FolderFormatError, match="a class must be a name"):
        _entries(_config(tmp_path, text))


def test_bad_line_name_names_the_file_and_the_line(tmp_path):
    text = GOOD.replace('"line_3"', '"no_such_line"')
    with pytest.raises(FolderFormatError, match=r"config.py.*lines_attacked'\]\[1\].*no_such_line"):
        opponent_of(_entries(_config(tmp_path, text)), BRANCHES)


def test_unknown_opponent_class_warns_and_gives_none(tmp_path):
    text = GOOD.replace(
        '"opponent_class": RandomLineOpponent', '"opponent_class": GeometricOpponentMultiArea'
    )
    with pytest.warns(UnsupportedOpponentWarning, match="MultiArea.*opponent=None"):
        assert opponent_of(_entries(_config(tmp_path, text)), BRANCHES) is None
    text = GOOD.replace('class": RandomLineOpponent', 'class": BaseOpponent')
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # grid2op's never-attacking opponent: no warning
        assert opponent_of(_entries(_config(tmp_path, text)), BRANCHES) is None


def test_malformed_numbers_are_folder_errors(tmp_path):
    text = GOOD.replace("-(-1) / 2", "-0.5")
    with pytest.raises(FolderFormatError, match="opponent_budget_per_ts"):
        opponent_of(_entries(_config(tmp_path, text)), BRANCHES)


# --- a folder's opponent through make ------------------------------------------------------


@pytest.fixture
def folder_with_opponent(tmp_path):
    """A copy of rte_case14_opponent when grid2op's data are installed, else skipped."""
    grid2op = pytest.importorskip("grid2op", reason="uses a folder bundled with grid2op")
    source = Path(grid2op.__file__).parent / "data" / "rte_case14_opponent"
    target = tmp_path / "case14_opponent"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_folder_opponent_is_on_by_default_off_with_none_replaced_by_an_opponent(
    folder_with_opponent,
):
    import grid_vec

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        default = grid_vec.make(folder_with_opponent)
        off = grid_vec.make(folder_with_opponent, opponent=None)
        mine = RandomLineOpponent(["1_3_3"], budget_per_step=1.0, attack_duration=2)
        replaced = grid_vec.make(folder_with_opponent, opponent=mine)
    assert isinstance(default.opponent, RandomLineOpponent)
    assert default.opponent.attack_cooldown == 288 and len(default.opponent.branches) == 6
    assert off.opponent is None and replaced.opponent is mine
    config = folder_with_opponent / "config.py"
    config.write_text(config.read_text().replace('"1_4_4"', '"1_4_44"'))
    with pytest.raises(FolderFormatError, match=r"config.py.*lines_attacked'\]\[1\].*1_4_44"):
        grid_vec.make(folder_with_opponent)
    grid_vec.make(folder_with_opponent, opponent=None)  # not read when switched off
