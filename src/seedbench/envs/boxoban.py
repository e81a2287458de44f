"""Deprecated import path of `seedbench.envs.sokoban.boxoban` (Boxoban level files),
kept for plugins written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.envs.sokoban.boxoban`, the same objects. It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench.envs.sokoban import boxoban as _moved
from seedbench.envs.sokoban.boxoban import *  # noqa: F401,F403

warnings.warn("seedbench.envs.boxoban is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.envs.sokoban.boxoban instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
