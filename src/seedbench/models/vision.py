"""Image observations for vision-language policies (Qwen2.5-VL family): prompts that carry their pixels.

The whole pipeline passes prompts as token ids (token-in/token-out, `seedbench.engines.base`). A vision
prompt is a `seedbench.prompt.Prompt`: its ids — image placeholders already expanded to one ``<|image_pad|>``
per merged vision patch — with the frames and the processor's ``pixel_values`` / ``image_grid_thw`` for them.
Everything that only needs ids (batching, length sorting, packing) reads it as a sequence of ids; the
engine's generate call and the scoring forward read the pixels off the prompt, so old, reference, teacher
and current log-probs all see exactly the images the sampler saw.

`VisionRenderer` turns (user text, frames) into such a prompt. It is attached to the policy's tokenizer
(`attach_renderer`), so `seedbench.rollout.prompting.render_prompt` — which every prompt goes through —
renders images for a vision policy and ignores them for a text policy (a vision env keeps its text
observation, so text policies still play it).

Preprocessing uses the image processor's own PIL backend: the Qwen *processor* classes import torchvision
through their video part, and a CPU install must not contain torchvision (it breaks transformers' vision
imports), so only the image processor is loaded (``backend="pil"``). ``qwen-vl-utils`` is not used: it
imports torchvision at module top; the resizing rule it applies to images (``smart_resize`` to multiples
of 28 within min/max pixels, PIL bicubic) is the image processor's own, and tests/test_vlm_resize.py
compares the two pixel for pixel where both import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from seedbench.prompt import Prompt, frame_id, frames_digest  # noqa: F401 - frame_id is public here too
from seedbench.models.weights import base_model

RENDERER_ATTR = "seedbench_vision"
IMAGE_PAD, VIDEO_PAD, VISION_START, VISION_END = "<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"
VISION_TOKENS = (VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD)
TORCHVISION_WARNING = ("torchvision is installed: transformers' vision imports break with PyPI's CUDA build on CPU; "
                       "pip uninstall -y torchvision")


PromptIds = Prompt
"""Alias of `seedbench.prompt.Prompt`, for code that imports the vision prompt under this name."""


def prompt_images(prompt: Sequence[int]) -> tuple:
    """The frames a prompt carries (``()`` for plain ids)."""
    return prompt.images if isinstance(prompt, Prompt) else ()




@dataclass
class VisionRenderer:
    """Renders a user message with frames for one vision model.

    The frames go before the text, oldest first, each as ``<|vision_start|><|image_pad|><|vision_end|>``
    (exactly what Qwen2.5-VL's chat template writes for an ``{"type": "image"}`` item), with the pad
    expanded to ``t·h·w / merge²`` copies as the Qwen processor does; at most ``max_images`` frames are
    kept (the newest: the current frame is the last one)."""

    image_processor: Any
    image_token_id: int
    max_images: int = 1

    @property
    def merge_size(self) -> int:
        return int(getattr(self.image_processor, "merge_size", 2))

    def render(self, tokenizer: Any, content: str, images: Sequence[Any]) -> Prompt:
        import numpy as np

        # copies: an env may reuse its frame buffer, and the prompt must keep what the model saw
        frames = tuple(np.array(image, dtype=np.uint8, copy=True) for image in list(images)[-self.max_images:])
        for frame in frames:
            if frame.ndim != 3 or frame.shape[2] != 3:
                raise ValueError(f"an image observation must be uint8 (H, W, 3); got shape {frame.shape}")
        marks = (VISION_START + IMAGE_PAD + VISION_END) * len(frames)
        messages = [{"role": "user", "content": marks + content}]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        pixels = {}
        if frames:
            processed = self.image_processor(images=list(frames), return_tensors="pt")
            grid = processed["image_grid_thw"]
            pieces = text.split(IMAGE_PAD)
            if len(pieces) != len(frames) + 1:
                raise ValueError("the chat template changed the number of image placeholders")
            counts = (grid.prod(dim=-1) // self.merge_size**2).tolist()
            text = pieces[0] + "".join(IMAGE_PAD * int(n) + rest for n, rest in zip(counts, pieces[1:]))
            pixels = {"images": frames, "pixel_values": processed["pixel_values"], "image_grid_thw": grid}
        return Prompt(tokenizer(text, add_special_tokens=False)["input_ids"], **pixels)


def resized_frames(prompt: Prompt, patch_size: int = 14) -> list:
    """The prompt's frames as PIL images at exactly the size the image processor resized them to (its
    ``image_grid_thw`` × `patch_size`), resampled as its PIL backend does (bicubic on uint8).

    Feeding these to a processor with the same settings reproduces ``prompt.pixel_values`` bit for bit (the
    resize becomes a copy), and any ``smart_resize`` with the same factor keeps their size. This is how an
    engine that runs its own preprocessing (vLLM) is made to see the pixels the trainer scores with, and it
    is what ``qwen-vl-utils``' ``fetch_image`` does before the processor (tests/test_vlm_resize.py)."""
    from PIL import Image

    grids = [] if prompt.image_grid_thw is None else prompt.image_grid_thw.tolist()
    frames = prompt.images
    if len(grids) != len(frames):
        raise ValueError(f"a prompt with {len(frames)} frames has {len(grids)} image grids")
    resized = []
    for frame, (_, rows, cols) in zip(frames, grids):
        size = (int(cols) * patch_size, int(rows) * patch_size)  # PIL sizes are (width, height)
        image = Image.fromarray(frame)
        resized.append(image if image.size == size else image.resize(size, resample=Image.Resampling.BICUBIC))
    return resized


