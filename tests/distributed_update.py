"""One trainer update on a fixed batch, in one process or as one rank of a torchrun group (test helper).

``python tests/distributed_update.py OUT`` updates on all samples; under ``torchrun --nproc-per-node 2``
each rank updates on its contiguous share (rank 0 the first four of seven samples, rank 1 the rest). Rank 0
writes the updated parameters and the update's metrics to OUT/params.pt, so `tests/test_distributed.py`
can compare the two."""

import sys
from pathlib import Path

import torch

from seedbench.agents.base import PreparedUpdate, TrainSample
from seedbench.config import build_config
from seedbench.training.trainer import Trainer

SAMPLES = 7


def fixed_samples(vocab: int) -> list[TrainSample]:
    gen = torch.Generator().manual_seed(1234)
    samples = []
    for i in range(SAMPLES):
        prompt = torch.randint(5, vocab, (int(torch.randint(3, 9, (1,), generator=gen)),), generator=gen).tolist()
        response = torch.randint(5, vocab, (int(torch.randint(1, 6, (1,), generator=gen)),), generator=gen).tolist()
        samples.append(TrainSample(prompt, response, advantage=float(torch.randn(1, generator=gen)), traj_index=i))
    return samples


def main(out: Path) -> None:
    config = build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "output": str(out / "run"),
        "optim": {"lr": 0.01, "mini_batch_size": 4, "micro_batch_size": 2, "ppo_epochs": 2},
        "rollout": {"tasks_per_batch": 2, "group_size": 2}, "eval": {"num_tasks": 2}})
    trainer = Trainer(config)
    try:
        samples = fixed_samples(len(trainer.policy.tokenizer))
        rank, world = trainer.dist.rank, trainer.dist.world_size
        share = samples if world == 1 else (samples[:4] if rank == 0 else samples[4:])
        initial = {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}
        metrics = trainer.update(PreparedUpdate(share))
        if trainer.dist.is_main:
            state = {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}
            torch.save({"initial": initial, "params": state, "metrics": metrics, "world": world}, out / "params.pt")
    finally:
        trainer.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
