"""The process's random streams (python, numpy, torch): saved with a checkpoint, restored on resume, and
set aside around an evaluation, so an evaluation never shifts the training trajectory.

A checkpoint keeps them as plain data (`plain_rng_state`: lists, numbers, text and the torch byte tensor),
which ``torch.load(weights_only=True)`` reads without unpickling any class; `rng_from_plain` turns them
back into what `set_rng_state` takes."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import numpy as np
import torch

from seedbench.seeding import seed_everything


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def plain_rng_state(state: dict[str, Any]) -> dict[str, Any]:
    """`rng_state()`'s streams as plain data: python's ``(version, words, gauss)`` as a list, numpy's
    ``(kind, key array, pos, has_gauss, cached_gaussian)`` with the key as a list of ints."""
    version, words, gauss = state["python"]
    kind, key, pos, has_gauss, cached = state["numpy"]
    return {"python": [int(version), [int(w) for w in words], None if gauss is None else float(gauss)],
            "numpy": [str(kind), [int(k) for k in np.asarray(key).tolist()], int(pos), int(has_gauss), float(cached)],
            "torch": state["torch"]}


def rng_from_plain(state: dict[str, Any]) -> dict[str, Any]:
    """`plain_rng_state`'s data (or a state that already holds numpy's key array) as `set_rng_state` takes it."""
    version, words, gauss = state["python"]
    kind, key, pos, has_gauss, cached = state["numpy"]
    return {"python": (int(version), tuple(int(w) for w in words), gauss),
            "numpy": (str(kind), np.asarray(key, dtype=np.uint32), int(pos), int(has_gauss), float(cached)),
            "torch": state["torch"]}


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
