"""Seconds per RL iteration of GRPO vs SEED vs GiGPO, measured in one process on the same tasks.

    python benchmarks/iteration_speed.py --env sokoban --model smollm2-135m --iterations 2 \
        --output runs/bench_speed [--dtype auto|fp32|bf16] [--bf16-compute auto|autocast|param_copy]
        [--set rollout.max_new_tokens=32 ...]

Every agent gets the same config, seed and therefore the same training tasks; evaluation is skipped
(only `Trainer.iteration` is timed). By default the agents are *interleaved* — iteration 1 of each, then
iteration 2 of each — so a change in machine load hits all of them alike; the ratio to GRPO is the number
that matters. Besides the wall time per iteration the table splits it into rollout (same algorithm for
all agents; differs only through what each policy generates), prepare (SEED: analysis + re-scoring;
GiGPO: anchor grouping) and update, and normalises by generated rollout tokens.

The agents' sampled rollouts still differ (each policy samples its own actions, and an episode that is won
early has fewer steps), so their updates see different numbers of step samples. The column "x grpo (equal
work)" therefore also prices each agent's iteration at GRPO's rollout and GRPO's sample count: GRPO's
rollout time + the agent's prepare time + its update seconds per step sample × GRPO's samples.

Writes ``<output>/iteration_speed.json`` and prints the table and the ratios. The first line printed is the
precision of the agents' passes (``--dtype``, ``--bf16-compute``; as `benchmarks/update_speed.py` prints it,
per agent where ``--agent-set`` made them differ), also in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, add_bf16_compute, policy_precision, print_precision  # noqa: E402

DEFAULT_AGENTS = ("grpo", "seed", "gigpo")
PARTS = ("time/iteration_s", "time/rollout_s", "time/prepare_s", "time/update_s")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="sokoban")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--agents", nargs="+", default=list(DEFAULT_AGENTS))
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=f"runs/bench_speed_{time.strftime('%Y%m%d-%H%M%S')}")
    p.add_argument("--sequential", action="store_true", help="run agents one after another instead of interleaved")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="model.dtype of every agent (auto = bf16 on CPUs with AVX-512-BF16/AMX, else fp32); printed")
    add_bf16_compute(p)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = leave as is)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides for every agent")
    p.add_argument("--agent-set", nargs="*", default=[], metavar="AGENT:KEY=VALUE",
                   help="override for one agent only, e.g. seed:algo.analysis_max_new_tokens=96")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    import numpy as np
    import torch
    import yaml

    from seedbench.config import build_config, set_dotted
    from seedbench.training.trainer import Trainer

    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    overrides: dict = {}
    for pair in args.set:
        key, _, raw = pair.partition("=")
        set_dotted(overrides, key, yaml.safe_load(raw))

    per_agent: dict[str, dict] = {}
    for item in args.agent_set:
        agent, _, pair = item.partition(":")
        key, _, raw = pair.partition("=")
        set_dotted(per_agent.setdefault(agent, {}), key, yaml.safe_load(raw))

    trainers = {}
    for agent in args.agents:
        values = json.loads(json.dumps(overrides))
        for key, value in per_agent.get(agent, {}).items():
            values[key] = {**values.get(key, {}), **value} if isinstance(value, dict) else value
        values.update({"env": args.env, "agent": agent, "seed": args.seed, "iterations": args.iterations,
                       "output": str(out / agent)})
        set_dotted(values, "model.name", args.model)
        for key, value in (("dtype", args.dtype), ("bf16_compute", args.bf16_compute)):
            if key not in values.get("model", {}):  # --set model.dtype=... wins over --dtype, and so on
                set_dotted(values, f"model.{key}", value)
        trainers[agent] = Trainer(build_config(overrides=values))
    precisions = {agent: policy_precision(t.policy) for agent, t in trainers.items()}
    dtypes = {agent: p["dtype"] for agent, p in precisions.items()}
    if len({p["precision"] for p in precisions.values()}) == 1:
        ran = print_precision(next(iter(precisions.values())))
    else:  # --agent-set made them differ: one line, agent by agent
        ran = print_precision({"precision": ", ".join(f"{a} {p['precision']}" for a, p in precisions.items())})

    records: dict[str, list[dict]] = {a: [] for a in args.agents}
    schedule = ([(a, i) for a in args.agents for i in range(1, args.iterations + 1)] if args.sequential else
                [(a, i) for i in range(1, args.iterations + 1) for a in args.agents])
    for agent, iteration in schedule:
        metrics = trainers[agent].iteration(iteration)
        keep = {k: v for k, v in metrics.items() if k.startswith(("time/", "seed/", "gigpo/", "rollout/"))}
        keep["train/samples"] = metrics.get("train/samples", 0)
        records[agent].append({"iteration": iteration, **keep})
    for trainer in trainers.values():
        trainer.close()

    summary = {}
    for agent, rows in records.items():
        mean = {part: float(np.mean([r[part] for r in rows])) for part in PARTS}
        tokens = float(np.mean([r["rollout/response_tokens_mean"] * max(r["rollout/episode_length"], 1e-9) for r in rows]))
        summary[agent] = {**mean, "iterations": rows}
        summary[agent]["rollout_s_per_step_token"] = mean["time/rollout_s"] / max(tokens, 1e-9)
        summary[agent]["samples"] = float(np.mean([r["train/samples"] for r in rows]))
        summary[agent]["update_s_per_sample"] = mean["time/update_s"] / max(summary[agent]["samples"], 1e-9)
    base = summary.get("grpo")
    print(f"\nseconds per iteration ({args.env}, {args.model}, {ran['precision']}, "
          f"{args.iterations} iterations each, "
          f"{'sequential' if args.sequential else 'interleaved'})")
    print(f"{'agent':<10}{'iteration':>11}{'rollout':>10}{'prepare':>10}{'update':>10}{'samples':>9}{'x grpo':>9}"
          f"{'non-rollout x':>15}{'x grpo (equal work)':>21}")
    ratios = {}
    for agent, row in summary.items():
        ratio = row["time/iteration_s"] / base["time/iteration_s"] if base else float("nan")
        own = row["time/prepare_s"] + row["time/update_s"]
        base_own = base["time/prepare_s"] + base["time/update_s"] if base else float("nan")
        equal_work = (base["time/rollout_s"] + row["time/prepare_s"] + row["update_s_per_sample"] * base["samples"]
                      ) / base["time/iteration_s"] if base else float("nan")
        ratios[agent] = {"iteration": ratio, "prepare_plus_update": own / base_own if base else float("nan"),
                         "iteration_at_grpo_work": equal_work}
        print(f"{agent:<10}{row['time/iteration_s']:>11.1f}{row['time/rollout_s']:>10.1f}{row['time/prepare_s']:>10.1f}"
              f"{row['time/update_s']:>10.1f}{row['samples']:>9.0f}{ratio:>9.2f}{ratios[agent]['prepare_plus_update']:>15.2f}"
              f"{equal_work:>21.2f}")
    result = {"env": args.env, "model": args.model, **ran, "precisions": precisions, "dtypes": dtypes,
              "agents": args.agents, "iterations": args.iterations,
              "interleaved": not args.sequential, "overrides": overrides, "agent_overrides": per_agent, "torch_threads": torch.get_num_threads(),
              "summary": summary, "ratios_to_grpo": ratios}
    (out / "iteration_speed.json").write_text(json.dumps(result, indent=2))
    print(f"written: {out / 'iteration_speed.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
