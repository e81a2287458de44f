"""The process's random streams (python, numpy, torch): saved with a checkpoint, restored on resume, and
set aside around an evaluation, so an evaluation never shifts the training trajectory."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import numpy as np
import torch

from seedbench.seeding import seed_everything


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


@contextlib.contextmanager
def rng_isolated(seed: int):
    """Evaluation draws from its own seeded stream and leaves the training RNG untouched, so inserting
    an evaluation does not change the training trajectory (and resume stays exact)."""
    saved = rng_state()
    seed_everything(seed)
    try:
        yield
    finally:
        set_rng_state(saved)
