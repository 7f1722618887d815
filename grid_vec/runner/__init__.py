"""Runner: evaluate agents over many episodes on any gymnasium vector env, record them, and
load recordings back (see docs/architecture.md, the evaluation layer)."""

from grid_vec.runner.agents import (
    DoNothingAgent,
    GreedyAgent,
    RandomAgent,
    ReconnectAgent,
    default_action,
)
from grid_vec.runner.episode_data import EpisodeData, EpisodeDataError, load_run
from grid_vec.runner.episode_loop import EpisodeLostError
from grid_vec.runner.episodes import EpisodeSpec, derive_seed
from grid_vec.runner.executor import EpisodeExecutor, VectorEnvExecutor, build_vector_env
from grid_vec.runner.plot import plot_episode
from grid_vec.runner.results import EpisodeResult, EpisodeTimings, format_results_table
from grid_vec.runner.resume import ResumeError
from grid_vec.runner.runner import Runner

__all__ = [
    "DoNothingAgent",
    "EpisodeData",
    "EpisodeDataError",
    "EpisodeExecutor",
    "EpisodeLostError",
    "EpisodeResult",
    "EpisodeSpec",
    "EpisodeTimings",
    "GreedyAgent",
    "RandomAgent",
    "ReconnectAgent",
    "ResumeError",
    "Runner",
    "VectorEnvExecutor",
    "build_vector_env",
    "default_action",
    "derive_seed",
    "format_results_table",
    "load_run",
    "plot_episode",
]
