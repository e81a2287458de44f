"""The PPO-style update of one iteration: mini-batches of the prepared step samples, forward and backward
of their micro-batches, gradient sync, clipping and the optimizer step.

Where π_old comes from (``optim.old_logprobs``) is one strategy object (`seedbench.training.old_logprobs`);
the agent's loss (`Agent.loss`) is the only algorithm-specific step. Under several processes the
mini-batches are cut from the global sample list and the gradients summed over the ranks here, inside the
update and nowhere else (`SingleProcess.sample_layout`, ``training_module`` and ``backward_context``: DDP,
``all_reduce_grads``, ``sum_values``), so the step equals the one-process token-mean step on the same samples.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Callable

import torch

from seedbench.agents.base import MiniBatch, PreparedUpdate, TrainSample
from seedbench.models.scoring import forward_logprobs
from seedbench.progress import progress_bar
from seedbench.rollout.types import Trajectory
from seedbench.training.distributed import SingleProcess
from seedbench.training.old_logprobs import choose_old_logprobs, dropout_active  # noqa: F401 - re-exported
from seedbench.training.pass_clock import PassClock
from seedbench.training.logprob_check import check_train_samples, sample_key, sampled_logprobs_by_ids


@dataclass
class UpdateBatch:
    """One update's samples and what they were sampled from; `done` = iterations finished before it."""

    samples: list[TrainSample]
    trajectories: list[Trajectory]
    done: int

    @property
    def prompts(self) -> list[list[int]]:
        return [s.prompt_ids for s in self.samples]

    @property
    def responses(self) -> list[list[int]]:
        return [s.response_ids for s in self.samples]


