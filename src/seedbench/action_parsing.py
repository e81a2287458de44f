"""Deprecated import path of `seedbench.envs.action_parsing`, kept for plugins written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.envs.action_parsing`, the same objects. It will be removed in seedbench 0.3.0; the public plugin API
is listed in docs/adding_an_env.md.
"""

import warnings

from seedbench.envs import action_parsing as _moved
from seedbench.envs.action_parsing import *  # noqa: F401,F403

__all__ = list(_moved.__all__)

warnings.warn("seedbench.action_parsing is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.envs.action_parsing instead (the plugin API: docs/adding_an_env.md)", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
