"""Pure advantage and loss functions, registered by name (verl `core_algos` style).

Shapes: ``S`` = step samples, ``T`` = trajectories, ``B×L`` = padded response tokens with a 0/1 ``mask``.
Losses return *token sums*; the trainer divides by the token count of the whole mini-batch, which is
the token-mean aggregation of SEED_METHOD §2 across gradient-accumulation micro-batches.
"""

from __future__ import annotations

from typing import Callable

import torch

ADVANTAGE_FNS: dict[str, Callable[..., torch.Tensor]] = {}


def register_advantage(name: str):
    def wrap(fn):
        ADVANTAGE_FNS[name] = fn
        return fn

    return wrap


def _group_stats(values: torch.Tensor, groups: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-element mean and (unbiased) std of its group. A group of one gets mean 0, std 1 (verl)."""
    mean = torch.zeros_like(values)
    std = torch.ones_like(values)
    for group in groups.unique():
        members = groups == group
        if members.sum() > 1:
            mean[members] = values[members].mean()
            std[members] = values[members].std()
    return mean, std


@register_advantage("trajectory")
def trajectory_normalized(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """GRPO (SEED_METHOD §2), seedbench default: ``A_n = (R_n − mean_q) / (std_q + eps)`` over the group's
    trajectories (each episode counts once), broadcast to every step sample of trajectory n.

    sample_scores: [S] per-sample score (episode reward minus that step's invalid penalty);
    traj_scores: [T] episode reward minus the penalties of all its invalid steps; traj_groups: [T] group
    id of each trajectory; sample_traj: [S] trajectory index of each sample. Returns [S]."""
    mean, std = _group_stats(traj_scores, traj_groups)
    return ((traj_scores - mean) / (std + eps))[sample_traj]


@register_advantage("step")
def step_normalized(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """Reference-code (verl-agent) variant: statistics over all *step samples* of the group, each sample
    normalised with its own score (long trajectories weigh more; invalid steps get their own penalty)."""
    mean, std = _group_stats(sample_scores, traj_groups[sample_traj])
    return (sample_scores - mean) / (std + eps)


@register_advantage("mean_only")
def mean_only(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """WebShop variant of the reference code: subtract the group mean, no std division."""
    mean, _ = _group_stats(traj_scores, traj_groups)
    return (traj_scores - mean)[sample_traj]


def ppo_clip_loss(logp, old_logp, advantages, mask, clip_eps=0.2):
    """PPO clipped surrogate, summed over tokens. advantages: [B] (broadcast) or [B, L].

    Returns (loss_sum, clipped_token_count)."""
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1)
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    loss = -torch.minimum(unclipped, clipped)
    clip_count = ((unclipped > clipped).float() * mask).sum()
    return (loss * mask).sum(), clip_count


def kl_k3(logp, ref_logp):
    """Schulman's k3 estimator of KL(π‖π_ref) per token ("low_var_kl" in verl): r − log r − 1 with
    r = π_ref/π; non-negative, unbiased, low variance. Clamped like verl for stability."""
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(log_ratio) - log_ratio - 1.0).clamp(max=10.0)
