"""Decode ms per step of the HF engine against its memory-bandwidth floor, per KV-cache variant; and the
prefill of a GRPO group with and without sharing identical prompts.

    python benchmarks/decode_floor.py [--model smollm2-135m] [--dtype fp32|bf16] [--batches 1,4,16] [--group 4]
                                      [--new-tokens 16] [--repeats 2] [--context N]
                                      [--out benchmarks/results/decode_floor.json]

A decode step reads every weight once and every row's KV cache once, so its time cannot fall below
``(weight bytes + KV cache bytes) / memory read bandwidth``, both in the engine's dtype (``--dtype``: fp32, the
default, or bf16, the generation copy a bf16 run's engine decodes with); the bandwidth is measured here (a sum
over a 1 GiB fp32 tensor whose pages are already touched, best of 5). Decode ms per step is measured as
the engine runs it (`HFEngine.generate`, temperature 1, no stop string): the time between successive
forward calls of the model after the prefill (a forward pre-hook stamps them), median over all steps of
all rounds, which keeps a load spike from another process out of the figure. The batch is made of
GRPO groups (``--group`` copies of each distinct Sokoban prompt), so the engine's shared prefill keeps
the prefill short; each row still has its own KV cache, so the decode is that of the full batch.
``--context N`` tiles each prompt to its last N tokens, for the context of a SEED analysis (a whole episode:
~1,900 tokens for 15 Sokoban steps).

Variants, interleaved in one run (A, B, C, A, B, C, ...; medians): ``dynamic`` (transformers' default
cache), ``static`` (`HFEngine(kv_cache="static")`), ``static+fused`` (also ``sampler="fused"``), these three
with ``decode_linear="standard"``, and ``static+weight_major`` (``decode_linear="weight_major"``, the CPU
default). The
prefill part times one group's ``generate`` of 1 new token with ``share_prompt_prefill`` off and on.
The load average is printed next to the figures (the machine may be shared; read the ratios). The first line
printed is the dtype the engines decode in, as `benchmarks/update_speed.py` prints it; the JSON keeps the same.
In bf16 ``static+weight_major`` equals ``static``: weight-major decode switches fp32 layers only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import engine_precision, print_precision  # noqa: E402

VARIANTS = {"dynamic": dict(kv_cache="dynamic", decode_linear="standard"),
            "static": dict(kv_cache="static", decode_linear="standard"),
            "static+fused": dict(kv_cache="static", sampler="fused", decode_linear="standard"),
            "static+weight_major": dict(kv_cache="static", decode_linear="weight_major")}


def read_bandwidth_gbs(gib: float = 1.0, repeats: int = 5) -> float:
    """Memory read bandwidth in GB/s: the best of `repeats` sums over a `gib` GiB fp32 tensor."""
    import torch

    data = torch.ones(int(gib * 2**30 // 4), dtype=torch.float32)
    data.sum()  # touch every page first
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - t0)
    return data.numel() * 4 / best / 1e9


def kv_bytes_per_token(config, dtype_bytes: int) -> int:
    """Bytes of keys and values one token keeps in the cache, over all layers."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * heads * head_dim * dtype_bytes


