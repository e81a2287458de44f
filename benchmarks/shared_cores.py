"""A training forward/backward alone and next to one busy process, per OpenMP wait policy and thread count.

    python benchmarks/shared_cores.py [--tokens 256] [--batch 2] [--passes 2] [--repeats 1]
                                      [--out benchmarks/results/shared_cores.json]

OpenMP reads ``OMP_WAIT_POLICY`` and ``OMP_NUM_THREADS`` once, when torch loads, so every measurement is
a fresh child process started with its variables (``--child``); it builds a model in SmolLM2-135M's
shapes from a config (random weights, fp32), runs one untimed forward/backward, then ``--passes`` timed
ones of ``--batch`` × ``--tokens`` tokens and prints the median. The busy process is one Python loop
spinning on one core (``while True: pass``), started before the child and killed after it: the situation
of a run beside CI, an env worker or another run. Variants, interleaved (each alone, then busy):

* ``default``: the OpenMP runtime's own policy (idle threads spin a while before sleeping), torch's
  thread count;
* ``passive``: ``OMP_WAIT_POLICY=PASSIVE`` (what ``seedbench`` sets, `seedbench.threads`);
* ``passive-1t``: PASSIVE and one thread (a core left to the other process).

Printed: seconds per pass, slowdown busy / alone per variant, and each variant alone / default alone
(PASSIVE's idle cost), with the load average (the machine may be shared with other jobs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = {"default": {}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
            "passive-1t": {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}}
SMOLLM2_135M = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                    tie_word_embeddings=True, rms_norm_eps=1e-5, rope_theta=10000.0)


def child(tokens: int, batch: int, passes: int) -> None:
    """One measurement: median seconds of a forward/backward (runs in its own process)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M))
    ids = torch.randint(0, SMOLLM2_135M["vocab_size"], (batch, tokens))
    times = []
    for index in range(passes + 1):
        t0 = time.perf_counter()
        logits = model(input_ids=ids, logits_to_keep=33).logits[:, :-1]  # the last 32 tokens, as the trainer scores
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, -32:].reshape(-1))
        loss.backward()
        model.zero_grad(set_to_none=True)
        if index:  # the first pass is the warm-up
            times.append(time.perf_counter() - t0)
    print("RESULT" + json.dumps({"seconds": statistics.median(times), "threads": torch.get_num_threads()}))


def measure(variant: str, busy: bool, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    env.update(VARIANTS[variant])
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        out = subprocess.run([sys.executable, __file__, "--child", "--tokens", str(args.tokens), "--batch",
                              str(args.batch), "--passes", str(args.passes)], env=env, capture_output=True,
                             text=True, timeout=1800)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(f"shared_cores child failed: {out.stderr[-1000:]}")
    return json.loads(line[len("RESULT"):]) | {"load_average": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="benchmarks/results/shared_cores.json")
    args = parser.parse_args(argv)
    if args.child:
        child(args.tokens, args.batch, args.passes)
        return 0

    load_before = os.getloadavg()
    runs: dict = {(v, b): [] for v in VARIANTS for b in (False, True)}
    for _ in range(args.repeats):
        for variant in VARIANTS:
            for busy in (False, True):
                result = measure(variant, busy, args)
                runs[(variant, busy)].append(result)
                print(f"{variant:>11} {'busy' if busy else 'alone':>5}: {result['seconds']:.2f} s per pass "
                      f"({result['threads']} threads, load average {result['load_average']:.2f})", flush=True)
    median = {key: statistics.median(r["seconds"] for r in rows) for key, rows in runs.items()}
    record: dict = {"benchmark": "shared_cores", "tokens": args.tokens, "batch": args.batch, "passes": args.passes,
                    "repeats": args.repeats, "cpus": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg(), "variants": {}}
    print(f"{'variant':>11} {'alone s':>8} {'busy s':>8} {'busy/alone':>10} {'alone/default':>13}")
    for variant in VARIANTS:
        alone, busy = median[(variant, False)], median[(variant, True)]
        row = {"alone_s": alone, "busy_s": busy, "slowdown_busy": busy / alone,
               "alone_over_default_alone": alone / median[("default", False)],
               "busy_over_default_busy": busy / median[("default", True)],
               "runs": {"alone": runs[(variant, False)], "busy": runs[(variant, True)]}}
        record["variants"][variant] = row
        print(f"{variant:>11} {alone:>8.2f} {busy:>8.2f} {row['slowdown_busy']:>9.2f}x {row['alone_over_default_alone']:>12.2f}x")
    print(f"load average before {load_before[0]:.2f}, after {record['load_average_after'][0]:.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"shared_cores: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
