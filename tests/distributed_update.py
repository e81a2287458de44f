"""Trainer updates on fixed batches, in one process or as one rank of a torchrun group (test helper).

``python tests/distributed_update.py OUT`` updates on all samples; under ``torchrun --nproc-per-node 2``
each rank updates on its contiguous share (rank 0 the first four of seven samples, rank 1 the rest). One
launch does it for each strategy (``ddp``, ``fsdp``, then ``ddp_gc``: ddp with gradient checkpointing; in
one process the strategy changes nothing, so the one-process run does it once) and writes ``OUT/<strategy>.pt`` (rank 0) for `tests/test_distributed.py`:

- ``initial``, ``params``, ``metrics``: the weights before and after update A on batch 1, and its metrics;
- a checkpoint saved after update A (``run/checkpoints``), then ``resumed``: the weights after update C on
  another batch, loading that checkpoint back (model and AdamW state) and update B on batch 2, which must
  equal update A then B; ``final_model/`` written from those weights (fsdp: gathered from the shards).
"""

import sys
from pathlib import Path

import torch

from seedbench.agents.base import PreparedUpdate, TrainSample
from seedbench.config import build_config
from seedbench.training.trainer import Trainer

SAMPLES = 7


def fixed_samples(vocab: int, seed: int) -> list[TrainSample]:
    gen = torch.Generator().manual_seed(seed)
    samples = []
    for i in range(SAMPLES):
        prompt = torch.randint(5, vocab, (int(torch.randint(3, 9, (1,), generator=gen)),), generator=gen).tolist()
        response = torch.randint(5, vocab, (int(torch.randint(1, 6, (1,), generator=gen)),), generator=gen).tolist()
        samples.append(TrainSample(prompt, response, advantage=float(torch.randn(1, generator=gen)), traj_index=i))
    return samples


def full_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    """Every rank calls it (fsdp: ``state_dict()`` gathers the shards)."""
    return {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}


def updates(trainer: Trainer, out: Path, strategy: str) -> None:
    rank, world = trainer.dist.rank, trainer.dist.world_size

    def update(seed: int) -> dict[str, float]:
        samples = fixed_samples(len(trainer.policy.tokenizer), seed)
        share = samples if world == 1 else (samples[:4] if rank == 0 else samples[4:])
        return trainer.update(PreparedUpdate(share))

    initial = full_weights(trainer)
    metrics = update(1234)  # A
    after_a = full_weights(trainer)
    checkpoint = trainer.save_checkpoint()
    checkpoint = Path(trainer.dist.broadcast_object(str(checkpoint)))
    update(99)  # C: moves the weights and AdamW moments away from the checkpoint
    trainer._load_checkpoint(checkpoint)
    update(4321)  # B
    resumed = full_weights(trainer)
    trainer.dist.save_final_model(trainer.policy, out / f"{strategy}_final_model")
    if trainer.dist.is_main:
        torch.save({"initial": initial, "params": after_a, "metrics": metrics, "resumed": resumed, "world": world,
                    "strategy": type(trainer.dist).__name__,
                    "checkpointing": bool(getattr(trainer.policy.model, "is_gradient_checkpointing", False))},
                   out / f"{strategy}.pt")


def main(out: Path) -> None:
    import os

    strategies = ["ddp", "fsdp", "ddp_gc"] if int(os.environ.get("WORLD_SIZE", "1")) > 1 else ["one"]
    trainers = []
    try:
        for strategy in strategies:
            config = build_config(overrides={
                "env": "choice", "agent": "grpo", "iterations": 1,
                "model": {"name": "tiny", "gradient_checkpointing": strategy == "ddp_gc"},
                "output": str(out / f"run_{strategy}"), "distributed": {"strategy": "fsdp" if strategy == "fsdp" else "ddp"},
                "optim": {"lr": 0.01, "mini_batch_size": 4, "micro_batch_size": 2, "ppo_epochs": 2,
                          # the one aggregation independent of how ranks cut their micro-batches
                          "loss_agg_mode": "global-token-mean"},
                "rollout": {"tasks_per_batch": 2, "group_size": 2}, "eval": {"num_tasks": 2}})
            trainers.append(Trainer(config))  # both share the process group; closed at the end
            updates(trainers[-1], out, strategy)
        trainers[-1].dist.barrier()  # as `seedbench.training.trainer.train`: all ranks done before the teardown
    finally:
        for trainer in trainers:
            trainer.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
