"""The memory plan (`seedbench.training.memory_plan`) against a measured peak of one update.

    python benchmarks/memory_plan_check.py [--device cpu|cuda] [--quick] [--out benchmarks/results/memory_plan_check.json]

For each case (a small Qwen2 model built from a config with random weights, a micro-batch at a prompt and a
response length, with and without gradient checkpointing, in fp32 and through the bf16 compute copy) it runs
what the trainer's update runs (`seedbench.models.scoring.forward_logprobs`, a token-mean loss, backward,
`ComputeCopy.move_grads`, AdamW) twice, so the second update starts with the gradients and AdamW state the
first left, and compares the peak with the plan's update and step phases (no engine, no reference).

The peak is measured in a child process per case: on CUDA ``torch.cuda.max_memory_allocated`` after
``reset_peak_memory_stats``; on CPU the growth of the process's peak resident set (``ru_maxrss``) from just
before the model is built, which also counts the allocator's and oneDNN's own buffers. The error is
(predicted − measured) / measured.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

CASES = [  # (label, HF config, micro-batch, prompt tokens, response tokens)
    ("h512-I2816-L4", dict(hidden_size=512, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=8,
                           num_key_value_heads=2, vocab_size=32000), 4, 512, 128),
    ("h768-I4096-L6", dict(hidden_size=768, intermediate_size=4096, num_hidden_layers=6, num_attention_heads=12,
                           num_key_value_heads=2, vocab_size=32000), 2, 768, 256),
]
GPU_CASES = [  # Qwen2.5-0.5B and 1.5B shapes (config.json), for `--device cuda`
    ("qwen2.5-0.5b", dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                          num_key_value_heads=2, vocab_size=151936), 4, 1024, 256),
    ("qwen2.5-1.5b", dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                          num_key_value_heads=2, vocab_size=151936), 2, 1024, 256),
]


def child(spec: dict) -> dict:
    """One case, measured in this (fresh) process."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from seedbench.models.compute_copy import ComputeCopy
    from seedbench.models.scoring import forward_logprobs

    device = torch.device(spec["device"])
    torch.manual_seed(0)
    cfg = Qwen2Config(**spec["config"], tie_word_embeddings=True, max_position_embeddings=8192)
    cfg._attn_implementation = "sdpa"
    gen = torch.Generator().manual_seed(0)
    vocab, batch = spec["config"]["vocab_size"], spec["batch"]
    prompts = [torch.randint(5, vocab, (spec["prompt"],), generator=gen).tolist() for _ in range(batch)]
    responses = [torch.randint(5, vocab, (spec["response"],), generator=gen).tolist() for _ in range(batch)]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    model = Qwen2ForCausalLM(cfg).to(device=device, dtype=torch.float32)
    if spec["checkpointing"]:
        model.gradient_checkpointing_enable()
    model.train()
    copy = ComputeCopy(model, torch.bfloat16) if spec["bf16"] else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    for _ in range(2):
        optimizer.zero_grad(set_to_none=True)
        if copy is not None:
            copy.refresh()
        logp, _, mask = forward_logprobs(copy.model if copy else model, prompts, responses, 0, device)
        (-(logp * mask).sum() / mask.sum()).backward()
        if copy is not None:
            copy.move_grads()
        optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        measured = torch.cuda.max_memory_allocated() - base
    else:
        measured = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    return {"measured": measured, "params": sum(p.numel() for p in model.parameters())}


def predicted(spec: dict) -> int:
    """The plan's allocated peak of the update and step phases for the case (no engine, no reference)."""
    from seedbench.training.memory_plan import Settings, plan_from_settings, shape_from_hf_config

    shape = shape_from_hf_config({**spec["config"], "tie_word_embeddings": True})
    s = Settings(shape=shape, gpus=1, gpu_memory=1 << 40, element=2 if spec["bf16"] else 4,
                 bf16_compute="param_copy" if spec["bf16"] else "none", fsdp=False, engine="none", vllm_share=0.0,
                 tensor_parallel=1, lora_rank=0, reference=False, checkpointing=spec["checkpointing"],
                 forward_batch=spec["batch"], log_prob_batch=spec["batch"], prompt_tokens=spec["prompt"],
                 response_tokens=spec["response"], generation_batch=1, analysis=None, entropy=False,
                 temperature_scaled=False)
    plan = plan_from_settings(s)
    return max(plan.phase_total(p) for p in ("update (forward + backward)", "optimizer step"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--quick", action="store_true", help="the first case only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    cases = GPU_CASES if args.device == "cuda" else CASES
    rows = []
    for label, config, batch, prompt, response in cases[:1] if args.quick else cases:
        for bf16 in (False, True):
            for checkpointing in (False, True):
                spec = dict(device=args.device, config=config, batch=batch, prompt=prompt, response=response,
                            bf16=bf16, checkpointing=checkpointing)
                out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                     text=True, check=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                guess = predicted(spec)
                row = {"case": label, "precision": "bf16 copy" if bf16 else "fp32", "checkpointing": checkpointing,
                       "batch": batch, "tokens": prompt + response, "params": got["params"],
                       "predicted_mib": guess / 2**20, "measured_mib": got["measured"] / 2**20,
                       "error_pct": 100.0 * (guess - got["measured"]) / got["measured"]}
                rows.append(row)
                print(f"{label:<14} {row['precision']:<9} ckpt={'on ' if checkpointing else 'off'} batch {batch} x "
                      f"{prompt}+{response}: predicted {row['predicted_mib']:8.1f} MiB, measured "
                      f"{row['measured_mib']:8.1f} MiB, error {row['error_pct']:+6.1f} %", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"device": args.device, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
