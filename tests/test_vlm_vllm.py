"""The vLLM engine's multimodal requests, checked against a fake ``vllm`` module that records what it gets.

vLLM is not installed in the default test environment (and has no wheel that runs Qwen2.5-VL on this
CPU), so these tests pin the request construction instead: the fake ``LLM`` emulates the part of vLLM
that matters for correctness — its multimodal processor loads the image processor from the engine's
checkpoint directory, runs it on the PIL images it was given and expands each single ``<|image_pad|>``
to ``t·h·w/4`` copies — and returns scripted samples with per-token log-prob dicts, as vLLM's
``RequestOutput`` does. What real vLLM does beyond that (its vision tower, its sampler) is not tested
here; docs/vlm.md says what was and was not run.
"""

import math
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from seedbench.engines.base import SamplingParams
from seedbench.models.vision import IMAGE_PAD, VIDEO_PAD, VISION_END, VISION_START
from seedbench.rollout.prompting import render_prompt

SOKOBAN_FRAME = (336, 336)  # 6×6 room of 56-pixel tiles (sokoban-vision)
EZPOINTS_FRAME = (300, 300)  # gym-cards EZPoints


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the fake vllm module ------------------------------------------------------------------------------
@dataclass
class Logprob:
    logprob: float


@dataclass
class Completion:
    token_ids: list
    logprobs: list
    finish_reason: str


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list
    outputs: list
    finished: bool = True


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeLLM:
    """Records the constructor arguments and every request; answers like vLLM (see the module docstring)."""

    def __init__(self, **kwargs):
        from transformers import AutoImageProcessor

        self.kwargs = kwargs
        self.requests: list = []  # (TokensPrompt dict, sampling params)
        self.seen_pixels: list = []  # what vLLM's processor made of the images it was given
        vision = "limit_mm_per_prompt" in kwargs  # vLLM loads a processor for multimodal models only
        self.processor = AutoImageProcessor.from_pretrained(kwargs["model"], backend="pil") if vision else None
        self.image_token_id = None  # set by the test (vLLM reads it from the checkpoint's config)
        self.response: list = []
        self.calls: list = []  # cache resets and RPCs, in order
        self.llm_engine = FakeEngineCore(self)

    def collective_rpc(self, method, kwargs=None):
        self.calls.append(method)

    def reset_prefix_cache(self):
        self.calls.append("reset_prefix_cache")

    def generate(self, prompts, params, use_tqdm=False):
        return [self.answer(str(i), prompt, params) for i, prompt in enumerate(prompts)]

    def answer(self, request_id, prompt, params):
        self.requests.append((prompt, params))
        expanded = list(prompt["prompt_token_ids"])
        images = (prompt.get("multi_modal_data") or {}).get("image", [])
        if images:
            processed = self.processor(images=[np.asarray(image) for image in images], return_tensors="pt")
            self.seen_pixels.append(processed["pixel_values"])
            counts = iter((processed["image_grid_thw"].prod(-1) // 4).tolist())
            expanded = [t for token in expanded
                        for t in ([token] * int(next(counts)) if token == self.image_token_id else [token])]
        logprobs = [None if lp is None else {token: Logprob(lp)} for token, lp in self.response]
        completion = Completion([token for token, _ in self.response], logprobs, "length")
        return RequestOutput(request_id, expanded, [completion])


class FakeEngineCore:
    def __init__(self, llm):
        self.llm, self.queue = llm, []

    def add_request(self, request_id, prompt, params):
        self.queue.append((request_id, prompt, params))

    def step(self):
        done = [self.llm.answer(request_id, prompt, params) for request_id, prompt, params in self.queue]
        self.queue = []
        return done

    def has_unfinished_requests(self):
        return bool(self.queue)

    def reset_encoder_cache(self):
        self.llm.calls.append("reset_encoder_cache")


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, FakeSamplingParams
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = dict  # vLLM's TokensPrompt is a TypedDict: calling it builds a dict
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the engine sets both when unset; keep the process clean
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return module


def _policy(name="tiny-vlm", max_images=2):
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy

    return load_policy(ModelConfig(name=name, device="cpu", dtype="fp32", max_images=max_images), need_reference=False)


def _engine(policy, response):
    from seedbench.engines.vllm import VLLMEngine

    engine = VLLMEngine(policy.model, policy.tokenizer, device="cpu")
    engine.llm.image_token_id = policy.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
    engine.llm.response = response
    return engine


def _frame(shape, seed):
    return (np.random.RandomState(seed).rand(*shape, 3) * 255).astype(np.uint8)


# -- tests -----------------------------------------------------------------------------------------------
def test_vision_requests_carry_one_placeholder_per_image_and_the_trainers_pixels(fake_vllm):
    policy = _policy()
    tok = policy.tokenizer
    pad, video_pad = tok.convert_tokens_to_ids([IMAGE_PAD, VIDEO_PAD])
    left, right, eos = tok.convert_tokens_to_ids(["left", "right"]) + [tok.eos_token_id]
    engine = _engine(policy, [(left, -0.25), (right, -1.5), (eos, None)])
    sokoban, cards = _frame(SOKOBAN_FRAME, 0), _frame(EZPOINTS_FRAME, 1)
    prompts = [render_prompt(tok, "push the box", [sokoban]),
               render_prompt(tok, "make 12", [sokoban, cards]),
               render_prompt(tok, "text only", [])]
    params = SamplingParams(max_new_tokens=3, temperature=0.7, stop=[])
    generations = engine.generate(prompts, params)
    llm = engine.llm

    # the LLM: at most max_images images, no video; the trainer's processor bounds next to the weights
    assert llm.kwargs["limit_mm_per_prompt"] == {"image": 2, "video": 0}
    assert llm.processor.size["longest_edge"] == 112 * 112 and llm.processor.size["shortest_edge"] == 28 * 28
    # the exact token prompts: the chat template's text with ONE <|image_pad|> per image, as vLLM expands
    marks = VISION_START + IMAGE_PAD + VISION_END
    for (sent, _), text, count in zip(llm.requests, ["push the box", "make 12", "text only"], [1, 2, 0]):
        rendered = tok.apply_chat_template([{"role": "user", "content": marks * count + text}],
                                           add_generation_prompt=True, tokenize=False)
        assert sent["prompt_token_ids"] == tok(rendered, add_special_tokens=False)["input_ids"]
        assert sent["prompt_token_ids"].count(pad) == count
        assert ("multi_modal_data" in sent) == (count > 0)
    # the images: PIL RGB at the trainer's resized size (336 and 300 px → 112 and 84 px under 112² max pixels)
    images = llm.requests[1][0]["multi_modal_data"]["image"]
    assert [image.mode for image in images] == ["RGB", "RGB"]
    assert [image.size for image in images] == [(112, 112), (84, 84)]
    assert prompts[1].image_grid_thw.tolist() == [[1, 8, 8], [1, 6, 6]]
    # ... so vLLM's own preprocessing reproduces the trainer's pixels bit for bit
    assert torch.equal(llm.seen_pixels[0], prompts[0].pixel_values)
    assert torch.equal(llm.seen_pixels[1], prompts[1].pixel_values)
    # sampling: placeholders biased away, no repetition penalty, processed log-probs of the sampled token
    sampling = llm.requests[0][1].kwargs
    assert sampling["logit_bias"] == {pad: -100.0, video_pad: -100.0}
    assert sampling["repetition_penalty"] == 1.0 and sampling["temperature"] == 0.7
    assert sampling["logprobs"] == 0 and sampling["max_tokens"] == 3
    # log-probs map back per token (a missing entry is nan); the response ends at eos
    for generation in generations:
        assert generation.token_ids == [left, right, eos] and generation.finish_reason == "stop"
        assert generation.logprobs[:2] == [-0.25, -1.5] and math.isnan(generation.logprobs[2])
        assert generation.text == "left right"
    engine.close()


def test_a_different_resize_inside_vllm_stops_the_run(fake_vllm):
    """If vLLM's processor resized to another size, its expanded prompt differs from the trainer's."""
    policy = _policy()
    tok = policy.tokenizer
    engine = _engine(policy, [(tok.eos_token_id, -0.1)])
    engine.llm.processor.size = {"shortest_edge": 28 * 28, "longest_edge": 56 * 56}  # 336 px → 56 px, 4 tokens
    prompt = render_prompt(tok, "push the box", [_frame(SOKOBAN_FRAME, 0)])
    with pytest.raises(RuntimeError, match="resized the frames differently"):
        engine.generate([prompt], SamplingParams(max_new_tokens=1, stop=[]))
    engine.close()


def test_continuous_batching_requests_are_built_and_checked_the_same_way(fake_vllm):
    policy = _policy()
    tok = policy.tokenizer
    engine = _engine(policy, [(tok.convert_tokens_to_ids("up"), -0.5)])
    prompt = render_prompt(tok, "push the box", [_frame(SOKOBAN_FRAME, 3)])
    engine.submit("a", prompt, SamplingParams(max_new_tokens=1, stop=[]))
    request_id, prompt_sent, params = engine.engine.queue[0]
    assert prompt_sent == engine.request(prompt) and params.kwargs["logit_bias"]
    assert prompt_sent["prompt_token_ids"].count(tok.convert_tokens_to_ids(IMAGE_PAD)) == 1
    [(done, generation)] = engine.poll()
    assert done == "a" and generation.logprobs == [-0.5] and not engine._expected
    engine.close()


def test_a_weight_sync_drops_the_cached_vision_embeddings(fake_vllm):
    """vLLM caches vision-tower outputs by image hash across requests: after new weights they are stale."""
    vision = _engine(_policy(), [])
    vision.sync_weights()
    assert vision.llm.calls == ["reload_weights", "reset_prefix_cache", "reset_encoder_cache"]
    text = _engine(_policy("tiny"), [])
    text.sync_weights()
    assert text.llm.calls == ["reload_weights", "reset_prefix_cache"]
    vision.close(), text.close()


def test_malformed_placeholder_runs_are_refused_before_vllm():
    from seedbench.engines.vllm import collapse_image_pads
    from seedbench.prompt import Prompt

    prompt = Prompt([1, 9, 9, 9, 9, 2], image_grid_thw=torch.tensor([[1, 4, 4]]))  # 16 patches, merged 2×2 → 4
    assert collapse_image_pads(prompt, 9) == [1, 9, 2]
    short = Prompt([1, 9, 9, 9, 2], image_grid_thw=prompt.image_grid_thw)
    with pytest.raises(ValueError, match=r"runs \[3\] do not match .*expected \[4\]"):
        collapse_image_pads(short, 9)


def test_text_policies_send_plain_ids_and_no_bias(fake_vllm):
    policy = _policy("tiny")
    tok = policy.tokenizer
    engine = _engine(policy, [(tok.eos_token_id, -0.3)])
    prompt = tok("up down", add_special_tokens=False)["input_ids"]
    [generation] = engine.generate([prompt], SamplingParams(max_new_tokens=1, stop=[]))
    sent, params = engine.llm.requests[0]
    assert sent == {"prompt_token_ids": prompt} and "logit_bias" not in params.kwargs
    assert "limit_mm_per_prompt" not in engine.llm.kwargs and generation.logprobs == [-0.3]
    engine.close()
