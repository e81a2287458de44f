"""Attention over a packed row's runs (`seedbench.models.packing`), one small attention per run.

A packed row's structure as one [N, N] mask makes the attention kernel compute the full square of the row,
although a run sees only its path: with members of ~300 own tokens below a ~300-token shared prefix, most
of the square is masked. Here each run attends with its own queries to the keys of its ancestors followed
by its own (causally), so the work is the sum over runs of run length × path length. The numbers are the
masked attention's up to floating-point summation order (`tests/test_update_paths.py`).

It plugs into transformers' attention interface: `packed_forward` switches the model's attention to
``seedbench_tree`` for one forward call and hands the runs down as a keyword argument, which transformers
passes to every layer's attention. transformers builds no mask for an implementation it has no mask
function for, so no [N, N] tensor is made. Outside that call the model is untouched.

It is a CPU kernel: on a GPU the per-run calls cost more in launches than the masked square costs in
arithmetic, so there packed rows keep one masked call per layer (`supports_tree_attention`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Sequence

import torch

from seedbench.models.weights import base_model

NAME = "seedbench_tree"
RUNS_KWARG = "seedbench_runs"


# Where the per-run kernel is used: "auto" = on CPU only; "runs" / "mask" force one path (benchmarks, tests).
KERNEL_CHOICE = "auto"


def supports_tree_attention(model: Any, device: Any = None) -> bool:
    """Whether a packed row's attention runs as one SDPA call per run of the tree, rather than one masked call.

    Only models whose attention goes through transformers' SDPA interface and is not recomputed later: with
    activation checkpointing the backward re-runs each layer after `packed_forward` has restored the
    implementation, so those models take the masked path. And only on CPU under ``auto``: on a GPU the
    many small calls are bound by kernel launches (H200, Qwen2.5-0.5B/1.5B shapes, 16 samples in 4 groups:
    forward + backward 2.2-2.5x slower than the padded layout, while one masked call over the same tree
    ran 0.87-1.04x of it; docs/performance.md, "GPU check")."""
    if KERNEL_CHOICE == "mask":
        return False
    if KERNEL_CHOICE == "auto" and device is not None and torch.device(device).type != "cpu":
        return False
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    checkpointing = getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.x's name
    if checkpointing is None:
        checkpointing = getattr(model, "is_gradient_checkpointing", False)
    return not checkpointing


def _register() -> None:
    from transformers import AttentionInterface

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, tree_attention)


@contextmanager
def _implementation(config, name: str):
    previous = config._attn_implementation
    config._attn_implementation = name
    try:
        yield
    finally:
        config._attn_implementation = previous


def packed_forward(model: Any, runs: Sequence, **inputs):
    """``model(**inputs)`` with the attention of every layer running over `runs` (no attention mask)."""
    _register()
    with _implementation(base_model(model).config, NAME):  # a LoRA wrapper's layers read the base model's config
        return model(attention_mask=None, **inputs, **{RUNS_KWARG: _RunPlan(runs)})


class _RunPlan:
    """The runs plus what every layer needs of them, computed once per forward: the runs' widths in column
    order, per run its path (ancestor runs, then itself) and the number of ancestor columns above it, and
    the runs' masks (made on first use)."""

    def __init__(self, runs: Sequence):
        self.widths = [run.end - run.start for run in runs]
        self.paths = [tuple(run.ancestors) + (index,) for index, run in enumerate(runs)]
        self.above = [sum(self.widths[a] for a in run.ancestors) for run in runs]
        self._additive: dict = {}

    def additive_mask(self, index: int, like: torch.Tensor) -> torch.Tensor | None:
        """Run `index`'s [run, path] mask as SDPA's additive float mask (0 / −inf) in `like`'s dtype and device:
        every ancestor column visible, its own columns causal (a lower triangle shifted right by the
        ancestors' width). None for a run without ancestors, which is plainly causal. Made once per forward
        rather than converted from bool in every layer's call."""
        above, width = self.above[index], self.widths[index]
        if not above:
            return None
        key = (index, like.dtype, like.device)
        if key not in self._additive:
            allowed = torch.ones((width, above + width), dtype=torch.bool, device=like.device).tril(diagonal=above)
            zeros = torch.zeros(allowed.shape, dtype=like.dtype, device=like.device)
            self._additive[key] = zeros.masked_fill(~allowed, float("-inf"))
        return self._additive[key]


