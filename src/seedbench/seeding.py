"""One seed for every random stream a run draws from (Python, NumPy's global stream, torch)."""

from __future__ import annotations


def seed_everything(seed: int) -> None:
    """Seed `random`, NumPy's global generator (which takes 32 bits) and torch (CPU and CUDA)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
