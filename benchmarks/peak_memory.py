"""Peak memory of a default CPU run: ``seedbench run`` with the default config, in a child process.

    python benchmarks/peak_memory.py [--quick] [--dtype auto|fp32|bf16] [--bf16-compute auto|autocast|param_copy]
                                     [--python PY] [--out benchmarks/results/peak_memory.json]
                                     [-- extra seedbench run arguments]

The peak resident set size of the run's whole process tree is sampled every 0.1 s (psutil) and also
read from the kernel's ``ru_maxrss`` of the child (the largest single process). ``--quick`` shortens
the run (1 iteration, 1 eval task per split, 1 step per episode) without changing the model, dtype,
response length or micro-batch that set the peak: the largest allocation is one micro-batch's logits
in the update (8 samples × sequence × vocabulary), and 8 episodes × 1 step fill exactly one; the
overrides used are recorded. ``--python`` runs the
training under another interpreter (e.g. the vLLM virtual environment, with ``-- --engine vllm``).

``--dtype`` and ``--bf16-compute`` pin ``model.dtype`` and ``model.bf16_compute`` (default ``auto`` for both, a
default run's values; they override a ``--config`` recipe's, and a ``--set`` after ``--`` overrides them); the
bf16 compute copy adds a bf16 copy of the model to the peak. The run's own precision, from its summary.json
(written before its first iteration), is printed as soon as the run has written it, as
`benchmarks/update_speed.py` prints it, and kept in the JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, add_bf16_compute, announce_run_precision  # noqa: E402

QUICK = ["--iterations", "1", "--set", "eval.num_tasks=1", "rollout.max_steps=1"]


def tree_rss(process) -> int:
    import psutil

    total = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--dtype", default="auto", choices=DTYPES,
                        help="model.dtype of the run (auto = bf16 on CPUs with AVX-512-BF16/AMX, else fp32); printed")
    add_bf16_compute(parser)
    parser.add_argument("--out", default="benchmarks/results/peak_memory.json")
    args = parser.parse_args(argv)

    import psutil

    with tempfile.TemporaryDirectory(prefix="seedbench-peak-") as tmp:
        run = Path(tmp) / "run"
        command = [args.python, "-m", "seedbench", "run", "--output", str(run),
                   "--set", f"model.dtype={args.dtype}", f"model.bf16_compute={args.bf16_compute}",
                   *(QUICK if args.quick else []), *extra]  # later --set values win
        print("peak_memory:", " ".join(command), flush=True)
        t0 = time.perf_counter()
        child = subprocess.Popen(command)
        process = psutil.Process(child.pid)
        peak, ran = 0, None
        while child.poll() is None:
            try:
                peak = max(peak, tree_rss(process))
            except psutil.Error:
                pass
            ran = announce_run_precision(run, ran)
            time.sleep(0.1)
        ran = announce_run_precision(run, ran)  # a run shorter than one poll
        wall = time.perf_counter() - t0
        maxrss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        metrics = Path(tmp, "run", "metrics.jsonl")
        iterations = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    record = {
        "benchmark": "peak_memory", "command": " ".join(["benchmarks/peak_memory.py", *sys.argv[1:]]),
        "run_command": " ".join(command[1:]), "returncode": child.returncode, "wall_s": wall,
        **(ran or {"dtype": None, "bf16_compute": None, "precision": None}),
        "peak_rss_tree_gib": peak / 2**30, "max_rss_single_process_gib": maxrss_kib / 2**20,
        "iterations": len(iterations),
        "iteration_s": [r.get("time/iteration_s") for r in iterations],
        "machine": {"cpus": psutil.cpu_count(), "memory_gib": psutil.virtual_memory().total / 2**30,
                    "platform": platform.platform()},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"peak_memory: peak RSS {record['peak_rss_tree_gib']:.2f} GiB (process tree), "
          f"{record['max_rss_single_process_gib']:.2f} GiB (largest process), wall {wall:.0f} s, "
          f"exit {child.returncode}; wrote {out}")
    return 0 if child.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
