"""The engine-vs-trainer log-prob check: exact at the limits, flags a stale weight sync."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from seedbench.engines.base import SamplingParams
from seedbench.engines.hf import HFEngine
from seedbench.training.logprob_check import (
    DEFAULT_THRESHOLD,
    check_engine,
    check_train_samples,
    compare_logprobs,
    recompute_logprobs,
)
from seedbench.rollout.prompting import render_prompt
from seedbench.models.scoring import score_responses
from seedbench.models.tiny import tiny_model, tiny_tokenizer


def test_identical_logprobs_give_zero():
    check = compare_logprobs([[-1.0, -2.0], [-0.5]], [[-1.0, -2.0], [-0.5]])
    assert check.mean_abs_diff == 0.0 and check.max_abs_diff == 0.0 and check.tokens == 3
    assert not check.flagged
    assert check.metrics()["rollout/logprob_mismatch"] == 0.0


def test_mean_and_max_are_per_token_and_symmetric():
    a, b = [[-1.0, -2.0], [-0.5]], [[-1.1, -2.0], [-0.2]]
    check = compare_logprobs(a, b, threshold=1.0)
    assert check.mean_abs_diff == pytest.approx((0.1 + 0.0 + 0.3) / 3)
    assert check.max_abs_diff == pytest.approx(0.3)
    assert compare_logprobs(b, a, threshold=1.0).mean_abs_diff == pytest.approx(check.mean_abs_diff)
    assert not check.flagged
    assert compare_logprobs(a, b, threshold=0.1).flagged
    assert "MISMATCH" in compare_logprobs(a, b, threshold=0.1).message()


def test_length_mismatch_and_non_finite_values_are_flagged_not_averaged():
    check = compare_logprobs([[-1.0, -math.inf], [-1.0]], [[-1.0, -3.0], [-1.0, -2.0]], threshold=1.0)
    assert check.length_mismatches == 1 and check.flagged
    assert check.mean_abs_diff == 0.0 and math.isinf(check.max_abs_diff)
    with pytest.raises(ValueError):
        compare_logprobs([[0.0]], [])
    assert compare_logprobs([], []).tokens == 0


def test_check_train_samples_matches_by_ids_and_skips_rescored_prompts():
    def step(p, r, lp):
        return SimpleNamespace(prompt_ids=p, response_ids=r, sampled_logprobs=lp)

    trajectories = [SimpleNamespace(steps=[step([1, 2], [3], [-1.0]), step([1, 2, 3], [4, 5], [-0.5, -0.25])])]
    samples = [SimpleNamespace(prompt_ids=[1, 2, 3], response_ids=[4, 5]),  # reordered
               SimpleNamespace(prompt_ids=[9, 1, 2, 3], response_ids=[4, 5]),  # skill-augmented: skipped
               SimpleNamespace(prompt_ids=[1, 2], response_ids=[3])]
    old_logp = [[-0.5, -0.35], [-7.0, -7.0], [-1.0]]
    check = check_train_samples(samples, old_logp, trajectories, threshold=0.05)
    assert check.tokens == 3
    assert check.mean_abs_diff == pytest.approx(0.1 / 3)
    assert not check.flagged


@pytest.fixture(scope="module")
def tiny():
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0).eval()
    prompts = [render_prompt(tok, text) for text in ("choose left or right", "push the box up", "your task is to go")]
    return tok, model, prompts


def test_recompute_at_temperature_one_is_the_trainers_scoring(tiny):
    tok, model, prompts = tiny
    responses = [[7, 8, 9], [10], [11, 12]]
    ours = recompute_logprobs(model, prompts, responses, tok.pad_token_id, torch.device("cpu"))
    theirs = score_responses(model, prompts, responses, tok.pad_token_id, torch.device("cpu"))
    assert compare_logprobs(ours, theirs).max_abs_diff < 1e-6


@pytest.mark.parametrize("params", [SamplingParams(max_new_tokens=8, greedy=True, stop=[]),
                                    SamplingParams(max_new_tokens=8, temperature=0.7, stop=[])])
def test_hf_engine_agrees_with_recompute(tiny, params):
    tok, model, prompts = tiny
    engine = HFEngine(model, tok, torch.device("cpu"), batch_size=8)
    torch.manual_seed(0)
    check = check_engine(engine, model, tok, prompts, params, torch.device("cpu"))
    assert check.tokens > 0
    assert check.mean_abs_diff < 1e-4, check.message()
    assert not check.flagged


def test_stale_engine_weights_are_flagged_until_synced():
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0).eval()
    prompts = [render_prompt(tok, "choose left or right"), render_prompt(tok, "push the box")]
    engine = HFEngine(model, tok, torch.device("cpu"), dtype=torch.float64)  # its own copy of the weights
    params = SamplingParams(max_new_tokens=8, greedy=True, stop=[])
    assert not check_engine(engine, model, tok, prompts, params, torch.device("cpu")).flagged
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.5)
    stale = check_engine(engine, model, tok, prompts, params, torch.device("cpu"))
    assert stale.flagged and stale.mean_abs_diff > DEFAULT_THRESHOLD
    engine.sync_weights()
    synced = check_engine(engine, model, tok, prompts, params, torch.device("cpu"))
    assert synced.mean_abs_diff < 1e-4, synced.message()
