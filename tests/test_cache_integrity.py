"""Cached starting models and saved checkpoints verify themselves on use: a cache entry carries a manifest of
its files' sizes and sha256 (written last), a damaged entry is moved aside with one line and built again,
the temporary folders of dead builds are removed, and a checkpoint whose weights differ from its marker's
checksums is refused with one line naming the file, so summary.json never records weights a run did not
load. The builds here are stand-ins that write a small checkpoint folder."""

import json
import os

import pytest

from seedbench.paths import cache_dir
from seedbench.models.checkpoint import (MARKER, DamagedCheckpointError, checkpoint_checksum, checksum_dir,
                                         write_marker)
from seedbench.training import starting_model
from seedbench.training.starting_model import MANIFEST, cached_build

WEIGHTS = bytes(range(256)) * 16


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "starting_models"


class Builder:
    """A stand-in build: a checkpoint folder with config, weights, marker and a provenance record written
    after the marker (as `seedbench sft-policy` does); counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, out):
        self.calls += 1
        model = out / "model"
        model.mkdir(parents=True)
        (model / "config.json").write_text('{"model_type": "llama"}')
        (model / "model.safetensors").write_bytes(WEIGHTS)
        (model / "tokenizer.model").write_bytes(b"vocab")
        write_marker(model, "hub:base")
        (model / "seedbench_policy_sft.json").write_text('{"env": "choice"}')
        return model


def _flip(file, at=100):
    data = bytearray(file.read_bytes())
    data[at] ^= 0xFF
    stat = file.stat()
    file.write_bytes(bytes(data))
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and time: only the bytes differ


def test_an_entry_is_built_once_with_its_manifest_and_then_used(cache, capsys):
    build = Builder()
    model = cached_build("warm-start", "k1", build)
    manifest = json.loads((cache / "warm-start-k1" / MANIFEST).read_text())["files"]
    assert sorted(manifest) == ["model/config.json", "model/model.safetensors", f"model/{MARKER}",
                                "model/seedbench_policy_sft.json", "model/tokenizer.model"]
    assert manifest["model/model.safetensors"]["size"] == len(WEIGHTS)
    assert cached_build("warm-start", "k1", build) == model and build.calls == 1
    assert "using the cached checkpoint" in capsys.readouterr().out
    assert checkpoint_checksum(str(model))[1] == json.loads((model / MARKER).read_text())["checksum"]


@pytest.mark.parametrize("damage, named", [
    (lambda entry: (entry / "model" / "model.safetensors").write_bytes(WEIGHTS[:1000]), "model.safetensors is truncated"),
    (lambda entry: _flip(entry / "model" / "model.safetensors"), f"model.safetensors does not match its checksum in {MANIFEST}"),
    (lambda entry: _flip(entry / "model" / "tokenizer.model", at=1), "tokenizer.model does not match its checksum"),
    (lambda entry: (entry / "model" / "config.json").unlink(), "config.json is missing"),
    (lambda entry: (entry / MANIFEST).write_text('{"files": '), f"{MANIFEST} is not valid JSON"),
])
def test_a_damaged_entry_is_moved_aside_with_one_line_and_built_again(cache, capsys, damage, named):
    build = Builder()
    cached_build("warm-start", "k2", build)
    entry = cache / "warm-start-k2"
    damage(entry)
    capsys.readouterr()
    model = cached_build("warm-start", "k2", build)
    out = capsys.readouterr().out.splitlines()
    assert build.calls == 2 and (model / "model.safetensors").read_bytes() == WEIGHTS
    (line,) = [line for line in out if "is damaged (" in line]
    (aside,) = cache.glob(".warm-start-k2.damaged-*")
    assert line.startswith(f"seedbench: warm-start: the cached checkpoint {entry} is damaged ({entry}/")
    assert named in line and f"moved to {aside}" in line and line.endswith("building it again")
    assert cached_build("warm-start", "k2", build) == model and build.calls == 2  # whole again


def test_an_entry_built_before_manifests_is_checked_against_its_marker(cache):
    build = Builder()
    cached_build("warm-start", "k3", build)
    entry = cache / "warm-start-k3"
    (entry / MANIFEST).unlink()
    cached_build("warm-start", "k3", build)  # its marker checks out: used, and given a manifest
    assert build.calls == 1 and (entry / MANIFEST).exists()
    (entry / MANIFEST).unlink()
    _flip(entry / "model" / "model.safetensors")
    cached_build("warm-start", "k3", build)
    assert build.calls == 2 and len(list(cache.glob(".warm-start-k3.damaged-*"))) == 1


def test_the_folders_of_dead_builds_are_removed_and_a_live_ones_kept(cache):
    cache.mkdir(parents=True)
    dead = cache / ".warm-start-k4.building-1700000000000"
    live = cache / ".analyzer-sft-k5.building-1700000000001"
    for scratch in (dead, live):
        (scratch / "model").mkdir(parents=True)
        (scratch / "model" / "config.json").write_text("{}")
    held = starting_model.exclusive_lock(cache_dir("locks") / "analyzer-sft-k5.lock")  # a build of k5 going on now
    try:
        cached_build("warm-start", "k6", Builder())
        assert not dead.exists() and live.exists()
    finally:
        held.close()
    starting_model.remove_dead_builds(cache)
    assert not live.exists()


def test_a_saved_checkpoint_whose_weights_changed_is_refused_naming_the_file(tmp_path):
    model = Builder()(tmp_path)
    recorded = json.loads((model / MARKER).read_text())["checksum"]
    assert checkpoint_checksum(str(model))[1] == recorded  # a provenance record added after the marker is fine
    _flip(model / "model.safetensors")
    with pytest.raises(DamagedCheckpointError, match=rf"^{model / 'model.safetensors'} does not match the checksum "
                                                     rf"{MARKER} recorded when it was saved"):
        checkpoint_checksum(str(model))
    _flip(model / "model.safetensors")  # flipped back: whole again
    assert checkpoint_checksum(str(model))[1] == recorded
    (model / "extra.safetensors").write_bytes(b"more weights")
    with pytest.raises(DamagedCheckpointError, match="extra.safetensors was added after the checkpoint was saved"):
        checkpoint_checksum(str(model))
    (model / "extra.safetensors").unlink()
    (model / MARKER).write_text("{")
    with pytest.raises(DamagedCheckpointError, match=rf"^{model / MARKER}: not valid JSON"):
        checkpoint_checksum(str(model))


def test_a_marker_written_before_it_listed_its_files_is_checked_by_the_folders_checksum(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama"}')
    (model / "model.safetensors").write_bytes(WEIGHTS)
    (model / MARKER).write_text(json.dumps({"checksum": checksum_dir(model), "base": "hub:base"}))
    (model / "seedbench_analyzer_sft.json").write_text("{}")  # provenance, written after the marker
    assert checkpoint_checksum(str(model))[1] == json.loads((model / MARKER).read_text())["checksum"]
    _flip(model / "model.safetensors")
    with pytest.raises(DamagedCheckpointError, match=f"do not match the checksum {MARKER} recorded"):
        checkpoint_checksum(str(model))


def test_eval_of_a_checkpoint_with_flipped_weights_is_one_line(tmp_path, capsys):
    """The real caller: `seedbench eval --agent DIR` of a saved tiny policy whose weights changed on disk."""
    from seedbench.cli import main
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy, save_policy

    folder = tmp_path / "policy"
    save_policy(load_policy(ModelConfig(name="tiny"), need_reference=False, seed=0), folder)
    weights = next(folder.glob("*.safetensors"))
    _flip(weights, at=weights.stat().st_size // 2)
    capsys.readouterr()
    assert main(["eval", "--agent", str(folder), "--env", "choice", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"seedbench: error: {weights} does not match the checksum")
