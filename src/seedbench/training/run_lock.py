"""Deprecated import path of `seedbench.locking` (the advisory locks of run directories and cached builds),
kept for code written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.locking`, the same objects. It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench import locking as _moved
from seedbench.locking import *  # noqa: F401,F403

warnings.warn("seedbench.training.run_lock is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.locking instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
