"""Synthetic run directories in the run-directory contract, for testing reports without training.

`write_run` fills a run directory the way the trainer does (config.yaml, metrics.jsonl, eval.jsonl,
skills.jsonl for SEED agents, summary.json) from a made-up learning curve whose eval outcomes are
sampled task by task, so micro and macro averages are consistent with the per-type counts. `main` is a
stand-in for ``seedbench run`` that honours the same command line (``--output``, ``--resume``) and
writes one iteration at a time, which lets the experiment harness be tested for skip/resume behaviour
without torch. Nothing here is used by a real run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from seedbench.jsonio import append_jsonl, read_jsonl
from seedbench.provenance import task_list_hash
from seedbench.registry import resolve_env

# Hypothetical final success rates of the agents a test can name; anything else gets 0.6.
AGENT_SKILL = {"grpo": 0.55, "seed": 0.8, "gigpo": 0.7, "random": 0.1}
SEED_AGENTS = ("seed",)
NO_LEARNING = 0.1  # the success every synthetic run starts from; a run with ``optim.lr=0`` stays there
# Seconds per iteration in each phase (``time/…`` of metrics.jsonl): fixed, so tests can check the compute
# table by hand. SEED's prepare phase holds its analysis and rescoring passes.
PHASE_SECONDS = {"time/rollout_s": 2.0, "time/generation_s": 1.5, "time/env_s": 0.25, "time/prepare_s": 0.1,
                 "time/update_s": 1.0}
SEED_PHASE_SECONDS = {"time/analysis_s": 0.5, "time/rescore_s": 0.25}


def is_seed_agent(agent: str) -> bool:
    """SEED and its ablations (``seed-…``) log skills and ``seed/`` metrics."""
    return agent in SEED_AGENTS or agent.startswith("seed-")


def task_list(split: str, num_tasks: int) -> list[str]:
    return [f"{split}-{i:03d}" for i in range(num_tasks)]


def data_checksum(env: str) -> str:
    """The made-up data checksum of a synthetic run's env (a real run's comes from `TextEnv.provenance`)."""
    return hashlib.sha256(env.encode()).hexdigest()[:16]


class _Simulator:
    """Deterministic made-up learning dynamics of one (agent, seed)."""

    def __init__(self, env: str, agent: str, seed: int, iterations: int, splits: Sequence[str],
                 task_types: Sequence[str], num_tasks: int, trajectories_per_iteration: int,
                 final_success: float | None):
        self.env, self.agent, self.seed = env, agent, seed
        self.iterations = iterations
        self.splits = list(splits)
        self.task_types = list(task_types)
        self.num_tasks = num_tasks
        self.tpi = trajectories_per_iteration
        self.final = AGENT_SKILL.get(agent, 0.6) if final_success is None else final_success
        digest = hashlib.sha256(f"{env}/{agent}/{seed}".encode()).digest()
        self.rng_seed = int.from_bytes(digest[:4], "little")
        self.jitter = np.random.default_rng(self.rng_seed).normal(0, 0.05)

    def p(self, iteration: int, split: str, task_type: str) -> float:
        progress = 1 - math.exp(-3.0 * iteration / max(self.iterations, 1))
        split_penalty = 0.08 * self.splits.index(split)
        type_offset = 0.1 * (self.task_types.index(task_type) - (len(self.task_types) - 1) / 2)
        value = NO_LEARNING + (self.final + self.jitter - NO_LEARNING) * progress - split_penalty + type_offset
        return float(min(max(value, 0.0), 1.0))

    def counters(self, iteration: int) -> dict[str, int]:
        trajectories = iteration * self.tpi
        return {"trajectories": trajectories, "env_steps": int(trajectories * 3.5 + self.seed * iteration),
                "generated_tokens": int(trajectories * 3.5 * 40 + 7 * self.seed * iteration)}

    def metrics(self, iteration: int) -> dict[str, Any]:
        rng = np.random.default_rng([self.rng_seed, iteration])
        success = self.p(iteration, self.splits[0], self.task_types[0]) + rng.normal(0, 0.03)
        record = {"iteration": iteration, **self.counters(iteration), "time_s": 0.5 * iteration,
                  "rollout/success": float(np.clip(success, 0, 1)), "rollout/return": float(np.clip(success, 0, 1)),
                  "train/loss": float(1.0 / (1 + iteration) + rng.normal(0, 0.01))}
        record.update(self.timing())
        if is_seed_agent(self.agent):
            record.update({
                "seed/analysis_success_rate": float(min(1.0, 0.4 + 0.05 * iteration)),
                "seed/gate_mean": float(0.5 + 0.2 * math.exp(-iteration / 5)),
                "seed/gate_frac_above_half": float(0.6 - 0.02 * iteration),
                "seed/teacher_gap_mean": float(0.3 * math.exp(-iteration / 4)),
                "seed/opd_active_ratio": float(min(1.0, 0.4 + 0.05 * iteration)),
                "seed/skill_length": float(40 + iteration),
            })
        return record

    def timing(self) -> dict[str, float]:
        phases = dict(PHASE_SECONDS)
        if is_seed_agent(self.agent):
            phases.update(SEED_PHASE_SECONDS)
            phases["time/prepare_s"] += sum(SEED_PHASE_SECONDS.values())
        phases["time/iteration_s"] = phases["time/rollout_s"] + phases["time/prepare_s"] + phases["time/update_s"]
        return phases

    def evaluation(self, iteration: int, split: str, temperature: float) -> dict[str, Any]:
        rng = np.random.default_rng([self.rng_seed, iteration, 1 + self.splits.index(split)])
        tasks = task_list(split, self.num_tasks)
        wins: dict[str, int] = {t: 0 for t in self.task_types}
        counts: dict[str, int] = {t: 0 for t in self.task_types}
        won = []
        for i, _task in enumerate(tasks):
            # skewed type frequencies (earlier types commoner), so micro and macro averages differ
            task_type = self.task_types[int(len(self.task_types) * (i / len(tasks)) ** 1.5)]
            counts[task_type] += 1
            won.append(bool(rng.random() < self.p(iteration, split, task_type)))
            wins[task_type] += int(won[-1])
        per_type = {t: wins[t] / counts[t] for t in self.task_types if counts[t]}
        return {"iteration": iteration, **self.counters(iteration), "split": split, "num_tasks": len(tasks),
                "task_list_hash": task_list_hash(tasks, data_checksum(self.env)),
                "success_micro": sum(wins.values()) / len(tasks),
                "success_macro": float(np.mean(list(per_type.values()))),
                "per_type": per_type, "per_type_counts": {t: counts[t] for t in per_type},
                "temperature": temperature, "task_ids": list(tasks), "won": won}

    def skills(self, iteration: int) -> list[dict[str, Any]]:
        rng = np.random.default_rng([self.rng_seed, iteration, 99])
        out = []
        for episode in range(4):
            won = bool(rng.random() < self.p(iteration, self.splits[0], self.task_types[0]))
            parsed = bool(rng.random() < 0.8)
            skill = ("Workflow: find the target first, then act on it; confirm before finishing."
                     if won else "Avoid: repeating an action that had no effect; check the goal first.")
            out.append({"iteration": iteration, "episode_id": f"it{iteration}-ep{episode}",
                        "task_id": f"train-{episode:03d}", "won": won, "parsed": parsed,
                        "skill": skill if parsed else "", "summary": f"episode {episode} of iteration {iteration}"})
        return out


def write_run(
    run_dir: str | Path,
    *,
    env: str = "choice",
    agent: str = "grpo",
    seed: int = 0,
    iterations: int = 10,
    model: str = "tiny",
    eval_every: int = 2,
    splits: Sequence[str] = ("test",),
    task_types: Sequence[str] = ("choice",),
    num_tasks: int = 16,
    trajectories_per_iteration: int = 8,
    temperature: float = 0.4,
    final_success: float | None = None,
    stop_after: int | None = None,
    resume: bool = False,
    sleep_s: float = 0.0,
    env_id: str | None = None,
) -> Path:
    """Write (or continue) a synthetic run. ``stop_after=k`` leaves a partial run after iteration k."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    sim = _Simulator(env, agent, seed, iterations, splits, task_types, num_tasks, trajectories_per_iteration,
                     final_success)
    eval_tasks = {s: task_list(s, num_tasks) for s in splits}
    config = {"env": env, "agent": agent, "seed": seed, "iterations": iterations,
              "model": {"name": model}, "rollout": {"tasks_per_batch": trajectories_per_iteration // 2,
                                                    "group_size": 2},
              "algo": {}, "eval": {"split": splits[0], "splits": list(splits), "num_tasks": num_tasks,
                                   "temperature": temperature, "every": eval_every}}
    start = 0
    metrics_path = run_dir / "metrics.jsonl"
    if resume and metrics_path.exists():
        good = list(read_jsonl(metrics_path))
        start = max((r["iteration"] for r in good if "iteration" in r), default=0)
        # drop a torn last line, as the real trainer does on resume
        metrics_path.write_text("".join(json.dumps(r) + "\n" for r in good))
    else:
        (run_dir / "config.yaml").write_text(_yaml(config))
        for name in ("metrics.jsonl", "eval.jsonl", "skills.jsonl", "episodes.jsonl"):
            (run_dir / name).unlink(missing_ok=True)

    def evaluate(it: int) -> None:
        for split in splits:
            append_jsonl(run_dir / "eval.jsonl", sim.evaluation(it, split, temperature))

    if start == 0:
        evaluate(0)
    last = iterations if stop_after is None else min(stop_after, iterations)
    for it in range(start + 1, last + 1):
        if sleep_s:
            time.sleep(sleep_s)
        if is_seed_agent(agent):
            for record in sim.skills(it):
                append_jsonl(run_dir / "skills.jsonl", record)
        append_jsonl(metrics_path, sim.metrics(it))
        if (eval_every and it % eval_every == 0) or it == iterations:
            evaluate(it)
    from seedbench.training.records import before_after_results  # what a real run writes, the same way

    complete = last >= iterations
    final = {}
    evals = list(read_jsonl(run_dir / "eval.jsonl"))
    for record in evals:
        final[f"eval/{record['split']}/success_micro"] = record["success_micro"]
        final[f"eval/{record['split']}/success_macro"] = record["success_macro"]
    summary = {
        "seedbench_version": "0.1.0", "git_hash": "0" * 40,
        "packages": {"numpy": np.__version__},
        "model": {"name": model, "checksum": hashlib.sha256(model.encode()).hexdigest()[:16]},
        "env": env, "env_id": env_id or _env_id(env), "agent": agent, "seed": seed,
        "iterations_done": last, "complete": complete,
        "eval_tasks": eval_tasks, "eval_task_ids": eval_tasks,
        "eval_task_hash": {s: task_list_hash(t, data_checksum(env)) for s, t in eval_tasks.items()},
        "protocol": {"splits": list(splits), "num_tasks": num_tasks, "max_steps": 1, "temperature": temperature,
                     "data_checksum": data_checksum(env), "data_source": "procedural"},
        "data": {"data_source": "procedural", "manifest_checksum": data_checksum(env), "generator_version": "1"},
        "final": final, "before_after": before_after_results(evals, splits), "timing": {"total_s": 0.5 * last},
    }
    tmp = run_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    os.replace(tmp, run_dir / "summary.json")
    return run_dir


