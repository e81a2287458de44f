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
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Sequence

import torch

NAME = "seedbench_tree"
RUNS_KWARG = "seedbench_runs"


def supports_tree_attention(model: Any) -> bool:
    """Models whose attention goes through transformers' SDPA interface and is not recomputed later: with
    activation checkpointing the backward re-runs each layer after `packed_forward` has restored the
    implementation, so those models take the masked path instead."""
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
    with _implementation(model.config, NAME):
        return model(attention_mask=None, **inputs, **{RUNS_KWARG: _RunPlan(runs)})


class _RunPlan:
    """The runs plus what every layer needs of them, computed once per forward: the runs' widths in column
    order, and per run its path (ancestor runs, then itself) and its [run, path] mask (ancestors all
    visible, its own columns causal; None for a run without ancestors, which is plainly causal)."""

    def __init__(self, runs: Sequence):
        self.widths = [run.end - run.start for run in runs]
        self.paths: list[tuple[int, ...]] = []
        self.masks: list[torch.Tensor | None] = []
        for index, run in enumerate(runs):
            self.paths.append(tuple(run.ancestors) + (index,))
            above, width = sum(self.widths[a] for a in run.ancestors), self.widths[index]
            mask = None
            if above and width:
                mask = torch.ones((width, above + width), dtype=torch.bool)
                mask[:, above:] = torch.ones((width, width), dtype=torch.bool).tril()
            self.masks.append(mask)


def tree_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """transformers attention function: query [1, H, N, D], key/value [1, H_kv, N, D] → ([1, N, H, D], None).

    The row is split into its runs (a split's backward is one concatenation, where slicing would allocate a
    full-size gradient per run) and each run's keys are its path's pieces, concatenated."""
    plan = kwargs.get(RUNS_KWARG)
    if plan is None:
        raise RuntimeError("seedbench_tree attention needs the packed row's runs (call it through packed_forward)")
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:
        from transformers.integrations.sdpa_attention import repeat_kv

        key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    dropout = dropout if module.training else 0.0
    queries, keys, values = (t.split(plan.widths, dim=2) for t in (query, key, value))
    outputs = []
    for index, (path, mask) in enumerate(zip(plan.paths, plan.masks)):
        if not plan.widths[index]:
            continue
        k = keys[index] if len(path) == 1 else torch.cat([keys[i] for i in path], dim=2)
        v = values[index] if len(path) == 1 else torch.cat([values[i] for i in path], dim=2)
        if mask is None:
            out = torch.nn.functional.scaled_dot_product_attention(
                queries[index], k, v, dropout_p=dropout, scale=scaling, is_causal=plan.widths[index] > 1)
        else:
            out = torch.nn.functional.scaled_dot_product_attention(
                queries[index], k, v, attn_mask=mask.to(query.device), dropout_p=dropout, scale=scaling)
        outputs.append(out)
    attn = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=2)
    return attn.transpose(1, 2).contiguous(), None
