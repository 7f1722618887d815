"""Which wrappers a sub-env has, asked in the process that holds it.

A vector env's ``call(name)`` reaches an attribute of a sub-env's outermost layer, in its
worker; none of gymnasium's own attributes walks the wrapper chain, so
:func:`with_wrapper_check` gives the envs a factory builds one that does. Pure gymnasium: the
workers that build the envs import nothing else for it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import gymnasium as gym

__all__ = ["WRAPPER_CHECK", "has_wrapper", "with_wrapper_check"]

# The attribute through which an env built by with_wrapper_check walks its own wrappers.
WRAPPER_CHECK = "grid_vec_has_wrapper"


def has_wrapper(env: gym.Env, wrapper_class: type[gym.Wrapper]) -> bool:
    """Whether a layer of ``env``'s chain (``env``, ``env.env``, ...) is a ``wrapper_class``.

    Args:
        env: the outermost layer.
        wrapper_class: the wrapper to look for (subclasses count).

    Returns:
        True when some layer is an instance of ``wrapper_class``.
    """
    while isinstance(env, gym.Wrapper):
        if isinstance(env, wrapper_class):
            return True
        env = env.env
    return False


def with_wrapper_check(env_fn: Callable[[], gym.Env]) -> Callable[[], gym.Env]:
    """Wrap an env factory so that the envs it builds can say which wrappers they have.

    The env comes back unchanged but for one attribute, :data:`WRAPPER_CHECK`: a function of
    a wrapper class that walks the env's chain (:func:`has_wrapper`). A vector env reaches it
    with ``call(WRAPPER_CHECK, wrapper_class)`` in the process that holds the env.

    Args:
        env_fn: an env factory (picklable if the vector env's workers need it).

    Returns:
        A factory calling ``env_fn``, picklable when ``env_fn`` is.
    """
    return _WrapperCheckFactory(env_fn)


class _WrapperCheckFactory:
    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self.env_fn = env_fn

    def __call__(self) -> gym.Env:
        env = self.env_fn()
        setattr(env, WRAPPER_CHECK, partial(has_wrapper, env))
        return env
