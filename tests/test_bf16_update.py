"""The update under a bf16 compute dtype casts each weight to bf16 once per mini-batch, not once per micro-batch.

autocast keeps its casts of the weights until its outermost region exits; the trainer holds one region
around a mini-batch's micro-batches (the weights change only at the optimizer step after it)."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tests.test_update_paths import _rollout, _trainer, _update


class WeightCasts(TorchDispatchMode):
    """Counts fp32 → bf16 casts of tensors with `shape`."""

    def __init__(self, shape):
        super().__init__()
        self.shape, self.count = tuple(shape), 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (func is torch.ops.aten._to_copy.default and tuple(args[0].shape) == self.shape
                and args[0].dtype == torch.float32 and kwargs.get("dtype") == torch.bfloat16):
            self.count += 1
        return func(*args, **kwargs)


def test_weights_are_cast_once_per_mini_batch(tmp_path):
    trainer = _trainer(tmp_path, "bf16_casts")
    prepared, trajectories = _rollout(trainer)
    trainer.policy.compute_dtype = torch.bfloat16  # the tiny model loads in fp32; its update runs under autocast
    weight = trainer.policy.model.model.layers[0].mlp.down_proj.weight
    assert len(prepared.samples) == 4  # two micro-batches of 2 in one mini-batch
    with WeightCasts(weight.shape) as casts:
        metrics, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="first_forward", packing="off")
    # the loss forwards: one cast per layer for both micro-batches; the reference pass (a frozen copy, whose
    # weights autocast never caches) casts in each of its two micro-batches
    layers = len(trainer.policy.model.model.layers)
    assert casts.count == layers + 2 * layers
    assert metrics["train/samples"] == 4 and max(float(g.abs().max()) for g in grads.values()) > 0
    trainer.close()
