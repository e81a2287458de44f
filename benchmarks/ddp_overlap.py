"""Gradient reduction during backward (DDP) against one flat all-reduce after it, on 2 ranks.

    python -m torch.distributed.run --standalone --nproc-per-node 2 benchmarks/ddp_overlap.py [--steps 6]

Each rank runs forward and backward of a small Qwen2 model (random weights) on its own batch, then its
gradients are summed over the ranks in one of two ways: torch's `DistributedDataParallel` (bucketed
all-reduces launched while the backward still runs, as ``distributed.strategy: ddp`` does), or the whole
backward first and then one flat fp32 all-reduce of every gradient. Rank 0 prints the median seconds of
each and their ratio (flat / DDP: above 1 = the overlap saves time). On CPU (gloo) the ranks share the
cores, so the overlap gained here is a floor of what NCCL on GPUs gains.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from seedbench.training.distributed import _sum_hook

    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen2Config(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                         num_key_value_heads=2, vocab_size=8192)
    model = Qwen2ForCausalLM(config)
    ddp = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    ddp.register_comm_hook(None, _sum_hook)
    ids = torch.randint(0, 8192, (2, 256), generator=torch.Generator().manual_seed(dist.get_rank()))

    def with_ddp() -> None:
        ddp(input_ids=ids).logits.float().mean().backward()

    def flat_after() -> None:
        model(input_ids=ids).logits.float().mean().backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        dist.all_reduce(flat)

    times: dict[str, list[float]] = {"ddp": [], "flat": []}
    for step in range(args.steps + 1):
        for name, fn in (("ddp", with_ddp), ("flat", flat_after)):
            model.zero_grad(set_to_none=True)
            dist.barrier()
            start = time.perf_counter()
            fn()
            dist.barrier()
            if step:  # the first round warms up
                times[name].append(time.perf_counter() - start)
    if dist.get_rank() == 0:
        ddp_s, flat_s = statistics.median(times["ddp"]), statistics.median(times["flat"])
        params = sum(p.numel() for p in model.parameters())
        print(f"2 ranks (gloo), {params / 1e6:.1f}M parameters, batch 2 x 256 per rank: backward + reduction "
              f"DDP {ddp_s:.3f} s, flat all-reduce after backward {flat_s:.3f} s, ratio flat/DDP {flat_s / ddp_s:.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
