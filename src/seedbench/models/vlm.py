"""Loading a vision-language policy (Qwen2.5-VL family) for `seedbench.models.policy.load_policy`.

A model is a vision model when its config has a ``vision_config``: ``tiny-vlm``, ``smollm2-vl``, a local
checkpoint folder or a hub id (``Qwen/Qwen2.5-VL-3B-Instruct``). It loads through
``AutoModelForImageTextToText``, its image-only processor (PIL backend, `seedbench.models.vision`) and its
tokenizer, which gets a `VisionRenderer` attached so every prompt of the run can carry frames.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seedbench.models.checkpoint import checkpoint_checksum
from seedbench.models.tiny_vlm import SMOLLM2_VL_NAME, TINY_VLM_NAME, smollm2_vl_dir, tiny_vlm
from seedbench.models.vision import VisionRenderer, attach_renderer, load_image_processor, placeholder_ids

LORA_LANGUAGE_ONLY = r"^(?!.*visual).*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)$"
"""LoRA targets that leave the vision tower alone (``model.freeze_vision``): the language model's linear
layers (the vision blocks' MLPs have the same leaf names, hence the ``visual`` exclusion)."""


def is_vision_source(name: str) -> bool:
    if name in (TINY_VLM_NAME, SMOLLM2_VL_NAME):
        return True
    path = Path(name).expanduser()
    if path.exists():
        config = path / "config.json"
        return config.is_file() and "vision_config" in json.loads(config.read_text())
    if "/" not in name:
        return False
    from transformers import AutoConfig

    try:
        return getattr(AutoConfig.from_pretrained(name), "vision_config", None) is not None
    except (OSError, ValueError):
        return False  # not resolvable here: the text loader reports it


def load_vision_model(name: str, max_images: int, seed: int = 0) -> tuple[Any, Any, str, str]:
    """(model, tokenizer with renderer, source, checksum) for a vision model `name`."""
    import torch

    if name == TINY_VLM_NAME:
        model, tokenizer, processor = tiny_vlm(seed=seed)
        source, checksum = "tiny-vlm(random init)", f"tiny-vlm-random-seed{seed}"
    else:
        from transformers import AutoModelForImageTextToText, AutoTokenizer

        if name == SMOLLM2_VL_NAME:
            path = smollm2_vl_dir()
            source, checksum = str(path), json.loads((path / "seedbench_model.json").read_text())["checksum"]
        else:
            source, checksum = checkpoint_checksum(name)
        tokenizer = AutoTokenizer.from_pretrained(source)
        processor = load_image_processor(source)
        model = AutoModelForImageTextToText.from_pretrained(source, dtype=torch.float32)
    attach_renderer(tokenizer, VisionRenderer(processor, placeholder_ids(model)[0], max_images=max_images))
    return model, tokenizer, source, checksum


def freeze_vision_tower(model: Any) -> int:
    """Stop gradients into the vision tower and merger; returns the number of frozen parameters."""
    frozen = 0
    for name, param in model.named_parameters():
        if ".visual." in f".{name}":
            param.requires_grad_(False)
            frozen += param.numel()
    return frozen
