"""Checkpoint identity: which weights a run started from, as a checksum of the weights' contents.

A run records its model's checksum (provenance, the leaderboard's starting-model rule, the cache keys of
built starting models), and `seedbench.models.policy.save_policy` writes a ``seedbench_model.json`` marker
into every checkpoint it saves, with each hashed file's own sha256. A load checks the files against the marker
(`verified_checksum`: one read of the weights per process, about a second for SmolLM2-135M's 540 MB), so the
checksum a run records is that of the weights it actually loaded: a file damaged or changed after it was
saved stops the load with one line naming it. Both the text loader (`seedbench.models.policy`) and the
vision loader (`seedbench.models.vlm`) use these helpers, which is why they live apart from either.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from seedbench.config.errors import ConfigError
from seedbench.jsonio import read_json_checked, write_json_atomic
from seedbench.paths import cache_dir

MARKER = "seedbench_model.json"
"""The file a saved seedbench checkpoint carries: ``{"checksum": ..., "base": <checksum it was trained from>,
"files": {name: sha256 of each file `checksum_dir` hashes}}``."""

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
"""Files whose bytes are weights: hashed in full, so two fine-tunes of one model never share a checksum."""
HASH_CHUNK_BYTES = 1 << 20
"""Read size while hashing: a multi-GB weight file is streamed, never held in memory."""


class DamagedCheckpointError(ConfigError):
    """A checkpoint's files do not match the checksums recorded when it was saved (or the record is damaged)."""


def checksum_dir(path: Path) -> str:
    """Hash of a checkpoint folder's weights and configuration: the name, size and full contents of every
    weight file (`WEIGHT_SUFFIXES`) and JSON file at its top level, except the `MARKER` that records this
    very checksum (so recomputing it on a saved checkpoint gives the recorded value). Weights are streamed
    in `HASH_CHUNK_BYTES` pieces; a folder with a marker is hashed once, when it is saved."""
    return _digest_dir(path)[0]


def _digest_dir(path: Path) -> tuple[str, dict[str, str]]:
    """`checksum_dir` and each hashed file's own sha256, from one read of the files."""
    return _digest_files(_hashed_files(path))


def _digest_files(files: list[Path]) -> tuple[str, dict[str, str]]:
    digest = hashlib.sha256()
    per_file = {}
    for file in files:
        own = hashlib.sha256()
        digest.update(file.name.encode() + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with file.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
                own.update(chunk)
        per_file[file.name] = own.hexdigest()
        _remember(file, per_file[file.name])
    return "dir-content-sha256:" + digest.hexdigest(), per_file


_HASHED: dict[tuple[str, int, int, int, int], str] = {}
"""sha256 of the files this process has read, by path, inode, size and modification and change times (any
write moves the change time, which no tool sets back): verifying a checkpoint on use reads its files once,
however many checks ask (the cache entry's manifest, then the model's marker)."""


def _stamp(file: Path) -> tuple[str, int, int, int, int]:
    stat = file.stat()
    return str(file.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _remember(file: Path, digest: str) -> None:
    _HASHED[_stamp(file)] = digest


def file_sha256(file: Path) -> str:
    """The sha256 of `file`'s contents, streamed; read once per process while the file is unchanged."""
    stamp = _stamp(file)
    if stamp not in _HASHED:
        digest = hashlib.sha256()
        with file.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
        _HASHED[stamp] = digest.hexdigest()
    return _HASHED[stamp]


def _hashed_files(path: Path, records: bool = True) -> list[Path]:
    """The files `checksum_dir` hashes, in its order; without `records`, not seedbench's own ``seedbench_*.json``
    records either (a fine-tuning command writes its provenance after the checkpoint's marker)."""
    return [file for file in sorted(path.glob("*"))
            if file.suffix in (*WEIGHT_SUFFIXES, ".json") and file.name != MARKER and file.is_file()
            and (records or not (file.name.startswith("seedbench_") and file.suffix == ".json"))]


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
    checksum = verified_checksum(path) if (path / MARKER).exists() else remembered_checksum_dir(path)
    return str(path), checksum


def verified_checksum(path: Path) -> str:
    """The checksum `path`'s marker records, once its files are checked against it (each file's sha256;
    a marker without them: the folder's checksum). `DamagedCheckpointError` naming the file that differs,
    is missing or was added, or the marker when it is damaged."""
    marker = path / MARKER
    recorded, problem = read_json_checked(marker)
    if problem is None and not marker.is_file():
        problem = "missing"
    elif problem is None and not isinstance(recorded.get("checksum"), str):
        problem = "no checksum in it"
    if problem is not None:
        raise DamagedCheckpointError(f"{marker}: {problem}; it records which weights {path} holds, so the "
                                     "checkpoint cannot be trusted: restore it or save it again")
    files: Any = recorded.get("files")
    if not isinstance(files, dict):  # a marker written before it listed its files
        if recorded["checksum"] not in (checksum_dir(path), _digest_files(_hashed_files(path, records=False))[0]):
            raise DamagedCheckpointError(f"{path}: its weight and JSON files do not match the checksum {MARKER} "
                                         "recorded when it was saved (damaged or changed since); restore the "
                                         "checkpoint or save it again")
        return recorded["checksum"]
    # JSON records written beside a saved checkpoint (a fine-tuning command's provenance) are not its weights
    present = {file.name for file in _hashed_files(path) if file.name in files or file.suffix in WEIGHT_SUFFIXES}
    for name in sorted({*files, *present}):
        file = path / name
        if name not in present:
            why = "is missing"
        elif name not in files:
            why = f"was added after the checkpoint was saved (not in {MARKER})"
        elif file_sha256(file) != files[name]:
            why = f"does not match the checksum {MARKER} recorded when it was saved (damaged or changed since)"
        else:
            continue
        raise DamagedCheckpointError(f"{file} {why}; restore the checkpoint or save it again")
    return recorded["checksum"]


def write_marker(path: Path, base_checksum: str) -> None:
    """Record a just-saved checkpoint's own checksum, each hashed file's sha256 and the checksum of the weights
    it was trained from."""
    checksum, files = _digest_dir(path)
    write_json_atomic(path / MARKER, {"checksum": checksum, "base": base_checksum, "files": files})
