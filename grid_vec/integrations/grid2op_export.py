"""grid_vec's recorded runs in grid2op's layout, for grid2op's tools (``EpisodeData``,
grid2viz): ``grid-vec export RUN --grid2op DIR`` or :func:`export_run`.

A recording holds the env's observation (a selection of attributes) and the agent's actions;
grid2op's episode holds grid2op's whole observation and action vectors. So each episode is
played again: the env of the recording is made from its ``meta.json`` (the dataset folder
and the make keywords the Runner wrote), reset with the recorded seed and options and
stepped with the recorded actions, beside a twin that observes every attribute grid2op's
observation is built from. Every step's observation and reward must equal the recording's
(bitwise), or the export stops naming the episode and the step: an export is the recording,
not a new run.

What is written, in the layout of grid2op's ``Runner(path_save=DIR)`` (one folder per
episode, named after its scenario, beside the four ``dict_*_space.json`` of the folder's
grid2op spaces)::

    observations.npz            grid2op's observation vectors, the initial one first
    actions.npz                 the agent's actions as grid2op actions (GridEnv.grid2op_action)
    env_modifications.npz       the scenario's injections of each step (no voltages, as
                                grid2op's), the branches in maintenance
    opponent_attack.npz         the opponent's attack at every step it lasts (set_line_status
                                -1 of the branch)
    rewards.npz, agent_exec_times.npz, disc_lines_cascading_failure.npz, legal_ambiguous.npz
    episode_meta.json, episode_times.json, _parameters.json, other_rewards.json, grid2op.info

Arrays have ``max_steps`` rows (grid2op's ``chronics_max_timestep``; observations one more),
NaN past the last step played, as grid2op's Runner writes them. A step's time is not split
into grid2op's parts: ``episode_times.json`` holds the env's and the agent's totals, the
parts 0. Each episode is written in a hidden folder, then renamed: no half-written episode.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grid2op  # the extra: pip install 'grid_vec[grid2op]'
import numpy as np
from grid2op.Episode import EpisodeData as Grid2opEpisodeData
from grid2op.Exceptions import Grid2OpException
from gymnasium import spaces

import grid_vec
from grid_vec._untrusted import quote, shorten
from grid_vec.integrations.grid2op import GRID2OP_OBSERVATION, Grid2opBridge, reference_env
from grid_vec.runner import EpisodeData, EpisodeDataError
from grid_vec.runner.recording import finished_episodes

__all__ = ["ExportError", "ExportedEpisode", "export_run"]

# the make keywords of a recording that the export passes on: those whose values JSON holds
# (the Runner writes the env's spec kwargs; objects such as parameters or an opponent are
# written as words, which make nothing again)
_MAKE_KEYWORDS = frozenset(
    {
        "backend", "scenario_seed", "allow_negative_loads", "difficulty", "split", "reward",
        "other_rewards", "max_iter", "action_type", "chunk_size", "thermal_limits",
        "gen_ramp", "maintenance", "observation_attributes", "action_mask", "action_subset",
        "safe_mask_rho",
    }
)  # fmt: skip
# keywords of objects, passed on only when None (an opponent=None run: no opponent)
_OBJECT_KEYWORDS = frozenset(
    {"parameters", "opponent", "heuristics", "dispatch_limits", "storage_units"}
)
_SPACE_FILES = {
    Grid2opEpisodeData.ACTION_SPACE: lambda ref: ref.action_space,
    Grid2opEpisodeData.OBS_SPACE: lambda ref: ref.observation_space,
    Grid2opEpisodeData.ENV_MODIF_SPACE: lambda ref: ref._helper_action_env,
    Grid2opEpisodeData.ATTACK_SPACE_FILE: lambda ref: ref._opponent_action_space,
}


class ExportError(ValueError):
    """A run that cannot be exported; the message names the episode (file) and why."""


@dataclass(frozen=True)
class ExportedEpisode:
    """One episode written in grid2op's layout."""

    episode: int  # its index in the grid_vec run
    name: str  # its folder under the export (``EpisodeData.from_disk(DIR, name)``)
    path: Path
    steps: int


