"""The runs' attention in bf16 on CPU: bf16 flash forward, fp32 backward (`seedbench.models.tree_attention.attend`).

Its gradients must be the exact attention's (fp32 SDPA on the same bf16-rounded inputs) up to the rounding
of bf16, with fewer key/value heads than query heads, under a run's additive mask and causally."""

from __future__ import annotations

import pytest
import torch

from seedbench.models import tree_attention
from seedbench.models.tree_attention import attend


def _inputs(queries: int, keys: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 6, queries, 16, generator=g).bfloat16().requires_grad_()
    k = torch.randn(1, 2, keys, 16, generator=g).bfloat16().requires_grad_()
    v = torch.randn(1, 2, keys, 16, generator=g).bfloat16().requires_grad_()
    return q, k, v, torch.randn(1, 6, queries, 16, generator=g).bfloat16()


def _reference(q, k, v, mask, causal, grad_out):
    """fp32 SDPA on the upcast bf16 inputs: the exact attention of what the bf16 path sees."""
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, attn_mask=mask, is_causal=causal,
                                                           enable_gqa=True)
    out.backward(grad_out.float())
    return out.detach(), [t.grad for t in (qf, kf, vf)]


@pytest.mark.parametrize("causal", [False, True])
def test_bf16_attention_matches_fp32_up_to_bf16_rounding(causal):
    queries, keys = (24, 24) if causal else (24, 40)
    q, k, v, grad_out = _inputs(queries, keys)
    mask = None
    if not causal:  # a run below a 16-column ancestor: ancestors visible, its own columns causal
        allowed = torch.ones(queries, keys, dtype=torch.bool).tril(diagonal=keys - queries)
        mask = torch.zeros(queries, keys).masked_fill(~allowed, float("-inf"))
    ref_out, ref_grads = _reference(q, k, v, mask, causal, grad_out)
    out = attend(q, k, v, None if mask is None else mask.bfloat16(), causal, {"scale": None, "enable_gqa": True})
    assert out.dtype == torch.bfloat16
    out.backward(grad_out)
    assert float((out.detach().float() - ref_out).abs().max()) < 2e-2
    for got, want in zip((q.grad, k.grad, v.grad), ref_grads):
        assert got.dtype == torch.bfloat16
        # bf16 keeps 8 bits: 1/128 relative to the largest gradient is a few roundings
        assert float((got.float() - want).abs().max()) <= 1 / 128 * float(want.abs().max())


def test_bf16_attention_backward_runs_the_fp32_kernel(monkeypatch):
    """The backward hands the fp32 kernel fp32 tensors (the point of the path), and fp32 inputs never take it."""
    seen = []
    kernel = tree_attention._FLASH_CPU_BACKWARD

    def spy(*args, **kwargs):
        seen.append({a.dtype for a in args[:5]})
        return kernel(*args, **kwargs)

    monkeypatch.setattr(tree_attention, "_FLASH_CPU_BACKWARD", spy)
    q, k, v, grad_out = _inputs(8, 8)
    attend(q, k, v, None, True, {"scale": None}).backward(grad_out)
    assert seen == [{torch.float32}]
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    attend(qf, kf, vf, None, True, {"scale": None, "enable_gqa": True}).sum().backward()
    assert len(seen) == 1
