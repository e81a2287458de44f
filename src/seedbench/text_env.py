"""Deprecated import path of `seedbench.envs.text_env`, kept for plugins written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.envs.text_env`, the same objects. It will be removed in seedbench 0.3.0; the public plugin API
is listed in docs/adding_an_env.md.
"""

import warnings

from seedbench.envs import text_env as _moved
from seedbench.envs.text_env import *  # noqa: F401,F403

__all__ = list(_moved.__all__)

warnings.warn("seedbench.text_env is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.envs.text_env instead (the plugin API: docs/adding_an_env.md)", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
