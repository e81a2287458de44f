"""The README quick start's iteration, before and after the speed work, alone and beside one busy process.

    python benchmarks/quickstart_speed.py [--variants plain optimised busy-default busy-passive] [--iterations 1]
                                          [--dtype auto|fp32|bf16] [--bf16-compute auto|autocast|param_copy]
                                          [--out benchmarks/results/quickstart_speed.json]

Each variant is one ``seedbench run --agent seed --env sokoban --config configs/quickstart_cpu.yaml``
in its own process (OpenMP reads its wait policy when torch loads), with the same seed:

* ``plain``: the paths before issue 21 — ``optim.old_logprobs=score``, ``optim.packing=off``,
  ``optim.log_prob_micro_batch_size`` empty, ``hf.kv_cache=dynamic``, ``hf.share_prompt_prefill=false``, ``hf.prefill=padded`` — and ``OMP_WAIT_POLICY=PASSIVE``;
* ``optimised``: the quick start as shipped (first-forward π_old, shared-prefix packing, static KV cache,
  shared and per-prompt prefill, PASSIVE);
* ``busy-default`` / ``busy-passive``: ``optimised`` beside one process spinning on a core
  (``while True: pass``, started before the run and killed after it), with the OpenMP runtime's own wait
  policy (``SEEDBENCH_OMP_WAIT_POLICY=default``, the behaviour before `seedbench.threads`) and with PASSIVE.

Printed and written: seconds per iteration and its parts (``time/…`` in ``metrics.jsonl``), the whole
command's wall time, and the ratios plain ÷ optimised and busy-default ÷ busy-passive. The sampled
rollouts may differ between variants (another cache layout can flip a near-tie of the sampler), so the
step-sample counts are printed with the times. The load average is printed: on a shared machine only
ratios of variants run back to back mean anything.

Every variant runs with ``model.dtype`` and ``model.bf16_compute`` pinned (``--dtype``, ``--bf16-compute``; a
``--set`` wins). The precision the first run computes in, read from its summary.json as soon as it is written
(before its first iteration), is printed as `benchmarks/update_speed.py` prints it; the JSON keeps every
variant's.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, add_bf16_compute, announce_run_precision, run_precision  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ["optim.old_logprobs=score", "optim.packing=off", "optim.log_prob_micro_batch_size=null", "hf.kv_cache=dynamic",
         "hf.share_prompt_prefill=false", "hf.prefill=padded"]
VARIANTS = {  # name: (extra --set values, SEEDBENCH_OMP_WAIT_POLICY, busy neighbour)
    "plain": (PLAIN, "passive", False),
    "optimised": ([], "passive", False),
    "busy-default": ([], "default", True),
    "busy-passive": ([], "passive", True),
}
PARTS = ("time/iteration_s", "time/rollout_s", "time/generation_s", "time/prepare_s", "time/analysis_s", "time/rescore_s",
         "time/update_s")  # analysis and rescore: SEED only


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--agent", default="seed")
    p.add_argument("--env", default="sokoban")
    p.add_argument("--config", default=str(ROOT / "configs" / "quickstart_cpu.yaml"), help="'' = no recipe file")
    p.add_argument("--model", default=None, help="default: the config's (the embedded SmolLM2-135M)")
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="model.dtype of every variant (auto = bf16 on CPUs with AVX-512-BF16/AMX, else fp32); printed")
    add_bf16_compute(p)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="overrides for every variant")
    p.add_argument("--out", default="benchmarks/results/quickstart_speed.json")
    return p.parse_args(argv)


def run_variant(name: str, args, workdir: Path, announce: bool = False) -> dict:
    """One quick-start run in a fresh process; its per-iteration times from metrics.jsonl, and its precision
    (printed as soon as the run has written it, with `announce`)."""
    sets, policy, busy = VARIANTS[name]
    output = workdir / name
    command = [sys.executable, "-m", "seedbench", "run", "--agent", args.agent, "--env", args.env,
               "--iterations", str(args.iterations), "--output", str(output)]
    if args.config:
        command += ["--config", args.config]
    if args.model:
        command += ["--model", args.model]
    command += ["--set", f"model.dtype={args.dtype}", f"model.bf16_compute={args.bf16_compute}", *args.set,
                *sets]  # a --set model.dtype=... comes later, wins
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    env.update(SEEDBENCH_OMP_WAIT_POLICY=policy, SEEDBENCH_PROGRESS="0")
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    load = os.getloadavg()[0]
    start = time.perf_counter()
    ran, proc = None, None
    with (workdir / f"{name}.stderr").open("w+") as stderr:
        try:
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:  # the run's precision, once its summary.json has it
                    ran = announce_run_precision(output, ran) if announce else None
        finally:
            for process in (proc, neighbour):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
        wall = time.perf_counter() - start
        stderr.seek(0)
        errors = stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"{name}: seedbench run exited {proc.returncode}:\n{errors[-2000:]}")
    if announce:
        announce_run_precision(output, ran)  # a run shorter than one poll
    records = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines() if line.strip()]
    iterations = [r for r in records if "time/iteration_s" in r]
    return {**(run_precision(output) or {}), "wall_s": wall, "loadavg_before": load, "wait_policy": policy,
            "busy_neighbour": busy, "sets": sets,
            "iterations": [{part: r.get(part) for part in PARTS} | {"samples": r.get("train/samples")}
                           for r in iterations]}


def mean_iteration(result: dict) -> float:
    values = [it["time/iteration_s"] for it in result["iterations"]]
    return sum(values) / len(values)


def ratios(results: dict) -> dict:
    out = {}
    for slow, fast, label in (("plain", "optimised", "plain_over_optimised"),
                              ("busy-default", "busy-passive", "busy_default_over_busy_passive"),
                              ("busy-passive", "optimised", "busy_passive_over_alone"),
                              ("busy-default", "optimised", "busy_default_over_alone")):
        if slow in results and fast in results:
            out[label] = mean_iteration(results[slow]) / mean_iteration(results[fast])
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="quickstart_speed_") as tmp:
        for name in args.variants:
            print(f"== {name} (load average {os.getloadavg()[0]:.2f})", flush=True)
            results[name] = run_variant(name, args, Path(tmp), announce=not results)
            r = results[name]
            for index, it in enumerate(r["iterations"], 1):
                parts = "  ".join(f"{p.split('/')[1]} {it[p]:.1f}" for p in PARTS if it[p] is not None)
                print(f"   iteration {index}: {parts}  (step samples {it['samples']})")
            print(f"   whole command {r['wall_s']:.1f} s", flush=True)
    first = next(iter(results.values()))  # every variant runs the same model.dtype and model.bf16_compute
    summary = {**{key: first.get(key) for key in ("dtype", "bf16_compute", "precision")}, "variants": results,
               "ratios": ratios(results), "loadavg_after": os.getloadavg()}
    for label, value in summary["ratios"].items():
        print(f"{label}: x{value:.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
