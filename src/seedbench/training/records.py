"""What a run writes about itself: episodes.jsonl lines, the metrics.jsonl record of an iteration and
summary.json. The loop decides when; this module decides what a record holds."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from seedbench import __version__
from seedbench.config import ConfigError, RunConfig
from seedbench.machine import run_machine
from seedbench.provenance import env_provenance, task_list_hash, write_eval_tasks
from seedbench.rollout.types import StepSample, Trajectory
from seedbench.training.evaluator import before_after, eval_task_list
from seedbench.training.distributed import SingleProcess
from seedbench.training.resources import ResourceMeter
from seedbench.training.rundir import RunDir, git_hash, package_versions


def episode_rewards(trajectories: list[Trajectory], mode: str) -> list[float]:
    if mode == "success":
        return [float(t.won) for t in trajectories]
    if mode == "return":
        return [t.env_return for t in trajectories]
    raise ConfigError(f"rollout.reward: unknown {mode!r}; choose return or success")


def episode_record(traj: Trajectory, iteration: int, phase: str, reward: float | None,
                   save_frame: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """One episodes.jsonl line. A step that showed a frame (vision envs) names it, ``"image":
    "frames/<id>.png"``, as returned by `save_frame` (`RunDir.save_frame`); without `save_frame` frames are
    left out, never written inline. Text-only steps have no ``image`` key."""
    return {
        "iteration": iteration, "phase": phase, "episode_id": traj.episode_id, "group_id": traj.group_id,
        "task": traj.task.key(), "task_id": traj.task_id, "task_type": traj.task_type, "task_text": traj.task_text,
        "won": traj.won, "env_return": traj.env_return, "reward": reward, "dropped": traj.dropped,
        "truncated": traj.truncated, "num_invalid": traj.num_invalid,
        "steps": [_step_record(s, save_frame) for s in traj.steps],
    }


def _step_record(step: StepSample, save_frame: Callable[[Any], str] | None) -> dict[str, Any]:
    record = {"step": step.step, "prompt": step.user_content, "output": step.response_text, "action": step.action,
              "valid": step.action_valid, "reward": step.env_reward}
    if step.image is not None and save_frame is not None:
        record["image"] = save_frame(step.image)
    return record


def log_train_episodes(run_dir: RunDir, trajectories: list[Trajectory], rewards: list[float], iteration: int) -> None:
    """The kept episodes with their rewards, then the dropped ones (reward None)."""
    kept = [t for t in trajectories if not t.dropped]
    for traj, reward in zip(kept, rewards):
        run_dir.log("episodes.jsonl", episode_record(traj, iteration, "train", reward, run_dir.save_frame))
    for traj in trajectories:
        if traj.dropped:
            run_dir.log("episodes.jsonl", episode_record(traj, iteration, "train", None, run_dir.save_frame))


def rollout_metrics(trajectories: list[Trajectory], rewards: list[float]) -> dict[str, float]:
    """The ``rollout/…`` fields of an iteration's metrics.jsonl record (`rewards`: of the kept episodes)."""
    kept = [t for t in trajectories if not t.dropped]
    steps = [s for t in kept for s in t.steps]
    return {
        "rollout/success": float(np.mean([t.won for t in kept])) if kept else 0.0,
        "rollout/return": float(np.mean(rewards)) if rewards else 0.0,
        "rollout/episode_length": float(np.mean([len(t.steps) for t in kept])) if kept else 0.0,
        "rollout/invalid_action_rate": float(np.mean([not s.action_valid for s in steps])) if steps else 0.0,
        "rollout/invalid_actions": int(sum(not s.action_valid for s in steps)),
        "rollout/response_tokens_mean": float(np.mean([len(s.response_ids) for s in steps])) if steps else 0.0,
        "rollout/dropped_episodes": len(trajectories) - len(kept),
    }