def export_run(
    run: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    folder: str | os.PathLike[str] | None = None,
    skip_existing: bool = False,
    progress: Callable[[ExportedEpisode], None] | None = None,
) -> list[ExportedEpisode]:
    """Write every episode of a recorded run in grid2op's layout under ``out``.

    Args:
        run: a run directory written by grid_vec's Runner (``grid-vec run --save``).
        out: the export's directory (grid2op's ``path_save`` of one agent; grid2viz's
            ``--agents_path`` is its parent). Created if needed; an episode folder already
            there is not overwritten.
        folder: the grid2op dataset folder the run was recorded on (None: the one its
            ``meta.json`` names).
        skip_existing: leave an episode whose folder is in ``out`` already as it is (not
            returned), instead of refusing it.
        progress: called with each episode once written.

    Returns:
        The episodes written, in the run's order.

    Raises:
        ExportError: no episode in ``run``, a recording that does not load (naming the file),
            a run not recorded on a grid2op folder, an episode that does not play again as
            recorded (naming it and the step), an episode folder already in ``out``, or
            ``out`` holding another grid's episodes.
    """
    episodes = finished_episodes(Path(run))
    if not episodes:
        raise ExportError(f"no recorded episode under {run}")
    root = Path(out)
    exporter: _Exporter | None = None
    written: list[ExportedEpisode] = []
    names: set[str] = set()
    for index in sorted(episodes):
        try:
            recorded = EpisodeData.load(episodes[index])
        except EpisodeDataError as exc:
            raise ExportError(str(exc)) from exc
        try:
            if exporter is None:
                exporter = _Exporter(recorded, folder)
                exporter.write_spaces(root)
            name = _episode_name(recorded, names)
            names.add(name)
            if skip_existing and (root / name).exists():
                continue
            written.append(exporter.export(recorded, root, name))
        except OSError as exc:  # a DIR that is a file, read-only, full, under /proc...
            reason = shorten(exc.strerror or str(exc))
            where = exc.filename if isinstance(exc.filename, str) else root
            raise ExportError(f"{where}: cannot write the export there ({reason})") from exc
        if progress is not None:
            progress(written[-1])
    return written


