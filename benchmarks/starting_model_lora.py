"""LoRA against a full fine-tune for the quick start's two starting-model builds (the behaviour-cloning warm
start and SEED's stage 1), on the same examples and the same number of optimizer steps.

    python benchmarks/starting_model_lora.py [--config configs/quickstart.yaml] [--episodes 16]
                                             [--out benchmarks/results/starting_model_lora.json]

Each variant is one ``seedbench run --iterations 0`` of the recipe in its own process with its own empty
cache (``SEEDBENCH_CACHE``), so it converts the embedded model, builds both checkpoints and evaluates the
result once on the held-out maps, and nothing else:

* ``lora``: the recipe as shipped (``model.lora_rank`` and its learning rates);
* ``full``: ``model.lora_rank=0`` with the learning rates a full fine-tune of this model takes
  (``--full-warm-lr``, ``--full-stage1-lr``: the full-fine-tune recipe's, configs/quickstart_frozenlake_seed.yaml).

Printed and written per variant: the wall time of the whole command, each build's SFT seconds and steps
(read from the checkpoints' provenance), the process's peak RSS (``os.wait4``), the size of each cached
checkpoint, and the held-out success and valid-action rate of the stage-1 checkpoint on ``--episodes``
maps. Time both on an otherwise idle machine: the load average is printed before and after.
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
MARKERS = {"warm-start": "seedbench_policy_sft.json", "analyzer-sft": "seedbench_analyzer_sft.json"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=str(ROOT / "configs" / "quickstart.yaml"))
    p.add_argument("--episodes", type=int, default=16, help="held-out maps the stage-1 checkpoint plays")
    p.add_argument("--variants", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    p.add_argument("--full-warm-lr", type=float, default=3e-5)
    p.add_argument("--full-stage1-lr", type=float, default=5e-5)
    p.add_argument("--set", nargs="*", default=[], help="extra run-config overrides for every variant")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "starting_model_lora.json"))
    return p.parse_args(argv)


def variant_sets(name: str, args) -> list[str]:
    if name == "full":
        return ["model.lora_rank=0", f"warm_start.lr={args.full_warm_lr}", f"analyzer_sft.lr={args.full_stage1_lr}"]
    return []


def run_variant(name: str, args, work: Path) -> dict:
    """One variant's command, timed, with its own cache; its figures from the files it wrote."""
    cache, out = work / f"cache-{name}", work / f"run-{name}"
    command = [sys.executable, "-m", "seedbench", "run", "--agent", "seed", "--env", "frozenlake-neighbours",
               "--config", args.config, "--iterations", "0", "--output", str(out), "--set",
               f"eval.num_tasks={args.episodes}", "report=false", *variant_sets(name, args), *args.set]
    env = {**os.environ, "SEEDBENCH_CACHE": str(cache)}
    start = time.perf_counter()
    with open(work / f"{name}.log", "w") as log:
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"variant {name} failed; its log: {work / f'{name}.log'}")
    result = {"variant": name, "sets": variant_sets(name, args), "wall_s": round(wall, 1),
              "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2)}
    for kind, marker in MARKERS.items():
        folder = next((cache / "starting_models").glob(f"{kind}-*"))
        facts = json.loads((folder / "model" / marker).read_text())
        size = sum(f.stat().st_size for f in (folder / "model").rglob("*") if f.is_file())
        result[kind] = {"sft_s": facts.get("train_s"), "sft_steps": facts.get("sft_steps"),
                        "final_loss": facts.get("final_loss"), "checkpoint_gb": round(size / 1e9, 3)}
    result.update(held_out(out))
    return result


def held_out(run: Path) -> dict:
    """Success and valid-action rate of the run's one evaluation (iteration 0), from its episodes."""
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]
    evals = [e for e in episodes if str(e.get("phase", "")).startswith("eval")]
    steps = [s for e in evals for s in e.get("steps", [])]
    valid = [bool(s.get("valid", s.get("action_valid"))) for s in steps]
    return {"held_out_success": round(sum(bool(e.get("won")) for e in evals) / max(1, len(evals)), 3),
            "valid_action_rate": round(sum(valid) / max(1, len(valid)), 3), "eval_episodes": len(evals)}


def main(argv=None) -> int:
    args = parse_args(argv)
    print(f"load average before: {os.getloadavg()}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="seedbench-lora-") as tmp:
        for name in args.variants:
            result = run_variant(name, args, Path(tmp))
            results.append(result)
            print(json.dumps(result), flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    by = {r["variant"]: r for r in results}
    if {"lora", "full"} <= set(by):
        for key in ("wall_s", "peak_rss_gb"):
            print(f"full / lora {key}: {by['full'][key] / by['lora'][key]:.2f}x")
        for kind in MARKERS:
            print(f"full / lora {kind} SFT seconds: {by['full'][kind]['sft_s'] / by['lora'][kind]['sft_s']:.2f}x")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"config": args.config, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
