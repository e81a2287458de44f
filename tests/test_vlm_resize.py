"""How frames become image tokens: our resizing pinned to hand-computed numbers, and compared with
``qwen-vl-utils`` where it imports.

Qwen2.5-VL's ``smart_resize`` (factor 28 = 14-pixel patches merged 2×2): round each side to a multiple of
28; if the area then exceeds ``max_pixels``, scale both sides by β = sqrt(H·W / max_pixels) and round
*down* to multiples of 28; if below ``min_pixels``, scale up by sqrt(min_pixels / (H·W)) and round up. The
grid is (1, h/14, w/14) (one image = one temporal patch) and the prompt holds h·w / 28² placeholders.
"""

import functools

import numpy as np
import pytest
import torch

from seedbench.models.tiny_vlm import TINY_PIXELS, image_processor
from seedbench.models.vision import IMAGE_PAD, VisionRenderer, resized_frames
from seedbench.prompt import Prompt

QWEN25_VL_3B = (3136, 12845056)  # min/max pixels in Qwen2.5-VL-3B-Instruct's preprocessor_config.json
SMOLLM2_VL = (28 * 28, 224 * 224)  # the CPU demo model (seedbench.models.tiny_vlm.smollm2_vl_dir)
SOKOBAN, EZPOINTS, FROZENLAKE = (336, 336), (300, 300), (192, 192)

# (frame, pixel bounds) → (resized side, grid_thw, image tokens), computed by hand:
CASES = [
    # 336 = 12·28 and 336² < max: kept. 24×24 patches, 576 / 4 = 144 tokens
    (SOKOBAN, QWEN25_VL_3B, 336, [1, 24, 24], 144),
    # round(300/28) = round(10.71) = 11 → 308; 22×22 patches → 121 tokens
    (EZPOINTS, QWEN25_VL_3B, 308, [1, 22, 22], 121),
    # round(192/28) = round(6.86) = 7 → 196; 14×14 → 49 tokens
    (FROZENLAKE, QWEN25_VL_3B, 196, [1, 14, 14], 49),
    # 336² = 112896 > 50176: β = sqrt(2.25) = 1.5 exactly, 336/1.5 = 224 = 8·28 → 16×16 → 64 tokens
    (SOKOBAN, SMOLLM2_VL, 224, [1, 16, 16], 64),
    # 308² > 50176: β = sqrt(90000/50176) = 300/224 in exact arithmetic, but in floating point
    # 300/β = 223.99999999999997, floor(7.999…) = 7 → 196 (not 224) → 14×14 → 49 tokens
    (EZPOINTS, SMOLLM2_VL, 196, [1, 14, 14], 49),
    # tiny-vlm (max 112²): β = sqrt(112896/12544) = 3 → 112 → 8×8 → 16 tokens
    (SOKOBAN, TINY_PIXELS, 112, [1, 8, 8], 16),
    # β = sqrt(90000/12544) = 300/112 → 300/β = 111.99999999999999 in floating point → 3·28 = 84 → 6×6 → 9
    (EZPOINTS, TINY_PIXELS, 84, [1, 6, 6], 9),
]


def _frame(shape, seed=0):
    return (np.random.RandomState(seed).rand(*shape, 3) * 255).astype(np.uint8)


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from seedbench.models.tiny_vlm import tiny_vlm_tokenizer

    return tiny_vlm_tokenizer()


def _prompt(frame, bounds):
    tokenizer = _tokenizer()
    pad = tokenizer.convert_tokens_to_ids(IMAGE_PAD)
    renderer = VisionRenderer(image_processor(*bounds), pad)
    return renderer.render(tokenizer, "push the box", [frame]), pad


def test_the_vision_envs_frame_sizes():
    """The frames the cases above are computed for (sokoban-vision's 56-pixel tiles, gym-cards' canvas)."""
    from seedbench.registry import make_env

    sokoban = make_env("sokoban-vision")
    _, info = sokoban.reset(seed=0)
    assert sokoban.image_shape == SOKOBAN and info["image"].shape == SOKOBAN + (3,)
    cards = make_env("ezpoints")
    _, info = cards.reset(seed=0)
    assert cards.image_shape == EZPOINTS and info["image"].shape == EZPOINTS + (3,)


@pytest.mark.parametrize("shape, bounds, side, grid, tokens", CASES)
def test_smart_resize_gives_the_hand_computed_grid_and_token_count(shape, bounds, side, grid, tokens):
    prompt, pad = _prompt(_frame(shape), bounds)
    assert prompt.image_grid_thw.tolist() == [grid]
    assert list(prompt).count(pad) == tokens
    # 2·14·14·3 = 1176 values per patch (two temporal copies of a still frame)
    assert tuple(prompt.pixel_values.shape) == (grid[1] * grid[2], 1176)
    assert resized_frames(prompt)[0].size == (side, side)


def test_pre_resized_frames_reproduce_the_processors_pixels_bit_for_bit():
    """What the vLLM engine sends (and what qwen-vl-utils' fetch_image makes): the frame resized with PIL
    bicubic to the grid's size; processing it again is then a copy, so the pixels are identical."""
    for shape in (SOKOBAN, EZPOINTS, (300, 200)):
        for bounds in (QWEN25_VL_3B, SMOLLM2_VL):
            prompt, _ = _prompt(_frame(shape, seed=1), bounds)
            again = image_processor(*bounds)(images=[np.asarray(resized_frames(prompt)[0])], return_tensors="pt")
            assert torch.equal(again["pixel_values"], prompt.pixel_values)
            assert torch.equal(again["image_grid_thw"], prompt.image_grid_thw)
    malformed = Prompt([1], images=(_frame(SOKOBAN),))
    with pytest.raises(ValueError, match="1 frames has 0 image grids"):
        resized_frames(malformed)


QWEN_VL_UTILS_SKIP = ("qwen-vl-utils is not importable: it imports torchvision at module top, which a CPU install "
                      "must not contain (docs/vlm.md); this comparison runs where both import (GPU installs)")


@pytest.mark.parametrize("shape", [SOKOBAN, EZPOINTS], ids=["sokoban-vision", "ezpoints"])
@pytest.mark.parametrize("bounds", [QWEN25_VL_3B, SMOLLM2_VL], ids=["qwen2.5-vl-3b", "smollm2-vl"])
def test_processor_pixels_equal_qwen_vl_utils(shape, bounds):
    """The image processor's own resizing (what seedbench uses) against qwen-vl-utils' fetch_image and
    process_vision_info followed by the same processor (what the Qwen cookbooks and verl do)."""
    try:
        from qwen_vl_utils import fetch_image, process_vision_info
    except ImportError:
        pytest.skip(QWEN_VL_UTILS_SKIP)
    from PIL import Image

    frame = _frame(shape, seed=2)
    ours, _ = _prompt(frame, bounds)
    element = {"type": "image", "image": Image.fromarray(frame), "min_pixels": bounds[0], "max_pixels": bounds[1]}
    fetched = fetch_image(dict(element))
    image_inputs = process_vision_info([{"role": "user", "content": [element, {"type": "text", "text": "x"}]}])[0]
    processor = image_processor(*bounds)
    for theirs in (fetched, image_inputs[0]):
        assert theirs.size == resized_frames(ours)[0].size
        processed = processor(images=[np.asarray(theirs)], return_tensors="pt")
        assert torch.equal(processed["image_grid_thw"], ours.image_grid_thw)
        assert torch.equal(processed["pixel_values"], ours.pixel_values)
