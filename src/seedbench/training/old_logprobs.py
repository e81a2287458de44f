"""Where the update's π_old log-probs come from: one strategy per ``optim.old_logprobs`` value.

- ``score`` (`Scored`): a scoring pass with the pre-update weights before the first step.
- ``first_forward`` (`FirstForward`): the loss forward of the one and only pass, detached (ratio exactly
  1); needs a one-pass update and no active dropout, else the update scores.
- ``engine`` (`FromEngine`): the rollout engine's sampled log-probs; needs log-probs comparable with the
  trainer's and an unchanged rollout step for every sample, else the update scores. The first mini-batch's
  forward (pre-update weights) checks them; a flagged check re-runs that mini-batch on a scoring pass.

Every strategy checks the trainer's pre-update log-probs against the engine's (`PolicyUpdate.check_logprobs`)
and logs the agent's per-token signals with them, as soon as they are known. `update` is the
`seedbench.training.update.PolicyUpdate` running the update; `batch` its `UpdateBatch`.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from seedbench.training.logprob_check import check_train_samples, sample_key, sampled_logprobs_by_ids


class Scored:
    """``optim.old_logprobs=score``: π_old from a scoring pass before the first optimizer step."""

    from_engine = False

    def __init__(self, update, batch):
        self.update, self.batch = update, batch
        self.logp: Any = None  # per sample, its response's log-probs
        self.check_metrics: dict[str, float] = {}

    def before_update(self) -> None:
        self.logp = self.update.score_current(self.batch.prompts, self.batch.responses)
        self.update.log_token_signals(self.batch, self.logp)
        self.check_metrics = self.update.check_logprobs(self.batch, self.logp)

    def after_mini_batch(self, mini: list[int], result: tuple, first: bool, rerun: Callable[[], tuple]) -> tuple:
        """The mini-batch's (loss sums, this forward's log-probs), after its forward and backward."""
        return result

    def after_update(self) -> None:
        pass


class FirstForward(Scored):
    """``optim.old_logprobs=first_forward``: π_old is the loss forward itself (every forward of a one-pass
    update runs with the pre-update weights), filled in mini-batch by mini-batch."""

    def before_update(self) -> None:
        self.logp = {}  # `PolicyUpdate.micro_batch` takes a missing sample's π_old from its forward

    def after_mini_batch(self, mini, result, first, rerun):
        self.logp.update(result[1])
        return result

    def after_update(self) -> None:
        # a sample whose mini-batch had no token to train on had no forward: its (empty) response has none
        known = [self.logp.get(i, []) for i in range(len(self.batch.samples))]
        self.update.log_token_signals(self.batch, known)
        self.check_metrics = self.update.check_logprobs(self.batch, known)


class FromEngine(Scored):
    """``optim.old_logprobs=engine``: π_old = the engine's sampled log-probs (`engine`, one list per sample),
    checked on the first mini-batch; a flagged check falls back to a scoring pass for the whole update."""

    def __init__(self, update, batch, engine: list[list[float]]):
        super().__init__(update, batch)
        self.logp = engine
        self.from_engine = True

    def before_update(self) -> None:
        pass

    def after_mini_batch(self, mini, result, first, rerun):
        if not (first and self.from_engine):
            return result
        update, batch, current = self.update, self.batch, result[1]
        check = check_train_samples([batch.samples[i] for i in mini], [current[i] for i in mini], batch.trajectories,
                                    update.config.logprob_check_threshold)
        self.check_metrics = check.metrics()
        # Every rank decides together: a rank that re-ran its mini-batch alone would wait forever in the
        # gradient all-reduce the others had already left.
        flagged_ranks = update.parallel.sum_values({"flagged": float(check.flagged)})["flagged"]
        if not flagged_ranks:
            return result
        why = check.message() if check.flagged else "another rank's check was flagged"
        update.say(f"seedbench: WARNING iteration {batch.done + 1}: {why}; "
                   "optim.old_logprobs=engine falls back to a scoring pass")
        self.logp, self.from_engine = update.score_current(batch.prompts, batch.responses), False  # not stepped yet
        update.policy.model.train()
        return rerun()

    def after_update(self) -> None:
        if self.from_engine:  # the engine's log-probs: signals logged once the check has passed
            self.update.log_token_signals(self.batch, [self.logp[i] for i in range(len(self.batch.samples))])


def choose_old_logprobs(update, batch, single_pass: bool) -> Scored:
    """The strategy for ``optim.old_logprobs``, or `Scored` where the chosen one cannot apply to this update."""
    mode = update.config.optim.old_logprobs
    if mode == "first_forward" and single_pass and not dropout_active(update.policy.model):
        return FirstForward(update, batch)
    if mode == "engine":
        engine, usable = None, False
        if update.engine_comparable(batch):
            table = sampled_logprobs_by_ids(batch.trajectories)
            engine = [table.get(sample_key(s.prompt_ids, s.response_ids)) for s in batch.samples]
            usable = all(e is not None and len(e) == len(s.response_ids) for e, s in zip(engine, batch.samples))
        # Every rank takes the same strategy: FromEngine's check is a collective.
        if not update.parallel.sum_values({"unusable": float(not usable)})["unusable"]:
            return FromEngine(update, batch, engine)
    return Scored(update, batch)


def dropout_active(model: Any) -> bool:
    """Whether a training-mode forward of `model` is random (a dropout module with p > 0, or attention
    dropout in the config), so that it differs from the eval-mode scoring pass."""
    config = getattr(model, "config", None)
    if float(getattr(config, "attention_dropout", 0.0) or 0.0) > 0:
        return True
    return any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
