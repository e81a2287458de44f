"""Deprecated import path of `seedbench.envs.sokoban.hindsight` (Sokoban's hindsight facts),
kept for plugins written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.envs.sokoban.hindsight`, the same objects. It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench.envs.sokoban import hindsight as _moved
from seedbench.envs.sokoban.hindsight import *  # noqa: F401,F403

warnings.warn("seedbench.envs.sokoban_hindsight is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.envs.sokoban.hindsight instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
