"""The trainer loop: rollout → agent.prepare (advantages, extra passes) → PPO-style update → run dir.

One iteration reads top to bottom in `Trainer.iteration`. Agents plug in through the written contract
`seedbench.agents.base.Agent` (`needs_reference`, `transform_prompt`, `prepare`, `loss`) and nothing
else, so SEED adds its analysis and re-scoring pass and an extra loss term without copying this loop.

The parts live in their own modules: `build` (env, policy, engine, rollout function, agent, evaluator;
shared with ``seedbench eval``), `update` (the PPO update and its π_old strategies), `run_state`
(checkpoints), `rng` (random streams), `records` (episodes, metrics, summary) and `parallel` (one process
or a torchrun group).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from seedbench.agents.base import PreparedUpdate
from seedbench.config import ConfigError, RunConfig, other_agents_algo_keys, to_dict, validate_config
from seedbench.progress import progress_bar
from seedbench.rollout.group_filter import sample_informative_groups
from seedbench.rollout.types import RolloutStats, TaskRef, Trajectory
from seedbench.tracking import open_tracker
from seedbench.training import parallel
from seedbench.training.build import RunStart, build_run, open_run_dir
from seedbench.training.evaluator import before_after_line
from seedbench.training.records import (episode_record, episode_rewards, log_train_episodes,
                                        rollout_metrics, timing_metrics, write_summary)
from seedbench.training.resources import ResourceMeter, gpus_held
from seedbench.training.run_state import load_checkpoint, save_checkpoint
from seedbench.training.update import PolicyUpdate

# Names plugins, tests and benchmarks import from here.
from seedbench.training.build import build_agent, choose_rollout, make_env_batch, ROLLOUT_SCHEDULERS  # noqa: F401
from seedbench.training.evaluator import Evaluator, before_after, success_table  # noqa: F401
from seedbench.training.rng import rng_isolated as _rng_isolated  # noqa: F401
from seedbench.seeding import seed_everything as _seed_everything  # noqa: F401
from seedbench.training.update import dropout_active  # noqa: F401


class Trainer:
    def __init__(self, config: RunConfig, resume: bool = False, allow_config_changes: bool = False):
        """`resume`: continue `config.output` from its last checkpoint under its saved config.yaml; `config`
        may differ from it only in `resume_config.RESUMABLE_FIELDS` unless `allow_config_changes`."""
        validate_config(config)  # every field and cross-field check, before anything is written or loaded
        self.config = config
        self.dist = parallel.from_environment(config.distributed.strategy)  # one process or one rank of a group
        if config.rollout.filter_groups and self.dist.world_size > 1:
            raise ConfigError(f"rollout.filter_groups runs in one process, not {self.dist.world_size} ranks; "
                              "set rollout.filter_groups=false or run without torchrun")
        foreign = other_agents_algo_keys(config)
        if foreign:
            self._say(f"note: {', '.join('algo.' + k for k in foreign)} belong to other agents than "
                      f"{config.agent}; left out of its config")
        # The run directory is checked, locked and given its config.yaml before the recipe's warm start and
        # stage 1 are built (or found in the cache); config.yaml keeps the recipe, the run loads what it names.
        start = open_run_dir(config, self.dist, resume, allow_config_changes)
        self.run_lock = start.lock  # held until close(), or until the process ends
        try:
            self._open(start, resume)
        except BaseException:  # a start that fails in this process must not keep the directory locked
            self._release_lock()
            raise

    def _open(self, start: RunStart, resume: bool) -> None:
        """Load everything the run trains with into the opened run directory (`open_run_dir`'s `start`)."""
        config = self.config
        self.run_dir, self.model_config, self.model_origin = start.run_dir, start.model_config, start.model_origin
        self.resources = ResourceMeter(self.run_dir.read_summary().get("resources") if resume else None)
        self.parts = parts = build_run(config, self.run_dir, self.dist, model_config=self.model_config)
        self.env_entry, self.env, self.sampling = parts.env_entry, parts.env, parts.sampling
        self.max_steps, self.history_length, self.needs_reference = parts.max_steps, parts.history_length, parts.needs_reference
        self.policy, self.engine, self.run_episodes = parts.policy, parts.engine, parts.run_episodes
        self.context, self.agent, self.evaluator, self.eval_tasks = parts.context, parts.agent, parts.evaluator, parts.evaluator.tasks
        self.resources.gpus = gpus_held(self.policy.device)
        optimizer = torch.optim.AdamW([p for p in self.policy.model.parameters() if p.requires_grad],
                                      lr=config.optim.lr, weight_decay=config.optim.weight_decay)
        self.updater = PolicyUpdate(config, parts, self.dist, optimizer, self.run_dir, self._say)
        self.train_envs = parts.make_envs(config.rollout.tasks_per_batch * config.rollout.group_size)
        self.counters = {"iteration": 0, "trajectories": 0, "env_steps": 0, "generated_tokens": 0}
        if start.checkpoint is not None:
            self._load_checkpoint(start.checkpoint)
            self.run_dir.truncate_logs_after(self.counters["iteration"])
        elif resume:
            self.run_dir.truncate_logs_after(0)
        self.tracker = open_tracker(config.track, self.run_dir.path, to_dict(config), resume, self.counters["iteration"])
        if self.tracker is not None:
            self.run_dir.observers.append(self.tracker)
        self._write_summary(complete=False)

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.updater.optimizer

    @optimizer.setter
    def optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        self.updater.optimizer = optimizer

    def _train_tasks(self, iteration: int, batch: int = 0) -> list[TaskRef]:
        """The tasks of an update's rollout `batch` (more than batch 0 only with `rollout.filter_groups`)."""
        rng = np.random.default_rng([self.config.seed, iteration] + ([batch] if batch else []))
        split = self.env.splits[0]
        return [TaskRef(split, int(s)) for s in rng.integers(0, 2**31 - 1, size=self.config.rollout.tasks_per_batch)]

    # -- the loop ---------------------------------------------------------------------------------
    def train(self) -> Path:
        cfg = self.config
        if cfg.eval.at_start or cfg.iterations == 0:
            self._finish_evaluation(0)
        start = self.counters["iteration"] + 1
        for iteration in range(start, cfg.iterations + 1):
            self.iteration(iteration)
            if cfg.eval.every and iteration % cfg.eval.every == 0 and iteration != cfg.iterations:
                self.evaluate(splits=cfg.eval.curve_splits or None)
            if iteration % cfg.save_every == 0 or iteration == cfg.iterations:
                self.save_checkpoint()
        if cfg.iterations > 0:
            self._finish_evaluation(cfg.iterations)
        if cfg.save_final_model:
            self.dist.save_final_model(self.policy, self.run_dir.path / "final_model")  # rank 0 writes
        comparisons = self._write_summary(complete=True)
        if not cfg.keep_final_checkpoint and self.dist.is_main:
            self.run_dir.update_summary(checkpoints_deleted=True)  # before the deletion: resume reads it
            self.run_dir.drop_checkpoints()  # final_model/ holds the weights
        for result in comparisons:
            self._say(before_after_line(result))
        return self.run_dir.path

    def iteration(self, iteration: int) -> dict[str, float]:
        cfg = self.config
        t_start = time.perf_counter()
        trajectories, rstats, filter_metrics = self._rollout(iteration)
        kept = [t for t in trajectories if not t.dropped]
        t_prepare = time.perf_counter()
        prepared = self.agent.prepare(kept, episode_rewards(kept, cfg.rollout.reward), iteration)
        t_update = time.perf_counter()
        train_metrics = self.update(prepared, kept)
        self.engine.sync_weights()
        t_end = time.perf_counter()

        # metrics and episode logs cover every rank's trajectories
        trajectories, rstats, prepared.metrics = self.dist.gather_rollout(trajectories, rstats, prepared.metrics)
        rewards = episode_rewards([t for t in trajectories if not t.dropped], cfg.rollout.reward)
        self.counters["iteration"] = iteration
        # every episode played counts towards the budget, also those the group filter left out
        self.counters["trajectories"] += int(filter_metrics.get("rollout/filter_generated_episodes", len(trajectories)))
        self.counters["env_steps"] += rstats.env_steps
        self.counters["generated_tokens"] += rstats.generated_tokens
        metrics = {**self.counters, **rollout_metrics(trajectories, rewards), **filter_metrics, **prepared.metrics,
                   **train_metrics,
                   **timing_metrics(rstats, t_start, t_prepare, t_update, t_end)}
        self.run_dir.log("metrics.jsonl", metrics)
        log_train_episodes(self.run_dir, trajectories, rewards, iteration)
        self._say(f"seedbench: iteration {iteration}/{cfg.iterations} success={metrics['rollout/success']:.3f} "
                  f"loss={metrics.get('train/loss', float('nan')):.4f} time={metrics['time/iteration_s']:.1f}s")
        return metrics

    def _rollout(self, iteration: int) -> tuple[list[Trajectory], RolloutStats, dict[str, float]]:
        """The update's episodes: one rollout of the iteration's tasks, or with `rollout.filter_groups` as many
        as it takes (`seedbench.rollout.group_filter`) to fill the batch with groups that disagree."""
        cfg = self.config

        def play(batch: int) -> tuple[list[Trajectory], RolloutStats]:
            prefix = f"it{iteration}-" if batch == 0 else f"it{iteration}b{batch}-"
            with progress_bar(total=self.max_steps, desc=f"iter {iteration} rollout"
                              + (f" {batch + 1}" if batch else ""), unit="step") as bar:
                return self.run_episodes(
                    self.train_envs, self.env, self.engine, self.policy.tokenizer, self._train_tasks(iteration, batch),
                    group_size=cfg.rollout.group_size, params=self.sampling, history_length=self.history_length,
                    max_steps=self.max_steps, episode_prefix=prefix, progress=bar,
                    transform_prompt=self.agent.transform_prompt)

        if not cfg.rollout.filter_groups:
            return (*play(0), {})
        return sample_informative_groups(play, groups_needed=cfg.rollout.tasks_per_batch,
                                         max_batches=cfg.rollout.max_rollout_batches,
                                         reward=lambda traj: episode_rewards([traj], cfg.rollout.reward)[0])

    def update(self, prepared: PreparedUpdate, trajectories: list[Trajectory] = ()) -> dict[str, float]:
        """One iteration's PPO update (`seedbench.training.update.PolicyUpdate`); `trajectories`: the
        rollout the samples came from, for the engine log-prob check and π_old from the engine."""
        return self.updater(prepared, trajectories, self.counters["iteration"])

    # -- evaluation -------------------------------------------------------------------------------
    def evaluate(self, splits: list[str] | None = None) -> dict[str, dict]:
        """Evaluate the current weights (`seedbench.training.evaluator.Evaluator`, shared with `seedbench eval`)
        on every split (or those in `splits`) and log, per split, its episodes and then its eval.jsonl record:
        the record is the commit point, so a split whose record exists has all its episodes logged."""
        results = {}
        iteration = self.counters["iteration"]
        for split in splits if splits is not None else list(self.eval_tasks):
            for record, trajectories in self.evaluator.run(self.counters, splits=[split]):
                for traj in trajectories:
                    episode = episode_record(traj, iteration, f"eval/{split}", float(traj.won), self.run_dir.save_frame)
                    self.run_dir.log("episodes.jsonl", episode)
                self.run_dir.log("eval.jsonl", record)
                results[split] = record
                self._say(f"seedbench: eval {split} @ iteration {iteration}: "
                          f"success micro={record['success_micro']:.3f} macro={record['success_macro']:.3f}"
                          + (f" score={record['score']:.3f}" if "score" in record else ""))
        return results

    def _finish_evaluation(self, iteration: int) -> None:
        """Run the splits of the evaluation at `iteration` (the current weights) that have no eval.jsonl
        record yet, after dropping the episodes an interrupted attempt logged for them, so a resumed run
        ends with each split's record and episodes exactly once. A run resumed past `iteration` no longer
        holds its weights: a record lost there (a damaged line) is reported, never replaced by an evaluation
        of other weights. Rank 0's view decides for every rank."""
        recorded = {r.get("split") for r in self.run_dir.records("eval.jsonl") if r.get("iteration") == iteration}
        missing = self.dist.broadcast_object([split for split in self.eval_tasks if split not in recorded])
        if not missing:
            return
        if iteration != self.counters["iteration"]:  # resumed past it: the weights it evaluates are gone
            self._say(f"seedbench: note: eval.jsonl holds no record of {', '.join(missing)} at iteration {iteration} "
                      "(a split added on resume, or a record lost to a damaged line); the run resumed at iteration "
                      f"{self.counters['iteration']}, so it is not evaluated with other weights, and its logged "
                      "episodes stay")
            return
        phases = {f"eval/{split}" for split in missing}
        self.run_dir.drop_records("episodes.jsonl",
                                  lambda r: r.get("iteration") == iteration and r.get("phase") in phases)
        self.evaluate(missing)

    # -- checkpoints and summary ------------------------------------------------------------------
    def save_checkpoint(self) -> Path | None:
        """The run's state at the current iteration (`seedbench.training.run_state.save_checkpoint`), then
        its cost so far in summary.json."""
        path = save_checkpoint(self.dist, self.run_dir, self.policy.model, self.optimizer, self.counters,
                               self.config.keep_checkpoints)
        self._record_progress()
        return path

    def _record_progress(self) -> None:
        """The resource totals and counters in summary.json at a checkpoint: a session killed later keeps
        the cost of its work up to here, and the resumed session adds its own to these totals."""
        totals = self.resources.gathered_totals(self.dist)
        if self.dist.is_main:
            self.run_dir.update_summary(resources=totals, iterations_done=self.counters["iteration"],
                                        counters=dict(self.counters), notify=False)

    def _load_checkpoint(self, path: Path) -> None:
        """Resume from `path` or the newest usable checkpoint before it (`run_state.load_checkpoint`)."""
        self.counters.update(load_checkpoint(self.dist, self.run_dir, path, self.policy.model, self.optimizer,
                                             self.policy.device))
        self.engine.sync_weights()
        self._say(f"seedbench: resumed {self.run_dir.path} from iteration {self.counters['iteration']}")

    def _say(self, line: str) -> None:
        """Print a console line once per run: under torchrun only rank 0 prints."""
        if self.dist.is_main:
            print(line, flush=True)

    def _write_summary(self, complete: bool) -> list[dict]:
        """summary.json now; returns its before/after comparison (`records.write_summary`)."""
        return write_summary(self.dist, self.run_dir, self.config, self.parts, self.counters, self.resources,
                      self.model_origin, complete)

    def close(self) -> None:
        if getattr(self, "tracker", None) is not None:
            self.tracker.close()
            self.run_dir.observers.remove(self.tracker)
            self.tracker = None
        self.train_envs.close()
        self.parts.close()
        self.dist.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if getattr(self, "run_lock", None) is not None:
            self.run_lock.close()
            self.run_lock = None


def train(config: RunConfig, resume: bool = False, allow_config_changes: bool = False) -> Path:
    trainer = Trainer(config, resume=resume, allow_config_changes=allow_config_changes)
    try:
        path = trainer.train()
        # Every rank finishes before any tears the process group down: gloo aborts a rank ("terminate called
        # without an active exception") whose peer closes its connections while it is still in a collective.
        trainer.dist.barrier()
        return path
    finally:
        trainer.close()
