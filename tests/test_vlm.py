"""Vision-language policies on tiny Qwen2.5-VL models built at test time: the sampler and the training
forward agree on log-probs, M-RoPE needs ``mm_token_type_ids``, placeholders are never sampled, SEED
re-scores identical ids with the same images, LoRA round-trips, and the CPU install has no torchvision."""

import importlib.util
import json

import numpy as np
import pytest
import torch

from seedbench.engines.base import SamplingParams
from seedbench.engines.hf import HFEngine
from seedbench.models.scoring import pad_batch, score_responses
from seedbench.models.vision import VisionRenderer, attach_renderer, placeholder_ids, prompt_images
from seedbench.rollout.prompting import render_prompt

CPU = torch.device("cpu")
SAMPLE = SamplingParams(max_new_tokens=6, temperature=1.0, stop=[])


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def big_vlm():
    """A tiny Qwen2.5-VL with init std 0.5: large enough that a wrong M-RoPE position shows in log-probs."""
    from seedbench.models.tiny_vlm import tiny_vlm

    torch.set_num_threads(1)
    model, tokenizer, processor = tiny_vlm(seed=0, init_std=0.5)
    attach_renderer(tokenizer, VisionRenderer(processor, placeholder_ids(model)[0], max_images=2))
    return model.eval(), tokenizer


def _frames(count, seed=0, size=56):
    rng = np.random.RandomState(seed)
    return [(rng.rand(size, size, 3) * 255).astype(np.uint8) for _ in range(count)]


def _prompts(tokenizer):
    """Left-padded batch: one image, two images of different sizes, and a text-only prompt."""
    one, two, three = _frames(3)
    return [render_prompt(tokenizer, "choose left or right", [one]),
            render_prompt(tokenizer, "the current observation is : up down left right . now choose", [two, three[:28]]),
            render_prompt(tokenizer, "up down", [])]


def _gap(generations, scored):
    return max(abs(a - b) for g, s in zip(generations, scored) for a, b in zip(g.logprobs, s))


def test_prompt_carries_its_frames_and_expands_one_pad_per_merged_patch(big_vlm):
    model, tok = big_vlm
    frame = _frames(1)[0]
    prompt = render_prompt(tok, "choose", [frame])
    pad = placeholder_ids(model)[0]
    # 56×56 → a 4×4 patch grid of 14 px, merged 2×2 → 4 placeholder tokens
    assert prompt.image_grid_thw.tolist() == [[1, 4, 4]] and list(prompt).count(pad) == 4
    assert prompt_images(prompt)[0] is not frame and np.array_equal(prompt_images(prompt)[0], frame)
    assert render_prompt(tok, "choose", []) == tok(tok.apply_chat_template(
        [{"role": "user", "content": "choose"}], add_generation_prompt=True, tokenize=False),
        add_special_tokens=False)["input_ids"]
    three = render_prompt(tok, "choose", _frames(3))  # max_images=2 keeps the newest two
    assert len(three.images) == 2 and np.array_equal(three.images[-1], _frames(3)[-1])


def test_generation_and_training_forward_logprobs_agree(big_vlm):
    model, tok = big_vlm
    prompts = _prompts(tok)
    torch.manual_seed(0)
    generations = HFEngine(model, tok, CPU).generate(prompts, SAMPLE)
    scored = score_responses(model, prompts, [g.token_ids for g in generations], tok.pad_token_id, CPU)
    gap = _gap(generations, scored)
    print(f"\nVLM generation vs training-forward max |Δlogp| = {gap:.2e}")
    assert all(len(g.token_ids) == 6 for g in generations)
    assert gap < 1e-4


