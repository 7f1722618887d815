"""vector layer: GridVecEnv, a multi-process drop-in for gymnasium's AsyncVectorEnv."""

from grid_vec.vector.errors import ProtocolError, WorkerCrashedError, WorkerTimeoutError
from grid_vec.vector.make_vec import make_vec
from grid_vec.vector.vec_env import GridVecEnv, StepResult

__all__ = [
    "GridVecEnv",
    "ProtocolError",
    "StepResult",
    "WorkerCrashedError",
    "WorkerTimeoutError",
    "make_vec",
]
