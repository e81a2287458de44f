"""Advantage and loss functions at limiting cases (docs/method.md §2)."""

import math

import pytest
import torch

from seedbench.agents.losses import ADVANTAGE_FNS, kl_k3, ppo_clip_loss
from seedbench.models.scoring import entropy_from_logits


def _adv(mode, rewards, groups, steps_per_traj=None, invalid=None):
    steps_per_traj = steps_per_traj or [1] * len(rewards)
    sample_traj = torch.tensor([t for t, n in enumerate(steps_per_traj) for _ in range(n)])
    invalid = invalid or [0.0] * len(sample_traj)
    sample_scores = torch.tensor(rewards, dtype=torch.float64)[sample_traj] - torch.tensor(invalid, dtype=torch.float64)
    traj_scores = torch.tensor(rewards, dtype=torch.float64)
    for s, t in enumerate(sample_traj.tolist()):
        traj_scores[t] -= invalid[s]
    return ADVANTAGE_FNS[mode](sample_scores, traj_scores, torch.tensor(groups), sample_traj)


@pytest.mark.parametrize("mode", sorted(ADVANTAGE_FNS))
def test_all_equal_group_gives_zero_advantage(mode):
    adv = _adv(mode, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [0, 0, 0, 1, 1, 1], [2, 1, 3, 1, 1, 2])
    assert torch.allclose(adv, torch.zeros_like(adv))


def test_trajectory_normalisation_matches_formula():
    adv = _adv("trajectory", [1.0, 0.0, 0.0, 0.0], [0, 0, 0, 0])
    mean, std = 0.25, torch.tensor([1.0, 0, 0, 0]).std().item()
    assert adv[0].item() == pytest.approx((1 - mean) / (std + 1e-6))
    assert adv[1].item() == pytest.approx((0 - mean) / (std + 1e-6))
    assert adv.sum().item() == pytest.approx(0.0, abs=1e-9)


def test_trajectory_mode_counts_each_episode_once_but_step_mode_weights_long_ones():
    # trajectory 0 (success) has 1 step, trajectory 1 (failure) has 3 steps.
    traj = _adv("trajectory", [1.0, 0.0], [0, 0], [1, 3])
    step = _adv("step", [1.0, 0.0], [0, 0], [1, 3])
    assert traj[0] == pytest.approx(-traj[1])  # symmetric: two episodes
    assert step[0] > -step[1]  # the three failure samples pull the mean down, so success gets more


def test_mean_only_does_not_divide_by_std():
    adv = _adv("trajectory_mean_only", [10.0, 0.0], [0, 0])
    assert adv.tolist() == pytest.approx([5.0, -5.0])


def test_groups_are_independent_and_singletons_are_not_normalised():
    adv = _adv("trajectory", [1.0, 0.0, 5.0], [0, 0, 1])
    assert adv[2].item() == pytest.approx(5.0 / (1 + 1e-6))  # mean 0, std 1 for a group of one
    assert adv[0] > 0 > adv[1]


def test_invalid_penalty_lowers_only_its_episode():
    adv = _adv("trajectory", [1.0, 1.0], [0, 0], [1, 1], invalid=[0.1, 0.0])
    assert adv[0] < 0 < adv[1]


def test_ppo_clip_is_plain_pg_when_ratio_is_one():
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    adv = torch.tensor([2.0])
    mask = torch.ones(1, 2)
    loss, clipped = ppo_clip_loss(logp, logp.clone(), adv, mask)
    assert loss.item() == pytest.approx(-4.0)
    assert clipped.item() == 0


def test_ppo_clip_caps_the_ratio_for_positive_and_negative_advantages():
    old = torch.zeros(1, 1)
    mask = torch.ones(1, 1)
    up = torch.log(torch.tensor([[2.0]]))  # ratio 2
    loss_pos, c_pos = ppo_clip_loss(up, old, torch.tensor([1.0]), mask, clip_eps=0.2)
    assert loss_pos.item() == pytest.approx(-1.2)  # min(2·1, 1.2·1)
    assert c_pos.item() == 1
    loss_neg, c_neg = ppo_clip_loss(up, old, torch.tensor([-1.0]), mask, clip_eps=0.2)
    assert loss_neg.item() == pytest.approx(2.0)  # min(-2, -1.2) = -2 → loss 2 (pessimistic)
    assert c_neg.item() == 0
    down = torch.log(torch.tensor([[0.5]]))
    loss_down, _ = ppo_clip_loss(down, old, torch.tensor([-1.0]), mask, clip_eps=0.2)
    assert loss_down.item() == pytest.approx(0.8)  # min(-0.5, -0.8) → 0.8


def test_ppo_clip_gradient_is_zero_outside_the_trust_region():
    logp = torch.log(torch.tensor([[2.0]])).requires_grad_()
    loss, _ = ppo_clip_loss(logp, torch.zeros(1, 1), torch.tensor([1.0]), torch.ones(1, 1))
    loss.backward()
    assert logp.grad.abs().item() == 0.0


def test_masked_tokens_get_no_loss_or_gradient():
    logp = torch.zeros(1, 3, requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, _ = ppo_clip_loss(logp, torch.zeros(1, 3), torch.tensor([1.0]), mask)
    loss.backward()
    assert loss.item() == pytest.approx(-2.0)
    assert logp.grad[0, 2].item() == 0.0 and logp.grad[0, 0].item() != 0.0


def test_kl_k3_is_zero_for_identical_policies_and_positive_otherwise():
    logp = torch.log(torch.tensor([0.1, 0.5, 0.9]))
    assert torch.allclose(kl_k3(logp, logp), torch.zeros(3))
    other = torch.log(torch.tensor([0.2, 0.4, 0.3]))
    kl = kl_k3(logp, other)
    assert (kl > 0).all()
    r = math.exp(other[0] - logp[0])
    assert kl[0].item() == pytest.approx(r - math.log(r) - 1, rel=1e-5)


def test_kl_k3_is_an_unbiased_estimate_of_the_true_kl():
    torch.manual_seed(0)
    p = torch.tensor([0.6, 0.3, 0.1])
    q = torch.tensor([0.3, 0.3, 0.4])
    samples = torch.multinomial(p, 200_000, replacement=True)
    estimate = kl_k3(torch.log(p[samples]), torch.log(q[samples])).mean().item()
    true_kl = (p * (p / q).log()).sum().item()
    assert estimate == pytest.approx(true_kl, rel=0.03)


def test_entropy_of_uniform_logits_is_log_vocab():
    assert entropy_from_logits(torch.zeros(2, 3, 7)).allclose(torch.full((2, 3), math.log(7)))
