"""Engine vs trainer log-prob agreement per precision, with and without the mismatch correction.

    python benchmarks/logprob_agreement.py [--precisions fp32 bf16-autocast bf16-param-copy]
                                           [--corrections off token] [--iterations 1] [--model PATH]
                                           [--out benchmarks/results/logprob_agreement.json]

Each cell is one ``seedbench run --agent grpo --env frozenlake-neighbours --config
configs/quickstart_frozenlake.yaml`` in its own process, same seed, with ``model.dtype`` and
``model.bf16_compute`` pinned (``fp32``; ``bf16`` with autocast over fp32 weights; ``bf16`` with the bf16 compute
copy) and ``optim.rollout_is`` set (``off``: the reference, no correction; ``token``: truncated importance
sampling). The engine always samples from its own copy in the run's dtype; the trainer recomputes the sampled
tokens' log-probs (π_old) in its own layout (packed, autocast or the copy).

Printed per cell and iteration, from ``metrics.jsonl``: the gap ``rollout/logprob_abs_diff`` (mean and max
|engine − trainer| in nats per token), and with the correction the importance ratio before the cap, the
share of tokens capped, and the PPO loss, clipped share and gradient norm the update saw. The correction does not change the
rollout (it acts in the loss), so ``off`` and ``token`` of one precision must print the same gap: the script
says when they do not. The held-out evaluation is cut to one task (it runs before and after any run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRECISIONS = {  # name: --set values
    "fp32": ["model.dtype=fp32"],
    "bf16-autocast": ["model.dtype=bf16", "model.bf16_compute=autocast"],
    "bf16-param-copy": ["model.dtype=bf16", "model.bf16_compute=param_copy"],
}
CORRECTIONS = ("off", "token", "sequence")
METRICS = ("rollout/logprob_abs_diff", "rollout/logprob_abs_diff_max", "rollout/logprob_mismatch",
           "train/rollout_is_ratio", "train/rollout_is_capped", "train/rollout_is_log_ratio_abs",
           "train/pg_loss", "train/clip_frac", "train/grad_norm", "train/samples", "time/update_s")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=list(PRECISIONS))
    p.add_argument("--corrections", nargs="+", default=["off", "token"], choices=CORRECTIONS)
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--model", default=None,
                   help="start every cell from this checkpoint (no warm start of its own); default: the recipe's "
                        "warm start, built per precision (fp32 and bf16 runs cache different ones)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides for every cell")
    p.add_argument("--out", default="benchmarks/results/logprob_agreement.json")
    return p.parse_args(argv)


def run_cell(precision: str, correction: str, args, workdir: Path) -> dict:
    """One short quick-start run in a fresh process; the agreement metrics of each of its iterations."""
    output = workdir / f"{precision}-{correction}"
    sets = [*PRECISIONS[precision], f"optim.rollout_is={correction}", "eval.num_tasks=1", *args.set]
    command = [sys.executable, "-m", "seedbench", "run", "--agent", "grpo", "--env", "frozenlake-neighbours",
               "--config", str(ROOT / "configs" / "quickstart_frozenlake.yaml"),
               "--iterations", str(args.iterations), "--output", str(output)]
    if args.model:
        command += ["--model", args.model]
        sets.append("warm_start.demos=0")
    command += ["--set", *sets]
    env = dict(os.environ, SEEDBENCH_PROGRESS="0")
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{precision}/{correction}: seedbench run exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines() if line.strip()]
    iterations = [{name: r.get(name) for name in METRICS} for r in records if "time/iteration_s" in r]
    return {"sets": sets, "loadavg_before": load, "wall_s": time.perf_counter() - start, "iterations": iterations}


def show(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def gaps_agree(results: dict, precision: str) -> bool:
    """The correction acts in the loss only, so every correction of one precision saw the same gap."""
    gaps = {json.dumps([it["rollout/logprob_abs_diff"] for it in cell["iterations"]])
            for key, cell in results.items() if key.startswith(precision + "/")}
    return len(gaps) <= 1


def main(argv=None) -> int:
    args = parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="logprob_agreement_") as tmp:
        for precision in args.precisions:
            for correction in args.corrections:
                key = f"{precision}/{correction}"
                print(f"== {key} (load average {os.getloadavg()[0]:.2f})", flush=True)
                results[key] = run_cell(precision, correction, args, Path(tmp))
                for index, it in enumerate(results[key]["iterations"], 1):
                    print(f"   iteration {index}: " + "  ".join(f"{name.split('/')[1]} {show(it[name])}"
                                                              for name in METRICS), flush=True)
            if not gaps_agree(results, precision):
                print(f"   NOTE: the corrections of {precision} saw different gaps (their rollouts differed)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"cells": results, "loadavg_after": os.getloadavg()}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
