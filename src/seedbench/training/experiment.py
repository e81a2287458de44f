"""Deprecated import path of `seedbench.training.experiments` (the ``seedbench experiment`` package), kept for
code written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name the module
had, the same objects (`seedbench.training.experiments` and its modules). It will be removed in seedbench 0.3.0.
"""

import warnings

from seedbench.training import experiments as _moved
from seedbench.training.experiments import *  # noqa: F401,F403
from seedbench.training.experiments.driver import _OutputLock, _tail, _write_state  # noqa: F401
from seedbench.training.experiments.ray_executor import _die_with_parent, _ray_task  # noqa: F401
from seedbench.training.experiments.spec import (  # noqa: F401
    _as_list,
    _flatten_set,
    _inside_output,
    _model_tag,
    _resolve,
    _yaml_scalar,
)

warnings.warn("seedbench.training.experiment is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.training.experiments instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
