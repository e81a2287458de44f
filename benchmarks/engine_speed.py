"""Engine benchmark: tokens/s of vLLM vs HF generate on the same model, prompts and sampling settings.

    python benchmarks/engine_speed.py [--model smollm2-135m] [--dtype auto|fp32|bf16] [--batch 16] [--max-new-tokens 64]
                                      [--repeats 3] [--engines hf,vllm] [--out benchmarks/results/engine_speed.json]

Prompts are real per-step agent prompts (Sokoban observations through seedbench's prompt builder),
one per env seed. Sampling is the training setting (temperature 1, top-p 1, stop at ``</action>``).
Both engines run in this process, timed alternately (hf, vllm, hf, vllm, ...) so that load from other
processes hits both alike; the ratio is computed from this one run. Also measured: vLLM start-up, an
in-place weight sync, greedy agreement between the engines, and each engine's log-prob gap to the
trainer's recomputation (`seedbench.training.logprob_check`). Run it where vLLM is importable (docs/engines.md);
without vLLM it measures HF alone. The first line printed is the dtype both engines generate in (``--dtype``) and,
in bf16, how the trainer's recomputation runs (autocast over the fp32 weights), as `benchmarks/update_speed.py`
prints it; the JSON keeps the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, precision, print_precision  # noqa: E402


def agent_prompts(tokenizer, count: int, seed: int = 0) -> list[list[int]]:
    from seedbench.rollout.prompting import build_user_content, render_prompt
    from seedbench.registry import make_env

    env = make_env("sokoban")
    prompts = []
    for index in range(count):
        obs, info = env.reset(seed=seed + index, options={"split": env.splits[0]})
        content = build_user_content(task=info.get("task", ""), observation=obs, step=0, history=[],
                                     history_length=env.history_length, instruction=env.instruction)
        prompts.append(render_prompt(tokenizer, content))
    return prompts


def timed(engine, prompts, params) -> tuple[float, list]:
    t0 = time.perf_counter()
    generations = engine.generate(prompts, params)
    return time.perf_counter() - t0, generations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--dtype", default="auto", choices=DTYPES,
                        help="compute dtype of both engines (auto = bf16 on GPUs and on CPUs with AVX-512-BF16/AMX, "
                             "else fp32); printed")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engines", default="hf,vllm")
    parser.add_argument("--greedy-prompts", type=int, default=4, help="prompts compared greedily across engines")
    parser.add_argument("--out", default="benchmarks/results/engine_speed.json")
    args = parser.parse_args(argv)

    import torch

    from seedbench.config import ModelConfig
    from seedbench.engines.factory import vllm_importable
    from seedbench.engines.base import SamplingParams
    from seedbench.engines.hf import HFEngine
    from seedbench.training.logprob_check import compare_logprobs, recompute_logprobs
    from seedbench.models.policy import load_policy

    names = [n for n in args.engines.split(",") if n]
    if "vllm" in names and not vllm_importable():
        print("engine_speed: vLLM is not importable here; measuring hf only (see docs/engines.md)", file=sys.stderr)
        names = [n for n in names if n != "vllm"]
    policy = load_policy(ModelConfig(name=args.model, dtype=args.dtype, device=args.device), need_reference=False)
    ran = print_precision(precision(policy.compute_dtype, "autocast"))  # the recomputation: `policy.autocast()`
    tok = policy.tokenizer
    prompts = agent_prompts(tok, args.batch)
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, top_p=1.0)
    greedy = SamplingParams(max_new_tokens=args.max_new_tokens, greedy=True)
    record: dict = {
        "benchmark": "engine_speed", "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "model": args.model, **ran, "device": str(policy.device),
        "batch": args.batch, "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
        "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
        "sampling": {"temperature": 1.0, "top_p": 1.0, "stop": params.stop},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "gpu": torch.cuda.get_device_name(0)
                    if torch.cuda.is_available() else None},
        "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__},
        "engines": {},
    }
    engines: dict = {}
    hf = HFEngine(policy.model, tok, policy.device, batch_size=args.batch, dtype=policy.compute_dtype)
    engines["hf"] = hf
    timed(hf, prompts[:2], SamplingParams(max_new_tokens=4))  # warm-up
    few = prompts[: args.greedy_prompts]
    greedy_out = {"hf": [g.token_ids for g in hf.generate(few, greedy)]}

    if "vllm" in names:
        import vllm

        from seedbench.engines.vllm import VLLMEngine

        t0 = time.perf_counter()
        engine = VLLMEngine(policy.model, tok, device=policy.device, dtype=policy.compute_dtype, seed=0)
        startup = time.perf_counter() - t0
        timed(engine, prompts[:2], SamplingParams(max_new_tokens=4))
        syncs = []
        for _ in range(3):
            t0 = time.perf_counter()
            engine.sync_weights()
            syncs.append(time.perf_counter() - t0)
        engines["vllm"] = engine
        greedy_out["vllm"] = [g.token_ids for g in engine.generate(few, greedy)]
        record["versions"]["vllm"] = vllm.__version__
        record["vllm_startup_s"] = startup
        record["vllm_sync_weights_s"] = sum(syncs) / len(syncs)
        same = sum(a == b for a, b in zip(greedy_out["hf"], greedy_out["vllm"]))
        record["greedy_identical_fraction"] = same / len(few)
        record["greedy_prompts"] = len(few)

    totals = {name: [0.0, 0] for name in engines}
    last: dict = {}
    for _ in range(args.repeats):
        for name, engine in engines.items():
            seconds, generations = timed(engine, prompts, params)
            totals[name][0] += seconds
            totals[name][1] += sum(len(g.token_ids) for g in generations)
            last[name] = generations
    for name, (seconds, tokens) in totals.items():
        # The trainer's recomputation (its autocast dtype) of the last timed batch's sampled tokens.
        kept = [g for g in last[name] if g.token_ids]
        recomputed = recompute_logprobs(policy.model, [p for p, g in zip(prompts, last[name]) if g.token_ids],
                                        [g.token_ids for g in kept], tok.pad_token_id, policy.device,
                                        autocast=policy.autocast())
        check = compare_logprobs([g.logprobs for g in kept], recomputed)
        record["engines"][name] = {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds,
                                   "logprob_abs_diff": check.mean_abs_diff, "logprob_abs_diff_max": check.max_abs_diff,
                                   "logprob_flagged": check.flagged}
        print(f"{name:>5}: {tokens / seconds:8.1f} tokens/s ({tokens} tokens in {seconds:.1f} s); "
              f"log-prob |Δ| vs trainer {check.mean_abs_diff:.2e} (max {check.max_abs_diff:.2e})", flush=True)
    if "vllm" in engines:
        ratio = record["engines"]["vllm"]["tokens_per_s"] / record["engines"]["hf"]["tokens_per_s"]
        record["ratio_vllm_over_hf_tokens_per_s"] = ratio
        print(f"ratio vllm/hf tokens/s: {ratio:.2f}x   vLLM start-up {record['vllm_startup_s']:.1f} s, "
              f"weight sync {record['vllm_sync_weights_s']:.3f} s, greedy identical "
              f"{record['greedy_identical_fraction']:.0%} of {len(few)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"engine_speed: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
