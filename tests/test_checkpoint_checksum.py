"""A local checkpoint's checksum names its weights: fine-tunes of one model (same files, same sizes, other
bytes) get different checksums, the weight files are hashed in full but streamed, and the checksum a saved
checkpoint's marker records is the one the folder hashes to."""

import hashlib
import json

import pytest

from seedbench.models import checkpoint
from seedbench.models.checkpoint import MARKER, checkpoint_checksum, checksum_dir, write_marker

CONFIG = b'{"model_type": "llama"}'


def _checkpoint(folder, weights: bytes, weight_file: str = "model.safetensors"):
    folder.mkdir()
    (folder / "config.json").write_bytes(CONFIG)
    (folder / weight_file).write_bytes(weights)
    return folder


@pytest.mark.parametrize("weight_file", ["model.safetensors", "pytorch_model.bin", "model.pt"])
def test_same_shapes_different_weights_differ(tmp_path, weight_file):
    a = _checkpoint(tmp_path / "a", b"\x00" * 64, weight_file)
    b = _checkpoint(tmp_path / "b", b"\x00" * 63 + b"\x01", weight_file)  # one byte differs, same size
    c = _checkpoint(tmp_path / "c", b"\x00" * 64, weight_file)
    assert checkpoint_checksum(str(a))[1] != checkpoint_checksum(str(b))[1]
    assert checkpoint_checksum(str(a))[1] == checkpoint_checksum(str(c))[1]  # same bytes, same checksum


def test_the_checksum_is_sha256_of_names_sizes_and_contents(tmp_path, monkeypatch):
    """Hand-computed digest: files in name order, each as ``name\\0size\\0bytes``; other files and the
    marker are left out. A 4-byte read size streams the weights and gives the same digest."""
    weights = bytes(range(10))
    folder = _checkpoint(tmp_path / "m", weights)
    (folder / "README.md").write_text("not hashed")
    (folder / MARKER).write_text('{"checksum": "not hashed"}')
    expected = hashlib.sha256(b"config.json\x00" + str(len(CONFIG)).encode() + b"\x00" + CONFIG
                              + b"model.safetensors\x0010\x00" + weights).hexdigest()
    assert checksum_dir(folder) == "dir-content-sha256:" + expected
    reads = []
    real_open = type(folder).open

    class CountingStream:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def read(self, size=-1):
            reads.append(size)
            return self.stream.read(size)

    monkeypatch.setattr(checkpoint, "HASH_CHUNK_BYTES", 4)
    monkeypatch.setattr(type(folder), "open", lambda self, *a, **k: CountingStream(real_open(self, *a, **k)))
    assert checksum_dir(folder) == "dir-content-sha256:" + expected
    assert reads and set(reads) == {4}  # never a whole-file read


def test_a_saved_checkpoint_records_the_checksum_it_hashes_to(tmp_path):
    folder = _checkpoint(tmp_path / "m", b"weights")
    write_marker(folder, "hub:base")
    recorded = json.loads((folder / MARKER).read_text())
    assert recorded == {"checksum": checksum_dir(folder), "base": "hub:base",
                        "files": {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
                                  for name in ("config.json", "model.safetensors")}}
    assert checkpoint_checksum(str(folder)) == (str(folder), recorded["checksum"])


def test_saved_tiny_policies_of_different_weights_get_different_checksums(tmp_path):
    """The real caller: `save_policy` writes the marker that `load_policy` of the folder reports (the
    checksum a run's summary.json and the starting-model cache keys record)."""
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy, save_policy

    checksums = []
    for seed in (0, 1):
        save_policy(load_policy(ModelConfig(name="tiny"), need_reference=False, seed=seed), tmp_path / f"s{seed}")
        source, checksum = checkpoint_checksum(str(tmp_path / f"s{seed}"))
        assert checksum == checksum_dir(tmp_path / f"s{seed}")
        checksums.append(checksum)
    sizes = [sorted((f.name, f.stat().st_size) for f in (tmp_path / f"s{s}").iterdir()) for s in (0, 1)]
    assert sizes[0] == sizes[1]  # the same files and sizes: only the contents tell them apart
    assert checksums[0] != checksums[1]


def test_a_folder_without_marker_is_hashed_once_until_a_file_changes(tmp_path, monkeypatch):
    """A downloaded model folder has no marker: its checksum is remembered in the cache against its files'
    names, sizes and times, so a second load reads no weights; rewriting a file hashes it again."""
    import os

    from seedbench.models import checkpoint

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    folder = _checkpoint(tmp_path / "m", b"\x00" * 64)
    hashed = []
    real = checkpoint.checksum_dir
    monkeypatch.setattr(checkpoint, "checksum_dir", lambda path: hashed.append(path) or real(path))
    first = checkpoint_checksum(str(folder))[1]
    assert checkpoint_checksum(str(folder))[1] == first and len(hashed) == 1  # remembered
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\x00" * 63 + b"\x01")  # same size, new bytes and time
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    second = checkpoint_checksum(str(folder))[1]
    assert len(hashed) == 2 and second != first and second == real(folder)
    (tmp_path / "cache" / "checksums").joinpath(next(iter(os.listdir(tmp_path / "cache" / "checksums")))).write_text("{")
    assert checkpoint_checksum(str(folder))[1] == second and len(hashed) == 3  # a damaged memo: hashed again
