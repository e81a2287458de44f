"""Sharded data parallelism (``distributed.strategy: fsdp``): FSDP2 (``torch.distributed.fsdp.fully_shard``).

`ShardedDataParallel` is `DataParallel` (same rollout sharding, global sample layout, global token mean,
rank-0 run directory) with the model's parameters, gradients and AdamW state split over the ranks, for
models whose training state does not fit one device. What changes and why:

- **Sharding** (`shard_model`, after the engine is built and before the optimizer): every transformer
  block (the classes the model lists in ``_no_split_modules``) and then the root get ``fully_shard``; the
  optimizer is built from the sharded parameters, so each rank keeps 1/N of the AdamW state. The
  reduce-scatter *sums* gradients (divide factor 1): the loss is already divided by the global token
  count, so the sum is the one-process gradient, as with `DataParallel.all_reduce_grads`.
- **Rollout and scoring need the whole model on every rank**, and each rank runs a different number of
  forward passes there (its own tasks, its own samples), which collective all-gathers cannot follow. So
  the parameters are gathered once, on every rank together, where `shard_rollout` and `sample_layout`
  are entered (the points where all ranks meet), and stay gathered (``reshard_after_forward=False``)
  until the update's first backward pass reshards them.
- **Equal passes in the update**: every forward/backward pass of the update all-gathers and
  reduce-scatters, so every rank must take the same number per optimizer step. A rank with fewer
  micro-batches (or none) in a mini-batch makes up the difference in `all_reduce_grads` with passes of
  zero loss on a one-token input, which add nothing to any gradient. The counts come from the global
  sample layout (`PassCountingLayout`), which every rank knows, not from a collective: the busier ranks
  are already inside their next pass's all-gather when a rank runs out of micro-batches.
- **Full state dicts**: ``model.state_dict()`` returns full tensors (a collective, called on every rank
  together: engine weight syncs, checkpoints), so checkpoints, ``final_model/`` and weight syncs have
  the one-process format; a checkpoint of either strategy resumes under the other.

Not supported: LoRA (its adapters are small; use ``ddp``). Agents that copy the policy model after
start-up (SEED's analyzer refresh) are not tested with it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable

import torch

from seedbench.training.distributed import DataParallel, SampleLayout
from seedbench.config import ConfigError
from seedbench.models.policy import save_policy
from seedbench.models.weights import is_lora


class ShardedDataParallel(DataParallel):
    """A torch.distributed group whose model is sharded with FSDP2 (see the module docstring)."""

    def __init__(self):
        super().__init__()
        self.model: torch.nn.Module | None = None
        self._passes = (0, 0)  # (this rank's, the most any rank takes) forward/backward passes in the mini-batch
        self._full_state: dict[str, Any] | None = None  # answered by state_dict() on rank 0 while saving

    # -- sharding ---------------------------------------------------------------------------------
    def shard_model(self, model: torch.nn.Module) -> None:
        from torch.distributed.fsdp import fully_shard

        if is_lora(model):
            raise ConfigError("distributed.strategy=fsdp does not shard LoRA models; use distributed.strategy=ddp "
                              "(LoRA's trainable state is small) or model.lora_rank=0")
        for module in transformer_blocks(model) + [model]:
            fully_shard(module, reshard_after_forward=False)
            # sum over ranks (the loss already has the global token mean), as a plain SUM (gloo has no
            # pre-multiplied sum); both are per shard group, the root's call does not reach the blocks
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)
        model.register_state_dict_post_hook(lambda *args: self._full_state_dict(*args))
        self.model = model

    def _full_state_dict(self, module: torch.nn.Module, state: dict[str, Any], prefix: str, metadata: Any) -> None:
        """Replace the sharded DTensors of ``model.state_dict()`` by full tensors (all ranks must call it)."""
        from torch.distributed.tensor import DTensor

        if self._full_state is not None:
            state.update(self._full_state)
            return
        for key, value in list(state.items()):
            if isinstance(value, DTensor):
                state[key] = value.full_tensor()

    def _gather(self) -> None:
        """All-gather every shard group's parameters on every rank; they stay gathered until the next backward."""
        from torch.distributed.fsdp import FSDPModule

        if self.model is None:
            return
        for module in self.model.modules():
            if isinstance(module, FSDPModule):
                module.unshard()

    # -- where every rank meets -------------------------------------------------------------------
    def shard_rollout(self, run_episodes, gather: bool = False):
        sharded = super().shard_rollout(run_episodes, gather)

        def gathered_then_sharded(*args, **kwargs):
            self._gather()
            return sharded(*args, **kwargs)

        return gathered_then_sharded

    def sample_layout(self, lengths: list[int]):
        layout = super().sample_layout(lengths)
        self._gather()  # the update first scores each rank's own samples: a different number of passes per rank
        return PassCountingLayout(layout.lengths, layout.counts, layout.rank, self)

    def training_module(self, module: torch.nn.Module, compute: Any = None) -> torch.nn.Module:
        """The sharded model itself: FSDP2's hooks reduce-scatter in every backward, no DDP wrapper."""
        return module

    def backward_context(self, last: bool) -> Any:
        return contextlib.nullcontext()

    def all_reduce_grads(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        """Gradients were reduce-scattered (summed) by each backward pass; here a rank that took fewer passes
        in this mini-batch than another takes zero-loss passes until all ranks have taken the same number."""
        own, most = self._passes
        device = next(p.device for p in self.model.parameters())
        for _ in range(most - own):  # no collective to agree on the count: the others are already in their passes
            logits = self.model(input_ids=torch.zeros((1, 1), dtype=torch.long, device=device)).logits
            (logits.float().sum() * 0.0).backward()
        self._passes = (0, 0)

    # -- checkpoints ------------------------------------------------------------------------------
    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The one-process ``optimizer.state_dict()``: every sharded state tensor gathered (all ranks call it)."""
        from torch.distributed.tensor import DTensor

        state = optimizer.state_dict()  # its per-parameter dicts are the optimizer's own: build new ones
        state["state"] = {index: {key: value.full_tensor() if isinstance(value, DTensor) else value
                                  for key, value in per_param.items()}
                          for index, per_param in state["state"].items()}
        return state

    def load_model_state(self, model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
        """Load a full state dict (any strategy's checkpoint): each rank keeps its shard of every tensor."""
        from torch.distributed.tensor import DTensor, distribute_tensor

        with torch.no_grad():
            for name, param in _sharded_named_tensors(model):
                if name not in state:  # non-persistent buffers (rotary tables) are rebuilt, not saved
                    continue
                full = state[name].to(param.device, param.dtype)
                if isinstance(param, DTensor):
                    param.to_local().copy_(distribute_tensor(full, param.device_mesh, param.placements).to_local())
                else:
                    param.copy_(full)

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        """Load a full optimizer state dict: each rank keeps its shard of every moment tensor."""
        params = [p for group in optimizer.param_groups for p in group["params"]]
        state = dict(state)
        state["state"] = {index: {key: _shard_like(value, params[int(index)]) for key, value in per_param.items()}
                          for index, per_param in state["state"].items()}
        optimizer.load_state_dict(state)

    def save_final_model(self, policy: Any, path) -> None:
        """Gather the full weights on every rank, then rank 0 saves them (its ``state_dict()`` answers from them)."""
        full = self.model.state_dict() if self.model is not None else None
        if self.is_main:
            self._full_state = full
            try:
                save_policy(policy, path)
            finally:
                self._full_state = None
        self.barrier()


class PassCountingLayout(SampleLayout):
    """A `SampleLayout` that tells its group how many passes this rank and the busiest rank take in each
    mini-batch (the update asks `micro_batches` once per mini-batch, before its passes), so
    `ShardedDataParallel.all_reduce_grads` knows how many zero-loss passes to add without a collective."""

    def __init__(self, lengths, counts, rank, group: ShardedDataParallel):
        super().__init__(lengths, counts, rank)
        self.group = group

    def micro_batches(self, global_indices, micro_batch_size: int) -> int:
        passes = self.passes_per_rank(global_indices, micro_batch_size)
        self.group._passes = (passes[self.rank], max(passes))
        return sum(passes)


def transformer_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's repeated blocks: modules whose class the model names in ``_no_split_modules`` (HF
    models list their decoder layer there); none found = only the root is sharded."""
    names = set(getattr(model, "_no_split_modules", None) or [])
    return [m for m in model.modules() if m is not model and type(m).__name__ in names]


def _shard_like(value: Any, param: torch.Tensor) -> Any:
    """A full optimizer state tensor of `param`'s shape as a DTensor sharded like `param` (others unchanged)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(param, DTensor) and torch.is_tensor(value) and value.shape == param.shape:
        return distribute_tensor(value.to(param.device), param.device_mesh, param.placements)
    return value


def _sharded_named_tensors(model: torch.nn.Module):
    """(state-dict name, parameter or buffer) pairs with the parameters in their sharded form."""
    for module in model.modules():
        reshard = getattr(module, "reshard", None)
        if callable(reshard) and hasattr(module, "unshard"):
            reshard()
    yield from model.named_parameters(remove_duplicate=False)
    yield from model.named_buffers()
