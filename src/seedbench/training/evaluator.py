"""Evaluation of a policy on a run config's held-out tasks: the one loop behind training-time evaluation
(`Trainer.evaluate`) and ``seedbench eval`` (`seedbench.training.evaluate`), and the records it writes.

`Evaluator` plays the fixed held-out task list (``eval.*``) with the run's own step cap, history length,
response budget, prompt transform, engine and env worker pool, each split under an RNG stream seeded from
the run seed, the iteration and the split's place in the list, and returns one ``eval.jsonl`` record per
split.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from seedbench.config import ConfigError, RunConfig, episode_limits
from seedbench.provenance import env_provenance, task_list_hash
from seedbench.rollout.types import TaskRef, Trajectory
from seedbench.training.rng import rng_isolated
from seedbench.engines.base import SamplingParams, env_stop
from seedbench.progress import progress_bar
from seedbench.stats import paired_difference_ci


def success_table(trajectories: list[Trajectory]) -> dict[str, Any]:
    """Micro (over episodes) and macro (over task types) success, plus per-type rates and counts."""
    per_type: dict[str, list[bool]] = {}
    for traj in trajectories:
        per_type.setdefault(traj.task_type or "all", []).append(traj.won)
    rates = {k: float(np.mean(v)) for k, v in sorted(per_type.items())}
    return {
        "success_micro": float(np.mean([t.won for t in trajectories])) if trajectories else 0.0,
        "success_macro": float(np.mean(list(rates.values()))) if rates else 0.0,
        "per_type": rates,
        "per_type_counts": {k: len(v) for k, v in sorted(per_type.items())},
    }


def before_after(first: dict, last: dict) -> dict[str, Any] | None:
    """Held-out success of one split at the first and the last evaluation of a run, on the tasks both
    evaluated (same ids, neither dropped), with the difference's paired 95 % bootstrap interval over tasks
    (`seedbench.stats.paired_difference_ci`); None when the records carry no per-task outcomes."""
    if "won" not in first or "won" not in last:
        return None
    before = dict(zip(first["task_ids"], first["won"]))
    pairs = [(before[task], won) for task, won in zip(last["task_ids"], last["won"])
             if won is not None and before.get(task) is not None]
    if not pairs:
        return None
    interval = paired_difference_ci([float(b) for b, _ in pairs], [float(a) for _, a in pairs])
    return {"split": last["split"], "tasks": len(pairs), "iterations": [first["iteration"], last["iteration"]],
            "before": sum(b for b, _ in pairs) / len(pairs), "after": sum(a for _, a in pairs) / len(pairs),
            "difference": interval.point, "ci95": [interval.low, interval.high]}


def before_after_line(result: dict[str, Any]) -> str:
    """The one console line a finished run ends with: did the held-out success move, and how surely."""
    low, high = result["ci95"]
    return (f"seedbench: held-out success on {result['split']} ({result['tasks']} tasks): {result['before']:.3f} at "
            f"iteration {result['iterations'][0]} -> {result['after']:.3f} at iteration {result['iterations'][1]}; "
            f"difference {result['difference']:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}] (paired bootstrap over tasks, "
            "one training seed)")


def eval_tasks(config: RunConfig, env: Any) -> dict[str, list[TaskRef]]:
    """The fixed evaluation list: seeds 0..n-1 of each eval split, identical for every agent and run seed."""
    splits = config.eval.splits or [env.eval_split]
    for split in splits:
        if split not in env.splits:
            raise ConfigError(f"eval.splits: {split!r} is not a split of {config.env}; choose from {list(env.splits)}")
    return {split: eval_task_list(split, config.eval.num_tasks) for split in splits}


def eval_task_list(split: str, num_tasks: int) -> list[TaskRef]:
    """The first `num_tasks` tasks of `split` (seeds 0..n-1), the list every evaluation of that size plays."""
    return [TaskRef(split, s) for s in range(num_tasks)]


def eval_record(counters: dict[str, int], split: str, temperature: float, trajectories: list[Trajectory],
                env: Any) -> dict:
    """One ``eval.jsonl`` record: counters, the task list (ids and their `task_list_hash` with `env`'s data
    checksum) and the success table."""
    record = {
        "iteration": counters.get("iteration", 0), "trajectories": counters.get("trajectories", 0),
        "env_steps": counters.get("env_steps", 0), "generated_tokens": counters.get("generated_tokens", 0),
        "split": split, "num_tasks": len(trajectories), "temperature": temperature,
        "task_ids": [t.task_id for t in trajectories],
        "won": [None if t.dropped else bool(t.won) for t in trajectories],
        **success_table([t for t in trajectories if not t.dropped]),
    }
    scored = [t for t in trajectories if not t.dropped]
    if any(t.score is not None for t in scored):  # envs with a task score (WebShop): its mean, unscored = 0
        record["score"] = float(np.mean([t.score or 0.0 for t in scored]))
    record["task_list_hash"] = task_list_hash(record["task_ids"], env_provenance(env)["manifest_checksum"])
    return record


class Evaluator:
    """Evaluates a policy (through `engine`) on a run config's held-out tasks. `make_envs(n)` gives an env
    batch of at least n envs (the run's pool); `transform_prompt` is the agent's acting-prompt hook."""

    def __init__(self, config: RunConfig, env: Any, engine: Any, tokenizer: Any, run_episodes: Callable,
                 make_envs: Callable[[int], Any], transform_prompt: Callable | None = None):
        self.config, self.env, self.engine, self.tokenizer = config, env, engine, tokenizer
        self.run_episodes, self.make_envs, self.transform_prompt = run_episodes, make_envs, transform_prompt
        self.max_steps, self.history_length = episode_limits(config, env)
        self.tasks = eval_tasks(config, env)
        self.envs = None

    def sampling(self):
        cfg = self.config
        return SamplingParams(max_new_tokens=cfg.eval.max_new_tokens or cfg.rollout.max_new_tokens,
                              temperature=cfg.eval.temperature, top_p=1.0, greedy=cfg.eval.temperature == 0,
                              **env_stop(self.env))

    def run(self, counters: dict[str, int], splits: list[str] | None = None) -> list[tuple[dict, list[Trajectory]]]:
        """(record, trajectories) per split (all, or those in `splits`). Each split draws from its own RNG
        stream, seeded by (run seed, iteration, the split's place in the list) and isolated from the caller's,
        so inserting an evaluation does not change training (and a replay matches), and a split evaluated
        alone (a resumed run finishing an interrupted evaluation) gives the record it gives among the others.
        With ``eval.same_stream`` the iteration leaves the seed: every evaluation of a split samples alike."""
        iteration = counters.get("iteration", 0)
        stream_iteration = 0 if self.config.eval.same_stream else iteration
        params, results = self.sampling(), []
        for index, (split, tasks) in enumerate(self.tasks.items()):
            if splits is not None and split not in splits:
                continue
            with rng_isolated(self.config.seed + 7919 * (stream_iteration + 1) + 104729 * index):
                if self.envs is None or len(self.envs) < len(tasks):
                    if self.envs is not None:
                        self.envs.close()
                    self.envs = self.make_envs(len(tasks))
                with progress_bar(total=self.max_steps, desc=f"eval {split}", unit="step") as bar:
                    trajectories, _ = self.run_episodes(
                        self.envs, self.env, self.engine, self.tokenizer, tasks, group_size=1, params=params,
                        history_length=self.history_length, max_steps=self.max_steps,
                        episode_prefix=f"eval{iteration}-{split}-", progress=bar, transform_prompt=self.transform_prompt)
                results.append((eval_record(counters, split, self.config.eval.temperature, trajectories, self.env),
                                trajectories))
        return results

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None
