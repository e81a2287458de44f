"""Every loss of seedbench's agents: pure functions registered by name (verl's ``core_algos.py``), which
GRPO, GiGPO, SEED and the distillation family all build on; the config picks one by its name.

- ``ADVANTAGE_FNS`` (`register_advantage`): the group advantage of a step sample (``algo.adv_norm``), and
  beside it GiGPO's step-level advantage (`anchor_step_advantages`);
- ``POLICY_LOSSES`` (`register_policy_loss`): per-token policy terms, each a function of one `TokenInputs`
  returning a `TokenLoss`: the policy-gradient terms ``dual_clip`` and ``ppo_clip`` (``algo.policy_loss``;
  ``rlsd`` for the family) and the distillation terms ``gated_opd`` (SEED's and SDAR's gated OPD) and ``sdl``
  (``algo.distill_loss``);
- the terms every agent adds the same way: `kl_k3`, `truncated_is_weights`, and the aggregation weights of
  `loss_token_weights`.

A new loss is one function and its decorator line. A second registration under a taken name is an error,
so a plugin cannot silently replace a built-in.

Shapes: ``S`` = step samples, ``T`` = trajectories, ``B×L`` = padded response tokens with a 0/1 ``mask``.
Losses return *weighted token sums*: the trainer divides every sum by the token count of the whole
mini-batch, and `loss_token_weights` chooses per-token weights so that this division yields the
aggregation ``optim.loss_agg_mode`` names (docs/method.md §2): by default the reference rule, a token mean
per micro-batch divided by the number of gradient-accumulation micro-batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

import torch

ADVANTAGE_FNS: dict[str, Callable[..., torch.Tensor]] = {}


class DuplicateAdvantageError(ValueError):
    """An advantage function registered under a name another one already holds."""


def register_advantage(name: str):
    """Decorator: register an advantage function under `name`; a taken name raises (nothing is silently
    replaced). The per-token policy losses are `POLICY_LOSSES` (`register_policy_loss`)."""

    def wrap(fn):
        if name in ADVANTAGE_FNS:
            raise DuplicateAdvantageError(f"advantage {name!r} is already registered ({ADVANTAGE_FNS[name].__name__})")
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


STEP_NORMS = ("std", "mean_only")
"""GiGPO's step-level normalisation: divide by the anchor group's std, or only subtract its mean."""


def anchor_step_advantages(returns: torch.Tensor, anchor_ids: torch.Tensor, eps: float = 1e-6,
                           norm: str = "std") -> torch.Tensor:
    """GiGPO's step-level relative advantage (Eq. 7; verl-agent ``compute_step_discounted_returns`` and
    ``step_norm_reward``): each step's return minus its anchor group's mean, divided by the group's
    (unbiased) std + eps when ``norm="std"``. A group of one gets 0.

    returns: [S] discounted return of each step sample; anchor_ids: [S] anchor group of each sample
    (same task group *and* identical observation). Returns [S]."""
    if norm not in STEP_NORMS:
        raise ValueError(f"step norm: unknown {norm!r}; choose one of {STEP_NORMS}")
    advantages = torch.zeros_like(returns)
    for anchor in anchor_ids.unique():
        members = anchor_ids == anchor
        if members.sum() < 2:
            continue
        values = returns[members]
        centred = values - values.mean()
        advantages[members] = centred / (values.std() + eps) if norm == "std" else centred
    return advantages


LOSS_AGG_MODES = ("token-mean", "global-token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
"""``optim.loss_agg_mode`` values; the first is the default (verl's ``loss_agg_mode`` names, plus the global
token mean, which verl does not offer)."""


def loss_token_weights(mask: torch.Tensor, mode: str, minibatch_tokens: int, micro_batches: int) -> torch.Tensor:
    """Per-token weights [B, L] for one micro-batch, such that ``Σ w·ℓ / minibatch_tokens`` (the trainer's
    division) is this micro-batch's share of the mini-batch loss under `mode`. With ``K`` =
    `micro_batches`, ``n`` = this micro-batch's tokens, ``B`` its rows, ``n_i`` row i's tokens:

    - ``token-mean`` (reference code, verl-agent's actor): ``Σ ℓ / n / K``, the token mean of each
      micro-batch, averaged over the accumulation steps; a token of a short micro-batch weighs more;
    - ``global-token-mean``: ``Σ ℓ / minibatch_tokens``, every token of the mini-batch weighs the same
      whatever the micro-batch split (DAPO's token-level loss); weight 1;
    - ``seq-mean-token-mean``: ``Σ_i (Σ_t ℓ_it / n_i) / B / K``, each sequence's token mean, averaged
      over sequences (the GRPO paper's sample-level loss);
    - ``seq-mean-token-sum``: ``Σ_i Σ_t ℓ_it / B / K``, each sequence's token sum, averaged over
      sequences (long responses weigh more).

    ``token-mean`` and ``global-token-mean`` agree when every micro-batch has the same token count. A
    row without tokens contributes nothing (its ``n_i`` is taken as 1)."""
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"optim.loss_agg_mode: unknown {mode!r}; choose one of {', '.join(LOSS_AGG_MODES)}")
    mask = mask.float()
    if mode == "global-token-mean":
        return mask
    scale = float(minibatch_tokens) / max(int(micro_batches), 1)
    if mode == "token-mean":
        return mask * (scale / max(float(mask.sum()), 1.0))
    rows = max(mask.shape[0], 1)
    if mode == "seq-mean-token-sum":
        return mask * (scale / rows)
    row_tokens = mask.sum(dim=-1, keepdim=True).clamp(min=1.0)
    return mask * (scale / rows) / row_tokens


def ppo_clip_token_loss(logp, old_logp, advantages, clip_eps=0.2, clip_ratio_c=3.0):
    """Dual-clip PPO surrogate per token: (loss [B, L], clipped [B, L] bool). advantages: [B] (broadcast)
    or [B, L].

    ``−min(r·A, clip(r, 1−ε, 1+ε)·A)`` and, for negative advantages, at most ``−c·A`` (Ye et al. 2020,
    dual clip; verl ``compute_policy_loss`` with ``clip_ratio_c = 3``), so a token whose ratio has grown
    far beyond the trust region cannot push an unbounded loss. ``clip_ratio_c=None`` is plain PPO-clip.
    `clipped` includes tokens capped by the dual clip."""
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
    return loss, clipped_tokens


def ppo_clip_loss(logp, old_logp, advantages, mask, clip_eps=0.2, clip_ratio_c=3.0):
    """`ppo_clip_token_loss` summed over the tokens of `mask`: (loss_sum, clipped_token_count)."""
    loss, clipped = ppo_clip_token_loss(logp, old_logp, advantages, clip_eps, clip_ratio_c)
    return (loss * mask).sum(), (clipped.float() * mask).sum()


ROLLOUT_IS_LEVELS = ("off", "token", "sequence")
"""``optim.rollout_is`` values: no correction (default, as the reference code), or truncated importance
sampling on the engine's sampled log-probs per token or per sequence."""


def truncated_is_weights(old_logp: torch.Tensor, engine_logp: torch.Tensor, mask: torch.Tensor,
                         level: str = "token", cap: float = 2.0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Truncated importance weights that correct for the rollout engine sampling from a slightly different
    distribution than the trainer's π_old (bf16 engine vs fp32 trainer, other kernels): Yao et al. 2025's
    TIS, verl's ``rollout_is`` (mode truncate), SkyRL's ``tis_imp_ratio_cap``.

    ``token``: ``w_t = min(exp(old_t − engine_t), cap)``. ``sequence``: ``w = min(exp(Σ_t (old_t −
    engine_t)), cap)`` for every token of the row. Log-ratios are clamped to ±20 before ``exp`` (as verl).
    A row whose engine log-probs are unknown (NaN: a sample that is not an unchanged rollout step) gets
    weight 1. The weights carry no gradient.

    old_logp, engine_logp, mask: [B, L]. Returns (weights [B, L], token sums for the metrics: ``ratio``
    (before the cap), ``weight`` (after it), ``capped`` (tokens whose ratio exceeded the cap) and
    ``log_ratio_abs`` (|old − engine| per token, the mismatch in nats))."""
    if level not in ROLLOUT_IS_LEVELS[1:]:
        raise ValueError(f"optim.rollout_is: unknown {level!r}; choose one of {', '.join(ROLLOUT_IS_LEVELS)}")
    mask = mask.float()
    known = ~torch.isnan(engine_logp)
    token_log_ratio = torch.where(known, old_logp.detach() - torch.nan_to_num(engine_logp), torch.zeros_like(mask))
    token_log_ratio = token_log_ratio * mask
    if level == "token":
        log_ratio = token_log_ratio.clamp(-20.0, 20.0)
    else:
        log_ratio = token_log_ratio.sum(dim=-1, keepdim=True).clamp(-20.0, 20.0).expand_as(mask)
    ratio = torch.exp(log_ratio)
    weights = ratio.clamp(max=cap)
    stats = {"ratio": (ratio * mask).sum(), "weight": (weights * mask).sum(),
             "capped": ((ratio > cap).float() * mask).sum(), "log_ratio_abs": token_log_ratio.abs().sum()}
    return weights.detach(), stats


def kl_k3(logp, ref_logp):
    """Schulman's k3 estimator of KL(π‖π_ref) per token ("low_var_kl" in verl): r − log r − 1 with
    r = π_ref/π; non-negative, unbiased, low variance. Clamped like verl for stability."""
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
    return (torch.exp(log_ratio) - log_ratio - 1.0).clamp(max=10.0)


# -- per-token policy losses ----------------------------------------------------------------------
Kind = Literal["policy_gradient", "distillation"]


class DuplicatePolicyLossError(ValueError):
    """A policy loss registered under a name another one already holds."""


@dataclass
class TokenInputs:
    """What a policy loss may read, all [B, L] except `advantages` ([B] or [B, L])."""

    logp: torch.Tensor
    """Current policy log-probs of the sampled tokens, with gradient."""
    old_logp: torch.Tensor | None = None
    """The same under the pre-update weights (π_old), no gradient."""
    advantages: torch.Tensor | None = None
    teacher_logp: torch.Tensor | None = None
    """The teacher's log-probs of the same tokens (privileged prompt and/or another checkpoint), no gradient."""


@dataclass
class TokenLoss:
    tokens: torch.Tensor
    """Loss per token [B, L]; the caller sums it with its weights and mask."""
    stats: dict[str, torch.Tensor] = field(default_factory=dict)
    """Per-token statistics [B, L] (no gradient), e.g. the gate; the caller sums them with its mask."""


@dataclass(frozen=True)
class PolicyLoss:
    name: str
    fn: Callable[..., TokenLoss]
    kind: Kind
    reference: str
    """The reference function this transcribes (file and name), shown in docs/method.md §9."""
    needs: tuple[str, ...]
    """`TokenInputs` fields that must not be None."""
    config: dict[str, str] = field(default_factory=dict)
    """Parameter name → the agent config field it is read from (``{"beta": "gate_beta"}``)."""

    def __call__(self, inputs: TokenInputs, **params: float) -> TokenLoss:
        missing = [name for name in self.needs if getattr(inputs, name) is None]
        if missing:
            raise ValueError(f"policy loss {self.name!r} needs {', '.join(missing)}")
        return self.fn(inputs, **params)

    def from_config(self, inputs: TokenInputs, config: object) -> TokenLoss:
        """The loss with its parameters read from an agent config (``algo``), as verl's policy losses read
        theirs from the actor config."""
        return self(inputs, **{param: getattr(config, name) for param, name in self.config.items()})


POLICY_LOSSES: dict[str, PolicyLoss] = {}


def register_policy_loss(name: str, kind: Kind, reference: str, needs: tuple[str, ...],
                         config: dict[str, str] | None = None):
    """Decorator: register ``fn(inputs, **params) -> TokenLoss`` under `name`; a taken name raises. `config`
    maps its parameters to the agent config fields they are read from (`PolicyLoss.from_config`)."""

    def wrap(fn: Callable[..., TokenLoss]) -> Callable[..., TokenLoss]:
        if name in POLICY_LOSSES:
            raise DuplicatePolicyLossError(f"policy loss {name!r} is already registered "
                                           f"({POLICY_LOSSES[name].fn.__module__}.{POLICY_LOSSES[name].fn.__name__})")
        POLICY_LOSSES[name] = PolicyLoss(name, fn, kind, reference, needs, dict(config or {}))
        return fn

    return wrap


def policy_loss(name: str) -> PolicyLoss:
    """The registered loss `name`; a `ValueError` listing the valid names otherwise."""
    if name not in POLICY_LOSSES:
        raise ValueError(f"unknown policy loss {name!r}; choose one of {', '.join(sorted(POLICY_LOSSES))}")
    return POLICY_LOSSES[name]


# -- policy-gradient terms ----------------------------------------------------------------------------
@register_policy_loss("ppo_clip", "policy_gradient", "verl core_algos.compute_policy_loss (without clip_ratio_c)",
                      ("old_logp", "advantages"), config={"clip_eps": "clip_eps"})
def ppo_clip(inputs: TokenInputs, clip_eps: float = 0.2) -> TokenLoss:
    tokens, clipped = ppo_clip_token_loss(inputs.logp, inputs.old_logp, inputs.advantages, clip_eps, None)
    return TokenLoss(tokens, {"clipped": clipped.float()})


@register_policy_loss("dual_clip", "policy_gradient", "verl core_algos.compute_policy_loss (clip_ratio_c = 3)",
                      ("old_logp", "advantages"), config={"clip_eps": "clip_eps", "clip_ratio_c": "clip_ratio_c"})
def dual_clip(inputs: TokenInputs, clip_eps: float = 0.2, clip_ratio_c: float = 3.0) -> TokenLoss:
    tokens, clipped = ppo_clip_token_loss(inputs.logp, inputs.old_logp, inputs.advantages, clip_eps, clip_ratio_c)
    return TokenLoss(tokens, {"clipped": clipped.float()})


def rlsd_token_advantages(advantages: torch.Tensor, old_logp: torch.Tensor, teacher_logp: torch.Tensor,
                          lam: float = 0.5, clip_eps: float = 0.2) -> torch.Tensor:
    """RLSD's token advantages: ``A_t = A·((1 − λ) + λ·w_t)`` with ``w_t = clip(exp(sign(A)·(log π_T −
    log π_old)), 1 − ε, 1 + ε)``. Where the teacher finds a token of a good step likelier than the student
    did, the token gets more credit (up to 1 + ε); of a bad step, more blame. λ = 0 is GRPO. No gradient.

    advantages: [B] (one per step sample) or [B, L] (its value broadcast); old_logp, teacher_logp: [B, L]."""
    with torch.no_grad():
        seq = advantages if advantages.dim() == 1 else advantages[:, 0]
        seq = seq.unsqueeze(-1)
        weight = torch.exp(torch.sign(seq) * (teacher_logp - old_logp)).clamp(1.0 - clip_eps, 1.0 + clip_eps)
        return seq * ((1.0 - lam) + lam * weight)


@register_policy_loss("rlsd", "policy_gradient", "SDAR verl/trainer/ppo/rlsd_utils.py compute_rlsd_token_advantage "
                      "+ compute_policy_loss", ("old_logp", "advantages", "teacher_logp"))
def rlsd(inputs: TokenInputs, lam: float = 0.5, rlsd_clip_eps: float = 0.2, clip_eps: float = 0.2,
         clip_ratio_c: float | None = 3.0) -> TokenLoss:
    token_adv = rlsd_token_advantages(inputs.advantages, inputs.old_logp, inputs.teacher_logp, lam, rlsd_clip_eps)
    tokens, clipped = ppo_clip_token_loss(inputs.logp, inputs.old_logp, token_adv, clip_eps, clip_ratio_c)
    return TokenLoss(tokens, {"clipped": clipped.float(), "token_advantage": token_adv})


# -- distillation terms -------------------------------------------------------------------------------
@register_policy_loss("gated_opd", "distillation", "SDAR verl/trainer/ppo/sdar_utils.py compute_sdar_loss",
                      ("teacher_logp",), config={"beta": "gate_beta"})
def gated_opd(inputs: TokenInputs, beta: float = 5.0) -> TokenLoss:
    """``g·(log π_T − log π)`` with the stop-gradient gate ``g = sigmoid(β·(log π_T − log π))``. Its gradient
    raises every sampled token's log-prob with weight g: strongly where the teacher finds the token likelier
    than the student does. β = 0: g = 0.5 everywhere (plain, ungated OPD at half weight)."""
    teacher = inputs.teacher_logp.detach()
    gap = (teacher - inputs.logp).detach()
    gate = torch.sigmoid(beta * gap)
    return TokenLoss(gate * (teacher - inputs.logp), {"gate": gate, "gap": gap})


@register_policy_loss("sdl", "distillation", "SDAR verl/trainer/ppo/skillsd_utils.py compute_sdl_loss",
                      ("old_logp", "teacher_logp"))
def sdl(inputs: TokenInputs) -> TokenLoss:
    """Skill-SD: ``ρ·(exp(−ℓ) − 1 + ℓ)`` with ``ℓ = log π − log π_T`` (k3 of KL(π‖π_T), ≥ 0, 0 when they agree)
    and the on-policy ratio ``ρ = exp(min(log π − log π_old, 10))``, which carries the gradient of the
    sampling distribution. ``−ℓ`` is clamped at 20 before ``exp``, as the reference does."""
    teacher = inputs.teacher_logp.detach()
    ell = inputs.logp - teacher
    k3 = torch.exp((-ell).clamp(max=20.0)) - 1.0 + ell
    ratio = torch.exp((inputs.logp - inputs.old_logp.detach()).clamp(max=10.0))
    return TokenLoss(ratio * k3, {"gap": (teacher - inputs.logp).detach()})


def gated_opd_loss(logp: torch.Tensor, teacher_logp: torch.Tensor, mask: torch.Tensor, beta: float = 5.0):
    """SEED's gated on-policy distillation term (docs/method.md §5.5): the registered ``gated_opd`` summed
    over the tokens of `mask`. Its value is 0 when teacher and student agree; its gradient w.r.t. ``logp`` is
    ``−m·g``, so a descent step raises the log-prob of every sampled token with weight g ∈ (0, 1): strongly
    where the skill-conditioned teacher finds the token likelier than the student does, hardly at all where
    it finds it less likely. `teacher_logp` is a constant (no gradient flows into it).

    logp, teacher_logp, mask: [B, L]. Returns (loss_sum, gate [B, L], gap [B, L])."""
    term = gated_opd(TokenInputs(logp, teacher_logp=teacher_logp), beta=beta)
    return (mask * term.tokens).sum(), term.stats["gate"], term.stats["gap"]