def test_training_forward_needs_mm_token_type_ids(big_vlm):
    """Without ``mm_token_type_ids`` the model silently uses text positions for image tokens."""
    model, tok = big_vlm
    prompts = _prompts(tok)[:2]
    torch.manual_seed(1)
    responses = [g.token_ids for g in HFEngine(model, tok, CPU).generate(prompts, SAMPLE)]
    with_types = torch.tensor(score_responses(model, prompts, responses, tok.pad_token_id, CPU))
    input_ids, attention, _, targets, mask = pad_batch(prompts, responses, tok.pad_token_id)
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention,
                       pixel_values=torch.cat([p.pixel_values for p in prompts]),
                       image_grid_thw=torch.cat([p.image_grid_thw for p in prompts])).logits
    logits = logits[:, -targets.shape[1] - 1 : -1].index_fill(-1, torch.tensor(placeholder_ids(model)), -1e30)
    without = torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    error = ((with_types - without).abs() * mask).max().item()
    print(f"\nlog-prob error without mm_token_type_ids (init std 0.5): {error:.3f} nats")
    assert error > 0.05


def test_vision_placeholders_are_never_sampled_even_when_most_likely(big_vlm):
    model, tok = big_vlm
    never = placeholder_ids(model)
    head = model.get_output_embeddings()

    def favour_placeholders(module, inputs, output):
        output = output.clone()
        output[..., never] += 30.0
        return output

    handle = head.register_forward_hook(favour_placeholders)
    try:
        prompts = _prompts(tok)
        input_ids, attention, _, _, _ = pad_batch(prompts[2:], [[]], tok.pad_token_id)
        with torch.no_grad():
            raw = model(input_ids=input_ids, attention_mask=attention).logits[0, -1]
        assert int(raw.argmax()) in never  # the raw model would pick a placeholder
        torch.manual_seed(2)
        generations = HFEngine(model, tok, CPU).generate(prompts, SAMPLE)
        scored = score_responses(model, prompts, [g.token_ids for g in generations], tok.pad_token_id, CPU)
    finally:
        handle.remove()
    assert not any(t in never for g in generations for t in g.token_ids)
    assert _gap(generations, scored) < 1e-4  # both exclude the placeholders from the distribution


def test_text_only_prompts_through_a_vision_model_match_too(big_vlm):
    """Analyzer prompts (SEED, Stage 1) are text: 1-D positions through the VLM must equal generation's."""
    model, tok = big_vlm
    prompts = [render_prompt(tok, "choose left or right now", []), render_prompt(tok, "up", [])]
    torch.manual_seed(3)
    generations = HFEngine(model, tok, CPU).generate(prompts, SAMPLE)
    scored = score_responses(model, prompts, [g.token_ids for g in generations], tok.pad_token_id, CPU)
    assert _gap(generations, scored) < 1e-4


def test_engine_logprob_check_keys_on_the_frames():
    from seedbench.training.logprob_check import sample_key
    from seedbench.prompt import Prompt

    a, b = Prompt([1, 2, 3], images=tuple(_frames(1, seed=0))), Prompt([1, 2, 3], images=tuple(_frames(1, seed=1)))
    assert sample_key(a, [4]) != sample_key(b, [4]) and sample_key(a, [4]) == sample_key(a, [4])
    assert sample_key([1, 2, 3], [4])[0] == (1, 2, 3)


def test_gigpo_anchor_states_include_the_frame():
    from seedbench.agents.gigpo import anchor_key
    from seedbench.rollout.types import StepSample

    def step(image):
        return StepSample(0, "", [], [], [], "", "same text", "left", True, 0.0, image=image)

    one, two = _frames(2)
    assert anchor_key(0, step(one)) == anchor_key(0, step(one.copy()))
    assert anchor_key(0, step(one)) != anchor_key(0, step(two))
    assert anchor_key(0, step(None)) == (0, "same text", None)


# -- policies through load_policy ----------------------------------------------------------------------
def _policy(name, **model):
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy

    return load_policy(ModelConfig(name=name, device="cpu", dtype="fp32", **model), need_reference=False)


