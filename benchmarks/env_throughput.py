"""Env throughput: ALFWorld resets and steps per second in this process vs in N worker processes.

    python benchmarks/env_throughput.py [--envs 16] [--steps 10] [--workers 0,1,2]
                                        [--split train] [--out benchmarks/results/env_throughput.json]

One ALFWorld reset costs up to a few seconds (TextWorld compiles the game) and a step tens of
milliseconds, so a 16×8 batch must not step serially. This plays the same `--envs` games (seeds
0..envs-1 of `--split`) with random admissible actions (seeded, identical for every setting) under
each setting: ``0`` = `LocalEnvs`, all envs stepped one after another in this process; ``k ≥ 1`` =
`EnvPool` with k worker processes, each call fanned out across the workers. Time to start the workers
is reported apart. Ratios are against the in-process setting, measured in this one run.

On a machine with c free cores the pool can be at most ~c× faster than in-process; the figure to read
is how close it gets.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path


def play(envs, num_envs: int, steps: int, split: str) -> dict:
    """Reset every env, then `steps` rounds of one random admissible action per live env."""
    t0 = time.perf_counter()
    requests = [(i, i, {"split": split}) for i in range(num_envs)]
    results = envs.reset_many(requests)
    reset_s = time.perf_counter() - t0
    rng = random.Random(0)
    admissible = [info["admissible_actions"] for _, info in results]
    live = list(range(num_envs))
    step_count, t0 = 0, time.perf_counter()
    for _ in range(steps):
        if not live:
            break
        actions = [(i, f"<action>{rng.choice(admissible[i])}</action>") for i in live]
        outcomes = envs.step_many(actions)
        still = []
        for (i, _), outcome in zip(actions, outcomes):
            if outcome is None:
                continue
            step_count += 1
            _, _, terminated, truncated, info = outcome
            admissible[i] = info["admissible_actions"]
            if not (terminated or truncated):
                still.append(i)
        live = still
    step_s = time.perf_counter() - t0
    return {"reset_s": reset_s, "resets_per_s": num_envs / reset_s, "steps": step_count, "step_s": step_s,
            "steps_per_s": step_count / step_s if step_s else 0.0}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--workers", default="0,1,2", help="comma list; 0 = in-process")
    parser.add_argument("--split", default="train")
    parser.add_argument("--out", default="benchmarks/results/env_throughput.json")
    args = parser.parse_args(argv)

    from seedbench.envs.pool import EnvPool
    from seedbench.envs.processes import available_cpus
    from seedbench.registry import make_env
    from seedbench.envs.batch import LocalEnvs

    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        t0 = time.perf_counter()
        if workers == 0:
            envs = LocalEnvs(lambda: make_env("alfworld"), args.envs)
        else:
            envs = EnvPool(("alfworld", {}), num_envs=args.envs, num_workers=workers)
        start_s = time.perf_counter() - t0
        try:
            row = {"workers": workers, "start_s": start_s, **play(envs, args.envs, args.steps, args.split)}
        finally:
            envs.close()
        rows.append(row)
        print(f"workers={workers:>2} start {start_s:6.1f} s  reset {row['resets_per_s']:6.2f}/s  "
              f"step {row['steps_per_s']:7.1f}/s  ({row['steps']} steps)", flush=True)
    base = next((r for r in rows if r["workers"] == 0), rows[0])
    for row in rows:
        row["reset_speedup"] = row["resets_per_s"] / base["resets_per_s"]
        row["step_speedup"] = row["steps_per_s"] / base["steps_per_s"] if base["steps_per_s"] else None
        print(f"workers={row['workers']:>2}: resets ×{row['reset_speedup']:.2f}, steps ×{row['step_speedup']:.2f} "
              f"vs in-process")
    record = {"envs": args.envs, "steps": args.steps, "split": args.split, "cpus": available_cpus(), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