class _Exporter:
    """The envs of a run (the recorded one and its twin observing grid2op's attributes) and
    grid2op's env of its folder; exports episodes one by one."""

    def __init__(self, first: EpisodeData, folder: str | os.PathLike[str] | None) -> None:
        meta_file = first.path / "meta.json"
        kwargs = first.meta.get("env_kwargs")
        if not isinstance(kwargs, dict):
            raise ExportError(f"{meta_file}: no env_kwargs: the run's env cannot be made again")
        if folder is None:
            folder = kwargs.get("id_or_path")
            if not isinstance(folder, str) or not Path(folder).is_dir():
                raise ExportError(
                    f"{meta_file}: the run's env ({str(folder)[:120]!r}) is not a grid2op "
                    "dataset folder here: grid2op's layout needs one (--data FOLDER names it "
                    "when the run was recorded on one elsewhere)"
                )
        others = {k: v for k, v in kwargs.items() if k != "id_or_path"}
        unknown = sorted(
            k
            for k, v in others.items()
            if k not in _MAKE_KEYWORDS and not (k in _OBJECT_KEYWORDS and v is None)
        )
        if unknown:
            raise ExportError(
                f"{meta_file}: env_kwargs has keys the export cannot make again: {unknown}"
            )
        self.folder = Path(folder)
        try:
            self.env = grid_vec.make(str(self.folder), **others)
            twin = {**others, "observation_attributes": GRID2OP_OBSERVATION}
            self.twin = grid_vec.make(str(self.folder), **twin)
        except (ValueError, TypeError, OSError) as exc:
            raise ExportError(f"{meta_file}: the run's env cannot be made again: {exc}") from exc
        for space in ("observation_space", "action_space"):
            if repr(getattr(self.env, space)) != first.meta.get(space):
                raise ExportError(
                    f"{meta_file}: the env made from it has another {space} than the "
                    "recording (recorded with another grid_vec or dataset?)"
                )
        try:  # grid2op opens a copy of the folder, its config.py never run
            self.reference = reference_env(self.folder)
        except (ValueError, Grid2OpException) as exc:
            raise ExportError(f"{self.folder}: grid2op cannot open it: {shorten(exc)}") from exc
        twin_env = self.twin.unwrapped
        self.bridge = Grid2opBridge(
            self.reference,
            twin_env.obs_layout,
            twin_env.topology,
            twin_env.model.n_branch,
            thermal_limit=twin_env.thermal_limit,
        )

    def write_spaces(self, root: Path) -> None:
        """grid2op's four space files in ``root`` (checked equal when already there)."""
        root.mkdir(parents=True, exist_ok=True)
        for file, space_of in _SPACE_FILES.items():
            text = json.dumps(space_of(self.reference).cls_to_dict(), indent=4, sort_keys=True)
            path = root / file
            if path.exists():
                data = text.encode("utf-8")  # read no more than the file it must equal
                if path.stat().st_size != len(data) or path.read_bytes() != data:
                    raise ExportError(f"{root} holds episodes of another grid ({path} differs)")
                continue
            path.write_text(text, encoding="utf-8")

    def export(self, recorded: EpisodeData, root: Path, name: str) -> ExportedEpisode:
        final = root / name
        if final.exists():
            raise ExportError(
                f"{final} exists: export into an empty directory (or --skip-existing)"
            )
        arrays = self._play(recorded)
        tmp = root / f".{name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            for file, data in arrays.items():
                np.savez_compressed(tmp / file, data=data)
            for file, value in self._json_files(recorded).items():
                (tmp / file).write_text(json.dumps(value, indent=4, sort_keys=True), "utf-8")
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return ExportedEpisode(recorded.result.episode, name, final, len(recorded))

    def _play(self, recorded: EpisodeData) -> dict[str, np.ndarray]:
        """Play the episode again (both envs), checking it against the recording; grid2op's
        arrays of it."""
        where = recorded.path
        steps, max_steps = len(recorded), int(recorded.result.max_steps or len(recorded))
        ref = self.reference
        out = _Grid2opArrays(ref, max(max_steps, steps))
        seed, options = recorded.meta.get("env_seed"), recorded.meta.get("reset_options")
        if not (seed is None or (type(seed) is int and seed >= 0)) or not (
            options is None or type(options) is dict
        ):
            raise ExportError(
                f"{where / 'meta.json'}: env_seed ({quote(seed)}: a non-negative int or null) "
                "or reset_options malformed"
            )
        try:
            obs, _ = self.env.reset(seed=seed, options=options)
        except (ValueError, TypeError) as exc:
            raise ExportError(f"{where / 'meta.json'}: the reset it records fails: {exc}") from exc
        full, _ = self.twin.reset(seed=seed, options=options)
        _same(where, 0, "observation", obs, recorded.observations[0])
        out.observations[0] = self._observation(full)
        source, space = self.twin.unwrapped.source, self.env.action_space
        n_branch = ref.n_line
        tripped = _info(recorded, "tripped_branches", (steps, n_branch), "b")
        illegal = _info(recorded, "is_illegal", (steps,), "b")
        ambiguous = _info(recorded, "is_ambiguous", (steps,), "b")
        for t in range(steps):
            try:
                action = _action(space, recorded.actions[t])
                obs, reward, *_ = self.env.step(action)
            except (ValueError, TypeError, IndexError) as exc:
                raise ExportError(f"{where}: the action of step {t + 1} is refused: {exc}") from exc
            full = self.twin.step(action)[0]
            _same(where, t + 1, "observation", obs, recorded.observations[t + 1])
            _same(where, t + 1, "reward", np.float64(reward), recorded.rewards[t])
            out.observations[t + 1] = self._observation(full)
            out.actions[t] = ref.action_space(self.env.unwrapped.grid2op_action(action)).to_vect()
            out.env_modifications[t] = self._env_modification(source, full)
            out.rewards[t] = reward
            out.agent_times[t] = recorded.arrays["agent_time"][t]
            attacked = self._under_attack()
            if attacked is not None:  # grid2op records the attack at every step it lasts
                attack = ref._opponent_action_space({"set_line_status": [(attacked, -1)]})
                out.attacks[t] = attack.to_vect()
            if tripped is not None:
                # grid2op stores info["disc_lines"] (-1: not tripped, else the cascade's
                # level) in a bool array: True where not tripped
                levels = np.where(tripped[t], 0, -1)
                out.disc_lines[t] = levels.astype(bool)
            if illegal is not None:
                out.legal_ambiguous[t, 0] = not illegal[t]
            if ambiguous is not None:
                out.legal_ambiguous[t, 1] = ambiguous[t]
        return out.files()

    def _under_attack(self) -> int | None:
        """The branch the opponent holds down in the step just played (None: none)."""
        opponent = self.twin.unwrapped.opponent_info()
        if opponent is None or opponent["attacked_branch"] < 0:
            return None
        return int(opponent["attacked_branch"]) if opponent["remaining_steps"] > 0 else None

    def _observation(self, full: np.ndarray) -> np.ndarray:
        return self.bridge.observation(full, _no_simulate).to_vect()

    def _env_modification(self, source: Any, full: np.ndarray) -> np.ndarray:
        """grid2op's env modification of the step just played: the scenario's injections of
        that step and the branches in maintenance then (the generators' voltages are not
        in it: grid2op's env sets them apart, and its modification leaves them unset)."""
        state = self.twin.unwrapped.snapshot().scenario
        row = source.read(state.scenario_id, state.step, state.step + 1)
        view = self.twin.unwrapped.view(full)
        modification = self.reference._helper_action_env(
            {
                "injection": {
                    "load_p": row.load_p[0],
                    "load_q": row.load_q[0],
                    "prod_p": row.gen_p[0],
                },
                "maintenance": np.asarray(view.time_next_maintenance) == 0,
            }
        )
        return modification.to_vect()

    def _json_files(self, recorded: EpisodeData) -> dict[str, Any]:
        meta, result = recorded.meta, recorded.result
        parameters = self.reference.parameters.to_dict()
        parameters.update(self.env.unwrapped.parameters.to_grid2op_dict())
        scenario = meta.get("scenario") or {}
        env_time = float(np.sum(recorded.arrays["step_time"]))
        agent_time = float(np.sum(recorded.arrays["agent_time"]))
        others = recorded.other_rewards
        return {
            Grid2opEpisodeData.PARAMS_FILE: parameters,
            Grid2opEpisodeData.META_FILE: {
                "chronics_path": str(self.folder / "chronics" / str(scenario.get("name", ""))),
                "chronics_max_timestep": str(result.max_steps or len(recorded)),
                "grid_path": str(self.folder / "grid.json"),
                "backend_type": "grid_vec",
                "env_type": "GridEnv",
                "nb_timestep_played": len(recorded),
                "cumulative_reward": float(result.cum_reward),
                "env_seed": meta.get("env_seed"),
                "agent_seed": meta.get("agent_seed"),
            },
            Grid2opEpisodeData.TIMES_FILE: {
                "Env": {
                    "total": env_time,
                    "apply_act": 0.0,
                    "powerflow_computation": 0.0,
                    "observation_computation": 0.0,
                },
                "Agent": {"total": agent_time},
                "total": env_time + agent_time,
            },
            Grid2opEpisodeData.OTHER_REWARDS_FILE: [
                {k: float(v[t]) for k, v in others.items()} for t in range(len(recorded))
            ],
            Grid2opEpisodeData.GRID2OPINFO_FILE: {"version": grid2op.__version__},
        }


