"""Stable-Baselines3 PPO on a grid_vec task, then its score on the task's test split.

    pip install -e '.[sb3]'
    python examples/sb3_task.py --task grid_vec/Case14Topology-v0 --minutes 25

The task's vector env (batched, SAME_STEP autoreset as SB3 wants) is handed to SB3 through
``grid_vec.integrations.sb3.GymnasiumToSB3VecEnv`` and normalised with SB3's
``VecNormalize``. Works for discrete and continuous (``Box``) tasks. SB3's PPO has no
action masks (sb3-contrib's MaskablePPO has them): an illegal action is played as
do-nothing by the env. Training stops at the wall-clock budget; the trained policy is then
scored by the Runner beside do-nothing (progress shown as it goes). Writes
``<out>/result.json``, ``<out>/curve.csv`` (seconds, timesteps, mean time steps survived by
the training episodes ended since the last line), and the trained model: ``<out>/model.zip``
(``PPO.load``) with its observation statistics ``<out>/vecnormalize.pkl``
(``VecNormalize.load``; SB3's own format, a pickle: load only files you wrote);
``grid-vec eval TASK --agent <out>/model.zip --trust-pickle`` scores it again. Ctrl-C saves
both as trained so far, prints the command that scores them and exits with status 130 (no
traceback).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

import grid_vec
from grid_vec.integrations.ppo import SaveOnInterrupt, score_command
from grid_vec.integrations.sb3 import GymnasiumToSB3VecEnv
from grid_vec.integrations.sb3_policy import Sb3Policy
from grid_vec.runner.evaluate import evaluate_task, format_scores


class Budget(BaseCallback):
    """Stops training after ``seconds`` and writes the learning curve."""

    def __init__(self, seconds: float, curve: Path) -> None:
        super().__init__()
        self.seconds, self.curve = seconds, curve
        self.start = time.perf_counter()
        self.survived: np.ndarray | None = None
        self.ended: list[int] = []

    def _on_training_start(self) -> None:
        self.survived = np.zeros(self.training_env.num_envs, dtype=np.int64)
        self.curve.write_text("seconds,timesteps,episodes,mean_survival\n")

    def _on_step(self) -> bool:
        assert self.survived is not None
        for i, (info, done) in enumerate(
            zip(self.locals["infos"], self.locals["dones"], strict=True)
        ):
            self.survived[i] += 1 + int(info.get("skipped_steps", 0))
            if done:
                self.ended.append(int(self.survived[i]))
                self.survived[i] = 0
        return time.perf_counter() - self.start < self.seconds

    def _on_rollout_end(self) -> None:
        mean = float(np.mean(self.ended)) if self.ended else float("nan")
        seconds = time.perf_counter() - self.start
        with self.curve.open("a") as f:
            f.write(f"{seconds:.1f},{self.num_timesteps},{len(self.ended)},{mean:.1f}\n")
        print(
            f"{seconds:7.0f}s  timesteps {self.num_timesteps:8d}  mean survival {mean:7.1f}",
            flush=True,  # a log (stdout a file or a pipe) shows it now, not at the end
        )
        self.ended = []


def main() -> None:
    with SaveOnInterrupt("sb3_task") as interrupt:
        train_and_score(parse_args(), interrupt)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="grid_vec/Case14Topology-v0")
    p.add_argument("--minutes", type=float, default=25.0)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument(
        "--log-std-init",
        type=float,
        default=0.0,
        help="(Box tasks) the log of the exploration noise's first standard deviation, in the "
        "action's units (MW for redispatch)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-split", default="test")
    p.add_argument("--out", default="runs/sb3")
    return p.parse_args()


def train_and_score(args: argparse.Namespace, interrupt: SaveOnInterrupt) -> None:
    """Train, save the model, score it; on Ctrl-C (``interrupt``) the model as trained so
    far is saved the same way."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    envs = grid_vec.make_vec(
        args.task,
        args.num_envs,
        vectorization="batched",
        autoreset_mode=AutoresetMode.SAME_STEP,
        split="train",
    )
    venv = VecNormalize(GymnasiumToSB3VecEnv(envs), gamma=0.99)
    venv.seed(args.seed)
    continuous = isinstance(envs.single_action_space, gymnasium.spaces.Box)
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=64,
        batch_size=256,
        seed=args.seed,
        verbose=0,
        policy_kwargs={"log_std_init": args.log_std_init} if continuous else None,
    )
    start = time.perf_counter()

    def save() -> str:
        """Write the model and its observation statistics; the line saying where they are and
        the command scoring them."""
        venv.training = False  # the statistics frozen, as the scoring plays them
        model.save(out / "model.zip")
        venv.save(str(out / "vecnormalize.pkl"))
        split = () if args.eval_split == "test" else ("--split", args.eval_split)
        command = score_command(args.task, out / "model.zip", "--trust-pickle", *split)
        return (
            f"saved {out / 'model.zip'} (normalisation: {out / 'vecnormalize.pkl'}); score it "
            f"with: {command}"
        )

    def save_interrupted() -> str:
        seconds = time.perf_counter() - start
        return f"after {model.num_timesteps} timesteps ({seconds:.0f} s of training): {save()}"

    interrupt.save = save_interrupted
    model.learn(10**9, callback=Budget(args.minutes * 60, out / "curve.csv"))
    train_seconds = time.perf_counter() - start
    saved = save()
    interrupt.save = lambda: f"while scoring: {saved}"  # the model is already there
    print(saved, flush=True)
    scores = [
        evaluate_task(
            args.task,
            Sb3Policy(model, venv),
            agent_name="sb3-ppo",
            split=args.eval_split,
            pbar="auto",
        ),
        evaluate_task(args.task, "do_nothing", split=args.eval_split, pbar="auto"),
    ]
    venv.close()
    print(format_scores(scores))
    result = {
        "settings": vars(args),
        "train_seconds": train_seconds,
        "timesteps": model.num_timesteps,
        "model": str(out / "model.zip"),
        "scores": [s.row() for s in scores],
    }
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
