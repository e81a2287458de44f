"""The weights a run starts from, when the recipe asks for them to be built first: a behaviour-cloning warm
start (`seedbench sft-policy`) and SEED's stage-1 analyzer SFT (`seedbench sft-analyzer`), chained in that
order and each built once, then cached.

A recipe such as ``configs/quickstart_cpu.yaml`` sets ``warm_start.demos`` and ``analyzer_sft.annotator``
instead of naming a checkpoint, so one ``seedbench run`` command does what would otherwise be three. Each
built checkpoint lives in ``<cache>/starting_models/<kind>-<key>/model`` where the key hashes everything that
decides its weights (the base model's checksum, the env and its kwargs, the prompt's history and step cap,
the step's settings, the seed and the seedbench version), so a second run with the same recipe reuses it and
a changed recipe builds another. A build is written to a temporary folder and renamed into place when it is
complete, so a killed build leaves nothing that a later run would take for finished; a lock per key makes
parallel runs that need the same checkpoint wait for one build instead of racing it.

An entry is whole when its ``manifest.json`` (written last, atomically, before the rename) lists every file
with its size and sha256 and the files match it. Each use checks that under the key's lock (one read of the
entry, about a second for SmolLM2-135M's 540 MB; the model's own marker check then reads nothing again);
an entry that fails is moved aside to ``.<entry>.damaged-<time>`` with one line naming the file and the
folder, and built again. A temporary ``.<entry>.building-<time>`` folder whose key's lock is free belongs to
a build that died; it is removed.

``config.yaml`` keeps the recipe (``model.name`` stays the base model): ``--resume`` and ``seedbench eval``
find the same cached checkpoint again through the same key, and ``summary.json`` records the chain through
each checkpoint's own provenance file (`seedbench.training.origin`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from seedbench.config import RunConfig
from seedbench.paths import cache_dir
from seedbench import __version__
from seedbench.jsonio import read_json_checked, write_json_atomic
from seedbench.models.checkpoint import DamagedCheckpointError, checkpoint_checksum, file_sha256, verified_checksum
from seedbench.registry import load_object
from seedbench.locking import LockHeld, build_lock, exclusive_lock
from seedbench.training.warm_start import DEMO_FORMAT, warm_start

CACHE_FOLDER = "starting_models"
MANIFEST = "manifest.json"
"""An entry's list of its files (path within the entry → size and sha256), written last."""
ANALYZER_SFT_FORMAT = "seedbench.agents.seed.hindsight:ANNOTATION_FORMAT"
"""The version of the rule-based analyses' wording, part of a stage-1 checkpoint's cache key."""
ANALYZER_SFT_BUILDER = "seedbench.agents.seed.stage1:build_for_run"


def cache_key(kind: str, config: RunConfig, base_name: str, settings: dict[str, Any]) -> str:
    """A short hash of what decides the weights of a `kind` step built from `base_name` under `config`."""
    facts = {"kind": kind, "base": base_identity(base_name), "env": config.env, "env_kwargs": config.env_kwargs,
             "history_length": config.rollout.history_length, "max_steps": config.rollout.max_steps,
             "dtype": config.model.dtype, "seed": config.seed, "settings": settings, "seedbench": __version__}
    from seedbench.models.compute_copy import REVISION, bf16_compute_for  # imports torch: not at module import

    # what the step's SFT (one process) computes with: autocast or the copy, whose rounding differs; absent =
    # autocast, so checkpoints built before the option keep their keys
    if bf16_compute_for(config.model.bf16_compute) == "param_copy":
        facts["bf16_compute"] = f"param_copy-{REVISION}"
    if config.model.lora_rank > 0:  # the step fine-tunes LoRA adapters (merged when saved); absent = full
        facts["lora"] = [config.model.lora_rank, config.model.lora_alpha]
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def base_identity(name: str) -> str:
    """What a step is built from: a checkpoint this module cached is named by its own key (its folder), which
    already hashes everything its weights came from; any other model by its checksum (`checkpoint_checksum`:
    for a local folder, its weight files' contents)."""
    path = Path(name)
    if path.parent.parent == cache_dir(CACHE_FOLDER):
        return path.parent.name
    return checkpoint_checksum(name)[1]


def cached_build(kind: str, key: str, build: Callable[[Path], Path]) -> Path:
    """The checkpoint of step `kind` with `key`, built by ``build(output_dir)`` when it is not cached yet (or
    its entry is damaged: moved aside, with one line). One process builds a key at a time (an experiment's
    parallel runs share their starting checkpoints): the others wait for its lock and then use what it built."""
    root = cache_dir(CACHE_FOLDER)
    final = root / f"{kind}-{key}"
    remove_dead_builds(root)
    with build_lock(f"{kind}-{key}", kind):
        problem = entry_problem(final) if final.exists() else None
        if problem is not None:
            aside = final.parent / f".{final.name}.damaged-{int(time.time() * 1000)}"
            final.rename(aside)
            print(f"seedbench: {kind}: the cached checkpoint {final} is damaged ({problem}); moved to {aside} "
                  "(delete it when done with it), building it again", flush=True)
        if not final.exists():
            return _build_into(kind, final, build)
    print(f"seedbench: {kind}: using the cached checkpoint {final / 'model'}", flush=True)
    return final / "model"


