"""The policy's weights in plain (LoRA-merged) form: streamed for weight syncs, copied for frozen models.

A LoRA policy is a peft model: base weights plus adapters. Engines, the frozen analyzer, the KL
reference of a full fine-tune and saved checkpoints all want a plain transformers model whose weights
are ``W + B·A·scale``. Syncing an engine after every update needs only those weights, so
`merged_weights` streams them layer by layer without copying the model (one merged layer exists at a
time; the policy itself is not modified); a frozen copy and a saved checkpoint need a model object, made
by `merged_copy` (one deep copy, merged in place by peft's `merge_and_unload`).
"""

from __future__ import annotations

from typing import Any, Iterator


def is_lora(model: Any) -> bool:
    """Whether `model` is a peft model (adapters on a base model)."""
    return hasattr(model, "merge_and_unload") and hasattr(model, "get_base_model")


def base_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (its config, generation config); `model` otherwise."""
    return model.get_base_model() if is_lora(model) else model


def merged_weights(model: Any) -> Iterator[tuple[str, Any]]:
    """(HF checkpoint name, tensor) pairs of `model`'s current weights, with its active LoRA adapters
    merged on the fly; the names and values equal ``merge_and_unload()``'s state dict."""
    if not is_lora(model):
        yield from model.state_dict().items()
        return
    base = model.get_base_model()
    for name, tensor in base.state_dict().items():
        if "lora_" in name:
            continue
        if ".base_layer." in name:
            module_name, _, leaf = name.partition(".base_layer.")
            if leaf == "weight":
                tensor = _merged(tensor, base.get_submodule(module_name))
            name = f"{module_name}.{leaf}"
        yield name, tensor


def merged_copy(model: Any) -> Any:
    """A plain transformers model with `model`'s weights (LoRA merged); `model` is not modified."""
    duplicate = model_copy(model)
    return duplicate.merge_and_unload() if is_lora(model) else duplicate


def model_copy(model: Any, memo: dict | None = None) -> Any:
    """``copy.deepcopy(model, memo)`` that computes with its own weights.

    A ``forward`` patched onto a module instance is dropped from the copy, so the class's forward runs:
    such a patch (TRL's SFTTrainer wraps the model's forward to fuse its LM head) is a function closing over
    the original module's bound forward, and deepcopy keeps functions as they are, so the copy would run
    the original's weights."""
    import copy

    duplicate = copy.deepcopy(model, memo)
    for module in duplicate.modules():
        vars(module).pop("forward", None)
    return duplicate


def frozen_copy(model: Any, dtype: Any) -> Any:
    """A frozen, eval-mode, LoRA-merged copy of `model` with its parameters in `dtype` (a generation copy, the
    KL reference, the frozen analyzer).

    Only parameters are cast; buffers keep their dtype, as in the trainer's bf16 compute copy and in a model
    loaded in bf16 by transformers: RoPE's inverse frequencies rounded to bf16 (``module.to(bf16)`` casts
    them) turn a position p's rotation angles by up to p × 2⁻⁹ radians, and the copy would then score other
    log-probs than the trainer computes for the same weights."""
    frozen = merged_copy(model).eval()
    for param in frozen.parameters():  # a tied parameter is listed once and cast once
        param.data = param.data.to(dtype)
        param.requires_grad_(False)
    return frozen


def _merged(weight: Any, module: Any) -> Any:
    """``weight`` plus B·A·scale summed over the active adapters of a peft LoRA layer."""
    import torch

    with torch.no_grad():
        for adapter in getattr(module, "active_adapters", []):
            if adapter in getattr(module, "lora_A", {}):
                weight = weight + module.get_delta_weight(adapter).to(weight.dtype)
    return weight
