"""The trainer loop: rollout → agent.prepare (advantages, extra passes) → PPO-style update → run dir.

One iteration reads top to bottom in `Trainer.iteration`. Agents plug in through the written contract
`seedbench.agents.base.Agent` (`needs_reference`, `transform_prompt`, `prepare`, `loss`) and nothing
else, so SEED adds its analysis and re-scoring pass and an extra loss term without copying this loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from seedbench import __version__
from seedbench.agents.base import Agent, AgentConfig, AgentContext, MiniBatch, PreparedUpdate, TrainSample
from seedbench.config import (ConfigError, RunConfig, agent_class, agent_config, episode_limits, to_dict,
                              other_agents_algo_keys, validate_config)
from seedbench.engines.base import SamplingParams, env_stop
from seedbench.progress import progress_bar
from seedbench.registry import make_env, resolve_agent, resolve_env
from seedbench.rollout.types import StepSample, TaskRef, Trajectory
from seedbench.seeding import seed_everything as _seed_everything
from seedbench.envs.batch import EnvBatch, LocalEnvs
from seedbench.envs.checks import probe_reset_seeding
from seedbench.provenance import env_provenance, task_list_hash, write_eval_tasks
from seedbench.training.starting_model import starting_model_name
from seedbench.training.evaluate import Evaluator, before_after, before_after_line, success_table  # noqa: F401 - re-exported
from seedbench.jsonio import RunFileError, RunFileWarning
from seedbench.training import distributed
from seedbench.training.checkpoint_files import CheckpointFileError, load_torch_file, save_torch_atomic
from seedbench.training.resources import ResourceMeter, gpus_held
from seedbench.training.resume_config import check_resume_changes, record_config, run_started
from seedbench.training.rundir import default_run_name, git_hash, package_versions
from seedbench.training.origin import check_origin_env, checkpoint_origin
from seedbench.models.scoring import forward_logprobs


def build_agent(config: RunConfig) -> tuple[type[Agent], AgentConfig]:
    """The agent class registered as ``config.agent`` and its checked config (`seedbench.config.agent_config`:
    the class's ``Config`` defaults, then the registry entry's overrides, then ``algo.*``)."""
    return agent_class(resolve_agent(config.agent).factory, config.agent), agent_config(config)


def episode_rewards(trajectories: list[Trajectory], mode: str) -> list[float]:
    if mode == "success":
        return [float(t.won) for t in trajectories]
    if mode == "return":
        return [t.env_return for t in trajectories]
    raise ConfigError(f"rollout.reward: unknown {mode!r}; choose return or success")


class Trainer:
    def __init__(self, config: RunConfig, resume: bool = False, allow_config_changes: bool = False):
        """`resume`: continue `config.output` from its last checkpoint under its saved config.yaml; `config`
        may differ from it only in `resume_config.RESUMABLE_FIELDS` unless `allow_config_changes`."""
        validate_config(config)  # every field and cross-field check, before anything is written or loaded
        self.config = config
        # [distributed] one process, or one rank of a torchrun group (seedbench.training.distributed)
        self.dist = distributed.from_environment(config.distributed.strategy)
        foreign = other_agents_algo_keys(config)
        if foreign:
            self._say(f"note: {', '.join('algo.' + k for k in foreign)} belong to other agents than "
                      f"{config.agent}; left out of its config")
        entry = resolve_env(config.env)
        self.env_entry = entry
        # The recipe's warm start and stage 1 are built (or found in the cache) before anything is written;
        # config.yaml keeps the recipe, and the run loads what it names.
        start = self.dist.broadcast_object(starting_model_name(config) if self.dist.is_main else None)
        self.model_config = dataclasses.replace(config.model, name=start)
        # A fine-tuned checkpoint names the env it was made on; refuse another one before anything is written.
        self.model_origin = checkpoint_origin(start)
        check_origin_env(self.model_origin, entry.alias, config.model.allow_other_env)
        agent_cls, agent_config = build_agent(config)
        out = Path(config.output) if config.output else Path("runs") / default_run_name(
            entry.alias, config.agent, config.model.name, config.seed)
        out = Path(self.dist.broadcast_object(str(out)))  # [distributed] rank 0's default name on every rank
        config.output = str(out)
        self.run_dir = self.dist.run_dir(out)  # [distributed] only rank 0 writes it
        checkpoint = self.run_dir.latest_checkpoint() if resume else None
        if not resume and out.exists() and any(out.iterdir()) and run_started(out):
            raise ConfigError(f"run directory {out} already exists; pass --resume to continue it or choose another --output")
        saved = self.run_dir.read_config() if resume and (out / "config.yaml").exists() else None
        changes = [] if saved is None else check_resume_changes(
            out, saved, config, allow=allow_config_changes, done=int(checkpoint.name.split("_")[1]) if checkpoint else None)
        self.dist.barrier()  # [distributed] every rank has looked before rank 0 writes
        out.mkdir(parents=True, exist_ok=True)
        self.resources = ResourceMeter(self.run_dir.read_summary().get("resources") if resume else None)
        if saved is None:
            self.run_dir.write_config(to_dict(config))
        elif changes and self.dist.is_main:  # [distributed] rank 0 keeps the old file and writes the new one
            record_config(out, to_dict(config), changes)

        _seed_everything(config.seed)
        from seedbench.models.policy import load_policy

        self.env = make_env(entry.alias, **config.env_kwargs)
        if config.probe_env_seeding:
            probe_reset_seeding(self.env, entry.alias)
        self.max_steps, self.history_length = episode_limits(config, self.env)
        self.sampling = SamplingParams(max_new_tokens=config.rollout.max_new_tokens, temperature=config.rollout.temperature,
                                       top_p=config.rollout.top_p, **env_stop(self.env))
        # One rule, asked before the model loads: load the reference exactly when updates will use it.
        self.needs_reference = agent_cls.needs_reference(agent_config)
        self.policy = load_policy(self.model_config, need_reference=self.needs_reference, seed=config.seed)
        self.dist.prepare_model(self.policy.model, config.seed)  # [distributed] rank 0's weights everywhere
        self.resources.gpus = gpus_held(self.policy.device)
        from seedbench.engines.factory import make_engine

        self.engine = make_engine(config.engine, self.policy, config)
        # [distributed] each rank plays its share of the task groups; evaluation shards and gathers
        self.run_episodes = self.dist.shard_rollout(choose_rollout(config.rollout.scheduler, self.engine))
        self.context = AgentContext(self.policy, self.engine, self.env, self.run_dir, config, self.sampling)
        self.agent: Agent = agent_cls(agent_config, self.context)
        self.dist.shard_model(self.policy.model)  # [distributed] fsdp: after the engine's copy, before the optimizer
        self.optimizer = torch.optim.AdamW([p for p in self.policy.model.parameters() if p.requires_grad],
                                           lr=config.optim.lr, weight_decay=config.optim.weight_decay)
        group = config.rollout.tasks_per_batch * config.rollout.group_size
        self.train_envs = self._make_envs(group)
        self.counters = {"iteration": 0, "trajectories": 0, "env_steps": 0, "generated_tokens": 0}
        self.evaluator = Evaluator(config, self.env, self.engine, self.policy.tokenizer,
                                   self.dist.shard_rollout(choose_rollout(config.rollout.scheduler, self.engine), gather=True),
                                   self._make_envs, self.agent.transform_eval_prompt)
        self.eval_tasks = self.evaluator.tasks
        if checkpoint is not None:
            self._load_checkpoint(checkpoint)
            self.run_dir.truncate_logs_after(self.counters["iteration"])
        elif resume:
            self.run_dir.truncate_logs_after(0)
        from seedbench.tracking import open_tracker

        self.tracker = open_tracker(config.track, out, to_dict(config), resume, self.counters["iteration"])
        if self.tracker is not None:
            self.run_dir.observers.append(self.tracker)
        self._write_summary(complete=False)

    # -- setup ------------------------------------------------------------------------------------
    def _make_envs(self, num: int) -> EnvBatch:
        return make_env_batch(self.config, self.env_entry.alias, self.env, num)

    def _train_tasks(self, iteration: int) -> list[TaskRef]:
        rng = np.random.default_rng([self.config.seed, iteration])
        split = self.env.splits[0]
        return [TaskRef(split, int(s)) for s in rng.integers(0, 2**31 - 1, size=self.config.rollout.tasks_per_batch)]

    # -- the loop ---------------------------------------------------------------------------------
    def train(self) -> Path:
        cfg = self.config
        self._finish_evaluation(0)
        start = self.counters["iteration"] + 1
        for iteration in range(start, cfg.iterations + 1):
            self.iteration(iteration)
            if cfg.eval.every and iteration % cfg.eval.every == 0 and iteration != cfg.iterations:
                self.evaluate()
            if iteration % cfg.save_every == 0 or iteration == cfg.iterations:
                self.save_checkpoint()
        if cfg.iterations > 0:
            self._finish_evaluation(cfg.iterations)
        if cfg.save_final_model:
            self.dist.save_final_model(self.policy, self.run_dir.path / "final_model")  # [distributed] rank 0 writes
        self._write_summary(complete=True)
        for result in self._before_after():
            self._say(before_after_line(result))
        return self.run_dir.path

    def _before_after(self) -> list[dict]:
        """Per eval split, the first evaluation against the last (`evaluate.before_after`), when they differ."""
        records = self.run_dir.records("eval.jsonl")
        results = []
        for split in self.eval_tasks:
            mine = sorted((r for r in records if r.get("split") == split), key=lambda r: r["iteration"])
            if len(mine) >= 2 and mine[0]["iteration"] != mine[-1]["iteration"]:
                result = before_after(mine[0], mine[-1])
                if result is not None:
                    results.append(result)
        return results

    def iteration(self, iteration: int) -> dict[str, float]:
        cfg = self.config
        t_start = time.perf_counter()
        tasks = self._train_tasks(iteration)
        with progress_bar(total=self.max_steps, desc=f"iter {iteration} rollout", unit="step") as bar:
            trajectories, rstats = self.run_episodes(
                self.train_envs, self.env, self.engine, self.policy.tokenizer, tasks,
                group_size=cfg.rollout.group_size, params=self.sampling, history_length=self.history_length,
                max_steps=self.max_steps, episode_prefix=f"it{iteration}-", progress=bar,
                transform_prompt=self.agent.transform_prompt)
        kept = [t for t in trajectories if not t.dropped]
        rewards = episode_rewards(kept, cfg.rollout.reward)
        t_prepare = time.perf_counter()
        prepared = self.agent.prepare(kept, rewards, iteration)
        t_update = time.perf_counter()
        train_metrics = self.update(prepared, kept)
        self.engine.sync_weights()
        t_end = time.perf_counter()

        # [distributed] metrics and episode logs cover every rank's trajectories
        trajectories, rstats, prepared.metrics = self.dist.gather_rollout(trajectories, rstats, prepared.metrics)
        kept = [t for t in trajectories if not t.dropped]
        rewards = episode_rewards(kept, cfg.rollout.reward)
        self.counters["iteration"] = iteration
        self.counters["trajectories"] += len(trajectories)
        self.counters["env_steps"] += rstats.env_steps
        self.counters["generated_tokens"] += rstats.generated_tokens
        steps = [s for t in kept for s in t.steps]
        metrics = {
            **self.counters,
            "rollout/success": float(np.mean([t.won for t in kept])) if kept else 0.0,
            "rollout/return": float(np.mean(rewards)) if rewards else 0.0,
            "rollout/episode_length": float(np.mean([len(t.steps) for t in kept])) if kept else 0.0,
            "rollout/invalid_action_rate": float(np.mean([not s.action_valid for s in steps])) if steps else 0.0,
            "rollout/invalid_actions": int(sum(not s.action_valid for s in steps)),
            "rollout/response_tokens_mean": float(np.mean([len(s.response_ids) for s in steps])) if steps else 0.0,
            "rollout/dropped_episodes": len(trajectories) - len(kept),
            **prepared.metrics,
            **train_metrics,
            "time/rollout_s": t_prepare - t_start,
            "time/generation_s": rstats.generation_time_s,
            "time/env_s": rstats.env_time_s,
            "time/prepare_s": t_update - t_prepare,
            "time/update_s": t_end - t_update,
            "time/iteration_s": t_end - t_start,
        }
        self.run_dir.log("metrics.jsonl", metrics)
        save_frame = self.run_dir.save_frame
        for traj, reward in zip(kept, rewards):
            self.run_dir.log("episodes.jsonl", episode_record(traj, iteration, "train", reward, save_frame))
        for traj in trajectories:
            if traj.dropped:
                self.run_dir.log("episodes.jsonl", episode_record(traj, iteration, "train", None, save_frame))
        self._say(f"seedbench: iteration {iteration}/{cfg.iterations} success={metrics['rollout/success']:.3f} "
              f"loss={metrics.get('train/loss', float('nan')):.4f} time={metrics['time/iteration_s']:.1f}s")
        return metrics

    def update(self, prepared: PreparedUpdate, trajectories: list[Trajectory] = ()) -> dict[str, float]:
        """One PPO epoch (or `ppo_epochs`) over the prepared samples, split into mini-batches of step
        samples. π_old log-probs come from `optim.old_logprobs` (`_old_logprob_source`): a scoring pass with
        the pre-update weights, the first loss forward, or the engine; reference log-probs from a scoring
        pass under the frozen reference. The trainer's pre-update log-probs are checked against the
        engine's sampled log-probs of the same tokens (`trajectories`)."""
        samples = prepared.samples
        # [distributed] mini-batches are cut from the global sample list (all ranks' samples in rank order)
        layout = self.dist.sample_layout([len(s.response_ids) for s in samples])
        if not layout.lengths:
            return {"train/loss": 0.0, "train/samples": 0}
        cfg, policy = self.config.optim, self.policy
        prompts = [s.prompt_ids for s in samples]
        responses = [s.response_ids for s in samples]
        num_minibatches = (len(layout.lengths) + cfg.mini_batch_size - 1) // cfg.mini_batch_size
        source, old_logp = self._old_logprob_source(samples, trajectories, cfg.ppo_epochs * num_minibatches == 1)
        check_metrics: dict[str, float] = {}
        if source == "score":
            old_logp = self.context.score(prompts, responses)
            self._log_token_signals(samples, old_logp, trajectories)
            check_metrics = self._check_logprobs(samples, old_logp, trajectories)
        ref_logp = None
        if self.needs_reference:
            with policy.reference() as ref_model:
                ref_logp = self.context.score(prompts, responses, model=ref_model)
        want_entropy = self.agent.config.entropy_coef > 0
        engine_logp = self._engine_logprobs(samples, trajectories) if cfg.rollout_is != "off" else None
        totals: dict[str, float] = {}
        token_total, steps, grad_norm_sum = 0, 0, 0.0
        policy.model.train()
        order = list(range(len(layout.lengths)))
        rng = random.Random(self.config.seed * 1_000_003 + self.counters["iteration"])
        bar = progress_bar(total=cfg.ppo_epochs * num_minibatches, desc="update", unit="minibatch")
        for _ in range(cfg.ppo_epochs):
            rng.shuffle(order)
            for start in range(0, len(order), cfg.mini_batch_size):
                bar.update(1)
                global_mini = order[start : start + cfg.mini_batch_size]
                tokens = sum(layout.lengths[i] for i in global_mini)  # [distributed] the global token-mean denominator
                if tokens == 0:
                    continue
                mini = layout.local(global_mini)  # [distributed] this rank's members (all of them in one process)
                micro_batches = layout.micro_batches(global_mini, cfg.micro_batch_size)

                def run():
                    return self._mini_batch(mini, samples, old_logp, ref_logp, want_entropy, prepared.update_info,
                                            tokens, micro_batches, engine_logp)

                sums, current = run()
                if source == "engine" and not steps:  # the engine's π_old is checked on the first mini-batch
                    check = self._check_engine_old(mini, samples, current, trajectories)
                    check_metrics = check.metrics()
                    if check.flagged:
                        self._say(f"seedbench: WARNING iteration {self.counters['iteration'] + 1}: {check.message()}; "
                              "optim.old_logprobs=engine falls back to a scoring pass")
                        source, old_logp = "score", self.context.score(prompts, responses)  # weights not stepped yet
                        policy.model.train()
                        sums, current = run()
                if source == "first_forward":  # one pass: every forward ran with the pre-update weights
                    old_logp.update(current)
                for key, value in sums.items():
                    totals[key] = totals.get(key, 0.0) + value
                self.dist.all_reduce_grads(policy.model.parameters())  # [distributed] sum of ranks' shares
                grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip)
                grad_norm_sum += float(grad_norm)
                steps += 1
                self.optimizer.step()
                token_total += tokens
        bar.close()
        if source != "score":  # the pre-update log-probs known only now: the first forward's, or the engine's
            known = [old_logp[i] for i in range(len(samples))]
            self._log_token_signals(samples, known, trajectories)
            if source == "first_forward":
                check_metrics = self._check_logprobs(samples, known, trajectories)
        totals = self.dist.sum_values(totals)  # [distributed] token sums of every rank
        out = {"train/grad_norm": grad_norm_sum / max(steps, 1), "train/old_logprobs_engine": float(source == "engine"),
               "train/samples": len(layout.lengths), "train/response_tokens": token_total, **check_metrics}
        out.update({k: v / max(token_total, 1) for k, v in totals.items()})
        return out

    def _mini_batch(self, mini: list[int], samples, old_logp, ref_logp, want_entropy: bool, update_info,
                    tokens: int, micro_batches: int,
                    engine_logp=None) -> tuple[dict[str, float], dict[int, list[float]]]:
        """Forward and backward of one mini-batch's micro-batches (gradients accumulate; no optimizer step).
        Returns the token-summed loss and metrics and each sample's log-probs of this forward, detached."""
        cfg = self.config.optim
        self.optimizer.zero_grad(set_to_none=True)
        sums: dict[str, float] = {}
        current: dict[int, list[float]] = {}
        # One autocast region around the mini-batch: autocast keeps its low-precision casts of the weights
        # until its outermost region exits, so every micro-batch's forward reuses the first one's (the
        # weights change only at the optimizer step, after this). Loss and backward run with autocast off.
        with self.policy.autocast():
            for micro_start in range(0, len(mini), cfg.micro_batch_size):
                micro = mini[micro_start : micro_start + cfg.micro_batch_size]
                mb = self._micro_batch(micro, samples, old_logp, ref_logp, want_entropy, update_info,
                                       minibatch_tokens=tokens, micro_batches=micro_batches, engine_logp=engine_logp)
                with self.policy.autocast_off():
                    loss_sum, metric_sums = self.agent.loss(mb)  # weighted for optim.loss_agg_mode (MiniBatch.loss_weight)
                    (loss_sum / tokens).backward()
                sums["train/loss"] = sums.get("train/loss", 0.0) + float(loss_sum.detach())
                for key, value in metric_sums.items():
                    sums[key] = sums.get(key, 0.0) + float(value)
                logp = mb.logp.detach().float().cpu()
                for row, i in enumerate(micro):
                    current[i] = logp[row, : len(samples[i].response_ids)].tolist()
        return sums, current

    def _old_logprob_source(self, samples, trajectories, single_pass: bool) -> tuple[str, Any]:
        """(source, π_old log-probs known before the update) for ``optim.old_logprobs``: ``score`` (None: the
        caller scores), ``first_forward`` ({}: filled from the loss forward; only when the update is one
        pass and no dropout is active, so the forward runs with exactly the pre-update function), or
        ``engine`` (the rollout's sampled log-probs; only when the log-prob check can compare them, i.e.
        `_check_logprobs`' conditions, and every sample is an unchanged rollout step)."""
        mode = self.config.optim.old_logprobs
        if mode == "first_forward" and single_pass and not dropout_active(self.policy.model):
            return "first_forward", {}
        if mode == "engine" and self._engine_comparable(trajectories):
            from seedbench.training.logprob_check import sample_key, sampled_logprobs_by_ids

            table = sampled_logprobs_by_ids(trajectories)
            engine = [table.get(sample_key(s.prompt_ids, s.response_ids)) for s in samples]
            if all(e is not None and len(e) == len(s.response_ids) for e, s in zip(engine, samples)):
                return "engine", engine
        return "score", None

    def _engine_logprobs(self, samples, trajectories) -> list[list[float] | None]:
        """Each sample's engine log-probs for ``optim.rollout_is`` (None: not an unchanged rollout step)."""
        from seedbench.training.logprob_check import sample_key, sampled_logprobs_by_ids

        table = sampled_logprobs_by_ids(trajectories)
        found = [table.get(sample_key(s.prompt_ids, s.response_ids)) for s in samples]
        return [e if e is not None and len(e) == len(s.response_ids) else None for e, s in zip(found, samples)]

    def _engine_comparable(self, trajectories) -> bool:
        temperature = self.sampling.temperature
        return bool(trajectories) and temperature > 0 and self.sampling.top_p >= 1.0 \
            and self.context.score_temperature == temperature

    def _check_engine_old(self, mini: list[int], samples, current: dict[int, list[float]], trajectories):
        """The log-prob check on the first mini-batch: its forward ran with the pre-update weights."""
        from seedbench.training.logprob_check import check_train_samples

        return check_train_samples([samples[i] for i in mini], [current[i] for i in mini], trajectories,
                                   self.config.logprob_check_threshold)

    def _log_token_signals(self, samples: list[TrainSample], old_logp, trajectories) -> None:
        """Save the agent's per-token signals (`Agent.token_signals`) of the first
        ``token_signal_trajectories`` trajectories that have any, one ``token_signals.jsonl`` record per
        step: ``iteration``, ``episode_id``, ``step``, ``tokens`` (each response token decoded alone) and
        ``signals`` ({name: one value per token})."""
        limit = self.config.token_signal_trajectories
        if limit <= 0 or not trajectories:
            return
        signals = self.agent.token_signals(samples, old_logp)
        chosen: list[int] = []
        tokenizer = self.policy.tokenizer
        for sample, values in zip(samples, signals):
            if values is None:
                continue
            if sample.traj_index not in chosen:
                if len(chosen) >= limit:
                    continue
                chosen.append(sample.traj_index)
            traj = trajectories[sample.traj_index]
            step = next((s.step for s in traj.steps if list(s.response_ids) == list(sample.response_ids)), None)
            self.run_dir.log("token_signals.jsonl", {
                "iteration": self.counters["iteration"] + 1, "episode_id": traj.episode_id, "step": step,
                "tokens": [tokenizer.decode([t]) for t in sample.response_ids],
                "signals": {name: [round(float(v), 5) for v in vals] for name, vals in values.items()}})

    def _check_logprobs(self, samples, old_logp, trajectories) -> dict[str, float]:
        """Engine vs trainer log-probs of the sampled tokens; warns when they disagree (biased PPO ratios).

        Engines report log-probs of the sampling distribution (``logits / T``, before top-p), so the
        comparison runs whenever the trainer scores at that same temperature (`optim.score_temperature`
        ``sampling``, or T = 1) and sampling used no top-p truncation (then the engine's distribution is
        renormalised over the nucleus, which the trainer does not reproduce); greedy rollouts are skipped."""
        temperature = self.sampling.temperature
        if not trajectories or temperature <= 0 or self.sampling.top_p < 1.0 or self.context.score_temperature != temperature:
            return {}
        from seedbench.training.logprob_check import check_train_samples

        check = check_train_samples(samples, old_logp, trajectories, self.config.logprob_check_threshold)
        if check.tokens == 0:
            return {}
        if check.flagged:
            self._say(f"seedbench: WARNING iteration {self.counters['iteration'] + 1}: {check.message()}")
        return check.metrics()

    def _micro_batch(self, indices: list[int], samples: list[TrainSample], old_logp, ref_logp, want_entropy: bool,
                     update_info: dict[str, float] | None = None, minibatch_tokens: int = 0,
                     micro_batches: int = 1, engine_logp=None) -> MiniBatch:
        policy, cfg = self.policy, self.config.optim
        prompts = [samples[i].prompt_ids for i in indices]
        responses = [samples[i].response_ids for i in indices]
        logp, entropy, mask = forward_logprobs(policy.model, prompts, responses, policy.tokenizer.pad_token_id,
                                               policy.device, with_entropy=want_entropy, autocast=policy.autocast(),
                                               temperature=self.context.score_temperature,
                                               packing=self.config.optim.packing)

        def padded(rows):
            out = torch.zeros_like(mask)
            for r, values in enumerate(rows):
                out[r, : len(values)] = torch.tensor(values, dtype=out.dtype)
            return out

        extras = {}
        for key in samples[indices[0]].extras:
            extras[key] = padded([samples[i].extras[key] for i in indices])
        # optim.old_logprobs=first_forward: π_old = this forward, detached (one on-policy pass, ratio exactly 1)
        first_forward = isinstance(old_logp, dict) and any(i not in old_logp for i in indices)
        return MiniBatch(
            logp=logp, old_logp=logp.detach() if first_forward else padded([old_logp[i] for i in indices]), mask=mask,
            advantages=torch.tensor([samples[i].advantage for i in indices], dtype=torch.float32, device=mask.device),
            ref_logp=padded([ref_logp[i] for i in indices]) if ref_logp is not None else None,
            entropy=entropy, extras=extras, update_info=dict(update_info or {}),
            minibatch_tokens=minibatch_tokens, micro_batches=micro_batches, loss_agg_mode=cfg.loss_agg_mode,
            engine_logp=None if engine_logp is None else padded(
                [engine_logp[i] if engine_logp[i] is not None else [float("nan")] * len(samples[i].response_ids)
                 for i in indices]),
            rollout_is=cfg.rollout_is, rollout_is_cap=cfg.rollout_is_cap,
        )

    # -- evaluation -------------------------------------------------------------------------------
    def evaluate(self, splits: list[str] | None = None) -> dict[str, dict]:
        """Evaluate the current weights (`seedbench.training.evaluate.Evaluator`, shared with `seedbench eval`)
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
        ends with each split's record and episodes exactly once. Rank 0's view decides for every rank."""
        recorded = {r.get("split") for r in self.run_dir.records("eval.jsonl") if r.get("iteration") == iteration}
        missing = self.dist.broadcast_object([split for split in self.eval_tasks if split not in recorded])
        if not missing:
            return
        phases = {f"eval/{split}" for split in missing}
        self.run_dir.drop_records("episodes.jsonl",
                                  lambda r: r.get("iteration") == iteration and r.get("phase") in phases)
        self.evaluate(missing)

    # -- checkpoints and summary ------------------------------------------------------------------
    def save_checkpoint(self) -> Path | None:
        """Model, optimizer and state files, each written atomically; COMPLETE (with their sizes) last."""
        rng_ranks = self.dist.all_gather_object(_rng_state())  # [distributed] each rank's stream; rank 0 saves
        model_state = self.dist.model_state(self.policy.model)  # [distributed] fsdp: full tensors, on every rank
        optimizer_state = self.dist.optimizer_state(self.optimizer)
        if not self.dist.is_main:
            return None
        path = self.run_dir.new_checkpoint_dir(self.counters["iteration"])
        save_torch_atomic(dict(model_state), path / "model.pt")
        save_torch_atomic(optimizer_state, path / "optimizer.pt")
        state = {"counters": dict(self.counters), "rng": rng_ranks[0]}
        if len(rng_ranks) > 1:
            state["rng_ranks"] = rng_ranks
        save_torch_atomic(state, path / "state.pt")
        self.run_dir.finish_checkpoint(path, self.config.keep_checkpoints)
        return path

    def _load_checkpoint(self, path: Path) -> None:
        """Resume from checkpoint `path`, or, when one of its files is missing or damaged, from the newest
        earlier complete checkpoint (with a warning naming the file; the damaged one is marked DAMAGED)."""
        candidates = [path] + [p for p in self.run_dir.complete_checkpoints()
                               if int(p.name.split("_")[1]) < int(path.name.split("_")[1])]
        for candidate in candidates:
            try:
                problem = self.run_dir.checkpoint_problem(candidate)
                if problem is not None:
                    raise CheckpointFileError(problem)
                model = load_torch_file(candidate / "model.pt", map_location=self.policy.device)
                optimizer = load_torch_file(candidate / "optimizer.pt", map_location=self.policy.device)
                state = load_torch_file(candidate / "state.pt", weights_only=False)
            except CheckpointFileError as err:
                warnings.warn(f"checkpoint {candidate.name} is not usable: {err}; trying the one before it",
                              RunFileWarning, stacklevel=2)
                self.run_dir.set_aside_checkpoint(candidate, str(err))
                continue
            # [distributed] fsdp: each rank keeps its shard of the full tensors
            self.dist.load_model_state(self.policy.model, model)
            self.dist.load_optimizer_state(self.optimizer, optimizer)
            self.counters.update(state["counters"])
            _set_rng_state(self.dist.rng_state_of_rank(state))
            self.engine.sync_weights()
            self._say(f"seedbench: resumed {self.run_dir.path} from iteration {self.counters['iteration']}")
            return
        raise RunFileError(f"{self.run_dir.path}: no complete checkpoint can be loaded ({path.name} and every "
                           "earlier one is damaged, see the warnings); restore the files or start the run again "
                           "without --resume")

    def _say(self, line: str) -> None:
        """Print a console line once per run: under torchrun only rank 0 prints."""
        if self.dist.is_main:
            print(line, flush=True)

    def _write_summary(self, complete: bool) -> None:
        resources = self.resources.totals(self.dist.all_gather_object(self.resources.current()))
        if not self.dist.is_main:  # [distributed] only rank 0 writes the run directory
            return
        evals = self.run_dir.records("eval.jsonl")
        final = {}
        for record in evals:
            if record.get("iteration") == self.counters["iteration"]:
                for key in ("success_micro", "success_macro", "score"):
                    if key in record:
                        final[f"eval/{record['split']}/{key}"] = record[key]
        eval_ids = {}
        for record in evals:
            eval_ids.setdefault(record["split"], record.get("task_ids"))
        data = env_provenance(self.env)
        checksum = data["manifest_checksum"]
        if eval_ids:
            write_eval_tasks(self.run_dir.path, self.eval_tasks, eval_ids, data)
        timing = [r for r in self.run_dir.records("metrics.jsonl")]
        self.run_dir.update_summary(
            seedbench_version=__version__, git_hash=git_hash(), packages=package_versions(),
            model={"name": self.config.model.name, "source": self.policy.source, "checksum": self.policy.checksum,
                   "origin": self.model_origin},
            env=self.env_entry.alias, env_id=self.env_entry.env_id, agent=self.config.agent, seed=self.config.seed,
            iterations=self.config.iterations, iterations_done=self.counters["iteration"], complete=complete,
            counters=dict(self.counters),
            eval_tasks={split: [t.key() for t in tasks] for split, tasks in self.eval_tasks.items()},
            eval_task_ids=eval_ids, eval_task_hash={s: task_list_hash(v, checksum) for s, v in eval_ids.items() if v},
            protocol={"splits": list(self.eval_tasks), "num_tasks": self.config.eval.num_tasks,
                      "max_steps": self.max_steps, "temperature": self.config.eval.temperature,
                      "history_length": self.history_length, "data_checksum": checksum,
                      "data_source": data["data_source"]},
            data=data,
            final=final,
            before_after=self._before_after(),
            timing={"mean_iteration_s": float(np.mean([r["time/iteration_s"] for r in timing])) if timing else None},
            resources=resources,
        )

    def close(self) -> None:
        from seedbench.engines.factory import close_engine

        if getattr(self, "tracker", None) is not None:
            self.tracker.close()
            self.run_dir.observers.remove(self.tracker)
            self.tracker = None
        self.train_envs.close()
        self.evaluator.close()
        close_engine(self.engine)
        self.dist.close()