def entry_problem(folder: Path) -> str | None:
    """Why cache entry `folder` cannot be used (a file missing, truncated or changed against its manifest, a
    damaged manifest), or None. An entry built before entries had a manifest is checked against its model's
    marker (`verified_checksum`) and given one."""
    manifest, problem = read_json_checked(folder / MANIFEST)
    if problem is not None:
        return f"{folder / MANIFEST} is {problem}"
    if not manifest:
        if not (folder / "model" / "config.json").is_file():
            return f"{folder / 'model' / 'config.json'} is missing"
        try:
            verified_checksum(folder / "model")
        except DamagedCheckpointError as err:
            return str(err).split(";")[0]
        write_manifest(folder)
        return None
    files = manifest.get("files")
    if not isinstance(files, dict) or "model/config.json" not in files:
        return f"{folder / MANIFEST} lists no model"
    for name, facts in sorted(files.items()):
        file = folder / name
        if not isinstance(facts, dict) or not file.is_file():
            return f"{file} is missing"
        if file.stat().st_size != facts.get("size"):
            return f"{file} is truncated or changed ({file.stat().st_size} of {facts.get('size')} bytes)"
        if file_sha256(file) != facts.get("sha256"):
            return f"{file} does not match its checksum in {MANIFEST}"
    return None


def write_manifest(folder: Path) -> None:
    """Write cache entry `folder`'s `MANIFEST`: every file under it with its size and sha256."""
    files = {str(file.relative_to(folder)): {"size": file.stat().st_size, "sha256": file_sha256(file)}
             for file in sorted(folder.rglob("*")) if file.is_file() and file.name != MANIFEST}
    write_json_atomic(folder / MANIFEST, {"files": files})


def remove_dead_builds(root: Path) -> None:
    """Remove the temporary folders of builds whose process died: a key's ``.<entry>.building-*`` folders
    while its lock is free (taken here, so no build of that key starts meanwhile)."""
    entries = {p.name[1:].split(".building-")[0] for p in root.glob(".*.building-*") if p.is_dir()}
    for entry in sorted(entries):
        try:
            handle = exclusive_lock(cache_dir("locks") / f"{entry}.lock")
        except (LockHeld, OSError):  # being built now, or a cache this process cannot lock
            continue
        if handle is None:  # no advisory locks here: a live build cannot be told from a dead one
            continue
        try:
            for scratch in root.glob(f".{entry}.building-*"):
                shutil.rmtree(scratch, ignore_errors=True)
        finally:
            handle.close()


def _build_into(kind: str, final: Path, build: Callable[[Path], Path]) -> Path:
    """Build into a scratch folder beside `final`, write its manifest, then rename it into place: a killed
    build leaves no folder that looks finished."""
    scratch = final.parent / f".{final.name}.building-{int(time.time() * 1000)}"
    print(f"seedbench: {kind}: building it once (cached in {final})", flush=True)
    try:
        model_dir = build(scratch)
        assert model_dir == scratch / "model", model_dir
        write_manifest(scratch)
        if final.exists():  # an earlier build that was killed after its rename began: replace it
            shutil.rmtree(final)
        scratch.rename(final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release_memory()
    return final / "model"


def release_memory() -> None:
    """Hand a finished build's memory back before the next step loads its own model: the fine-tune's objects
    hold reference cycles (the Trainer and its callbacks) that only the collector frees, and glibc keeps freed
    heap pages until asked to trim them."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    libc = ctypes.util.find_library("c")
    if libc:
        try:
            ctypes.CDLL(libc).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def step_settings(section: Any) -> dict[str, Any]:
    """A step's own fields for its cache key; its ``seed`` enters the key as the config's seed."""
    return {k: v for k, v in dataclasses.asdict(section).items() if k != "seed"}


def build_config_of(config: RunConfig, seed: int | None) -> RunConfig:
    """`config` as a step built with its own `seed` sees it (None: the run's seed)."""
    return config if seed is None else dataclasses.replace(config, seed=seed)


def warm_start_model(config: RunConfig, base_name: str) -> Path:
    """The behaviour-cloning warm start of `config.warm_start` from `base_name` (built once, cached)."""
    config = build_config_of(config, config.warm_start.seed)
    settings = step_settings(config.warm_start)
    key = cache_key("warm-start", config, base_name, {**settings, "demo_format": DEMO_FORMAT})
    step = dataclasses.replace(config, model=dataclasses.replace(config.model, name=base_name))
    return cached_build("warm-start", key, lambda out: warm_start(
        step, demos=settings["demos"], epochs=settings["epochs"], lr=settings["lr"],
        batch_size=settings["batch_size"], grad_accum=settings["grad_accum"], output=str(out), announce=False))


def analyzer_sft_model(config: RunConfig, base_name: str) -> Path:
    """SEED's stage 1 of `config.analyzer_sft` from `base_name` (built once, cached). The stage-1 command
    belongs to SEED's package; it is reached by name, like a registry entry, so core imports no agent."""
    config = build_config_of(config, config.analyzer_sft.seed)
    settings = {**step_settings(config.analyzer_sft), "max_new_tokens": config.rollout.max_new_tokens,
                "annotation_format": load_object(ANALYZER_SFT_FORMAT)}
    key = cache_key("analyzer-sft", config, base_name, settings)
    build = load_object(ANALYZER_SFT_BUILDER)
    return cached_build("analyzer-sft", key, lambda out: build(config, base_name, out))


def starting_model_name(config: RunConfig) -> str:
    """What the run loads: `config.model.name`, or the checkpoint its warm-start / stage-1 steps build."""
    name = config.model.name
    if config.warm_start.demos > 0:
        name = str(warm_start_model(config, name))
    if config.analyzer_sft.annotator:
        name = str(analyzer_sft_model(config, name))
    return name
