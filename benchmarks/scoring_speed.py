"""Scoring benchmark: projecting only the response columns onto the vocabulary vs every column.

    python benchmarks/scoring_speed.py [--model smollm2-135m] [--dtype auto|fp32|bf16] [--samples 8] [--response-tokens 32]
                                       [--repeats 3] [--out benchmarks/results/scoring_speed.json]

The trainer scores (prompt, response) pairs several times per update: old log-probs, reference
log-probs, SEED's re-scoring, and the forward + backward of the loss. Only response tokens are scored,
so `seedbench.models.scoring` lays batches out with every response starting in the same column and asks the
model for the last ``L + 1`` columns of logits (``logits_to_keep``). The alternative, and what a plain
``model(...).logits`` does, projects every prompt column onto the 49k-token vocabulary too. This times
both, alternately, on the same real Sokoban agent prompts, for a no-grad forward and for forward +
backward, and reports the ratio and the logits' memory. The passes run under the policy's autocast (over the
fp32 weights, never the bf16 compute copy); the first line printed says so, as `benchmarks/update_speed.py`
prints it, and the JSON keeps the same.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, precision, print_precision  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--response-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", default="fp32", choices=DTYPES,
                        help="compute dtype of the forwards (autocast over fp32 weights, as model.bf16_compute=autocast); printed")
    parser.add_argument("--out", default="benchmarks/results/scoring_speed.json")
    args = parser.parse_args(argv)

    import torch

    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy
    from seedbench.rollout.prompting import build_user_content, render_prompt
    from seedbench.registry import make_env
    from seedbench.models.scoring import pad_batch

    policy = load_policy(ModelConfig(name=args.model, dtype=args.dtype), need_reference=False, seed=0)
    ran = print_precision(precision(policy.compute_dtype, "autocast"))  # `run` below: `policy.autocast()`
    model, tok = policy.model, policy.tokenizer
    env = make_env("sokoban")
    prompts = []
    for seed in range(args.samples):
        obs, info = env.reset(seed=seed)
        content = build_user_content(task=info["task"], observation=obs, step=0, history=[], history_length=2,
                                     admissible_actions=info.get("admissible_actions"), instruction=env.instruction)
        prompts.append(render_prompt(tok, content))
    generator = torch.Generator().manual_seed(0)
    responses = [torch.randint(0, len(tok), (args.response_tokens,), generator=generator).tolist() for _ in prompts]
    input_ids, attention, positions, targets, _ = pad_batch(prompts, responses, tok.pad_token_id)
    width = targets.shape[1]

    def run(keep: int, backward: bool) -> float:
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        with torch.set_grad_enabled(backward), policy.autocast():
            logits = model(input_ids=input_ids, attention_mask=attention, position_ids=positions,
                           logits_to_keep=keep).logits[:, -(width + 1) : -1].float()
            logp = torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).sum()
            if backward:
                logp.backward()
        return time.perf_counter() - t0

    variants = {"all_columns": 0, "response_columns": width + 1}
    times = {(name, mode): [] for name in variants for mode in ("forward", "forward_backward")}
    for _ in range(args.repeats):
        for mode in ("forward", "forward_backward"):
            for name, keep in variants.items():
                times[(name, mode)].append(run(keep, mode == "forward_backward"))
    vocab = model.config.vocab_size
    record = {"model": args.model, **ran, "samples": args.samples, "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
              "response_tokens": args.response_tokens, "repeats": args.repeats, "threads": torch.get_num_threads(),
              "logits_mib": {"all_columns": input_ids.numel() * vocab * 4 / 2**20,
                             "response_columns": input_ids.shape[0] * (width + 1) * vocab * 4 / 2**20}}
    for mode in ("forward", "forward_backward"):
        best = {name: min(times[(name, mode)]) for name in variants}
        record[mode] = {**{f"{name}_s": value for name, value in best.items()},
                        "speedup": best["all_columns"] / best["response_columns"]}
        print(f"{mode:>16}: all columns {best['all_columns']:.2f} s, response columns "
              f"{best['response_columns']:.2f} s -> x{record[mode]['speedup']:.2f}")
    print(f"logits memory: {record['logits_mib']['all_columns']:.0f} MiB -> {record['logits_mib']['response_columns']:.0f} MiB")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