class PolicyUpdate:
    """Owns the optimizer and applies updates to ``parts.policy`` (`__call__`: one iteration's update)."""

    def __init__(self, config, parts, parallel: SingleProcess, optimizer: torch.optim.Optimizer, run_dir,
                 say: Callable[[str], None]):
        self.config, self.parallel, self.optimizer, self.run_dir, self.say = config, parallel, optimizer, run_dir, say
        self.policy, self.context, self.agent = parts.policy, parts.context, parts.agent
        self.sampling, self.needs_reference = parts.sampling, parts.needs_reference
        self.clock = PassClock(self.policy.device)  # the current update's seconds per pass

    def __call__(self, prepared: PreparedUpdate, trajectories: list[Trajectory], done: int) -> dict[str, float]:
        """`optim.ppo_epochs` passes over the prepared samples in mini-batches of step samples. π_old comes
        from the `optim.old_logprobs` strategy, reference log-probs from a scoring pass under the frozen
        reference; the trainer's pre-update log-probs are checked against the engine's (`trajectories`).
        Returns the loss terms and checks, and the seconds of each pass (`seedbench.training.pass_clock`).
        An update without a response token on any rank (no samples, or every response empty: a one-token
        budget that sampled end-of-text) has nothing to learn from: it is skipped, no optimizer step, and
        says so (`skipped_update`)."""
        samples = prepared.samples
        self.clock = clock = PassClock(self.policy.device)
        # mini-batches are cut from the global sample list (all ranks' samples in rank order)
        layout = self.parallel.sample_layout([len(s.response_ids) for s in samples])
        if not any(layout.lengths):
            return skipped_update(len(layout.lengths))
        cfg, policy = self.config.optim, self.policy
        batch = UpdateBatch(samples, list(trajectories), done)
        num_minibatches = (len(layout.lengths) + cfg.mini_batch_size - 1) // cfg.mini_batch_size
        old = choose_old_logprobs(self, batch, single_pass=cfg.ppo_epochs * num_minibatches == 1)
        with clock.timed("old_logprobs"):
            old.before_update()
        ref_logp = None
        if self.needs_reference:
            with clock.timed("reference"), policy.reference() as ref_model:
                ref_logp = self.context.score(batch.prompts, batch.responses, model=ref_model)
        want_entropy = self.agent.config.entropy_coef > 0
        engine_logp = self._engine_logprobs(batch) if cfg.rollout_is != "off" else None
        totals: dict[str, float] = {}
        token_total, steps, grad_norm_sum = 0, 0, 0.0
        policy.model.train()
        order = list(range(len(layout.lengths)))
        rng = random.Random(self.config.seed * 1_000_003 + done)
        bar = progress_bar(total=cfg.ppo_epochs * num_minibatches, desc="update", unit="minibatch")
        for _ in range(cfg.ppo_epochs):
            rng.shuffle(order)
            for start in range(0, len(order), cfg.mini_batch_size):
                bar.update(1)
                global_mini = order[start : start + cfg.mini_batch_size]
                tokens = sum(layout.lengths[i] for i in global_mini)  # the global token-mean denominator
                if tokens == 0:
                    continue
                mini = layout.local(global_mini)  # this rank's members (all of them in one process)
                micro_batches = layout.micro_batches(global_mini, cfg.micro_batch_size)

                def run(mini=mini, tokens=tokens, micro_batches=micro_batches):
                    return self.mini_batch(mini, samples, old.logp, ref_logp, want_entropy, prepared.update_info,
                                           tokens, micro_batches, engine_logp)

                sums, current = old.after_mini_batch(mini, run(), first=not steps, rerun=run)
                for key, value in sums.items():
                    totals[key] = totals.get(key, 0.0) + value
                with clock.timed("step"):
                    self.parallel.all_reduce_grads(policy.model.parameters())  # the sum of the ranks' shares
                    grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip)
                    grad_norm_sum += float(grad_norm)
                    self.optimizer.step()
                steps += 1
                token_total += tokens
        bar.close()
        with clock.timed("old_logprobs"):
            old.after_update()
        totals = self.parallel.sum_values(totals)  # token sums of every rank
        out = {"train/grad_norm": grad_norm_sum / max(steps, 1), "train/old_logprobs_engine": float(old.from_engine),
               "train/samples": len(layout.lengths), "train/response_tokens": token_total, **old.check_metrics}
        out.update({k: v / max(token_total, 1) for k, v in totals.items()})
        return {**out, **clock.metrics()}

    def mini_batch(self, mini: list[int], samples, old_logp, ref_logp, want_entropy: bool, update_info,
                   tokens: int, micro_batches: int,
                   engine_logp=None) -> tuple[dict[str, float], dict[int, list[float]]]:
        """Forward and backward of one mini-batch's micro-batches (gradients accumulate; no optimizer step).
        Returns the token-summed loss and metrics and each sample's log-probs of this forward, detached."""
        cfg = self.config.optim
        self.optimizer.zero_grad(set_to_none=True)
        sums: dict[str, float] = {}
        current: dict[int, list[float]] = {}
        compute = self.policy.compute_copy()  # model.bf16_compute=param_copy: bf16 weights, no autocast
        if compute is not None:
            with self.clock.timed("casts"):
                compute.refresh()  # the weights of the last optimizer step, before this mini-batch's first forward
        # One autocast region around the mini-batch: autocast keeps its low-precision casts of the weights
        # until its outermost region exits, so every micro-batch's forward reuses the first one's (the
        # weights change only at the optimizer step, after this). Loss and backward run with autocast off.
        _, region = self.training_model()
        size = cfg.micro_batch_size
        with region:
            for chunk_start in range(0, len(mini), self.forward_batch_size):
                chunk = mini[chunk_start : chunk_start + self.forward_batch_size]
                # under ddp only this rank's last forward and backward of the mini-batch reduces gradients
                with self.parallel.backward_context(last=chunk_start + self.forward_batch_size >= len(mini)):
                    forward = self.forward(chunk, samples, want_entropy)
                    loss = None
                    for micro_start in range(0, len(chunk), size):
                        micro = chunk[micro_start : micro_start + size]
                        rows = forward.rows(micro_start, [len(samples[i].response_ids) for i in micro])
                        with self.clock.timed("loss"):
                            mb = self.loss_input(micro, rows, samples, old_logp, ref_logp, update_info,
                                                 minibatch_tokens=tokens, micro_batches=micro_batches,
                                                 engine_logp=engine_logp)
                            with self.policy.autocast_off():
                                loss_sum, metric_sums = self.agent.loss(mb)  # weighted for optim.loss_agg_mode
                        loss = loss_sum if loss is None else loss + loss_sum
                        sums["train/loss"] = sums.get("train/loss", 0.0) + float(loss_sum.detach())
                        for key, value in metric_sums.items():
                            sums[key] = sums.get(key, 0.0) + float(value)
                    with self.clock.timed("backward"), self.policy.autocast_off():
                        (loss / tokens).backward()
                if compute is not None:
                    with self.clock.timed("casts"):
                        compute.move_grads()  # into the fp32 master .grad, where clipping and AdamW find them
                logp = forward.logp.detach().float().cpu()
                for row, i in enumerate(chunk):
                    current[i] = logp[row, : len(samples[i].response_ids)].tolist()
        return sums, current

    @property
    def forward_batch_size(self) -> int:
        """Step samples per forward and backward of the loss passes (`optim.forward_batch_size`, a multiple
        of `optim.micro_batch_size`; empty = one micro-batch)."""
        cfg = self.config.optim
        return cfg.forward_batch_size or cfg.micro_batch_size

    def forward(self, indices: list[int], samples: list[TrainSample], want_entropy: bool) -> "_Forward":
        """One forward (with gradient) over samples `indices` in the update's layout."""
        prompts = [samples[i].prompt_ids for i in indices]
        responses = [samples[i].response_ids for i in indices]
        model, autocast = self.training_model()
        with self.clock.timed("forward"):
            logp, entropy, mask = forward_logprobs(model, prompts, responses, self.policy.tokenizer.pad_token_id,
                                                   self.policy.device, with_entropy=want_entropy, autocast=autocast,
                                                   temperature=self.context.score_temperature,
                                                   packing=self.config.optim.packing)
        return _Forward(logp, entropy, mask)

    def micro_batch(self, indices: list[int], samples: list[TrainSample], old_logp, ref_logp, want_entropy: bool,
                    update_info: dict[str, float] | None = None, minibatch_tokens: int = 0,
                    micro_batches: int = 1, engine_logp=None) -> MiniBatch:
        """The loss's input for samples `indices`, from a forward of their own."""
        forward = self.forward(indices, samples, want_entropy)
        return self.loss_input(indices, forward, samples, old_logp, ref_logp, update_info, minibatch_tokens,
                               micro_batches, engine_logp)

    def loss_input(self, indices: list[int], forward: "_Forward", samples: list[TrainSample], old_logp, ref_logp,
                   update_info: dict[str, float] | None = None, minibatch_tokens: int = 0,
                   micro_batches: int = 1, engine_logp=None) -> MiniBatch:
        """The loss's input for samples `indices`: their rows of a forward (log-probs with gradient) and the
        padded π_old, reference and engine log-probs, advantages and the agent's per-token extras."""
        cfg = self.config.optim
        logp, entropy, mask = forward.logp, forward.entropy, forward.mask

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

    def training_model(self):
        """(module, autocast region) of the update's forwards: the bf16 compute copy without autocast
        (``model.bf16_compute=param_copy``), else the master model under the policy's autocast."""
        compute = self.policy.compute_copy()
        if compute is None:
            return self.parallel.training_module(self.policy.model), self.policy.autocast()
        return self.parallel.training_module(compute.model, compute), contextlib.nullcontext()

    def score_current(self, prompts: list[list[int]], responses: list[list[int]]) -> list[list[float]]:
        """π_old: the current weights' log-probs, no grad, computed as the loss forwards compute them (on
        the refreshed compute copy where there is one, so that an unchanged policy's ratio is 1)."""
        return self.context.score(prompts, responses)

    def _engine_logprobs(self, batch: UpdateBatch) -> list[list[float] | None]:
        """Each sample's engine log-probs for ``optim.rollout_is`` (None: not an unchanged rollout step)."""
        table = sampled_logprobs_by_ids(batch.trajectories)
        found = [table.get(sample_key(s.prompt_ids, s.response_ids)) for s in batch.samples]
        return [e if e is not None and len(e) == len(s.response_ids) else None for e, s in zip(found, batch.samples)]

    # -- what the π_old strategies share --------------------------------------------------------
    def engine_comparable(self, batch: UpdateBatch) -> bool:
        """Whether the engine's sampled log-probs are comparable with the trainer's: engines report
        log-probs of the sampling distribution (``logits / T``, before top-p), so the trainer must score at
        that same temperature (`optim.score_temperature` ``sampling``, or T = 1) and sampling must have used
        no top-p truncation (then the engine's distribution is renormalised over the nucleus, which the
        trainer does not reproduce); greedy rollouts are never compared."""
        temperature = self.sampling.temperature
        return bool(batch.trajectories) and temperature > 0 and self.sampling.top_p >= 1.0 \
            and self.context.score_temperature == temperature

    def check_logprobs(self, batch: UpdateBatch, old_logp) -> dict[str, float]:
        """Engine vs trainer log-probs of the sampled tokens; warns when they disagree (biased PPO ratios)."""
        if not self.engine_comparable(batch):
            return {}
        check = check_train_samples(batch.samples, old_logp, batch.trajectories, self.config.logprob_check_threshold)
        if check.tokens == 0:
            return {}
        if check.flagged:
            self.say(f"seedbench: WARNING iteration {batch.done + 1}: {check.message()}")
        return check.metrics()

    def log_token_signals(self, batch: UpdateBatch, old_logp) -> None:
        """Save the agent's per-token signals (`Agent.token_signals`) of the first
        ``token_signal_trajectories`` trajectories that have any, one ``token_signals.jsonl`` record per
        step: ``iteration``, ``episode_id``, ``step``, ``tokens`` (each response token decoded alone) and
        ``signals`` ({name: one value per token})."""
        limit = self.config.token_signal_trajectories
        if limit <= 0 or not batch.trajectories:
            return
        signals = self.agent.token_signals(batch.samples, old_logp)
        chosen: list[int] = []
        tokenizer = self.policy.tokenizer
        for sample, values in zip(batch.samples, signals):
            if values is None:
                continue
            if sample.traj_index not in chosen:
                if len(chosen) >= limit:
                    continue
                chosen.append(sample.traj_index)
            traj = batch.trajectories[sample.traj_index]
            step = next((s.step for s in traj.steps if list(s.response_ids) == list(sample.response_ids)), None)
            self.run_dir.log("token_signals.jsonl", {
                "iteration": batch.done + 1, "episode_id": traj.episode_id, "step": step,
                "tokens": [tokenizer.decode([t]) for t in sample.response_ids],
                "signals": {name: [round(float(v), 5) for v in vals] for name, vals in values.items()}})


def skipped_update(samples: int) -> dict[str, float]:
    """The metrics of an update with no response token to learn from: zero loss, no step, flagged."""
    return {"train/loss": 0.0, "train/grad_norm": 0.0, "train/samples": samples, "train/response_tokens": 0,
            "train/update_skipped": 1.0}


@dataclass
class _Forward:
    """One forward's per-token log-probs [B, L], entropies (or None) and response mask."""

    logp: torch.Tensor
    entropy: torch.Tensor | None
    mask: torch.Tensor

    def rows(self, start: int, response_lengths: list[int]) -> "_Forward":
        """The rows from `start` of samples with these response lengths, cut to the longest: what a forward
        of those samples alone returns, so a micro-batch's loss does not depend on what shared its forward."""
        width = max(response_lengths)
        cut = slice(start, start + len(response_lengths))
        return _Forward(self.logp[cut, :width], None if self.entropy is None else self.entropy[cut, :width],
                        self.mask[cut, :width])