def timing_metrics(rstats: Any, t_start: float, t_prepare: float, t_update: float, t_end: float) -> dict[str, float]:
    """The ``time/…`` fields: the rollout's own clocks and the loop's phase boundaries."""
    return {"time/rollout_s": t_prepare - t_start, "time/generation_s": rstats.generation_time_s,
            "time/env_s": rstats.env_time_s, "time/prepare_s": t_update - t_prepare,
            "time/update_s": t_end - t_update, "time/iteration_s": t_end - t_start}


def before_after_results(records: list[dict], splits) -> list[dict]:
    """Per eval split, the evaluation of the starting weights (iteration 0) against the last
    (`evaluator.before_after`), when the run has both; `records`: the run's eval.jsonl records. A run without
    its start's evaluation (``eval.at_start: false``) has no before, so no comparison."""
    results = []
    for split in splits:
        mine = sorted((r for r in records if r.get("split") == split), key=lambda r: r["iteration"])
        if len(mine) >= 2 and mine[0]["iteration"] == 0 != mine[-1]["iteration"]:
            result = before_after(mine[0], mine[-1])
            if result is not None:
                results.append(result)
    return results


def write_summary(parallel: SingleProcess, run_dir: RunDir, config: RunConfig, parts: Any,
                  counters: dict[str, int], resources: ResourceMeter, model_origin: Any, complete: bool) -> list[dict]:
    """summary.json (and eval_tasks when evaluations ran): provenance, counters, the evaluation protocol,
    the last evaluation, the before/after comparison, timing, every rank's resources and rank 0's machine, of the run built
    as `parts` (`seedbench.training.build.RunParts`). Rank 0 writes, reading eval.jsonl once, and returns the
    before/after comparison it wrote (for the run's closing lines); other ranks return []."""
    totals = resources.gathered_totals(parallel)
    if not parallel.is_main:
        return []
    evals = run_dir.records("eval.jsonl")
    final = {}
    for record in evals:
        if record.get("iteration") == counters["iteration"] and "split" in record:
            for key in ("success_micro", "success_macro", "score"):
                if key in record:
                    final[f"eval/{record['split']}/{key}"] = record[key]
    eval_ids = {}
    for record in evals:
        if isinstance(record.get("task_ids"), list) and "split" in record:
            eval_ids.setdefault(record["split"], record["task_ids"])
    eval_tasks = parts.evaluator.tasks
    data = env_provenance(parts.env)
    checksum = data["manifest_checksum"]
    if eval_ids:  # every split the run evaluated, also one a resume with changes no longer evaluates
        write_eval_tasks(run_dir.path, {split: eval_task_list(split, len(ids)) for split, ids in eval_ids.items()},
                         eval_ids, data)
    timing = [r for r in run_dir.records("metrics.jsonl")]
    comparisons = before_after_results(evals, eval_tasks)
    run_dir.update_summary(
        seedbench_version=__version__, git_hash=git_hash(), packages=package_versions(),
        model={"name": config.model.name, "source": parts.policy.source, "checksum": parts.policy.checksum,
               "origin": model_origin},
        env=parts.env_entry.alias, env_id=parts.env_entry.env_id, agent=config.agent, seed=config.seed,
        iterations=config.iterations, iterations_done=counters["iteration"], complete=complete,
        counters=dict(counters),
        eval_tasks={split: [t.key() for t in tasks] for split, tasks in eval_tasks.items()},
        eval_task_ids=eval_ids, eval_task_hash={s: task_list_hash(v, checksum) for s, v in eval_ids.items() if v},
        protocol={"splits": list(eval_tasks), "num_tasks": config.eval.num_tasks,
                  "max_steps": parts.max_steps, "temperature": config.eval.temperature,
                  "history_length": parts.history_length, "eval_same_stream": config.eval.same_stream,
                  "data_checksum": checksum,
                  "data_source": data["data_source"]},
        data=data,
        final=final,
        before_after=comparisons,
        timing={"mean_iteration_s": float(np.mean([r["time/iteration_s"] for r in timing])) if timing else None},
        resources=totals,
        machine=run_machine(parts.policy),
    )
    return comparisons
