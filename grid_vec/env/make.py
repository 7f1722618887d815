"""``make``: build a GridEnv from an embedded grid name or a grid2op-format folder.

This is the only place of the env layer that loads pandapower nets (to compile them); the
GridEnv it returns, and any env rebuilt from the compiled model, does not need pandapower.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium.envs.registration import EnvSpec

from grid_vec._untrusted import file_stamp
from grid_vec.chronics.scenario import ScenarioSource
from grid_vec.core.parameters import Parameters
from grid_vec.core.rules.dispatch import GeneratorLimits
from grid_vec.core.rules.storage import StorageUnits
from grid_vec.env.datasets import (
    DATA_DIR_VARIABLE,
    DatasetNotFoundError,
    find_dataset,
    is_dataset_name,
    is_grid2op_sample,
)
from grid_vec.env.embedded import EMBEDDED, embedded_model
from grid_vec.env.graph import OBSERVATIONS, GraphObservation
from grid_vec.env.grid_env import GridEnv
from grid_vec.env.multimix import MultiMixEnv, MultiMixFactory
from grid_vec.env.registration import GYM_IDS
from grid_vec.env.tasks import TASKS, dataset_folder, task_settings, task_split
from grid_vec.grid.model import GridModel


def make(
    id_or_path: str | os.PathLike,
    *,
    backend: str = "lightsim2grid",
    scenario_seed: int | None = None,
    allow_negative_loads: bool | None = None,
    difficulty: str | None = None,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    observation: str = "flat",
    **kwargs: Any,
) -> GridEnv | MultiMixEnv | GraphObservation:
    """A GridEnv for ``"case14"``, ``"case118"`` (or their gymnasium ids), a named task
    (:mod:`grid_vec.env.tasks`: ``split`` is ``"train"`` (default), ``"validation"`` or
    ``"test"``; keyword arguments override the task's settings; ``data_dir`` is the folder of
    a dataset task's grid2op dataset, found by :func:`~grid_vec.env.tasks.dataset_folder`
    when not given) or a folder path.

    Keyword arguments are those of :class:`GridEnv` (``thermal_limits``, ``parameters``,
    ``reward``, ``other_rewards``, ``opponent``, ``max_iter``, ``action_type``,
    ``chunk_size``, ``gen_ramp``, ``maintenance``). ``scenario_seed`` seeds the embedded
    synthetic scenarios.

    On a grid2op-format folder, what grid2op's ``make`` would take applies unless the
    keyword is passed:

    * ``parameters``: from ``difficulty_levels.json`` when the folder has one (the level
      ``difficulty``; by default ``"competition"``, else the highest numbered level), else
      from ``parameters.json``, else grid2op's defaults. ``params.json`` is not read (it holds
      the settings the data were generated with). ``difficulty`` naming no level is a
      ``ValueError``;
    * ``thermal_limits``: ``config.py``'s;
    * the storage units' characteristics of ``storage_units_charac.csv`` (required when the
      grid has storage units, as in grid2op);
    * the generators' characteristics of ``prods_charac.csv`` (pmin, pmax, ramps, which are
      dispatchable and which curtailable; an empty ramp is 0, as in grid2op) for the dispatch
      rules and the continuous action spaces; ``gen_ramp`` replaces its ramps (both ways);
      without the file, as in grid2op, there is neither redispatch nor curtailment;
    * ``opponent``: ``config.py``'s (``RandomLineOpponent``, ``WeightedRandomOpponent`` and
      ``GeometricOpponent``;
      another class gives a warning and no opponent, see
      :mod:`grid_vec.env.folder_opponent`). ``opponent=None`` switches it off, an
      ``Opponent`` replaces it;
    * negative loads (interconnections that export power) are accepted, as grid2op accepts
      them; ``allow_negative_loads=False`` refuses them;
    * maintenance and hazards: read from the scenarios' ``maintenance.csv`` and
      ``hazards.csv``, or drawn from ``maintenance_meta.json`` when ``config.py`` names
      grid2op's ``GridStateFromFileWithForecastsWithMaintenance`` (grid_vec's own draws,
      deterministic per seed and scenario); ``maintenance=False`` leaves them out;
    * the transformers are converted as grid2op's ``LightSimBackend`` converts them
      (pandapower 2's formulas, see :func:`grid_vec.grid.compile.compile_net`).

    A multi-mix folder (grid2op's ``.multimix`` marker, one grid2op folder per mix) gives a
    :class:`~grid_vec.env.multimix.MultiMixEnv`: one GridEnv per mix (the keywords apply to
    each), one mix per episode, chosen on reset as grid2op's ``MultiMixEnvironment`` chooses
    it. A folder whose grid has storage units plays them by grid2op's rules
    (:mod:`grid_vec.core.rules.storage`), with the characteristics of its
    ``storage_units_charac.csv``.

    ``observation="graph"`` wraps the GridEnv in a
    :class:`~grid_vec.env.graph.GraphObservation`: its observations are graphs (bus bars and
    branches, see :mod:`grid_vec.env.graph`) instead of the flat vector.

    The env's ``spec`` names it (the registered gymnasium id of an embedded grid,
    ``grid_vec/<folder name>`` for a folder) and keeps the arguments, so that recordings can
    name the env and ``gymnasium.make(env.spec)`` builds it again.

    Raises:
        ValueError: an unknown grid, task or ``observation``, or a bad keyword value.
    """
    check_observation(observation)
    env = env_factory(
        id_or_path,
        backend=backend,
        scenario_seed=scenario_seed,
        allow_negative_loads=allow_negative_loads,
        difficulty=difficulty,
        split=split,
        data_dir=data_dir,
        **kwargs,
    )()
    if observation == "graph":
        if isinstance(env, MultiMixEnv):
            raise ValueError("observation='graph' takes a single grid, not a multi-mix folder")
        return GraphObservation(env)
    return env


def check_observation(observation: Any) -> None:
    """Refuse an ``observation`` form that is not one of :data:`~grid_vec.env.graph.OBSERVATIONS`.

    Raises:
        ValueError: it is not.
    """
    if observation not in OBSERVATIONS:
        raise ValueError(f"observation must be one of {OBSERVATIONS}, got {observation!r}")


# embedded grid name -> its registered gymnasium id
_EMBEDDED_IDS = {name: env_id for env_id, name in GYM_IDS.items()}


@dataclass(frozen=True)
class GridEnvFactory:
    """Builds a GridEnv from compiled pieces (picklable: no pandapower needed to call it)."""

    # its envs can be built as the rows of one batched core (sharing_one_batch), which a
    # vector env's worker then steps together (read by grid_vec.vector.worker)
    makes_batch_rows: ClassVar[bool] = True

    model: GridModel
    source: ScenarioSource
    kwargs: dict[str, Any]
    spec: EnvSpec

    def __call__(self) -> GridEnv:
        env = GridEnv(self.model, self.source, **self.kwargs)
        env.spec = self.spec
        return env

    def sharing_one_batch(self, n: int) -> list[GridEnv]:
        """``n`` GridEnvs as ``self()`` builds them, the rows of one batched core (see
        :meth:`GridEnv.sharing_one_batch`)."""
        return self().sharing_one_batch(n)


def env_factory(
    id_or_path: str | os.PathLike,
    *,
    backend: str = "lightsim2grid",
    scenario_seed: int | None = None,
    allow_negative_loads: bool | None = None,
    difficulty: str | None = None,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    **kwargs: Any,
) -> GridEnvFactory | MultiMixFactory:
    """A picklable zero-argument factory of the GridEnv that :func:`make` would build.

    The net is loaded and compiled here, once; the factory only holds the compiled model and
    the scenario source, so a worker process calling it never imports pandapower (with the
    lightsim2grid backend). Arguments are those of :func:`make`.
    """
    if allow_negative_loads is not None and not isinstance(allow_negative_loads, bool):
        raise TypeError(
            f"allow_negative_loads must be a bool, got {type(allow_negative_loads).__name__}"
        )
    if difficulty is not None and not isinstance(difficulty, str):
        raise TypeError(f"difficulty must be a str (a level name), got {difficulty!r}")
    name = GYM_IDS.get(str(id_or_path), str(id_or_path))
    user_kwargs = dict(kwargs)
    given = {
        "scenario_seed": scenario_seed,
        "allow_negative_loads": allow_negative_loads,
        "difficulty": difficulty,
        "split": split,
        "data_dir": None if data_dir is None else str(data_dir),
    }
    explicit = {k: v for k, v in given.items() if v is not None}
    if name in TASKS:
        return _task_factory(name, backend, explicit, user_kwargs)
    if split is not None:
        raise ValueError(f"split only applies to named tasks ({', '.join(TASKS)})")
    if data_dir is not None:
        raise ValueError("data_dir only applies to the dataset tasks (grid_vec.env.tasks)")
    if name in EMBEDDED:
        for arg in ("allow_negative_loads", "difficulty"):
            if given[arg] is not None:
                raise ValueError(f"{arg} only applies to grid2op-format folders")
        from grid_vec.chronics.synthetic import SyntheticSource

        model = _cached_embedded_model(name)
        seed = EMBEDDED[name].scenario_seed if scenario_seed is None else scenario_seed
        source = SyntheticSource(model, seed=seed)
        env_id, target = _EMBEDDED_IDS[name], name
    else:
        path = _folder_of(str(id_or_path))
        if scenario_seed is not None:
            raise ValueError("scenario_seed only applies to embedded (synthetic) environments")
        env_id = "grid_vec/" + re.sub(r"[^\w.-]", "_", path.resolve().name)
        target = str(id_or_path)
        mixes = _mixes(path)
        if mixes:
            per_mix = tuple(
                (mix.name, env_factory(mix, backend=backend, **explicit, **user_kwargs))
                for mix in mixes
            )
            return MultiMixFactory(per_mix, _spec(env_id, target, backend, explicit, user_kwargs))
        model, source, folder_kwargs = _cached_folder(
            path, allow_negative_loads is not False, difficulty, "opponent" in kwargs
        )
        # what the caller passes wins over what the folder says (rules files, ramps, the
        # opponent: read only when the caller passes none, not even None)
        kwargs = {**kwargs, **{k: v for k, v in folder_kwargs.items() if kwargs.get(k) is None}}
        if kwargs.get("gen_ramp") is not None and "dispatch_limits" in folder_kwargs:
            kwargs["dispatch_limits"] = _with_ramps(kwargs["dispatch_limits"], kwargs["gen_ramp"])
    spec = _spec(env_id, target, backend, explicit, user_kwargs)
    return GridEnvFactory(model, source, {"backend": backend, **kwargs}, spec)


def _folder_of(id_or_path: str) -> Path:
    """The folder ``id_or_path`` names: itself when it is a directory, else, for a grid2op
    dataset's name, the dataset where grid2op keeps it
    (:func:`~grid_vec.env.datasets.find_dataset`, grid2op's bundled samples included, with a
    warning that a sample is what grid2op's ``test=True`` plays)."""
    path = Path(id_or_path)
    if path.is_dir():
        return path
    known = ", ".join(sorted(EMBEDDED) + sorted(GYM_IDS) + sorted(TASKS))
    lead = (
        f"id_or_path must be one of {known}, a grid2op dataset's name or a grid2op-format "
        f"folder; {id_or_path!r} is none of them"
    )
    if not is_dataset_name(id_or_path):
        raise ValueError(f"{lead} (no such folder)")
    try:
        folder = find_dataset(id_or_path, samples=True)
    except DatasetNotFoundError as exc:
        raise DatasetNotFoundError(
            exc.dataset, exc.looked_in, "make(FOLDER)", f"{lead}: "
        ) from None
    if is_grid2op_sample(folder):
        warnings.warn(
            f"{id_or_path}: playing the small sample grid2op's package ships ({folder}), as "
            f"grid2op.make({id_or_path!r}, test=True) does; the full dataset is found once it "
            f"is in ~/data_grid2op or ${DATA_DIR_VARIABLE}",
            stacklevel=4,
        )
    return folder


def _task_factory(task_id: str, backend: str, explicit: dict, user_kwargs: dict) -> GridEnvFactory:
    """A named task's env: its grid, the scenarios of one split, its settings (the caller's
    keyword arguments win; a dataset task's folder rules come next, as ``make(folder)``
    takes them)."""
    from grid_vec.chronics.subset import SubsetSource
    from grid_vec.chronics.synthetic import SyntheticSource

    task = TASKS[task_id]
    split = explicit.get("split", "train")
    if task.dataset:
        if "scenario_seed" in explicit:
            raise ValueError("scenario_seed only applies to embedded (synthetic) scenarios")
        folder = dataset_folder(task.grid, explicit.get("data_dir"))
        model, full, folder_kwargs = _cached_folder(
            folder,
            explicit.get("allow_negative_loads") is not False,
            explicit.get("difficulty"),
            "opponent" in user_kwargs,
        )
        source = SubsetSource(full, task.split_ids(split, len(full)))
    else:
        for arg in ("allow_negative_loads", "difficulty", "data_dir"):
            if arg in explicit:
                raise ValueError(f"{arg} only applies to grid2op datasets and folders")
        _, ids = task_split(task_id, split)
        model = _cached_embedded_model(task.grid)
        seed = explicit.get("scenario_seed", EMBEDDED[task.grid].scenario_seed)
        source = SubsetSource(SyntheticSource(model, seed=seed), ids)
        folder_kwargs = {}
    kwargs = task_settings(task_id, user_kwargs, model)
    if "action_set" in user_kwargs:
        # the spec keeps the set played, not the path: a run made again (a resume, an export)
        # plays that set, or is refused, whatever the file holds by then
        user_kwargs = {k: v for k, v in user_kwargs.items() if k != "action_set"}
        user_kwargs["action_subset"] = kwargs["action_subset"]
    kwargs.update({k: v for k, v in folder_kwargs.items() if kwargs.get(k) is None})
    spec = _spec(task_id, task_id, backend, explicit, user_kwargs)
    return GridEnvFactory(model, source, {"backend": backend, **kwargs}, spec)


def _spec(env_id: str, target: str, backend: str, explicit: dict, user_kwargs: dict) -> EnvSpec:
    """The spec that names an env and keeps what ``make`` was given, to build it again."""
    return EnvSpec(
        id=env_id,
        entry_point="grid_vec.env.make:make",
        kwargs={"id_or_path": target, "backend": backend, **explicit, **user_kwargs},
    )


MULTIMIX_MARKER = ".multimix"  # grid2op's sign of a multi-mix folder
_NOT_MIXES = ("__pycache__", "_grid2op_classes")


def _mixes(path: Path) -> list[Path]:
    """The mix folders of a multi-mix folder in name order (grid2op's order), else []."""
    from grid_vec.chronics.untrusted import FolderFormatError, inside

    root = path.resolve()
    if not (root / MULTIMIX_MARKER).exists():
        return []
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in _NOT_MIXES)
    if not names:
        raise FolderFormatError(f"{root}: a multi-mix folder ({MULTIMIX_MARKER}) with no mix")
    return [inside(root, root / name) for name in names]


# Compiling a grid costs about a second (pandapower builds the case, then a base-case power
# flow): the compiled pieces are kept per process, read-only, and shared by the envs built
# from them. A folder's entry is keyed by the files compiling reads, so editing them rebuilds;
# its scenario source is built anew on each call (it reads the scenario folders as they are).
_COMPILED: dict[tuple, Any] = {}
_FOLDER_FILES = (
    "grid.json",
    "config.py",
    "difficulty_levels.json",
    "parameters.json",
    "prods_charac.csv",
    "storage_units_charac.csv",
)


def _cached_embedded_model(name: str) -> GridModel:
    key = ("embedded", name)
    if key not in _COMPILED:
        _COMPILED[key] = _read_only(embedded_model(name))
    return _COMPILED[key]


def _cached_folder(
    path: Path, allow_negative_loads: bool, difficulty: str | None, opponent_given: bool
) -> tuple[GridModel, ScenarioSource, dict[str, Any]]:
    from grid_vec.chronics.folder import FolderSource
    from grid_vec.env.folder_opponent import folder_opponent

    root = path.resolve()
    stamps = []
    for name in _FOLDER_FILES:
        try:
            stamps.append((name, file_stamp(root / name)))
        except OSError:
            stamps.append((name, None))
    key = ("folder", str(root), tuple(stamps))
    if key not in _COMPILED:
        _COMPILED.pop(next((k for k in _COMPILED if k[:2] == key[:2]), None), None)
        _COMPILED[key] = _load_folder(path)
    model, folder, limits, storage = _COMPILED[key]
    folder_kwargs = {
        "parameters": _folder_parameters(folder, difficulty),
        "dispatch_limits": limits,
        "storage_units": storage,
    }
    # config.py was read once with the folder (the entry's key holds its stamp)
    source = FolderSource(
        root, model, config=folder.config, allow_negative_loads=allow_negative_loads
    )
    if not opponent_given:
        step = source.info(0).step_duration.total_seconds()  # grid2op's: the first scenario's
        folder_kwargs["opponent"] = folder_opponent(folder.config, model.branch_names, step)
    return model, source, {k: _copy_if_array(v) for k, v in folder_kwargs.items()}


def _read_only(model: GridModel) -> GridModel:
    """Freeze the arrays of a model that several envs will share."""
    for value in vars(model).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return model


def _copy_if_array(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def clear_compiled_cache() -> None:
    """Forget the grids compiled by :func:`make` and :func:`env_factory` in this process."""
    _COMPILED.clear()


def _load_folder(path: Path) -> tuple[GridModel, Any, GeneratorLimits, StorageUnits | None]:
    """Compiled model, the checked folder (its rules files), the generators'
    characteristics of prods_charac.csv (``dispatch_limits``) and the storage units' of
    storage_units_charac.csv (None without storage) of a grid2op-format folder.

    Every fault of the folder is a ``FolderFormatError`` naming the file: the chronics layer
    checks what it reads, and compiling the grid, the one step that only this layer can
    take, has its errors named after ``grid.json`` here.
    """
    from grid_vec.chronics.folder import grid_files_digest, load_folder
    from grid_vec.chronics.folder_config import read_folder_config
    from grid_vec.grid.model_cache import cached_model

    trafo_model = "pandapower_v2"  # as grid2op's LightSimBackend builds it
    config = read_folder_config(Path(path).resolve())  # config.py, parsed once for every reader
    inputs = ("folder", Path(path).resolve().name, grid_files_digest(path), trafo_model)
    # a partial of a module-level function: a model from the cache keeps it to compile its
    # pandapower state again, and ships to worker processes
    compile_model = functools.partial(_compile_folder, Path(path), config, trafo_model)
    model = cached_model(inputs, compile_model)
    folder = load_folder(path, model, config)  # the rules files, once (grid.json not again)
    limits = GeneratorLimits.from_prods_charac(
        folder.prods_charac, model, folder.path / "prods_charac.csv"
    )
    storage = None
    if folder.storage_charac is not None:  # in the grid's storage order, checked
        storage = StorageUnits.from_charac(folder.storage_charac)
    return _read_only(model), folder, limits, storage


def _compile_folder(path: Path, config: Any, trafo_model: str) -> GridModel:
    """Read a folder's grid and compile it (what the cache of compiled grids stores): only
    ``grid.json`` and the thermal limits of ``config`` (its record, read once) are read.

    Its failures are a ``FolderFormatError`` naming ``grid.json``.
    """
    from grid_vec.chronics.folder import read_net
    from grid_vec.chronics.untrusted import FolderFormatError, short
    from grid_vec.grid.compile import compile_net

    root = path.resolve()
    net, thermal_limits = read_net(root, config)
    try:
        return compile_net(
            net, name=root.name, thermal_limits=thermal_limits, trafo_model=trafo_model
        )
    except Exception as e:  # pandapower's power flow on the folder's data fails in many ways
        raise FolderFormatError(
            f"{root / 'grid.json'}: cannot be compiled ({type(e).__name__}: {short(str(e))})"
        ) from e


def _folder_parameters(folder, difficulty: str | None) -> Parameters:
    """``Parameters`` of the rules grid2op's make would pick (``rules_dict``); a value
    ``Parameters`` refuses is a ``FolderFormatError`` naming the file (and level)."""
    from grid_vec.chronics.folder_rules import rules_dict
    from grid_vec.chronics.untrusted import FolderFormatError

    rules, where = rules_dict(folder, difficulty)
    try:
        return Parameters.from_grid2op_dict(rules)
    except (TypeError, ValueError) as e:  # the message names the key or the field
        raise FolderFormatError(f"{where}: {e}") from e


def _with_ramps(limits: GeneratorLimits, gen_ramp: Any) -> GeneratorLimits:
    """A folder's characteristics with the caller's ``gen_ramp`` (both ways)."""
    ramp = np.asarray(gen_ramp, dtype=np.float64)
    if ramp.shape != limits.pmax.shape or not np.isfinite(ramp).all() or (ramp < 0).any():
        raise ValueError(
            f"gen_ramp must be {len(limits.pmax)} finite values >= 0 (MW per step), got "
            f"{gen_ramp!r}"
        )
    ramp32 = ramp.astype(np.float32)
    return dataclasses.replace(limits, ramp_up=ramp32, ramp_down=ramp32.copy())