def dropout_active(model: Any) -> bool:
    """Whether a training-mode forward of `model` is random (a dropout module with p > 0, or attention
    dropout in the config), so that it differs from the eval-mode scoring pass."""
    config = getattr(model, "config", None)
    if float(getattr(config, "attention_dropout", 0.0) or 0.0) > 0:
        return True
    return any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())


def make_env_batch(config: RunConfig, alias: str, env: Any, num: int):
    """`num` envs of the run: a worker pool (``num_env_workers``; default one per CPU for envs that ask for
    ``worker_processes``) or in-process `LocalEnvs`. Training and evaluation (also `seedbench eval`) use it."""
    kwargs = dict(config.env_kwargs)
    from seedbench.envs.pool import EnvPool
    from seedbench.envs.processes import available_cpus

    workers = config.num_env_workers
    if workers is None:
        workers = available_cpus() if env.worker_processes else 0
    if workers > 0:
        return EnvPool((alias, kwargs), num_envs=num, num_workers=workers)
    return LocalEnvs(lambda: make_env(alias, **kwargs), num)


ROLLOUT_SCHEDULERS = ("auto", "lockstep", "continuous")


def choose_rollout(scheduler: str, engine: Any):
    """The rollout function for ``rollout.scheduler``: lock-step (`seedbench.rollout.lockstep`) or continuous
    (`seedbench.rollout.continuous`); ``auto`` = continuous exactly when `engine` takes single requests."""
    if scheduler not in ROLLOUT_SCHEDULERS:
        raise ConfigError(f"rollout.scheduler: unknown {scheduler!r}; choose one of {', '.join(ROLLOUT_SCHEDULERS)}")
    from seedbench.rollout import continuous as async_rollout, lockstep as rollout

    if scheduler == "continuous" or (scheduler == "auto" and async_rollout.supports_submit(engine)):
        return async_rollout.run_episodes
    return rollout.run_episodes


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


def _rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


@contextlib.contextmanager
def _rng_isolated(seed: int):
    """Evaluation draws from its own seeded stream and leaves the training RNG untouched, so inserting
    an evaluation does not change the training trajectory (and resume stays exact)."""
    saved = _rng_state()
    _seed_everything(seed)
    try:
        yield
    finally:
        _set_rng_state(saved)


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
