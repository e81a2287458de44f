"""``optim.loss_agg_mode`` and ``optim.rollout_is``: the per-token weights by hand, then the trainer's update.

Hand-computed batch for the aggregation modes: one mini-batch of two micro-batches (K = 2, 6 tokens),
micro-batch 1 holds responses of 1 and 3 tokens with per-token losses [1] and [2, 3, 4], micro-batch 2 one
response of 2 tokens with losses [5, 6]:

- token-mean (reference): ((1+2+3+4)/4 + (5+6)/2) / 2 = (2.5 + 5.5) / 2 = 4.0
- global-token-mean: 21 / 6 = 3.5
- seq-mean-token-mean: ((1 + 9/3)/2 + 11/2) / 2 = (2 + 5.5) / 2 = 3.75
- seq-mean-token-sum: ((1 + 9)/2 + 11/1) / 2 = (5 + 11) / 2 = 8.0
"""

import copy
import math

import pytest
import torch

from seedbench.agents.base import MiniBatch, PreparedUpdate, TrainSample
from seedbench.agents.losses import LOSS_AGG_MODES, loss_token_weights, truncated_is_weights
from seedbench.config import ConfigError, build_config
from seedbench.training.trainer import Trainer

MICRO_1 = (torch.tensor([[1.0, 0.0, 0.0], [2.0, 3.0, 4.0]]), torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
MICRO_2 = (torch.tensor([[5.0, 6.0]]), torch.tensor([[1.0, 1.0]]))
EXPECTED = {"token-mean": 4.0, "global-token-mean": 3.5, "seq-mean-token-mean": 3.75, "seq-mean-token-sum": 8.0}


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
def test_each_aggregation_mode_by_hand(mode):
    total = 0.0
    for losses, mask in (MICRO_1, MICRO_2):
        total += float((loss_token_weights(mask, mode, minibatch_tokens=6, micro_batches=2) * losses).sum()) / 6
    assert total == pytest.approx(EXPECTED[mode])


def test_token_mean_and_global_token_mean_agree_on_equal_micro_batches():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # 3 tokens in each of K = 2 micro-batches
    assert torch.equal(loss_token_weights(mask, "token-mean", 6, 2), loss_token_weights(mask, "global-token-mean", 6, 2))
    assert torch.equal(loss_token_weights(mask, "token-mean", 6, 2), mask)


def test_a_micro_batch_alone_is_the_old_token_sum_and_unknown_modes_are_named():
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    mb = MiniBatch(logp=torch.zeros(1, 3), old_logp=torch.zeros(1, 3), mask=mask, advantages=torch.ones(1))
    assert torch.equal(mb.loss_weight, mask)  # its own token count, one micro-batch: weight 1
    with pytest.raises(ValueError, match="global-token-mean"):
        loss_token_weights(mask, "sum", 2, 1)


def test_truncated_importance_weights_by_hand():
    """Row 0: log-ratios old − engine = +0.5, −1.0; row 1: +2.0; row 2: engine unknown (weight 1)."""
    old = torch.tensor([[-1.0, -2.0], [-1.0, 0.0], [-0.3, -0.4]])
    engine = torch.tensor([[-1.5, -1.0], [-3.0, 0.0], [float("nan"), float("nan")]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    weights, stats = truncated_is_weights(old, engine, mask, "token", cap=1.5)
    e = math.exp
    assert weights[0].tolist() == pytest.approx([1.5, e(-1.0)])  # e^0.5 = 1.6487 capped at 1.5; e^-1 = 0.3679
    assert weights[1, 0].item() == pytest.approx(1.5) and weights[2].tolist() == [1.0, 1.0]  # e^2 capped
    assert stats["ratio"].item() == pytest.approx(e(0.5) + e(-1.0) + e(2.0) + 2.0)
    assert stats["weight"].item() == pytest.approx(1.5 + e(-1.0) + 1.5 + 2.0)
    assert stats["capped"].item() == 2.0 and stats["log_ratio_abs"].item() == pytest.approx(3.5)
    weights, stats = truncated_is_weights(old, engine, mask, "sequence", cap=1.5)
    assert weights[0].tolist() == pytest.approx([e(-0.5)] * 2)  # Σ = 0.5 − 1.0 = −0.5: 0.6065 on both tokens
    assert weights[1, 0].item() == pytest.approx(1.5) and stats["capped"].item() == 1.0


# -- the trainer ------------------------------------------------------------------------------------------


def _trainer(tmp_path, name, algo=None, **optim):
    config = build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / name),
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2}, "algo": algo or {},
        "optim": {"mini_batch_size": 64, "micro_batch_size": 2, "grad_clip": 1e9, **optim}, "eval": {"num_tasks": 1}})
    return Trainer(config)


