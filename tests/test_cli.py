"""The grid-vec command line: what it prints for a run and a replay, and the one line (exit
status 2, no traceback) it prints for each mistake of the user."""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from grid_vec import __version__
from grid_vec.cli import main
from grid_vec.runner import format_results_table, load_run

RUN = ["run", "--num-envs", "1", "--max-iter", "6", "--no-progress"]


def printed_table(out: str) -> str:
    """The results table a run printed (before its 'saved ... under' line)."""
    return out.split("\n\nsaved ")[0].rstrip("\n")


def test_version_flag_prints_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"grid-vec {__version__}"


def test_console_script_runs_as_module():
    out = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "grid-vec" in out.stdout and "run" in out.stdout and "replay" in out.stdout


def test_run_prints_the_results_it_records_and_replay_prints_them_again(tmp_path, capsys):
    save = tmp_path / "run"
    args = ["run", "--episodes", "3", "--num-envs", "2", "--max-iter", "20", "--no-progress"]
    assert main([*args, "--save", str(save)]) == 0
    out = capsys.readouterr().out
    episodes = load_run(save)
    assert [e.result.episode for e in episodes] == [0, 1, 2]
    assert all(len(e) == e.result.steps <= 20 for e in episodes)
    assert all(e.result.scenario_name.startswith("synthetic_") for e in episodes)
    table = format_results_table([e.result for e in episodes])
    assert printed_table(out) == table
    assert out.rstrip().endswith(f"saved 3 episodes under {save}  (grid-vec replay {save})")

    assert main(["replay", str(save), "--no-plot"]) == 0
    replayed = capsys.readouterr().out.rstrip("\n").split("\n\n")
    assert replayed[0] == table  # then how each episode ended
    assert replayed[1].splitlines() == [f"episode {k}: truncated after 20 steps" for k in range(3)]

    # resuming a finished run plays nothing new and prints the same table
    assert main([*args, "--save", str(save), "--resume"]) == 0
    assert printed_table(capsys.readouterr().out) == table


@pytest.mark.parametrize(
    ("agent", "recorded_as"),
    [("random", "RandomAgent"), ("reconnect", "ReconnectAgent"), ("greedy", "GreedyAgent")],
)
def test_each_baseline_agent_prints_the_results_it_recorded(agent, recorded_as, tmp_path, capsys):
    save = tmp_path / "run"
    assert main([*RUN, "--agent", agent, "--episodes", "2", "--save", str(save)]) == 0
    episodes = load_run(save)
    assert printed_table(capsys.readouterr().out) == format_results_table(
        [e.result for e in episodes]
    )
    for episode in episodes:
        assert episode.meta["agent"] == recorded_as
        assert episode.rewards.sum() == pytest.approx(episode.result.cum_reward)
    if agent == "random":  # the random agent does act (do-nothing is action 0)
        assert np.concatenate([e.actions for e in episodes]).any()


