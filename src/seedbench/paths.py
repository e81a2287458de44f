"""Where seedbench keeps generated data and converted models (never inside the git tree)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$SEEDBENCH_CACHE`` or ``~/.cache/seedbench``, joined with `parts` and created."""
    root = Path(os.environ.get("SEEDBENCH_CACHE") or Path.home() / ".cache" / "seedbench")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
