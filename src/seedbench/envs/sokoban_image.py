"""Deprecated import path of `seedbench.envs.sokoban.image` (Sokoban's frames),
kept for plugins written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.envs.sokoban.image`, the same objects. It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench.envs.sokoban import image as _moved
from seedbench.envs.sokoban.image import *  # noqa: F401,F403

warnings.warn("seedbench.envs.sokoban_image is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.envs.sokoban.image instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