def mistakes(tmp_path):
    """(argv, start of the one line on stderr) for each mistake."""
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    not_a_run = tmp_path / "not_a_run"
    not_a_run.mkdir()
    (not_a_run / "notes.txt").write_text("mine")
    not_a_dataset = tmp_path / "not_a_dataset"
    not_a_dataset.mkdir()
    garbage_run = tmp_path / "garbage_run"
    (garbage_run / "episode_00000").mkdir(parents=True)
    (garbage_run / "episode_00000" / "meta.json").write_bytes(b"\x00\xff" * 100)
    return [
        (["run", "--env", "nowhere"], "grid-vec run: --env: the grid2op dataset 'nowhere' is "),
        (["run", "--env", ""], "grid-vec run: argument --env: must not be empty"),
        (["run", "--env", str(not_a_dataset)], f"grid-vec run: --env '{not_a_dataset}': "),
        (["run", "--save", str(a_file)], f"grid-vec run: --save {a_file} is not a directory"),
        (["run", "--save", ""], "grid-vec run: argument --save: must not be empty"),
        (["run", "--save", str(not_a_run)], f"grid-vec run: --save {not_a_run} is a directory "),
        (["run", "--resume"], "grid-vec run: --resume needs --save PATH"),
        (["run", "--no-save", "--resume"], "grid-vec run: --no-save contradicts"),
        (["run", "--num-actors", "2"], "grid-vec run: --num-actors needs --ray"),
        (["run", "--episodes", "0"], "grid-vec run: argument --episodes: must be a positive"),
        (["run", "--episodes", "x"], "grid-vec run: argument --episodes: must be a positive"),
        (["run", "--seed", "-1"], "grid-vec run: argument --seed: must be a non-negative"),
        (["run", "--agent", "clever"], "grid-vec run: argument --agent: invalid choice"),
        (["fly"], "grid-vec: argument COMMAND: invalid choice: 'fly'"),
        (["replay", str(tmp_path / "missing")], f"grid-vec replay: {tmp_path / 'missing'}: not a"),
        (["replay", str(a_file)], f"grid-vec replay: {a_file}: not a directory"),
        (["replay", str(not_a_run)], f"grid-vec replay: no recorded episode under {not_a_run}"),
        (["replay", str(garbage_run)], f"grid-vec replay: {garbage_run}/episode_00000/meta.json"),
        (["bench", "--num-envs", "0"], "grid-vec bench: argument --num-envs: must be a positive"),
        (
            ["run", "--agent", "grid2op-topology-greedy"],  # on the embedded case14
            "grid-vec run: --agent grid2op-topology-greedy plays on a grid2op dataset folder",
        ),
        (
            ["run", "--env", str(tmp_path), "--agent", "grid2op-reco-powerline", "--ray"],
            "grid-vec run: --agent grid2op-reco-powerline plays without --ray",
        ),
        (
            ["actions", "grid_vec/Case14Topology-v0", "--max-steps", "0"],
            "grid-vec actions: argument --max-steps: must be a positive",
        ),
        (
            ["run", "--env", "grid_vec/Case14Topology-v0", "--agent", "reconnect"],
            "grid-vec run: --agent reconnect plays the catalog's branch toggles; this env plays",
        ),
        (
            ["run", "--env", "grid_vec/Case14Redispatch-v0", "--agent", "greedy"],
            "grid-vec run: --agent greedy: the greedy baseline tries every catalog action",
        ),
    ]


@pytest.mark.parametrize("task", ["grid_vec/Case14Topology-v0", "grid_vec/Case14Combined-v0"])
def test_run_greedy_on_a_task_tries_the_task_s_own_actions_not_branch_toggles(task, tmp_path):
    """On a task's reduced set (or a combined action) action k + 1 is not branch k's toggle:
    ``grid-vec run --agent greedy`` plays grid-vec eval's greedy there, every topology action
    of the env's space (a combined task crashed on the toggles before)."""
    from grid_vec.cli import _make_agent
    from grid_vec.env.make import env_factory

    factory = env_factory(task)
    probe = factory()
    space = probe.action_space
    probe.close()
    agent = _make_agent("greedy", space, factory)
    assert agent.candidates is None and agent.rank == "max_rho"  # the space's every action
    save = tmp_path / "run"
    argv = [*RUN, "--env", task, "--agent", "greedy", "--episodes", "1", "--save", str(save)]
    assert main(argv) == 0
    (episode,) = load_run(save)
    assert episode.meta["agent"] == "GreedyAgent"


def test_each_mistake_is_one_line_on_stderr_and_exit_status_2(tmp_path, capsys):
    for argv, start in mistakes(tmp_path):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "", argv
        assert err.count("\n") == 1 and err.startswith(start), (argv, err)
        assert "Traceback" not in err


