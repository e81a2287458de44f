"""Reference-code behaviour by default, seedbench's older rules as named options (docs/method.md §9).

Every expected number below is worked out by hand in the test from the formula of the reference code,
not taken from the functions under test."""

import math

import pytest
import torch

from seedbench.agents.gigpo import GiGPOConfig, penalised_step_returns
from seedbench.agents.grpo import GRPOConfig
from seedbench.agents.losses import ADVANTAGE_FNS, ppo_clip_loss

# A group of two episodes, penalty 0.1: episode A (reward 1) has a valid step then an invalid one,
# episode B (reward 0) one valid step. Step samples in order: A0, A1 (invalid), B0.
SAMPLE_TRAJ = torch.tensor([0, 0, 1])
GROUPS = torch.tensor([0, 0])


def _advantages(mode, rewards):
    sample_scores = torch.tensor([rewards[0], rewards[0] - 0.1, rewards[1]], dtype=torch.float64)
    traj_scores = torch.tensor([rewards[0] - 0.1, rewards[1]], dtype=torch.float64)
    return ADVANTAGE_FNS[mode](sample_scores, traj_scores, GROUPS, SAMPLE_TRAJ, eps=0.0).tolist()


def _unbiased_std(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def test_defaults_are_the_reference_code():
    assert GRPOConfig().adv_norm == "step"
    assert GRPOConfig().clip_ratio_c == 3.0
    assert GiGPOConfig().step_penalty == "after_discount"


def test_step_statistics_penalise_only_the_invalid_step():
    # scores 1, 0.9, 0: mean 1.9/3, unbiased std over the three step samples.
    mean, std = 1.9 / 3, _unbiased_std([1.0, 0.9, 0.0])
    assert std == pytest.approx(0.550757, abs=1e-6)
    expected = [(1.0 - mean) / std, (0.9 - mean) / std, (0.0 - mean) / std]
    assert _advantages("step", [1.0, 0.0]) == pytest.approx(expected)
    assert expected[0] == pytest.approx(0.665750, abs=1e-6) and expected[1] == pytest.approx(0.484182, abs=1e-6)


def test_step_statistics_in_an_all_fail_group_push_down_only_invalid_steps():
    # scores 0, -0.1, 0: the valid steps are above the mean, the invalid one below.
    mean, std = -0.1 / 3, _unbiased_std([0.0, -0.1, 0.0])
    assert _advantages("step", [0.0, 0.0]) == pytest.approx([(0 - mean) / std, (-0.1 - mean) / std, (0 - mean) / std])
    assert (0 - mean) / std == pytest.approx(1 / math.sqrt(3), abs=1e-6)


def test_trajectory_option_lowers_every_step_of_an_episode_with_an_invalid_step():
    # episode scores 0.9 and 0: mean 0.45, unbiased std 0.9/sqrt(2); A's valid step gets A's advantage too.
    a = 0.45 / (0.9 / math.sqrt(2))
    assert _advantages("trajectory", [1.0, 0.0]) == pytest.approx([a, a, -a])
    # all-fail group: episode scores -0.1 and 0 -> A's *valid* step is pushed down as well
    assert _advantages("trajectory", [0.0, 0.0]) == pytest.approx([-1 / math.sqrt(2), -1 / math.sqrt(2), 1 / math.sqrt(2)])


def test_mean_only_variants():
    assert _advantages("step_mean_only", [1.0, 0.0]) == pytest.approx([1 - 1.9 / 3, 0.9 - 1.9 / 3, -1.9 / 3])
    assert _advantages("trajectory_mean_only", [1.0, 0.0]) == pytest.approx([0.45, 0.45, -0.45])


def test_dual_clip_caps_negative_advantage_losses_at_c():
    mask = torch.ones(1, 1)
    old = torch.zeros(1, 1)
    grown = torch.log(torch.tensor([[5.0]]))  # ratio 5
    # A = -1, ratio 5: PPO-clip loss = -min(5·-1, 1.2·-1) = 5; dual clip caps it at c·|A| = 3.
    loss, clipped = ppo_clip_loss(grown, old, torch.tensor([-1.0]), mask, clip_eps=0.2, clip_ratio_c=3.0)
    assert loss.item() == pytest.approx(3.0) and clipped.item() == 1
    plain, _ = ppo_clip_loss(grown, old, torch.tensor([-1.0]), mask, clip_eps=0.2, clip_ratio_c=None)
    assert plain.item() == pytest.approx(5.0)
    # the cap is a bound, not a floor: ratio 0.5, A = -1 gives -min(-0.5, -0.8) = 0.8 either way
    shrunk = torch.log(torch.tensor([[0.5]]))
    assert ppo_clip_loss(shrunk, old, torch.tensor([-1.0]), mask, clip_ratio_c=3.0)[0].item() == pytest.approx(0.8)
    # positive advantages are untouched: ratio 5, A = +1 -> -min(5, 1.2) = -1.2
    assert ppo_clip_loss(grown, old, torch.tensor([1.0]), mask, clip_ratio_c=3.0)[0].item() == pytest.approx(-1.2)
    with pytest.raises(ValueError, match="clip_ratio_c"):
        ppo_clip_loss(grown, old, torch.tensor([-1.0]), mask, clip_ratio_c=1.0)


def test_gigpo_penalty_after_discounting_does_not_leak_into_earlier_steps():
    rewards, valid, gamma = [0.0, 0.0, 10.0], [True, False, True], 0.95
    # returns 0.95²·10, 0.95·10, 10; the invalid step 1 loses 0.1 from its own return only
    after = penalised_step_returns(rewards, valid, 0.1, gamma, "after_discount")
    assert after == pytest.approx([9.025, 9.5 - 0.1, 10.0])
    # before discounting, step 0 inherits 0.95·0.1 of step 1's penalty: 0.95·(−0.1 + 0.95·10) = 8.93
    before = penalised_step_returns(rewards, valid, 0.1, gamma, "before_discount")
    assert before == pytest.approx([8.93, 9.4, 10.0])