def attach_renderer(tokenizer: Any, renderer: VisionRenderer) -> None:
    setattr(tokenizer, RENDERER_ATTR, renderer)


def renderer_of(tokenizer: Any) -> VisionRenderer | None:
    return getattr(tokenizer, RENDERER_ATTR, None)


def load_image_processor(source: str, **overrides: Any):
    """The image-only processor of a checkpoint folder or hub id, PIL backend (no torchvision needed)."""
    from transformers import AutoImageProcessor

    return AutoImageProcessor.from_pretrained(source, backend="pil", **overrides)


# -- forwards ------------------------------------------------------------------------------------------

def is_vision_model(model: Any) -> bool:
    config = getattr(base_model(model), "config", None)  # a bare nn.Module (tests, custom heads) is text-only
    return getattr(config, "vision_config", None) is not None


def placeholder_ids(model: Any) -> list[int]:
    """Token ids a vision model must never sample: a sampled ``<|image_pad|>`` (or video pad) has no image
    features behind it, so the next forward would fail or misplace features."""
    config = base_model(model).config
    ids = [getattr(config, name, None) for name in ("image_token_id", "video_token_id")]
    return [int(i) for i in ids if i is not None]


def vision_inputs(prompts: Sequence[Sequence[int]], input_ids: Any, prompt_width: int, image_token_id: int) -> dict:
    """Extra forward kwargs for a batch laid out with every prompt ending at column `prompt_width`:
    the concatenated pixels and grids of the prompts that have images (in row order, as the model matches
    image features to placeholder runs row by row) and ``mm_token_type_ids`` (1 on the prompt's image
    placeholders, 0 elsewhere, response columns included). Without ``mm_token_type_ids`` Qwen2.5-VL
    silently falls back to text-only positions (M-RoPE is wrong for every token after an image)."""
    import torch

    with_images = [p for p in prompts if isinstance(p, Prompt) and p.pixel_values is not None]
    if not with_images:
        return {}
    token_types = torch.zeros_like(input_ids, dtype=torch.int)
    token_types[:, :prompt_width] = (input_ids[:, :prompt_width] == image_token_id).int()
    return {
        "pixel_values": torch.cat([p.pixel_values for p in with_images]).to(input_ids.device),
        "image_grid_thw": torch.cat([p.image_grid_thw for p in with_images]).to(input_ids.device),
        "mm_token_type_ids": token_types,
    }
