"""GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization"; verl-agent), a strong peer baseline.

GRPO's episode advantage plus a step-level advantage: within a group (N rollouts of the same task), the
steps taken from an identical observation form an *anchor-state group*; each step's discounted return
``R_t = Σ_k γ^(k−t) r_k`` is normalised within its anchor group, and
``A = A_episode + ω · A_step`` (γ = 0.95, ω = 1). A step whose observation no other step of its group
shares gets step advantage 0. Only `advantages` differs from GRPO; the loss is GRPO's.

Step rewards ``r_k``: the env's per-step rewards when ``rollout.reward=return`` (Sokoban's shaped
rewards, ALFWorld's 10·won on the last step), or ``won`` on the last step when ``rollout.reward=success``;
an invalid step loses the invalid-action penalty, as in verl-agent. Anchor states are matched on the
exact observation text (verl-agent's default; its similarity-based grouping is not implemented); for image
observations the frame is part of the key (its sha1, `anchor_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch

from seedbench.agents.base import AgentContext, PreparedUpdate, TrainSample
from seedbench.config import NonNegative, Range
from seedbench.agents.grpo import GRPOAgent, GRPOConfig
from seedbench.agents.losses import STEP_NORMS, anchor_step_advantages
from seedbench.models.vision import frame_id

STEP_PENALTIES = ("after_discount", "before_discount")


def discounted_returns(rewards: list[float], gamma: float) -> list[float]:
    """``R_t = r_t + γ·R_{t+1}`` for one trajectory's step rewards (GiGPO Eq. 5)."""
    out, running = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def penalised_step_returns(rewards: list[float], valid: list[bool], penalty: float, gamma: float,
                           where: str = "after_discount") -> list[float]:
    """Step returns with the invalid-action penalty: ``R_t − penalty·[t invalid]`` (``after_discount``,
    verl-agent) or the returns of ``r_t − penalty·[t invalid]`` (``before_discount``)."""
    if where == "before_discount":
        return discounted_returns([r - (0.0 if ok else penalty) for r, ok in zip(rewards, valid)], gamma)
    return [g - (0.0 if ok else penalty) for g, ok in zip(discounted_returns(rewards, gamma), valid)]


def anchor_key(group_id: int, step: Any) -> tuple:
    """A step's anchor state: its task group, observation text and — for image observations — the frame
    (two steps with equal text but different frames are different states)."""
    image = getattr(step, "image", None)
    return group_id, step.observation, (frame_id(image) if image is not None else None)


@dataclass
class GiGPOConfig(GRPOConfig):
    gamma: Annotated[float, Range(0, 1)] = 0.95
    """Discount of the step-level returns (GiGPO paper and verl-agent)."""
    step_adv_weight: NonNegative = 1.0
    """ω, weight of the step-level advantage (GiGPO paper: 1)."""
    step_adv_norm: Literal["std", "mean_only"] = "std"
    """``std`` (mean-std normalisation, GiGPO paper) or ``mean_only`` (verl-agent's ``mean_norm`` mode)."""
    step_penalty: Literal["after_discount", "before_discount"] = "after_discount"
    """Where an invalid step's penalty enters the step return: ``after_discount`` (verl-agent: subtracted
    from that step's discounted return) or ``before_discount`` (from its reward, so γ^(k−t)·penalty leaks
    into every earlier step)."""


class GiGPOAgent(GRPOAgent):
    name = "gigpo"
    Config = GiGPOConfig

    def __init__(self, config: GiGPOConfig, context: AgentContext):
        super().__init__(config, context)
        if config.step_adv_norm not in STEP_NORMS:
            raise ValueError(f"algo.step_adv_norm: unknown {config.step_adv_norm!r}; choose one of {STEP_NORMS}")
        if config.step_penalty not in STEP_PENALTIES:
            raise ValueError(f"algo.step_penalty: unknown {config.step_penalty!r}; choose one of {STEP_PENALTIES}")
        self._stats: dict[str, float] = {}

    def step_rewards(self, trajectory: Any, reward: float) -> list[float]:
        """Per-step rewards before any invalid-action penalty."""
        mode = self.context.config.rollout.reward
        if mode == "success":
            base = [0.0] * len(trajectory.steps)
            if base:
                base[-1] = float(reward)
            return base
        return [s.env_reward for s in trajectory.steps]

    def step_returns(self, trajectory: Any, reward: float) -> list[float]:
        """Discounted return of each step with the invalid-action penalty applied per `step_penalty`."""
        return penalised_step_returns(self.step_rewards(trajectory, reward),
                                      [s.action_valid for s in trajectory.steps], self.invalid_penalty(),
                                      self.config.gamma, self.config.step_penalty)

    def advantages(self, trajectories: list, rewards: list[float]) -> list[TrainSample]:
        samples = super().advantages(trajectories, rewards)  # episode advantage, one sample per step in order
        self._stats = {}
        if not samples:
            return samples
        returns, anchors, anchor_index = [], [], {}
        for t, traj in enumerate(trajectories):
            returns.extend(self.step_returns(traj, rewards[t]))
            for step in traj.steps:
                anchors.append(anchor_index.setdefault(anchor_key(traj.group_id, step), len(anchor_index)))
        anchor_ids = torch.tensor(anchors)
        step_adv = anchor_step_advantages(torch.tensor(returns, dtype=torch.float64), anchor_ids,
                                          self.config.adv_eps, self.config.step_adv_norm)
        for sample, value in zip(samples, step_adv.tolist()):
            sample.advantage += self.config.step_adv_weight * value
        sizes = torch.bincount(anchor_ids).float()
        self._stats = {
            "gigpo/anchor_groups": float(len(sizes)),
            "gigpo/anchor_group_size_mean": float(sizes.mean()),
            "gigpo/steps_in_shared_anchor_frac": float((sizes[anchor_ids] > 1).float().mean()),
            "gigpo/step_adv_abs_mean": float(step_adv.abs().mean()),
        }
        return samples

    def prepare(self, trajectories: list, rewards: list[float], iteration: int) -> PreparedUpdate:
        prepared = super().prepare(trajectories, rewards, iteration)
        prepared.metrics.update(self._stats)
        return prepared
