"""Deprecated import path of the per-token policy losses, now in `seedbench.agents.losses` (the one
registry of every loss), kept for code written against it.

Importing it warns (`DeprecationWarning`, attributed to the importing module) and gives every name it had,
the same objects: registering here registers in `seedbench.agents.losses.POLICY_LOSSES`. It will be removed
in seedbench 0.3.0.
"""

import warnings

from seedbench.agents import losses as _moved
from seedbench.agents.losses import (  # noqa: F401
    POLICY_LOSSES, DuplicatePolicyLossError, Kind, PolicyLoss, TokenInputs, TokenLoss, dual_clip, gated_opd,
    policy_loss, ppo_clip, ppo_clip_token_loss, register_policy_loss, rlsd, rlsd_token_advantages, sdl,
)

warnings.warn("seedbench.agents.policy_losses is deprecated and will be removed in seedbench 0.3.0: import from "
              "seedbench.agents.losses instead", DeprecationWarning, stacklevel=2)


def __getattr__(name: str):
    return getattr(_moved, name)