def test_the_console_script_prints_one_line_and_exits_2_on_a_mistake(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "grid_vec.cli", "run", "--env", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("grid-vec run: --env ")


def test_save_and_env_are_checked_before_the_run_directory_is_created(tmp_path, capsys):
    save = tmp_path / "run"
    assert main([*RUN, "--env", "nowhere", "--save", str(save)]) == 2
    assert not save.exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert main([*RUN, "--env", "nowhere", "--save", str(a_file)]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"grid-vec run: --save {a_file}")


def test_off_a_terminal_run_writes_plain_progress_lines_and_no_progress_silences_them(capsys):
    argv = ["run", "--num-envs", "1", "--max-iter", "2", "--episodes", "1", "--no-save"]
    assert main(argv) == 0  # stderr is captured: no terminal
    out, err = capsys.readouterr()
    assert re.fullmatch(r"episodes: 1/1 \(100%\), \d+ s\n", err), err  # no tqdm bar
    assert "\x1b" not in out + err and "\r" not in out + err
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def three_scenario_folder(root: Path) -> Path:
    """A grid2op-format folder of case14 with the 3 scenarios 0000, 0001 and 0002 (synthetic
    ones, 12 steps each)."""
    import pandapower as pp

    from grid_vec.chronics import SyntheticSource
    from grid_vec.grid.compile import compile_net
    from grid_vec.grid.networks import load_network

    net = load_network("case14")
    model = compile_net(net, name="case14")
    root.mkdir(parents=True)
    pp.to_json(net, str(root / "grid.json"))
    source, gens = SyntheticSource(model, seed=4, length=12), model.gen_kind != "slack"
    for i in range(3):
        folder = root / "chronics" / f"{i:04d}"
        folder.mkdir(parents=True)
        inj = source.read(i, 0, 12)
        for stem, names, values in (
            ("load_p", model.load_names, inj.load_p),
            ("load_q", model.load_names, inj.load_q),
            ("prod_p", model.gen_names[gens], inj.gen_p[:, gens]),  # the slack left out
            ("prod_v", model.gen_names[gens], inj.gen_v[:, gens]),
        ):
            rows = [";".join(f"{v:.6f}" for v in row) for row in values]
            (folder / f"{stem}.csv").write_text("\n".join([";".join(names), *rows]) + "\n")
        (folder / "start_datetime.info").write_text("2019-01-05 23:55\n")
        (folder / "time_interval.info").write_text("00:05\n")
    return root


def test_a_run_with_more_episodes_than_scenarios_says_which_it_plays_again(tmp_path, capsys):
    folder = three_scenario_folder(tmp_path / "env3")
    save = tmp_path / "run"
    argv = ["run", "--env", str(folder), "--num-envs", "1", "--max-iter", "3", "--save"]
    assert main([*argv, str(save), "--episodes", "4"]) == 0
    err = capsys.readouterr().err.splitlines()
    # what the recording says was played: 0002 twice, as the line said before playing
    played = Counter(e.result.scenario_name for e in load_run(save))
    assert played == {"0000": 1, "0001": 1, "0002": 2}
    assert err[0] == (
        "grid-vec run: the 4 episodes play 3 of the 3 scenarios (each episode's env seed "
        "draws one): scenario 0002 is played 2 times"
    )
    assert err[1].startswith("episodes: 4/4 (100%)")  # the line came first


def test_a_run_playing_each_scenario_once_says_nothing_of_scenarios(tmp_path, capsys):
    folder = three_scenario_folder(tmp_path / "env3")
    argv = ["run", "--env", str(folder), "--num-envs", "1", "--max-iter", "3", "--save"]
    assert main([*argv, str(tmp_path / "run"), "--episodes", "2", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert len({e.result.scenario_name for e in load_run(tmp_path / "run")}) == 2


def test_run_and_replay_help_say_what_each_column_of_the_results_table_holds(tmp_path, capsys):
    assert main(["run", "--episodes", "1", "--max-iter", "2", "--no-save", "--no-progress"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    columns = re.split(r"\s{2,}", header.strip())
    assert {"max", "agent s", "env s", "pf s"} <= set(columns)
    for command in ("run", "replay"):
        assert main([command, "--help"]) == 0
        help_lines = capsys.readouterr().out.splitlines()
        for column in columns:
            # an entry of the legend: the column's name, then its explanation on that line
            entry = re.compile(rf"  {column}\s{{2,}}\w.*")
            assert any(entry.fullmatch(line) for line in help_lines), (command, column)


def test_replay_plots_rho_only_for_a_known_env_with_the_recorded_layout(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from grid_vec.cli import _recorded_grid

    save = tmp_path / "run"
    assert main([*RUN, "--episodes", "1", "--save", str(save)]) == 0
    meta = load_run(save)[0].meta
    view, branch_names = _recorded_grid(meta)
    assert view is not None and len(branch_names) == 20
    assert _recorded_grid({**meta, "observation_space": "Box(0, 1, (3,), float32)"}) == (None, None)
    assert _recorded_grid({**meta, "env_id": str(tmp_path)}) == (None, None)  # never a path
    capsys.readouterr()
    assert main(["replay", str(save)]) == 0
    png = save / "episode_00000" / "episode.png"
    assert capsys.readouterr().out.rstrip().endswith(f"wrote {png}")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_a_grid2op_agent_without_grid2op_is_one_line_naming_the_extra(
    tmp_path, capsys, monkeypatch
):
    for module in ("grid2op", "grid_vec.integrations.grid2op"):
        monkeypatch.setitem(sys.modules, module, None)  # as if the extra were not installed
    argv = ["run", "--env", str(tmp_path), "--agent", "grid2op-topology-greedy", "--no-save"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'grid_vec[grid2op]'" in err