def _env_id(env: str) -> str:
    try:
        return resolve_env(env).env_id
    except Exception:  # not a registered env: a plausible id is enough for a synthetic run
        return f"seedbench/{env}-v0"


def _yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def _yaml_list(text: str | None) -> list[str]:
    import yaml

    value = yaml.safe_load(text) if text else None
    return [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value else [])


def main(argv: Sequence[str] | None = None) -> int:
    """A fake ``seedbench run`` with the same command line (plus ``--sleep``), for harness tests."""
    parser = argparse.ArgumentParser(prog="seedbench-fake-run")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--env", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--iterations", type=int, required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--config")
    parser.add_argument("--set", nargs="+", action="extend", default=[])
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--sleep", type=float, default=float(os.environ.get("SEEDBENCH_FAKE_SLEEP", "0")))
    args = parser.parse_args(argv)
    # deferred: the experiments package __init__ loads its driver, which imports report
    from seedbench.training.experiments.arm import holds_run_files

    out = Path(args.output)
    if not args.resume and holds_run_files(out):
        print(f"error: {out} is not empty; pass --resume", file=sys.stderr)
        return 2
    with open(out.parent / f"{out.name}.invocations", "a") as log:  # lets tests count the work done
        gpus = os.environ.get("CUDA_VISIBLE_DEVICES")
        log.write(("resume" if args.resume else "fresh") + (f" gpus={gpus}" if gpus is not None else "") + "\n")
    settings = dict(pair.split("=", 1) for pair in args.set if "=" in pair)
    frozen = float(settings.get("optim.lr", 1)) == 0  # a no-learning control: the curve stays flat
    splits = _yaml_list(settings.get("eval.splits")) or ["test"]
    write_run(out, env=args.env, agent=args.agent, seed=args.seed, iterations=args.iterations,
              model=args.model, resume=args.resume, sleep_s=args.sleep,
              final_success=NO_LEARNING if frozen else None, splits=splits,
              eval_every=int(settings.get("eval.every", 2)), num_tasks=int(settings.get("eval.num_tasks", 16)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
