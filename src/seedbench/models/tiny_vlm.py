"""Vision-language models built locally: a tiny random Qwen2.5-VL (``tiny-vlm``) and the CPU demo
``smollm2-vl`` (the embedded SmolLM2-135M weights inside a Qwen2.5-VL with a random vision tower).

No small real VLM weights are reachable offline, so tests and CPU smoke runs build their own:

* ``tiny-vlm``: the tiny word-level tokenizer of `seedbench.models.tiny` plus the four Qwen vision special
  tokens, a 2-layer 64-wide Qwen2.5-VL text model and a 2-block vision tower; built in well under a second.
  ``init_std`` is the config's ``initializer_range``: tests of M-RoPE positions use a large one (0.5),
  because at the default 0.02 a wrong position changes log-probs by only ~1e-3.
* ``smollm2-vl``: SmolLM2 is a Llama; Qwen2's text model is a Llama with q/k/v biases (set to zero here)
  and M-RoPE, which equals 1-D RoPE when all three position components are equal (text tokens). So the
  copied weights give SmolLM2's own text logits; the vision tower and merger are random (seed 0), i.e. the
  image carries no learned information until training. Built once into the cache in the layout of a real
  checkpoint (config, safetensors, tokenizer, ``preprocessor_config.json``) and loaded from there like one.
"""

from __future__ import annotations

import json
from pathlib import Path

from seedbench.models.vision import IMAGE_PAD, VIDEO_PAD, VISION_END, VISION_START, VISION_TOKENS
from seedbench.models.embedded import converted_dir
from seedbench.models.tiny import tiny_tokenizer
from seedbench.paths import cache_dir
from seedbench.locking import build_lock

TINY_VLM_NAME = "tiny-vlm"
SMOLLM2_VL_NAME = "smollm2-vl"
SMOLLM2_VL_VERSION = 1
"""Bump when the construction changes, so cached builds are rebuilt."""
TINY_PIXELS = (28 * 28, 112 * 112)
"""(min, max) pixels of the tiny models' image processor: at most 16 image tokens per frame keeps CPU
tests fast. The smollm2-vl demo allows up to 224×224 (64 tokens)."""


def tiny_vlm_tokenizer():
    tokenizer = tiny_tokenizer()
    add_vision_tokens(tokenizer)
    return tokenizer


def add_vision_tokens(tokenizer) -> None:
    vocab = tokenizer.get_vocab()
    tokenizer.add_tokens([t for t in VISION_TOKENS if t not in vocab], special_tokens=True)


def image_processor(min_pixels: int = TINY_PIXELS[0], max_pixels: int = TINY_PIXELS[1]):
    from transformers import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels,
                                    size={"shortest_edge": min_pixels, "longest_edge": max_pixels})


def vlm_config(tokenizer, text: dict, vision: dict, init_std: float = 0.02, tie: bool = True):
    """A Qwen2.5-VL config around `text` / `vision` sizes, with the vision token ids of `tokenizer`."""
    from transformers import Qwen2_5_VLConfig

    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in
           (("image_token_id", IMAGE_PAD), ("video_token_id", VIDEO_PAD),
            ("vision_start_token_id", VISION_START), ("vision_end_token_id", VISION_END))}
    specials = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    return Qwen2_5_VLConfig(
        text_config=dict(vocab_size=len(tokenizer), initializer_range=init_std, tie_word_embeddings=tie,
                         **specials, **text),
        vision_config=dict(initializer_range=init_std, **vision),
        initializer_range=init_std, tie_word_embeddings=tie, **ids, **specials,
    )


def tiny_vlm(seed: int = 0, init_std: float = 0.02, tokenizer=None):
    """(model, tokenizer, image processor) of a random tiny Qwen2.5-VL."""
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    tokenizer = tokenizer or tiny_vlm_tokenizer()
    config = vlm_config(
        tokenizer,
        text=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=32768,
                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}),
        vision=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                    fullatt_block_indexes=[1], window_size=56),
        init_std=init_std,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config)
    _set_generation_ids(model, tokenizer)
    return model, tokenizer, image_processor()


def save_vlm(folder: Path, model, tokenizer, processor, extra: dict | None = None) -> Path:
    """Write a checkpoint folder in a real Qwen2.5-VL checkpoint's layout (what `--model <folder>` loads)."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    processor.save_pretrained(folder)
    if extra is not None:
        (folder / "seedbench_model.json").write_text(json.dumps(extra))
    return folder


def smollm2_vl_dir() -> Path:
    """The cached smollm2-vl checkpoint folder, built on first use (about a minute, once)."""
    source, gguf_sha = converted_dir()
    target = cache_dir("models", SMOLLM2_VL_NAME)
    marker = target / "seedbench_model.json"
    checksum = f"smollm2-vl-v{SMOLLM2_VL_VERSION}:gguf-sha256:{gguf_sha}"
    with build_lock(f"models-{SMOLLM2_VL_NAME}", SMOLLM2_VL_NAME):
        if marker.exists() and json.loads(marker.read_text()).get("checksum") == checksum:
            return target
        print(f"seedbench: building {SMOLLM2_VL_NAME} once into {target} ...", flush=True)
        model, tokenizer = smollm2_vl_from(source)
        return save_vlm(target, model, tokenizer, image_processor(28 * 28, 224 * 224), {"checksum": checksum})


def smollm2_vl_from(source: Path):
    """(Qwen2.5-VL model, tokenizer) holding the SmolLM2 checkpoint at `source` as its language model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2_5_VLForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(source)
    llama = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    add_vision_tokens(tokenizer)
    lc = llama.config
    head_dim = lc.hidden_size // lc.num_attention_heads
    unit = head_dim // 16  # M-RoPE sections (t, h, w) over head_dim/2 frequencies, Qwen's 2:3:3 split
    config = vlm_config(
        tokenizer,
        text=dict(hidden_size=lc.hidden_size, intermediate_size=lc.intermediate_size,
                  num_hidden_layers=lc.num_hidden_layers, num_attention_heads=lc.num_attention_heads,
                  num_key_value_heads=lc.num_key_value_heads, rms_norm_eps=lc.rms_norm_eps,
                  max_position_embeddings=lc.max_position_embeddings, hidden_act=lc.hidden_act,
                  rope_parameters={"rope_type": "default", "rope_theta": _rope_theta(lc),
                                   "mrope_section": [2 * unit, 3 * unit, 3 * unit]}),
        vision=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=lc.hidden_size,
                    fullatt_block_indexes=[1], window_size=112),
        tie=bool(lc.tie_word_embeddings),
    )
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(config)
    state = {}
    for name, tensor in llama.state_dict().items():
        if name.startswith("model."):
            state["model.language_model." + name[len("model."):]] = tensor
        elif name == "lm_head.weight" and not lc.tie_word_embeddings:
            state[name] = tensor
    embed = state.pop("model.language_model.embed_tokens.weight")
    target = model.state_dict()
    with torch.no_grad():
        for name, tensor in state.items():
            target[name].copy_(tensor)
        rows = target["model.language_model.embed_tokens.weight"]
        rows[: embed.shape[0]].copy_(embed)
        rows[embed.shape[0]:].copy_(embed.mean(0))  # the new vision tokens: never sampled, never scored
        for name, tensor in target.items():
            if name.endswith(("q_proj.bias", "k_proj.bias", "v_proj.bias")):
                tensor.zero_()
    _set_generation_ids(model, tokenizer)
    return model, tokenizer


def _rope_theta(config) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    return float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


def _set_generation_ids(model, tokenizer) -> None:
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
