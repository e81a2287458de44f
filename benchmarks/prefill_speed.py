"""Rollout-shaped generation: the padded prefill vs each prompt prefilled alone (``hf.prefill``).

    python benchmarks/prefill_speed.py [--model smollm2-135m] [--batch PATH] [--repeats 3]
                                       [--out benchmarks/results/prefill_speed.json]

The counterpart of `benchmarks/analysis_speed.py` for the rollout's prompts: each step of a recorded
rollout (`--batch`, recorded from `--config` when missing, as `benchmarks/update_speed.py` does) has its
episodes' prompts generated together, greedy, with the run's ``rollout.max_new_tokens``, once with one
padded prefill and once prompt by prompt, interleaved. The outputs must be equal. This is the measurement
behind ``hf.prefill=auto``'s length threshold. The first line printed is the dtype the engine generated in
(``--dtype``), also in the JSON.
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
    return replay_parser(__doc__, "timed rounds per variant", 3, "benchmarks/results/prefill_speed.json").parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from seedbench.engines.base import SamplingParams

    trainer = make_trainer(args, "grpo", Path(tempfile.mkdtemp(prefix="prefill_speed_")))
    ran = print_precision(engine_precision(trainer.engine))  # generation only
    recorded = batch_path(args)
    trajectories, _ = record_batch(trainer, recorded)
    steps = [[t.steps[k].prompt_ids for t in trajectories if len(t.steps) > k]
             for k in range(max(len(t.steps) for t in trajectories))]
    params = SamplingParams(max_new_tokens=trainer.config.rollout.max_new_tokens, greedy=True, stop=[])
    engine = trainer.engine
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    outputs: dict[str, list] = {}
    load_before = os.getloadavg()
    for repeat in range(args.repeats):
        for name in VARIANTS[:: -1 if repeat % 2 == 0 else 1]:  # A B B A …
            engine.prefill = name
            start = time.perf_counter()
            generated = [[g.token_ids for g in engine.generate(prompts, params)] for prompts in steps]
            times[name].append(time.perf_counter() - start)
            outputs.setdefault(name, generated)
            print(f"  {name:<11} {times[name][-1]:7.1f} s  (load {os.getloadavg()[0]:.1f})", flush=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    result = {"model": args.model, **ran, "batch": str(recorded), "max_new_tokens": params.max_new_tokens,
              "prompt_tokens": [[len(p) for p in prompts] for prompts in steps], "seconds": times,
              "median_s": median, "per_prompt_speedup": median["padded"] / median["per_prompt"],
              "outputs_equal": outputs["padded"] == outputs["per_prompt"],
              "loadavg_before": load_before, "loadavg_after": os.getloadavg()}
    print(f"{len(steps)} steps of {len(steps[0])} prompts: padded {median['padded']:.1f} s, per_prompt "
          f"{median['per_prompt']:.1f} s, x{result['per_prompt_speedup']:.2f}; outputs equal: {result['outputs_equal']}")
    trainer.close()
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
