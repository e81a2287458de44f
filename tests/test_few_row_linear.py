"""Weight-major linears for decode steps: the same products as `F.linear`, taken only for 2..MAX_ROWS
rows, and the model restored afterwards."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seedbench.engines.few_row_linear import MAX_ROWS, weight_major_linears
from seedbench.engines.hf import HFEngine
from seedbench.models.tiny import tiny_model, tiny_tokenizer


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.Linear(96, 32, bias=False))


@pytest.mark.parametrize("shape", [(1, 48), (2, 48), (4, 1, 48), (2, 2, 48), (2, 8, 48), (3, 0, 48)])
def test_outputs_equal_f_linear(shape):
    model = _model()
    x = torch.randn(*shape)
    with torch.no_grad():
        plain = model(x)
        with weight_major_linears(model) as switched:
            fast = model(x)
    assert switched == 2
    assert fast.shape == plain.shape and fast.is_contiguous()
    assert torch.allclose(fast, plain, atol=1e-5, rtol=1e-5)


def test_only_few_rows_leave_f_linear(monkeypatch):
    model = _model()
    calls = []
    real = F.linear
    monkeypatch.setattr(F, "linear", lambda x, w, b=None: calls.append(x.shape) or real(x, w, b))
    with weight_major_linears(model):
        for rows in (1, 2, MAX_ROWS, MAX_ROWS + 1):
            model(torch.randn(rows, 48))
    # 1 row and MAX_ROWS + 1 rows go through F.linear in both layers; 2 and MAX_ROWS rows never do
    assert [shape[0] for shape in calls] == [1, 1, MAX_ROWS + 1, MAX_ROWS + 1]


def test_the_model_is_restored_also_after_an_error():
    model = _model()

    class Custom(torch.nn.Linear):  # a subclass has its own forward semantics: left alone
        pass

    model.append(Custom(32, 8))
    hooked = torch.nn.Linear(8, 8)
    hooked.forward = lambda x: x  # another library's replacement: left alone
    model.append(hooked)
    model.append(torch.nn.Linear(8, 8).to(torch.bfloat16))  # bf16 goes through oneDNN, where F.linear is faster
    with pytest.raises(RuntimeError, match="boom"):
        with weight_major_linears(model) as switched:
            assert switched == 2 and "forward" in vars(model[0])
            raise RuntimeError("boom")
    assert "forward" not in vars(model[0]) and "forward" not in vars(model[1])
    assert vars(hooked)["forward"](3) == 3


def test_the_engine_uses_it_on_cpu_only():
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0)
    assert HFEngine(model, tok, torch.device("cpu")).weight_major_decode()
    assert not HFEngine(model, tok, "cuda").weight_major_decode()
    assert not HFEngine(model, tok, torch.device("cpu"), decode_linear="standard").weight_major_decode()
    assert HFEngine(model, tok, "cuda", decode_linear="weight_major").weight_major_decode()
    with pytest.raises(ValueError, match="decode_linear one of"):
        HFEngine(model, tok, torch.device("cpu"), decode_linear="int8")


def test_the_run_config_switch_reaches_the_engine():
    from seedbench.config import build_config
    from seedbench.engines.factory import hf_options

    assert hf_options(build_config(overrides={"hf": {"decode_linear": "standard"}}))["decode_linear"] == "standard"
    assert hf_options(build_config())["decode_linear"] == "auto"


def test_engine_decode_equals_the_standard_path_and_leaves_f_linear(monkeypatch):
    """Three prompts: every decode step is a 3-row product, taken weight-major; greedy tokens and
    log-probs equal `F.linear`'s path."""
    from seedbench.engines.base import SamplingParams
    from seedbench.rollout.prompting import render_prompt

    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0)
    prompts = [render_prompt(tok, text) for text in ("go left now", "push the box up", "your task")]
    params = SamplingParams(max_new_tokens=8, greedy=True, stop=[])
    standard = HFEngine(model, tok, torch.device("cpu"), decode_linear="standard").generate(prompts, params)
    rows = []
    real = F.linear
    monkeypatch.setattr(F, "linear", lambda x, w, b=None: rows.append(x.numel() // x.shape[-1]) or real(x, w, b))
    fast = HFEngine(model, tok, torch.device("cpu"), decode_linear="weight_major").generate(prompts, params)
    assert rows and all(r == 1 or r > MAX_ROWS for r in rows)  # prefill rows only: decode steps left F.linear
    assert [g.token_ids for g in fast] == [g.token_ids for g in standard]
    assert all(len(g.token_ids) == 8 for g in fast)
    for a, b in zip(fast, standard):
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-5