def test_lora_save_reload_merge_equality_and_freeze_vision(tmp_path):
    from seedbench.models.policy import save_policy

    policy = _policy("tiny-vlm", lora_rank=4, freeze_vision=True)
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n and "visual" not in n for n in trainable)
    with torch.no_grad():  # move the adapters off their zero init so merging changes the weights
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    prompts = [render_prompt(policy.tokenizer, "choose left or right", _frames(1))]
    responses = [policy.tokenizer("left right", add_special_tokens=False)["input_ids"]]
    pad = policy.tokenizer.pad_token_id
    before = score_responses(policy.model, prompts, responses, pad, CPU)
    with policy.model.disable_adapter():
        base = score_responses(policy.model, prompts, responses, pad, CPU)
    save_policy(policy, tmp_path / "merged")
    assert (tmp_path / "merged" / "preprocessor_config.json").is_file()
    reloaded = _policy(str(tmp_path / "merged"))
    again = [render_prompt(reloaded.tokenizer, "choose left or right", _frames(1))]
    assert list(again[0]) == list(prompts[0]) and torch.equal(again[0].pixel_values, prompts[0].pixel_values)
    after = score_responses(reloaded.model, again, responses, pad, CPU)
    assert max(abs(a - b) for a, b in zip(before[0], after[0])) < 1e-4
    assert max(abs(a - b) for a, b in zip(before[0], base[0])) > 1e-2  # the adapters did change something


def test_full_fine_tune_can_freeze_the_vision_tower():
    policy = _policy("tiny-vlm", freeze_vision=True)
    frozen = {n for n, p in policy.model.named_parameters() if not p.requires_grad}
    assert frozen and all("visual" in n for n in frozen)
    assert any(p.requires_grad for n, p in policy.model.named_parameters() if "language_model" in n)


def test_a_checkpoint_folder_in_the_real_layout_loads_by_path(tmp_path):
    """The layout of Qwen/Qwen2.5-VL-3B-Instruct: config with vision_config, tokenizer files and
    preprocessor_config.json, loaded with the image-only PIL processor."""
    from seedbench.models.tiny_vlm import save_vlm, tiny_vlm

    model, tok, processor = tiny_vlm(seed=5)
    folder = save_vlm(tmp_path / "ckpt", model, tok, processor)
    assert "vision_config" in json.loads((folder / "config.json").read_text())
    policy = _policy(str(folder))
    assert type(policy.model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    prompt = render_prompt(policy.tokenizer, "choose", _frames(1))
    assert prompt.image_grid_thw.tolist() == [[1, 4, 4]]
    generations = HFEngine(policy.model, policy.tokenizer, CPU).generate([prompt], SAMPLE)
    scored = score_responses(policy.model, [prompt], [generations[0].token_ids], policy.tokenizer.pad_token_id, CPU)
    assert _gap(generations, scored) < 1e-4


def test_cpu_install_has_no_torchvision():
    """PyPI's torchvision is a CUDA build that breaks transformers' vision imports on CPU; the image
    processor's PIL backend is what seedbench uses."""
    assert importlib.util.find_spec("torchvision") is None
    assert importlib.util.find_spec("qwen_vl_utils") is None


def test_a_vision_prompt_is_a_value_not_a_list():
    """`Prompt` carries ids and images as one read-only value: every ids-only consumer reads it as a sequence
    of ids (length, indexing, slices as plain ids, list equality), and nothing can swap its frames afterwards."""
    import dataclasses
    from collections.abc import Sequence

    from seedbench.models.vision import prompt_images
    from seedbench.prompt import Prompt

    frame = _frames(1, seed=0)[0]
    prompt = Prompt([5, 6, 7], images=[frame])
    assert not isinstance(prompt, list) and isinstance(prompt, Sequence)
    assert (len(prompt), prompt[1], prompt[1:], list(prompt)) == (3, 6, [6, 7], [5, 6, 7])
    assert prompt == [5, 6, 7] and prompt == Prompt((5, 6, 7)) and prompt != [5, 6]
    assert prompt_images(prompt) == (frame,) and prompt_images([5, 6, 7]) == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        prompt.images = ()
