"""A bf16 compute copy of the policy for training passes (``model.bf16_compute=param_copy``), fp32 master
weights kept.

Under autocast every linear layer casts its fp32 input to bf16 in the forward, and the backward casts its
gradients back; on a CPU those casts are a large share of an update (docs/performance.md, "bf16 on CPU").
The copy instead holds the weights in the compute dtype outright, as verl's FSDP
``MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)`` does:

- `refresh` casts the master weights into the copy; the update calls it once per optimizer step, before a
  mini-batch's first forward, so every forward sees the latest step;
- forward and backward run on `model` with autocast off (log-softmax stays fp32: the scoring code upcasts
  the logits);
- `move_grads` adds the copy's gradients into the master parameters' fp32 ``.grad`` after each backward and
  clears them, so accumulation over micro-batches, clipping, the all-reduce and AdamW all stay fp32, and a
  step of 1e-6 relative size still lands in the fp32 weights (bf16's 8-bit mantissa would drop it).

Only parameters are cast: buffers (RoPE's inverse frequencies) keep their dtype, as under autocast. A
parameter shared by two modules (tied embeddings) stays one parameter in the copy. LoRA works unchanged:
the copy is the same peft model, and only parameters with ``requires_grad`` get gradients. A ``forward``
patched onto a master module's instance is not carried over (`seedbench.models.weights.model_copy`).
"""

from __future__ import annotations

from typing import Any

import torch

from seedbench.models.weights import model_copy


class ComputeCopy:
    """`master`'s structure with its parameters in `dtype` (`model`), and the two ways between them."""

    def __init__(self, master: Any, dtype: torch.dtype):
        self.master, self.dtype = master, dtype
        # pre-filling deepcopy's memo casts each parameter once, without an fp32 clone of the whole model,
        # and maps a tied parameter's two uses to one new parameter
        memo = {id(p): torch.nn.Parameter(p.detach().to(dtype), requires_grad=p.requires_grad)
                for p in master.parameters()}
        self.model = model_copy(master, memo)  # without forwards patched onto the master's instances
        names = [name for name, _ in master.named_parameters()]
        if names != [name for name, _ in self.model.named_parameters()]:
            raise RuntimeError("the compute copy's parameters do not match the master's")
        self.pairs = list(zip(master.parameters(), self.model.parameters()))
        self.module_pairs = list(zip(master.modules(), self.model.modules()))

    @torch.no_grad()
    def refresh(self) -> None:
        """Cast the master weights into the copy and take over its train/eval mode, module by module."""
        for master, low in self.pairs:
            low.copy_(master)
            low.grad = None
        self.follow_mode()

    def follow_mode(self) -> None:
        """The master's train/eval mode on every module of the copy (dropout acts alike in both)."""
        for master, low in self.module_pairs:
            low.training = master.training

    @torch.no_grad()
    def move_grads(self) -> None:
        """Add the copy's gradients into the master parameters' fp32 ``.grad`` and clear the copy's."""
        for master, low in self.pairs:
            if low.grad is None:
                continue
            if master.grad is None:
                master.grad = low.grad.to(master.dtype)
            else:
                master.grad.add_(low.grad)
            low.grad = None


REVISION = 2
"""Part of a starting model's cache key when it is built through the copy: changed whenever what the copy
computes changes, so a checkpoint cached by an earlier copy is not taken for one this copy would build."""


def bf16_compute_for(mode: str, sharded: bool = False) -> str:
    """What ``model.bf16_compute`` = `mode` means for a model that is (FSDP) or is not `sharded`: ``auto`` is
    the copy, except for sharded parameters, which a copy cannot pair, where it is autocast. The trainer
    settles its policy's mode before it shards; the SFT commands run in one process, never sharded."""
    if mode == "auto":
        return "autocast" if sharded else "param_copy"
    return mode


def wants_compute_copy(mode: str, compute_dtype: Any) -> bool:
    """Whether ``model.bf16_compute`` = `mode` asks for a compute copy at `compute_dtype`: only for bf16
    (fp32 runs have nothing to cast; fp16 would need loss scaling, which autocast runs get elsewhere)."""
    return bf16_compute_for(mode) == "param_copy" and compute_dtype == torch.bfloat16
