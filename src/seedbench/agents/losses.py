"""Pure advantage and loss functions, registered by name (verl `core_algos` style).

Shapes: ``S`` = step samples, ``T`` = trajectories, ``B×L`` = padded response tokens with a 0/1 ``mask``.
Losses return *token sums*; the trainer divides by the token count of the whole mini-batch, which is
the token-mean aggregation of docs/method.md §2 across gradient-accumulation micro-batches.
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


@register_advantage("step")
def step_normalized(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """GRPO as the reference code computes it (verl-agent ``compute_grpo_outcome_advantage`` with
    statistics across steps), seedbench's default: every step sample of a group is one score,
    ``s_i = R_episode − penalty·[step i invalid]``, and ``A_i = (s_i − mean_g) / (std_g + eps)`` with the
    mean and (unbiased) std over all *step samples* of the group, so long episodes weigh more.

    sample_scores: [S]; traj_scores: [T] (unused here); traj_groups: [T] group id of each trajectory;
    sample_traj: [S] trajectory index of each sample. Returns [S]."""
    mean, std = _group_stats(sample_scores, traj_groups[sample_traj])
    return (sample_scores - mean) / (std + eps)


@register_advantage("step_mean_only")
def step_mean_only(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """The reference code's WebShop setting: ``A_i = s_i − mean_g`` over the group's step samples, no std
    division."""
    mean, _ = _group_stats(sample_scores, traj_groups[sample_traj])
    return sample_scores - mean


@register_advantage("trajectory")
def trajectory_normalized(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """seedbench option (not the reference): ``A_n = (R_n − mean_q) / (std_q + eps)`` over the group's
    *trajectories* (each episode counts once), broadcast to every step sample of trajectory n.

    traj_scores: [T] episode reward minus the penalties of *all* its invalid steps, so one invalid step
    lowers every step of its episode. Returns [S]."""
    mean, std = _group_stats(traj_scores, traj_groups)
    return ((traj_scores - mean) / (std + eps))[sample_traj]


@register_advantage("trajectory_mean_only")
def trajectory_mean_only(sample_scores, traj_scores, traj_groups, sample_traj, eps=1e-6):
    """seedbench option: subtract the group mean over trajectories, no std division."""
    mean, _ = _group_stats(traj_scores, traj_groups)
    return (traj_scores - mean)[sample_traj]


def ppo_clip_loss(logp, old_logp, advantages, mask, clip_eps=0.2, clip_ratio_c=3.0):
    """Dual-clip PPO surrogate, summed over tokens. advantages: [B] (broadcast) or [B, L].

    ``−min(r·A, clip(r, 1−ε, 1+ε)·A)`` and, for negative advantages, at most ``−c·A`` (Ye et al. 2020,
    dual clip; verl ``compute_policy_loss`` with ``clip_ratio_c = 3``), so a token whose ratio has grown
    far beyond the trust region cannot push an unbounded loss. ``clip_ratio_c=None`` is plain PPO-clip.

    Returns (loss_sum, clipped_token_count); the count includes tokens capped by the dual clip."""
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1)
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    loss = -torch.minimum(unclipped, clipped)
    clipped_tokens = unclipped > clipped
    if clip_ratio_c is not None:
        if clip_ratio_c <= 1.0:
            raise ValueError(f"algo.clip_ratio_c must be > 1 (reference: 3), got {clip_ratio_c}")
        cap = -clip_ratio_c * adv
        capped = (adv < 0) & (loss > cap)
        loss = torch.where(capped, cap.expand_as(loss), loss)
        clipped_tokens = clipped_tokens | capped
    clip_count = (clipped_tokens.float() * mask).sum()
    return (loss * mask).sum(), clip_count


def kl_k3(logp, ref_logp):
    """Schulman's k3 estimator of KL(π‖π_ref) per token ("low_var_kl" in verl): r − log r − 1 with
    r = π_ref/π; non-negative, unbiased, low variance. Clamped like verl for stability."""
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(log_ratio) - log_ratio - 1.0).clamp(max=10.0)