class _Grid2opArrays:
    """An episode's arrays as grid2op's Runner sizes them: ``max_steps`` rows (observations
    one more), NaN past the last step played."""

    def __init__(self, reference: Any, rows: int) -> None:
        nan = np.float32(np.nan)
        self.observations = np.full((rows + 1, reference.observation_space.n), nan, np.float32)
        self.actions = np.full((rows, reference.action_space.n), nan, np.float32)
        helper = reference._helper_action_env
        self.env_modifications = np.full((rows, helper.n), nan, np.float32)
        self.attacks = np.zeros((rows, reference._opponent_action_space.n), np.float32)
        self.rewards = np.full(rows, nan, np.float32)
        self.agent_times = np.full(rows, nan, np.float32)
        self.disc_lines = np.full((rows, reference.n_line), True)
        self.legal_ambiguous = np.zeros((rows, 2), dtype=bool)
        self.legal_ambiguous[:, 0] = True

    def files(self) -> dict[str, np.ndarray]:
        data = Grid2opEpisodeData
        return {
            data.OBSERVATIONS_FILE: self.observations,
            data.ACTIONS_FILE: self.actions,
            data.ENV_ACTIONS_FILE: self.env_modifications,
            data.ATTACK: self.attacks,
            data.REWARDS_FILE: self.rewards,
            data.AG_EXEC_TIMES: self.agent_times,
            data.LINES_FAILURES: self.disc_lines,
            data.LEGAL_AMBIGUOUS: self.legal_ambiguous,
        }


def _action(space: spaces.Space, row: np.ndarray) -> Any:
    """A recorded action row as the env takes it (Dict actions are stored flattened)."""
    if isinstance(space, spaces.Discrete):
        return int(row)
    if isinstance(space, spaces.Dict):
        return spaces.unflatten(space, row)
    return np.asarray(row, dtype=space.dtype)


def _info(recorded: EpisodeData, key: str, shape: tuple[int, ...], kinds: str) -> Any:
    """A recorded info entry of this shape and dtype kind, None when not recorded (a
    recording is untrusted: anything else is an error naming it)."""
    values = recorded.info(key)
    if values is None:
        return None
    if (
        not isinstance(values, np.ndarray)
        or values.shape != shape
        or values.dtype.kind not in kinds
    ):
        raise ExportError(
            f"{recorded.path}: info.{key} is not a {shape} array of kind {kinds!r} "
            f"({getattr(values, 'shape', type(values).__name__)})"
        )
    return values


def _same(where: Path, step: int, what: str, played: Any, recorded: Any) -> None:
    if not np.array_equal(np.asarray(played), np.asarray(recorded), equal_nan=True):
        raise ExportError(
            f"{where}: the episode does not play again as recorded: the {what} of step {step} "
            "differs (recorded with another grid_vec, dataset or agent seed?)"
        )


def _no_simulate(played: dict) -> Any:
    raise RuntimeError("an exported observation does not simulate")


def _episode_name(recorded: EpisodeData, taken: set[str]) -> str:
    """The scenario's name (grid2op's name of an episode), with the episode's index when the
    run played the scenario more than once."""
    scenario = recorded.meta.get("scenario") or {}
    name = str(scenario.get("name") or f"episode_{recorded.result.episode:05d}")
    if not name or name.startswith(".") or "/" in name or "\\" in name or name in taken:
        name = f"{name.strip('./')}_{recorded.result.episode:05d}"
    return name
