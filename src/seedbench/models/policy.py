"""Load the policy (and its frozen KL reference) from a hub id, a local path, the embedded model or the
tiny test model; full fine-tune or LoRA.

Device is automatic (CUDA when present, else CPU) and overridable; the compute dtype defaults to bf16
where the device runs it natively (CUDA, CPUs with AVX-512-BF16/AMX) and to fp32 elsewhere. Master weights stay fp32: AdamW steps
of 1e-6 relative size vanish in bf16's 8-bit mantissa, so pure-bf16 training would silently not learn. The reference model for the KL term is a frozen copy for full fine-tuning and the
same network with adapters disabled for LoRA (no second copy of the weights).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedbench.config.errors import ConfigError
from seedbench.config.schema import ModelConfig
from seedbench.machine import has_native_bf16
from seedbench.models.checkpoint import checkpoint_checksum, write_marker
from seedbench.models.checkpoint import checksum_dir as _checksum_dir  # noqa: F401 - re-exported
from seedbench.models.embedded import EMBEDDED_ALIASES, converted_dir
from seedbench.models.tiny import TINY_NAME, tiny_model, tiny_tokenizer
from seedbench.models.tiny_vlm import TINY_VLM_NAME
from seedbench.models.vision import renderer_of
from seedbench.models.vlm import LORA_LANGUAGE_ONLY, freeze_vision_tower, is_vision_source, load_vision_model
from seedbench.models.weights import frozen_copy, merged_copy


@dataclass
class Policy:
    model: Any
    tokenizer: Any
    ref_model: Any | None
    device: Any
    name: str
    checksum: str
    source: str  # resolved path or hub id
    lora: bool = False
    compute_dtype: Any = None
    """Dtype of forward passes (autocast) and of the generation copy; master weights stay fp32."""
    bf16_compute: str = "param_copy"
    """``model.bf16_compute``: how training passes run in bf16 (the `compute_copy`, or autocast)."""
    _compute_copy: Any = None

    def compute_copy(self):
        """The bf16 compute copy of the model (`seedbench.models.compute_copy`) where ``model.bf16_compute``
        is ``param_copy`` and the compute dtype bf16, made on first use; None otherwise (autocast runs)."""
        from seedbench.models.compute_copy import ComputeCopy, wants_compute_copy

        if not wants_compute_copy(self.bf16_compute, self.compute_dtype):
            return None
        if self._compute_copy is None or self._compute_copy.master is not self.model:
            self._compute_copy = ComputeCopy(self.model, self.compute_dtype)
        return self._compute_copy

    def autocast(self):
        import torch

        if self.compute_dtype is None or self.compute_dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.compute_dtype)

    def autocast_off(self):
        """A region without autocast inside an `autocast` one (a loss and its backward); it does not end the
        outer region, so autocast's cached weight casts survive it."""
        import torch

        if self.compute_dtype is None or self.compute_dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, enabled=False)

    @contextlib.contextmanager
    def reference(self):
        """Yield a module computing the reference log-probs (LoRA: adapters disabled). The bf16 compute copy
        is made first where the run has one: a copy first made inside the context would keep its adapters
        switched off (and frozen) for every later loss forward."""
        if self.lora:
            self.compute_copy()
            with self.model.disable_adapter():
                yield self.model
        else:
            yield self.ref_model


def device_name(name: str, *, cuda_available: bool, local_rank: int = 0) -> str:
    """``model.device`` as this process's device: ``auto`` is the GPU of this rank (``cuda:LOCAL_RANK``) when
    CUDA is present, else ``cpu``; a bare ``cuda`` is that GPU too. A bare ``torch.device("cuda")`` would
    follow whatever device is current, which vLLM's in-process engine sets to its own."""
    if name == "auto":
        return f"cuda:{local_rank}" if cuda_available else "cpu"
    if name == "cuda":
        return f"cuda:{local_rank}"
    return name


def resolve_device(name: str):
    import os

    import torch

    try:
        device = torch.device(device_name(name, cuda_available=torch.cuda.is_available(),
                                          local_rank=int(os.environ.get("LOCAL_RANK", 0))))
    except RuntimeError as err:
        raise ConfigError(f"model.device: unknown device {name!r}; use auto, cpu or cuda[:N]") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("model.device is cuda but no CUDA device is available; use --set model.device=cpu")
    return device


def resolve_dtype(name: str, device):
    """``model.dtype`` as a torch dtype: ``auto`` is bf16 on GPUs that support it (else fp16) and on CPUs
    with native bf16 (`seedbench.machine.has_native_bf16`), fp32 on other CPUs."""
    import torch

    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.bfloat16 if has_native_bf16() else torch.float32
    table = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp32": torch.float32, "float32": torch.float32,
             "fp16": torch.float16, "float16": torch.float16}
    if name not in table:
        raise ConfigError(f"model.dtype: unknown dtype {name!r}; choose one of auto, {', '.join(table)}")
    return table[name]


def load_policy(config: ModelConfig, *, need_reference: bool = True, seed: int = 0) -> Policy:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    name = config.name
    vision = is_vision_source(name)
    if vision:
        model, tokenizer, source, checksum = load_vision_model(name, config.max_images, seed)
        if name == TINY_VLM_NAME:
            dtype = torch.float32  # as for `tiny`: exact CPU tests
    elif name == TINY_NAME:
        tokenizer = tiny_tokenizer()
        model = tiny_model(tokenizer, seed=seed)
        source, checksum = "tiny(random init)", f"tiny-random-seed{seed}"
        dtype = torch.float32  # tiny models are cheap; fp32 keeps the learning tests exact
    else:
        if name in EMBEDDED_ALIASES:
            path, gguf_sha = converted_dir()
            source, checksum = str(path), "gguf-sha256:" + gguf_sha
        else:
            source, checksum = checkpoint_checksum(name)
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model.to(device=device, dtype=torch.float32)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    lora = config.lora_rank > 0
    freeze = vision and config.freeze_vision
    ref_model = None
    if lora:
        from peft import LoraConfig, get_peft_model

        targets = LORA_LANGUAGE_ONLY if freeze else "all-linear"
        model = get_peft_model(model, LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha,
                                                 target_modules=targets, task_type="CAUSAL_LM"))
    elif need_reference:
        ref_model = frozen_copy(model, dtype)
    if freeze and not lora:
        freeze_vision_tower(model)
    return Policy(model=model, tokenizer=tokenizer, ref_model=ref_model, device=device, name=name,
                  checksum=checksum, source=source, lora=lora, compute_dtype=dtype,
                  bf16_compute=config.bf16_compute)


def save_policy(policy: Policy, path: Path) -> None:
    """Save an HF checkpoint that `--model <path>` loads (LoRA adapters are merged into a copy)."""
    path.mkdir(parents=True, exist_ok=True)
    model = merged_copy(policy.model) if policy.lora else policy.model
    model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    renderer = renderer_of(policy.tokenizer)
    if renderer is not None:  # a vision policy: its image processor (preprocessor_config.json) too
        renderer.image_processor.save_pretrained(path)
    write_marker(path, policy.checksum)
