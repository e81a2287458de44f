"""Checkpoint identity: which weights a run started from, as a checksum that is cheap to compute.

A run records its model's checksum (provenance, the leaderboard's starting-model rule), and
`seedbench.models.policy.save_policy` writes a ``seedbench_model.json`` marker into every checkpoint it saves
so that later loads read the checksum instead of recomputing it. Both the text loader
(`seedbench.models.policy`) and the vision loader (`seedbench.models.vlm`) use these helpers, which is why
they live apart from either.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from seedbench.config.errors import ConfigError

MARKER = "seedbench_model.json"
"""The file a saved seedbench checkpoint carries: ``{"checksum": ..., "base": <checksum it was trained from>}``."""


def checksum_dir(path: Path) -> str:
    """Hash of the weight files' names and sizes plus config (fast; full hashes of GBs are too slow)."""
    digest = hashlib.sha256()
    for file in sorted(path.glob("*")):
        if file.suffix in (".safetensors", ".bin", ".json"):
            digest.update(file.name.encode())
            digest.update(str(file.stat().st_size).encode())
            if file.suffix == ".json":
                digest.update(file.read_bytes())
    return "dir-sha256:" + digest.hexdigest()


def checkpoint_checksum(name: str) -> tuple[str, str]:
    """(source, checksum) of a local checkpoint folder or a hub id."""
    path = Path(name)
    if not path.exists():
        return name, f"hub:{name}"
    if not (path / "config.json").exists():
        raise ConfigError(f"model path {path} has no config.json; pass an HF checkpoint directory")
    marker = path / MARKER
    checksum = json.loads(marker.read_text())["checksum"] if marker.exists() else checksum_dir(path)
    return str(path), checksum


def write_marker(path: Path, base_checksum: str) -> None:
    """Record a just-saved checkpoint's own checksum and the checksum of the weights it was trained from."""
    (path / MARKER).write_text(json.dumps({"checksum": checksum_dir(path), "base": base_checksum}))
