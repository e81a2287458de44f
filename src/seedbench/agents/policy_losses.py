"""Per-token policy losses of the GRPO + on-policy-distillation family, registered by name (verl's
``register_policy_loss`` style), next to the advantage registry of `seedbench.agents.losses`.

Every entry is a `PolicyLoss`: a function of one `TokenInputs` (the micro-batch's log-probs, advantages
and, for the distillation terms, the teacher's log-probs) and keyword parameters, returning a
`TokenLoss`: the loss per response token [B, L] and per-token statistics. Callers sum the tokens with
their own weights (`seedbench.agents.base.MiniBatch.loss_weight`, times a mask of the tokens a term
applies to), so one aggregation rule serves every term, as verl's ``agg_loss`` does.

Registered here (docs/method.md §9 names the reference function of each):

- ``ppo_clip`` and ``dual_clip``: the PPO surrogate, plain and with Ye et al.'s cap for negative
  advantages (the GRPO family's policy-gradient term);
- ``gated_opd``: SEED's and SDAR's confidence-gated distillation ``sigmoid(β·Δ)·(log π_T − log π)``;
  β = 0 gives the constant gate 0.5 of the reference's GRPO+OPSD scripts;
- ``sdl``: Skill-SD's self-distillation loss, the k3 estimate of KL(π‖π_T) times the on-policy ratio;
- ``rlsd``: the PPO dual-clip surrogate on RLSD's teacher-reweighted token advantages
  (`rlsd_token_advantages`).

A second registration under a taken name is an error (`DuplicatePolicyLossError`), so a plugin cannot
silently replace a built-in term.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

import torch

from seedbench.agents.losses import ppo_clip_token_loss

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

    def __call__(self, inputs: TokenInputs, **params: float) -> TokenLoss:
        missing = [name for name in self.needs if getattr(inputs, name) is None]
        if missing:
            raise ValueError(f"policy loss {self.name!r} needs {', '.join(missing)}")
        return self.fn(inputs, **params)


POLICY_LOSSES: dict[str, PolicyLoss] = {}


def register_policy_loss(name: str, kind: Kind, reference: str, needs: tuple[str, ...]):
    """Decorator: register ``fn(inputs, **params) -> TokenLoss`` under `name`; a taken name raises."""

    def wrap(fn: Callable[..., TokenLoss]) -> Callable[..., TokenLoss]:
        if name in POLICY_LOSSES:
            raise DuplicatePolicyLossError(f"policy loss {name!r} is already registered "
                                           f"({POLICY_LOSSES[name].fn.__module__}.{POLICY_LOSSES[name].fn.__name__})")
        POLICY_LOSSES[name] = PolicyLoss(name, fn, kind, reference, needs)
        return fn

    return wrap


def policy_loss(name: str) -> PolicyLoss:
    """The registered loss `name`; a `ValueError` listing the valid names otherwise."""
    if name not in POLICY_LOSSES:
        raise ValueError(f"unknown policy loss {name!r}; choose one of {', '.join(sorted(POLICY_LOSSES))}")
    return POLICY_LOSSES[name]


# -- policy-gradient terms ----------------------------------------------------------------------------
@register_policy_loss("ppo_clip", "policy_gradient", "verl core_algos.compute_policy_loss (without clip_ratio_c)",
                      ("old_logp", "advantages"))
def ppo_clip(inputs: TokenInputs, clip_eps: float = 0.2) -> TokenLoss:
    tokens, clipped = ppo_clip_token_loss(inputs.logp, inputs.old_logp, inputs.advantages, clip_eps, None)
    return TokenLoss(tokens, {"clipped": clipped.float()})


@register_policy_loss("dual_clip", "policy_gradient", "verl core_algos.compute_policy_loss (clip_ratio_c = 3)",
                      ("old_logp", "advantages"))
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
                      ("teacher_logp",))
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