def grouped_prompts(tokenizer, batch: int, group: int) -> list[list[int]]:
    from engine_speed import agent_prompts

    distinct = agent_prompts(tokenizer, max(1, -(-batch // group)))
    return [distinct[i // group] for i in range(batch)]


def tiled(prompt: list[int], tokens: int) -> list[int]:
    """The last `tokens` tokens of `prompt` repeated end to end (`prompt` itself when `tokens` is 0), so a
    long context still ends with the chat template's assistant header."""
    return (prompt * -(-tokens // len(prompt)))[-tokens:] if tokens else prompt


def run(engine, prompts, new_tokens: int) -> tuple[float, list[float]]:
    """Seconds of one `generate` call and the seconds of each of its decode steps: the gaps between
    successive forward calls of the model (a step = forward, sampling, recording, stopping check), the
    prefill left out."""
    from seedbench.engines.base import SamplingParams

    params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, stop=[])
    stamps: list[float] = []
    hook = engine.model.register_forward_pre_hook(lambda module, args: stamps.append(time.perf_counter()))
    try:
        t0 = time.perf_counter()
        engine.generate(prompts, params)
        seconds = time.perf_counter() - t0
    finally:
        hook.remove()
    steps = [b - a for a, b in zip(stamps[1:], stamps[2:])]  # stamps[0] starts the (last-token) prefill
    return seconds, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--batches", default="1,4,16")
    parser.add_argument("--group", type=int, default=4, help="copies of each distinct prompt (a GRPO group)")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--context", type=int, default=0, help="tile each prompt to this many tokens (0: as is)")
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"),
                        help="the engines' weights and KV cache (bf16: a run's bf16 generation copy); printed")
    parser.add_argument("--out", default="benchmarks/results/decode_floor.json")
    args = parser.parse_args(argv)
    from seedbench import threads

    threads.configure()  # as the seedbench command runs (OMP_WAIT_POLICY=PASSIVE unless set), before torch loads
    import torch

    from seedbench.config import ModelConfig
    from seedbench.engines.hf import HFEngine
    from seedbench.models.policy import load_policy

    torch.manual_seed(0)
    policy = load_policy(ModelConfig(name=args.model, dtype=args.dtype), need_reference=False, seed=0)
    tok = policy.tokenizer
    batches = [int(b) for b in args.batches.split(",")]
    first, *rest = VARIANTS.items()  # the first engine makes the generation copy (bf16), the others share it
    engines = {first[0]: HFEngine(policy.model, tok, policy.device, batch_size=max(batches), dtype=policy.compute_dtype,
                                  **first[1])}
    model = engines[first[0]].model
    engines.update({name: HFEngine(model, tok, policy.device, batch_size=max(batches), **kw) for name, kw in rest})
    ran = print_precision(engine_precision(engines[first[0]]))
    bandwidth = read_bandwidth_gbs()
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())  # tied embedding counted once
    per_token = kv_bytes_per_token(model.config, next(model.parameters()).element_size())
    run(engines["static"], grouped_prompts(tok, 1, 1), 2)  # warm-up
    samples: dict = {(b, name): [] for b in batches for name in engines}
    prompt_tokens: dict = {}
    for _ in range(args.repeats):
        for b in batches:
            prompts = [tiled(p, args.context) for p in grouped_prompts(tok, b, args.group)]
            prompt_tokens[b] = sum(map(len, prompts)) / b
            for name, engine in engines.items():
                samples[(b, name)] += [x * 1e3 for x in run(engine, prompts, args.new_tokens)[1]]
    load = os.getloadavg()
    record: dict = {"benchmark": "decode_floor", "model": args.model, "context": args.context, **ran,
                    "device": str(policy.device),
                    "read_bandwidth_gb_s": bandwidth, "weight_bytes": weight_bytes, "kv_bytes_per_token": per_token,
                    "load_average": load, "cpus": os.cpu_count(), "torch": torch.__version__, "batches": {}}
    print(f"read bandwidth {bandwidth:.1f} GB/s; {ran['dtype']} weights {weight_bytes / 1e9:.3f} GB; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'batch':>5} {'floor ms':>9} " + " ".join(f"{name:>14}" for name in engines)
          + "   static/dynamic  fused/static  weight-major/static")
    for b in batches:
        context = prompt_tokens[b] + args.new_tokens / 2
        floor_ms = (weight_bytes + per_token * context * b) / (bandwidth * 1e9) * 1e3
        medians = {name: statistics.median(samples[(b, name)]) if samples[(b, name)] else float("nan") for name in engines}
        row = {"floor_ms": floor_ms, "mean_context_tokens": context, "ms_per_step": medians, "samples": {
            name: samples[(b, name)] for name in engines}, "over_floor": {n: m / floor_ms for n, m in medians.items()},
            "speedup_static_over_dynamic": medians["dynamic"] / medians["static"],
            "speedup_fused_over_static": medians["static"] / medians["static+fused"],
            "speedup_weight_major_over_static": medians["static"] / medians["static+weight_major"]}
        record["batches"][str(b)] = row
        print(f"{b:>5} {floor_ms:>9.1f} " + " ".join(f"{medians[n]:>8.1f} ({medians[n] / floor_ms:.1f}x)" for n in engines)
              + f"   {row['speedup_static_over_dynamic']:>13.2f}x  {row['speedup_fused_over_static']:>11.2f}x"
              + f"  {row['speedup_weight_major_over_static']:>18.2f}x")

    record["prefill"] = prefill_sharing(model, tok, policy.device, args.group, args.repeats)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"decode_floor: wrote {out}")
    return 0


def prefill_sharing(model, tok, device, group: int, repeats: int) -> dict:
    """One group's prefill (generate of 1 token), identical prompts prefilled once vs per member."""
    from seedbench.engines.hf import HFEngine

    prompts = grouped_prompts(tok, group, group)
    engines = {share: HFEngine(model, tok, device, share_prompt_prefill=share) for share in (False, True)}
    times: dict = {False: [], True: []}
    for _ in range(repeats + 1):
        for share, engine in engines.items():
            times[share].append(run(engine, prompts, 1)[0])  # 1 new token: the prefill, and one step
    plain, shared = statistics.median(times[False]), statistics.median(times[True])
    print(f"prefill of a group of {group} ({len(prompts[0])} prompt tokens): {plain:.2f} s per member, "
          f"{shared:.2f} s shared: {plain / shared:.2f}x (load average {os.getloadavg()[0]:.2f})")
    return {"group": group, "prompt_tokens": len(prompts[0]), "seconds_plain": plain, "seconds_shared": shared,
            "speedup": plain / shared, "samples": {"plain": times[False], "shared": times[True]}}


if __name__ == "__main__":
    raise SystemExit(main())
