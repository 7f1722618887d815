"""A grid2op agent, unchanged, evaluated on grid_vec (and, with ``--compare``, on grid2op +
LightSimBackend beside it: the same actions, the same end step, the wall times); with
``--export DIR``, also over two scenarios in grid_vec's Runner, recorded under ``DIR/run`` and
exported for grid2op's tools under ``DIR/grid2op/<agent>`` (``EpisodeData.from_disk`` and
grid2viz read it).

    python examples/grid2op_agents.py --agent TopologyGreedy --steps 20 [--compare] [--export DIR]

Needs the grid2op extra (``pip install -e '.[grid2op]'``). ``--folder`` takes a bundled
grid2op folder's name or any grid2op-format folder's path.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import grid2op
import grid2op.Agent
from lightsim2grid import LightSimBackend

from grid_vec.integrations.grid2op import Grid2opAgentPolicy, make_env, reference_env

AGENTS = ("DoNothingAgent", "RecoPowerlineAgent", "PowerLineSwitch", "TopologyGreedy")


def on_grid_vec(folder: Path, agent_name: str, scenario: int, steps: int) -> tuple[list, int]:
    """The agent through grid_vec: its actions and the steps survived."""
    env = make_env(folder, opponent=None)  # grid_vec: grid2op's actions and attributes
    g2op = reference_env(folder)  # grid2op's env: its action_space builds the agent
    agent = getattr(grid2op.Agent, agent_name)(g2op.action_space)
    policy = Grid2opAgentPolicy(agent, env, g2op)
    obs, _ = env.reset(options={"scenario_id": scenario})
    reward, done, actions = 0.0, False, []
    while not done and len(actions) < steps:
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs, reward, done))
        actions.append(policy.last_action)
        done = terminated or truncated
    return actions, len(actions)


def on_grid2op(folder: Path, agent_name: str, scenario: int, steps: int) -> tuple[list, int]:
    """The same agent on grid2op + LightSimBackend (the code it replaces)."""
    from grid2op.Opponent import BaseOpponent

    env = grid2op.make(
        str(folder), backend=LightSimBackend(), opponent_class=BaseOpponent,
        opponent_init_budget=0.0, opponent_budget_per_ts=0.0,
    )  # fmt: skip
    agent = getattr(grid2op.Agent, agent_name)(env.action_space)
    env.set_id(scenario)
    obs, reward, done, actions = env.reset(), 0.0, False, []
    while not done and len(actions) < steps:
        action = agent.act(obs, reward, done)
        obs, reward, done, _ = env.step(action)
        actions.append(action)
    return actions, len(actions)


def evaluate_and_export(folder: Path, agent_name: str, steps: int, out: Path) -> None:
    """The agent over two scenarios in grid_vec's Runner (two sub-envs in one process),
    recorded, then exported in grid2op's layout and read back by grid2op."""
    from grid2op.Episode import EpisodeData

    import grid_vec
    from grid_vec.integrations.grid2op import GRID2OP_OBSERVATION, Grid2opBatchPolicy
    from grid_vec.integrations.grid2op_export import export_run
    from grid_vec.runner import Runner

    g2op = reference_env(folder)
    agent = getattr(grid2op.Agent, agent_name)(g2op.action_space)
    envs = grid_vec.make_vec(
        folder, 2, action_type="set_bus_continuous", observation_attributes=GRID2OP_OBSERVATION,
        opponent=None,
    )  # fmt: skip
    with Runner(envs, Grid2opBatchPolicy(agent, g2op)) as runner:
        runner.run(2, max_iter=steps, path_save=out / "run")
    for episode in export_run(out / "run", out / "grid2op" / agent_name):
        data = EpisodeData.from_disk(str(episode.path.parent), episode.name)
        print(
            f"exported scenario {episode.name}: {len(data.actions)} steps, grid2op reads "
            f"{len(data.observations)} observations from {episode.path}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=AGENTS, default="RecoPowerlineAgent")
    parser.add_argument("--folder", default="l2rpn_case14_sandbox")
    parser.add_argument("--scenario", type=int, default=0)
    parser.add_argument("--steps", type=int, default=50, help="most steps played")
    parser.add_argument("--compare", action="store_true", help="play it on grid2op too")
    parser.add_argument(
        "--export", type=Path, default=None, metavar="DIR", help="record and export a Runner run"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # grid2op's notices
    folder = Path(args.folder)
    if not folder.is_dir():
        folder = Path(grid2op.__file__).parent / "data" / args.folder
    start = time.perf_counter()
    actions, survived = on_grid_vec(folder, args.agent, args.scenario, args.steps)
    print(f"grid_vec: {args.agent} played {survived} steps in {time.perf_counter() - start:.2f} s")
    if args.compare:
        start = time.perf_counter()
        theirs, g_survived = on_grid2op(folder, args.agent, args.scenario, args.steps)
        print(
            f"grid2op:  {args.agent} played {g_survived} steps in "
            f"{time.perf_counter() - start:.2f} s"
        )
        same = sum(a == b for a, b in zip(actions, theirs, strict=False))
        print(f"the same action at {same} of {max(len(actions), len(theirs))} steps")
    if args.export is not None:
        evaluate_and_export(folder, args.agent, args.steps, args.export)


if __name__ == "__main__":
    main()
