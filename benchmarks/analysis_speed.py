"""SEED's self-analysis generation: the padded prefill vs each prompt prefilled alone (``hf.prefill``).

    python benchmarks/analysis_speed.py [--model smollm2-135m] [--batch PATH] [--repeats 2]
                                        [--out benchmarks/results/analysis_speed.json]

The analysis is one greedy generation per finished trajectory, whose prompt holds the whole episode
(~1,900 tokens for a 15-step Sokoban episode), so its prefill is long and differs between rows. The
padded prefill runs every row at the batch's width under a mask (and, with the static KV cache, over the
cache's empty slots too); ``per_prompt`` runs each prompt alone with causal attention over its own tokens.
Both variants analyse the same recorded trajectories (`--batch`, recorded from `--config` when missing,
as `benchmarks/update_speed.py` does) with the same weights, interleaved; the answers must be equal. Each
round also times the prefill alone, as the analysis's `generate` call runs it (the KV cache sized for the
prompts plus the analysis's new tokens), so that the decode's share, which the switch does not touch, can
be read off. The first line printed is the dtype the engine generated in (``--dtype``), also in the JSON.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from update_speed import batch_path, engine_precision, make_trainer, print_precision, record_batch, replay_parser, write_result

VARIANTS = ("padded", "per_prompt")  # hf.prefill


def parse_args(argv=None):
    return replay_parser(__doc__, "timed analyses per variant", 2, "benchmarks/results/analysis_speed.json").parse_args(argv)


def analysis_prompts(seed, engine, trajectories, rewards) -> list:
    """The prompts the agent's analysis hands its engine (one analysis run, its generation skipped)."""
    captured: list = []

    def capture(prompts, params):
        captured.extend(prompts)
        raise StopIteration

    engine.generate = capture  # an instance attribute over the class's method, deleted below
    try:
        seed.agent.analyse(trajectories, rewards, 1)
    except StopIteration:
        pass
    finally:
        del engine.generate
    return captured


def prefill_seconds(engine, prompts: list, max_new_tokens: int) -> float:
    """Seconds to fill the KV cache of the left-padded prompts but their last tokens, the way the engine's
    `generate` call does with its current switch (static or dynamic cache of the call's final length)."""
    import torch

    from seedbench.engines.hf import empty_cache, left_padded, padded_prefill, shared_prefill

    ids, mask = left_padded(prompts, engine.tokenizer.pad_token_id)
    width = ids.shape[1]
    start = time.perf_counter()
    with torch.no_grad():
        if engine.prefill == "per_prompt":
            shared_prefill(engine.model, ids, mask, engine.kv_cache, width + max_new_tokens, per_prompt=True)
        else:  # what `generate` runs: one padded forward
            padded_prefill(engine.model, ids[:, :-1], mask[:, :-1],
                           empty_cache(engine.model, engine.kv_cache, width + max_new_tokens))
    return time.perf_counter() - start


def main(argv=None) -> int:
    args = parse_args(argv)

    seed = make_trainer(args, "seed", Path(tempfile.mkdtemp(prefix="analysis_speed_")))
    engine = seed.agent._analysis_engine or seed.context.engine
    ran = print_precision(engine_precision(engine))  # the analysis generates: no training pass
    recorded = batch_path(args)
    trajectories, rewards = record_batch(seed, recorded)
    prompts = analysis_prompts(seed, engine, trajectories, rewards)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    prefill: dict[str, list[float]] = {name: [] for name in VARIANTS}
    answers: dict[str, list] = {}
    load_before = os.getloadavg()
    for repeat in range(args.repeats):
        for name in list(VARIANTS)[:: -1 if repeat % 2 == 0 else 1]:  # A B B A …
            engine.prefill = name
            prefill[name].append(prefill_seconds(engine, prompts, seed.agent.config.analysis_max_new_tokens))
            start = time.perf_counter()
            _, records = seed.agent.analyse(trajectories, rewards, 1)
            times[name].append(time.perf_counter() - start)
            answers.setdefault(name, [r["raw"] for r in records])
            print(f"  {name:<11} analysis {times[name][-1]:7.1f} s, its prefill alone {prefill[name][-1]:6.1f} s  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    median_prefill = {name: statistics.median(values) for name, values in prefill.items()}
    result = {"model": args.model, **ran, "batch": str(recorded), "trajectories": len(trajectories),
              "max_new_tokens": seed.agent.config.analysis_max_new_tokens, "kv_cache": engine.kv_cache,
              "prompt_tokens": [len(p) for p in prompts], "seconds": times, "median_s": median,
              "speedup": median["padded"] / median["per_prompt"], "prefill_seconds": prefill,
              "prefill_median_s": median_prefill,
              "prefill_speedup": median_prefill["padded"] / median_prefill["per_prompt"],
              "answers_equal": answers["padded"] == answers["per_prompt"],
              "answer_chars": [len(a or "") for a in answers["padded"]],
              "loadavg_before": load_before, "loadavg_after": os.getloadavg()}
    print(f"analysis of {len(trajectories)} trajectories: padded {median['padded']:.1f} s, per_prompt "
          f"{median['per_prompt']:.1f} s, x{result['speedup']:.2f}; answers equal: {result['answers_equal']}")
    print(f"its prefill alone: padded {median_prefill['padded']:.1f} s, per_prompt {median_prefill['per_prompt']:.1f} s, "
          f"x{result['prefill_speedup']:.2f}")
    seed.close()
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