NATIVE_GQA = torch.torch_version.TorchVersion(torch.__version__) >= "2.5"
"""SDPA takes fewer key/value heads than query heads itself (``enable_gqa``) from torch 2.5 on."""


def _tokens_major(states: torch.Tensor, groups: int) -> torch.Tensor:
    """[1, H_kv, N, D] → [1, N, H_kv, D] contiguous: the layout in which the runs' pieces concatenate fast
    (along the heads-major layout's token axis torch's CPU concatenation is ~30× slower). Before torch 2.5
    each key/value head is repeated for its query heads here, as transformers' ``repeat_kv`` does."""
    b, h, n, d = states.shape
    states = states.transpose(1, 2)
    if groups > 1 and not NATIVE_GQA:
        states = states[:, :, :, None, :].expand(b, n, h, groups, d).reshape(b, n, h * groups, d)
    return states.contiguous()


def tree_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """transformers attention function: query [1, H, N, D], key/value [1, H_kv, N, D] → ([1, N, H, D], None).

    The row is split into its runs (a split's backward is one concatenation, where slicing would allocate a
    full-size gradient per run) and each run's keys are its path's pieces, concatenated."""
    plan = kwargs.get(RUNS_KWARG)
    if plan is None:
        raise RuntimeError("seedbench_tree attention needs the packed row's runs (call it through packed_forward)")
    groups = getattr(module, "num_key_value_groups", 1)
    options = {"dropout_p": dropout if module.training else 0.0, "scale": scaling}
    if groups > 1 and NATIVE_GQA:
        options["enable_gqa"] = True
    queries = query.split(plan.widths, dim=2)
    keys, values = (_tokens_major(t, groups).split(plan.widths, dim=1) for t in (key, value))
    outputs = []
    for index, path in enumerate(plan.paths):
        if not plan.widths[index]:
            continue
        k = keys[index] if len(path) == 1 else torch.cat([keys[i] for i in path], dim=1)
        v = values[index] if len(path) == 1 else torch.cat([values[i] for i in path], dim=1)
        mask = plan.additive_mask(index, query)
        out = attend(queries[index], k.transpose(1, 2), v.transpose(1, 2), mask,
                     mask is None and plan.widths[index] > 1, options)
        outputs.append(out.transpose(1, 2))
    return (outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)).contiguous(), None


_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_CPU_BACKWARD = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)


def attend(query, key, value, mask, causal: bool, options: dict):
    """One run's attention: SDPA, except for bf16 on CPU with gradients, where the forward is SDPA's bf16
    flash kernel and the backward its fp32 kernel (`_Bf16FlashFp32Backward`)."""
    if (_FLASH_CPU is not None and query.dtype == torch.bfloat16 and query.device.type == "cpu"
            and torch.is_grad_enabled() and not options.get("dropout_p")
            and any(t.requires_grad for t in (query, key, value))):
        return _Bf16FlashFp32Backward.apply(query, key, value, mask, causal, options.get("scale"))
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, is_causal=causal,
                                                            **options)


class _Bf16FlashFp32Backward(torch.autograd.Function):
    """Flash attention with a bf16 forward and an fp32 backward, for CPUs.

    torch's CPU flash kernel runs its bf16 forward 2-3x faster than fp32, but its bf16 backward is slower
    than the fp32 one (docs/performance.md, "bf16 on CPU"). So the forward keeps bf16 and the backward
    runs the fp32 kernel on the upcast inputs, output and the forward's log-sum-exp (fp32 in both
    kernels): the gradients are the exact attention's up to the rounding of the bf16 inputs and output,
    closer to fp32 than the bf16 backward's. Key/value heads may be fewer than query heads (GQA), as for
    the kernels themselves."""

    @staticmethod
    def forward(ctx, query, key, value, mask, causal: bool, scale):
        out, logsumexp = _FLASH_CPU(query, key, value, 0.0, causal, attn_mask=mask, scale=scale)
        ctx.save_for_backward(query, key, value, out, logsumexp, mask)
        ctx.causal, ctx.scale = causal, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        query, key, value, out, logsumexp, mask = ctx.saved_tensors
        grads = _FLASH_CPU_BACKWARD(grad_out.float(), query.float(), key.float(), value.float(), out.float(),
                                    logsumexp.float(), 0.0, ctx.causal,
                                    attn_mask=None if mask is None else mask.float(), scale=ctx.scale)
        return (*(g.to(t.dtype) for g, t in zip(grads, (query, key, value))), None, None, None)
