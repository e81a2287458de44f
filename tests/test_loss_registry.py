"""One home for every loss (`seedbench.agents.losses`, verl's ``core_algos.py`` style): GRPO, GiGPO, SEED
and the distillation family build on its registered functions, the config picks one by name, the gated
OPD term is written once, and a new loss is one function and one line."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from seedbench.agents import losses
from seedbench.agents.base import MiniBatch
from seedbench.agents.grpo import GRPOAgent, GRPOConfig

AGENTS = Path(__file__).resolve().parents[1] / "src" / "seedbench" / "agents"
LOGP = torch.tensor([[-0.5, -1.2, -2.0], [-0.1, -3.0, -0.7]], dtype=torch.float64)
OLD = torch.tensor([[-0.6, -1.0, -2.5], [-0.1, -2.0, -0.9]], dtype=torch.float64)
TEACHER = torch.tensor([[-0.2, -1.5, -1.0], [-0.4, -0.5, -0.7]], dtype=torch.float64)
ADV = torch.tensor([0.8, -1.3], dtype=torch.float64)
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)


def _grpo_loss(**algo) -> tuple[torch.Tensor, dict]:
    """GRPO's `loss` on a hand-sized micro-batch (it reads nothing but its config)."""
    config = GRPOConfig(kl_coef=0.0, entropy_coef=0.0, **algo)
    mb = MiniBatch(logp=LOGP, old_logp=OLD, mask=MASK, advantages=ADV)
    return GRPOAgent.loss(SimpleNamespace(config=config), mb)


def test_every_loss_the_agents_use_lives_in_the_one_registry_module():
    from seedbench.agents import distill, gigpo
    from seedbench.agents.seed import agent as seed

    assert {"step", "step_mean_only", "trajectory", "trajectory_mean_only"} <= set(losses.ADVANTAGE_FNS)
    assert {"ppo_clip", "dual_clip", "rlsd", "gated_opd", "sdl"} <= set(losses.POLICY_LOSSES)
    assert seed.gated_opd_loss is losses.gated_opd_loss and gigpo.anchor_step_advantages is losses.anchor_step_advantages
    assert distill.policy_loss is losses.policy_loss
    sources = {path.relative_to(AGENTS).as_posix(): path.read_text() for path in AGENTS.rglob("*.py")}
    gates = {name: len(re.findall(r"torch\.sigmoid\(", text)) for name, text in sources.items()}
    assert {name: n for name, n in gates.items() if n} == {"losses.py": 1}  # the gate sigmoid(β·gap), once
    clips = {name for name, text in sources.items() if "torch.clamp(ratio" in text}
    assert clips == {"losses.py"}  # the PPO surrogate, once


def test_seeds_summed_gated_opd_is_the_registered_term():
    logp = LOGP.clone().requires_grad_(True)
    summed, gate, gap = losses.gated_opd_loss(logp, TEACHER, MASK, beta=5.0)
    term = losses.policy_loss("gated_opd")(losses.TokenInputs(LOGP, teacher_logp=TEACHER), beta=5.0)
    assert float(summed) == float((MASK * term.tokens).sum())
    assert torch.equal(gate, term.stats["gate"]) and torch.equal(gap, term.stats["gap"])
    summed.backward()
    assert torch.allclose(logp.grad, -MASK * gate)  # the gradient raises each token with weight g


def test_grpos_policy_gradient_term_is_the_registered_one_the_config_names():
    loss, metrics = _grpo_loss()
    term = losses.policy_loss("dual_clip")(losses.TokenInputs(LOGP, OLD, ADV), clip_eps=0.2, clip_ratio_c=3.0)
    weight = MiniBatch(logp=LOGP, old_logp=OLD, mask=MASK, advantages=ADV).loss_weight
    assert float(loss) == float((term.tokens * weight).sum())
    assert float(metrics["train/clip_frac"]) == float((term.stats["clipped"] * MASK).sum())
    plain, _ = _grpo_loss(policy_loss="ppo_clip")
    assert float(plain) == float(_grpo_loss(clip_ratio_c=None)[0])  # dual clip without its bound is PPO-clip


def test_a_new_policy_loss_is_one_function_and_one_line_and_the_config_picks_it():
    @losses.register_policy_loss("reinforce_test", "policy_gradient", "REINFORCE", ("advantages",))
    def reinforce(inputs: losses.TokenInputs) -> losses.TokenLoss:
        return losses.TokenLoss(-inputs.advantages.unsqueeze(-1) * inputs.logp, {"clipped": torch.zeros_like(inputs.logp)})

    try:
        loss, _ = _grpo_loss(policy_loss="reinforce_test")
        weight = MiniBatch(logp=LOGP, old_logp=OLD, mask=MASK, advantages=ADV).loss_weight
        assert float(loss) == pytest.approx(float((-ADV.unsqueeze(-1) * LOGP * weight).sum()), rel=1e-12)
    finally:
        losses.POLICY_LOSSES.pop("reinforce_test")


def test_grpo_refuses_a_policy_loss_it_cannot_feed():
    for name in ("rlsd", "gated_opd", "no_such_loss"):
        with pytest.raises(ValueError, match=rf"^algo.policy_loss: unknown '{name}'; choose one of \['dual_clip', "
                                             r"'ppo_clip'\]$"):
            GRPOAgent(GRPOConfig(policy_loss=name), None)


def test_a_loss_reads_its_parameters_from_the_agent_config_by_the_names_it_registered():
    from seedbench.agents.distill import DistillConfig

    config = DistillConfig(gate_beta=2.0)
    inputs = losses.TokenInputs(LOGP, teacher_logp=TEACHER)
    assert torch.equal(losses.policy_loss("gated_opd").from_config(inputs, config).tokens,
                       losses.policy_loss("gated_opd")(inputs, beta=2.0).tokens)
