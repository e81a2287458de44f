"""Deprecated import path of `seedbench.stats` (the statistics that reports, leaderboards and the trainer's
before/after line share), kept for code written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name of
`seedbench.stats`, the same objects. It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench import stats as _moved
from seedbench.stats import *  # noqa: F401,F403

warnings.warn("seedbench.report.stats is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.stats instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
