"""GRPO for multi-turn agents (docs/method.md §2), the baseline every other agent extends.

One update: the trainer rolls out B tasks × N episodes; `prepare` turns trajectories into step samples
with a group-normalised episode advantage (``ADVANTAGE_FNS[algo.adv_norm]``); `loss` is the registered
policy-gradient term (``POLICY_LOSSES[algo.policy_loss]``, dual-clip PPO) + β_KL·KL(k3) − entropy bonus, summed
over response tokens with the weights of ``optim.loss_agg_mode`` (default: the reference's token mean per
micro-batch ÷ accumulation steps; `seedbench.agents.losses.loss_token_weights`).

Subclasses override only what differs: SEED adds a skill re-scoring pass in `prepare` and an extra term
in `loss`; GiGPO changes `advantages`. Nothing here knows about a specific env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import torch

from seedbench.agents.base import Agent, AgentConfig, AgentContext, MiniBatch, PreparedUpdate, TrainSample
from seedbench.config import NonNegative, Positive, Range, UnitInterval
from seedbench.agents.losses import ADVANTAGE_FNS, POLICY_LOSSES, TokenInputs, kl_k3, policy_loss, truncated_is_weights


@dataclass
class GRPOConfig(AgentConfig):
    kl_coef: NonNegative = 0.01
    """β_KL to the frozen reference (Search-QA: 0.001)."""
    entropy_coef: NonNegative = 0.001
    """Weight of the entropy bonus (reference code: 0.001)."""
    clip_eps: UnitInterval = 0.2
    """PPO clip range ε: the ratio is clipped to [1 − ε, 1 + ε] (reference code: 0.2)."""
    clip_ratio_c: Annotated[float, Range(1, low_open=True)] | None = 3.0
    """Dual-clip bound for negative advantages (reference code: 3); None = plain PPO-clip."""
    adv_norm: Literal["step", "step_mean_only", "trajectory", "trajectory_mean_only"] = "step"
    """``step`` (reference code, default: group mean/std over step samples, each invalid step penalised
    alone), ``step_mean_only`` (reference code for WebShop), ``trajectory`` / ``trajectory_mean_only``
    (seedbench options: statistics over episodes, an invalid step lowers its whole episode)."""
    adv_eps: Positive = 1e-6
    """Added to the group std before dividing (verl: 1e-6), so an all-equal group gives advantages 0."""
    pg_coef: NonNegative = 1.0
    """Weight of the PPO policy-gradient term (0 isolates other terms, e.g. SEED's distillation)."""
    policy_loss: str = "dual_clip"
    """The policy-gradient term, a `seedbench.agents.losses.POLICY_LOSSES` name of kind ``policy_gradient``
    that needs no teacher: ``dual_clip`` (reference code: verl ``compute_policy_loss``; ``clip_ratio_c``
    None makes it plain PPO-clip) or ``ppo_clip``; its parameters come from this config."""


class GRPOAgent(Agent):
    name = "grpo"
    Config = GRPOConfig

    def __init__(self, config: GRPOConfig, context: AgentContext):
        if config.adv_norm not in ADVANTAGE_FNS:
            raise ValueError(f"algo.adv_norm: unknown {config.adv_norm!r}; choose one of {sorted(ADVANTAGE_FNS)}")
        usable = sorted(name for name, loss in POLICY_LOSSES.items()
                        if loss.kind == "policy_gradient" and set(loss.needs) <= {"old_logp", "advantages"})
        if config.policy_loss not in usable:
            raise ValueError(f"algo.policy_loss: unknown {config.policy_loss!r}; choose one of {usable}")
        super().__init__(config, context)  # context: policy, engine, env, run dir, scoring

    def advantages(self, trajectories: list, rewards: list[float]) -> list[TrainSample]:
        """Step samples with the group-normalised advantage of their episode. Each invalid step lowers its
        sample's score (and its episode's) by the invalid-action penalty."""
        penalty = self.invalid_penalty()
        scores, sample_traj, samples = [], [], []
        for t, traj in enumerate(trajectories):
            for step in traj.steps:
                scores.append(rewards[t] - (0.0 if step.action_valid else penalty))
                sample_traj.append(t)
                samples.append(TrainSample(step.prompt_ids, step.response_ids, 0.0, t))
        if not samples:
            return []
        traj_scores = [rewards[t] - penalty * traj.num_invalid for t, traj in enumerate(trajectories)]
        advantages = ADVANTAGE_FNS[self.config.adv_norm](
            torch.tensor(scores, dtype=torch.float64),
            torch.tensor(traj_scores, dtype=torch.float64),
            torch.tensor([traj.group_id for traj in trajectories]),
            torch.tensor(sample_traj),
            eps=self.config.adv_eps,
        )
        for sample, advantage in zip(samples, advantages.tolist()):
            sample.advantage = advantage
        return samples

    def prepare(self, trajectories: list, rewards: list[float], iteration: int) -> PreparedUpdate:
        samples = self.advantages(trajectories, rewards)
        adv = [s.advantage for s in samples]
        return PreparedUpdate(samples, {"train/advantage_abs_mean": sum(abs(a) for a in adv) / max(len(adv), 1)})

    def loss(self, mb: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The micro-batch's loss, each term summed with `MiniBatch.loss_weight` (``optim.loss_agg_mode``, as
        verl aggregates every term with one ``loss_agg_mode``), and token-summed metrics. With
        ``optim.rollout_is`` the PPO term of each token is multiplied by its truncated importance weight."""
        cfg = self.config
        weight = mb.loss_weight
        pg = policy_loss(cfg.policy_loss).from_config(TokenInputs(mb.logp, mb.old_logp, mb.advantages), cfg)
        pg_tokens = pg.tokens
        metrics = {"train/pg_loss": (pg_tokens * mb.mask).sum().detach(),
                   "train/clip_frac": (pg.stats["clipped"] * mb.mask).sum()}
        if mb.rollout_is != "off" and mb.engine_logp is not None:
            is_weights, stats = truncated_is_weights(mb.old_logp, mb.engine_logp, mb.mask, mb.rollout_is,
                                                     mb.rollout_is_cap)
            pg_tokens = pg_tokens * is_weights
            metrics.update({f"train/rollout_is_{name}": value.detach() for name, value in stats.items()})
        loss = cfg.pg_coef * (pg_tokens * weight).sum()
        if mb.ref_logp is not None and cfg.kl_coef > 0:
            kl_tokens = kl_k3(mb.logp, mb.ref_logp)
            loss = loss + cfg.kl_coef * (kl_tokens * weight).sum()
            metrics["train/kl"] = (kl_tokens * mb.mask).sum().detach()
        if mb.entropy is not None:
            loss = loss - cfg.entropy_coef * (mb.entropy * weight).sum()
            metrics["train/entropy"] = (mb.entropy * mb.mask).sum().detach()
        return loss, metrics