def _grads(trainer, prepared, trajectories=(), **optim):
    """One update with the optimizer step replaced by a capture of the gradients (weights stay put)."""
    for key, value in optim.items():
        setattr(trainer.config.optim, key, value)
    grads = {}
    trainer.optimizer.step = lambda *a, **k: grads.update(
        {n: p.grad.detach().clone() for n, p in trainer.policy.model.named_parameters() if p.grad is not None})
    try:
        metrics = trainer.update(copy.deepcopy(prepared), list(trajectories))
    finally:
        del trainer.optimizer.step
    return metrics, torch.cat([g.flatten() for _, g in sorted(grads.items())])


def _samples(lengths):
    return PreparedUpdate([TrainSample([5 + i, 9, 11], [20 + i + j for j in range(n)], [1.0, -1.0, 0.5, -0.5][i], i)
                           for i, n in enumerate(lengths)])


def test_the_default_differs_from_the_global_token_mean_only_on_unequal_micro_batches(tmp_path):
    trainer = _trainer(tmp_path, "agg")
    equal = _samples([2, 2, 2, 2])  # every micro-batch of two holds 4 tokens, whatever the shuffle
    _, reference = _grads(trainer, equal, loss_agg_mode="token-mean")
    _, global_mean = _grads(trainer, equal, loss_agg_mode="global-token-mean")
    assert reference.abs().max() > 1e-4 and (reference - global_mean).abs().max() < 1e-6
    unequal = _samples([1, 5, 2, 4])
    _, reference = _grads(trainer, unequal, loss_agg_mode="token-mean")
    _, global_mean = _grads(trainer, unequal, loss_agg_mode="global-token-mean")
    cosine = float(torch.nn.functional.cosine_similarity(reference, global_mean, dim=0))
    assert cosine < 0.999 and (reference - global_mean).abs().max() > 1e-4
    trainer.close()


def test_rollout_is_scales_the_policy_gradient_by_the_capped_ratio(tmp_path):
    """The engine's log-probs lowered by 0.5 nats per token: ratio π_old/π_engine = e^0.5 = 1.6487 on every
    token, so with only the PG term the token-level gradient is 1.6487 × the uncorrected one; with cap 1.5
    every token is capped and the gradient is 1.5 × it."""
    trainer = _trainer(tmp_path, "tis", algo={"kl_coef": 0.0, "entropy_coef": 0.0}, rollout_is="token")
    trajectories, _ = trainer.run_episodes(
        trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer, trainer._train_tasks(1),
        group_size=2, params=trainer.sampling, history_length=trainer.history_length, max_steps=trainer.max_steps,
        episode_prefix="t-", transform_prompt=trainer.agent.transform_prompt)
    prepared = trainer.agent.prepare(trajectories, [0.0] * len(trajectories), 1)
    for index, sample in enumerate(prepared.samples):
        sample.advantage = [1.0, -1.0, 0.5, -0.5][index % 4]
    metrics, agreeing = _grads(trainer, prepared, trajectories)
    assert metrics["train/rollout_is_ratio"] == pytest.approx(1.0, abs=1e-4)  # fp32 engine = trainer
    assert metrics["train/rollout_is_capped"] == 0.0
    off_metrics, plain = _grads(trainer, prepared, trajectories, rollout_is="off")
    assert "train/rollout_is_ratio" not in off_metrics and (agreeing - plain).abs().max() < 1e-5
    biased = copy.deepcopy(trajectories)
    for traj in biased:
        for step in traj.steps:
            step.sampled_logprobs = [x - 0.5 for x in step.sampled_logprobs]
    metrics, corrected = _grads(trainer, prepared, biased, rollout_is="token", rollout_is_cap=2.0)
    assert metrics["train/rollout_is_ratio"] == pytest.approx(math.exp(0.5), rel=1e-4)
    assert metrics["train/rollout_is_log_ratio_abs"] == pytest.approx(0.5, rel=1e-4)
    assert torch.allclose(corrected, math.exp(0.5) * plain, rtol=1e-3, atol=1e-6)
    metrics, capped = _grads(trainer, prepared, biased, rollout_is="token", rollout_is_cap=1.5)
    assert metrics["train/rollout_is_capped"] == 1.0 and metrics["train/rollout_is_weight"] == pytest.approx(1.5)
    assert torch.allclose(capped, 1.5 * plain, rtol=1e-3, atol=1e-6)
    trainer.close()


def test_rollout_is_refuses_settings_without_comparable_engine_logprobs(tmp_path):
    with pytest.raises(ConfigError, match="old_logprobs"):
        _trainer(tmp_path, "bad1", rollout_is="token", old_logprobs="engine")
    with pytest.raises(ConfigError, match="top_p"):
        build_config(overrides={"env": "choice", "agent": "grpo", "model": {"name": "tiny"},
                                "rollout": {"top_p": 0.9}, "optim": {"rollout_is": "sequence"}})
