"""Checkpoint identity: which weights a run started from, as a checksum of the weights' contents.

A run records its model's checksum (provenance, the leaderboard's starting-model rule, the cache keys of
built starting models), and `seedbench.models.policy.save_policy` writes a ``seedbench_model.json`` marker
into every checkpoint it saves so that later loads read the checksum instead of hashing the weights again. Both the text loader
(`seedbench.models.policy`) and the vision loader (`seedbench.models.vlm`) use these helpers, which is why
they live apart from either.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from seedbench.config.errors import ConfigError
from seedbench.jsonio import read_json_checked, write_json_atomic
from seedbench.paths import cache_dir

MARKER = "seedbench_model.json"
"""The file a saved seedbench checkpoint carries: ``{"checksum": ..., "base": <checksum it was trained from>}``."""

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
"""Files whose bytes are weights: hashed in full, so two fine-tunes of one model never share a checksum."""
HASH_CHUNK_BYTES = 1 << 20
"""Read size while hashing: a multi-GB weight file is streamed, never held in memory."""


def checksum_dir(path: Path) -> str:
    """Hash of a checkpoint folder's weights and configuration: the name, size and full contents of every
    weight file (`WEIGHT_SUFFIXES`) and JSON file at its top level, except the `MARKER` that records this
    very checksum (so recomputing it on a saved checkpoint gives the recorded value). Weights are streamed
    in `HASH_CHUNK_BYTES` pieces; a folder with a marker is hashed once, when it is saved."""
    digest = hashlib.sha256()
    for file in _hashed_files(path):
        digest.update(file.name.encode() + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with file.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
    return "dir-content-sha256:" + digest.hexdigest()


def _hashed_files(path: Path) -> list[Path]:
    """The files `checksum_dir` hashes, in its order."""
    return [file for file in sorted(path.glob("*"))
            if file.suffix in (*WEIGHT_SUFFIXES, ".json") and file.name != MARKER and file.is_file()]


def remembered_checksum_dir(path: Path) -> str:
    """`checksum_dir` of a folder without a marker (a downloaded or converted model), remembered in
    ``cache_dir("checksums")`` against the hashed files' names, sizes and modification times: a multi-GB
    folder is read once, not at every load, and hashed again as soon as any of its files changes."""
    path = path.resolve()
    stamps = []
    for file in _hashed_files(path):
        stat = file.stat()
        stamps.append([file.name, stat.st_size, stat.st_mtime_ns])
    memo = cache_dir("checksums") / (hashlib.sha256(str(path).encode()).hexdigest()[:32] + ".json")
    remembered, _ = read_json_checked(memo)  # missing or damaged: {} and hashed again
    if remembered.get("path") == str(path) and remembered.get("files") == stamps:
        return remembered["checksum"]
    checksum = checksum_dir(path)
    write_json_atomic(memo, {"path": str(path), "files": stamps, "checksum": checksum})
    return checksum


def checkpoint_checksum(name: str) -> tuple[str, str]:
    """(source, checksum) of a local checkpoint folder or a hub id."""
    path = Path(name)
    if not path.exists():
        return name, f"hub:{name}"
    if not (path / "config.json").exists():
        raise ConfigError(f"model path {path} has no config.json; pass an HF checkpoint directory")
    marker = path / MARKER
    checksum = json.loads(marker.read_text())["checksum"] if marker.exists() else remembered_checksum_dir(path)
    return str(path), checksum


def write_marker(path: Path, base_checksum: str) -> None:
    """Record a just-saved checkpoint's own checksum and the checksum of the weights it was trained from."""
    (path / MARKER).write_text(json.dumps({"checksum": checksum_dir(path), "base": base_checksum}))
