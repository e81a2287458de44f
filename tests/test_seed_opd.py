"""The gated on-policy distillation loss (docs/method.md §5.5) at its limiting cases."""

import math

import pytest
import torch

from seedbench.agents.seed.agent import gated_opd_loss


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def test_teacher_equal_to_student_gives_gate_one_half_and_zero_loss():
    logp = torch.tensor([[-0.3, -1.2, -2.0]], requires_grad=True)
    loss, gate, gap = gated_opd_loss(logp, logp.detach().clone(), torch.ones(1, 3), beta=5.0)
    assert loss.item() == 0.0
    assert torch.allclose(gate, torch.full((1, 3), 0.5))
    assert torch.all(gap == 0)
    loss.backward()  # value zero, gradient not: every sampled token is still pushed up with weight 1/2
    assert torch.allclose(logp.grad, torch.full((1, 3), -0.5))


def test_gradient_raises_student_logprob_of_sampled_tokens_with_weight_gate():
    logp = torch.tensor([[-2.0, -0.1, -1.0]], requires_grad=True)
    teacher = torch.tensor([[-0.5, -3.0, -1.0]])
    loss, gate, _ = gated_opd_loss(logp, teacher, torch.ones(1, 3), beta=5.0)
    loss.backward()
    assert torch.allclose(logp.grad, -gate)  # descent raises logp by g, and g ∈ (0, 1)
    assert torch.all((gate > 0) & (gate < 1))
    assert gate[0, 0] > 0.99 and gate[0, 1] < 0.01  # teacher likes token 0, dislikes token 1
    # one SGD step on logp itself moves every logp up
    with torch.no_grad():
        assert torch.all(logp - 0.1 * logp.grad > logp)


def test_teacher_receives_no_gradient_and_gate_is_stop_gradient():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    teacher = torch.tensor([[-0.5, -2.5]], requires_grad=True)
    loss, gate, _ = gated_opd_loss(logp, teacher, torch.ones(1, 2))
    assert not gate.requires_grad
    loss.backward()
    assert teacher.grad is None or torch.all(teacher.grad == 0)


def test_masked_tokens_get_no_gradient_and_no_loss():
    logp = torch.tensor([[-1.0, -2.0, -0.5, -0.7]], requires_grad=True)
    teacher = torch.tensor([[-0.2, -0.2, -3.0, -0.1]])
    mask = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    loss, _, _ = gated_opd_loss(logp, teacher, mask)
    loss.backward()
    assert logp.grad[0, 1] == 0 and logp.grad[0, 3] == 0
    assert logp.grad[0, 0] != 0 and logp.grad[0, 2] != 0
    unmasked, _, _ = gated_opd_loss(logp.detach()[:, [0, 2]], teacher[:, [0, 2]], torch.ones(1, 2))
    assert loss.item() == pytest.approx(unmasked.item())


def test_hand_computed_three_token_example():
    # gap = teacher − student = [0.5, −0.5, 0];  g = sigmoid(5·gap) = [σ(2.5), σ(−2.5), ½]; token 3 masked.
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    teacher = torch.tensor([[-0.5, -2.5, -0.5]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, gate, gap = gated_opd_loss(logp, teacher, mask, beta=5.0)
    g1, g2 = _sigmoid(2.5), _sigmoid(-2.5)  # 0.924142, 0.075858
    assert gate.tolist()[0] == pytest.approx([g1, g2, 0.5], abs=1e-6)
    assert gap.tolist()[0] == pytest.approx([0.5, -0.5, 0.0])
    assert loss.item() == pytest.approx(g1 * 0.5 + g2 * -0.5, abs=1e-6)  # 0.424142
    assert loss.item() == pytest.approx(0.424142, abs=1e-6)
    loss.backward()
    assert logp.grad.tolist()[0] == pytest.approx([-g1, -g2, 0.0], abs=1e-6)


def test_beta_sharpens_the_gate():
    logp, teacher, mask = torch.tensor([[-1.0]]), torch.tensor([[-0.8]]), torch.ones(1, 1)
    soft = gated_opd_loss(logp, teacher, mask, beta=1.0)[1].item()
    sharp = gated_opd_loss(logp, teacher, mask, beta=50.0)[1].item()
    assert 0.5 < soft < sharp < 1.0
