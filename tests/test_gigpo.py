"""GiGPO: discounted returns, anchor-state step advantages, and how they combine with GRPO's."""

from types import SimpleNamespace

import pytest
import torch

from seedbench.agents.gigpo import GiGPOAgent, GiGPOConfig, anchor_step_advantages, discounted_returns
from seedbench.agents.grpo import GRPOAgent, GRPOConfig
from seedbench.rollout.types import StepSample, TaskRef, Trajectory


def test_discounted_returns():
    assert discounted_returns([0.0, 0.0, 1.0], 0.5) == [0.25, 0.5, 1.0]
    assert discounted_returns([1.0, 2.0], 0.95) == pytest.approx([1.0 + 0.95 * 2.0, 2.0])
    assert discounted_returns([], 0.95) == []


def test_anchor_step_advantages_normalise_within_groups_and_zero_singletons():
    returns = torch.tensor([1.0, 3.0, 5.0, 7.0, 2.0], dtype=torch.float64)
    anchors = torch.tensor([0, 0, 1, 1, 2])
    adv = anchor_step_advantages(returns, anchors, eps=0.0)
    std = torch.tensor([1.0, 3.0]).std().item()  # unbiased, sqrt(2)
    assert adv.tolist() == pytest.approx([-1 / std, 1 / std, -1 / std, 1 / std, 0.0])
    assert anchor_step_advantages(returns, anchors, norm="mean_only").tolist() == pytest.approx([-1, 1, -1, 1, 0])
    same = anchor_step_advantages(torch.tensor([2.0, 2.0], dtype=torch.float64), torch.tensor([0, 0]))
    assert same.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        anchor_step_advantages(returns, anchors, norm="bogus")


def _traj(group, observations, rewards, won, valid=None):
    valid = valid or [True] * len(observations)
    steps = [StepSample(step=i, user_content="", prompt_ids=[1], response_ids=[2, 3], sampled_logprobs=[0.0, 0.0],
                        response_text="", observation=o, action="a", action_valid=v, env_reward=r)
             for i, (o, r, v) in enumerate(zip(observations, rewards, valid))]
    return Trajectory(episode_id=f"g{group}", group_id=group, task=TaskRef("train", group), steps=steps,
                      env_return=sum(rewards), won=won)


def _agent(cls, config, reward="return"):
    context = SimpleNamespace(env=SimpleNamespace(invalid_action_penalty=0.1),
                              config=SimpleNamespace(rollout=SimpleNamespace(reward=reward)))
    return cls(config, context)


def test_gigpo_adds_the_weighted_step_advantage_to_grpo_episode_advantage():
    # group 0: two episodes share the start state "s0"; they differ after it. Group 1 also starts at "s0"
    # but is another task, so it must not share anchor groups with group 0.
    trajectories = [
        _traj(0, ["s0", "a1"], [0.0, 1.0], True),
        _traj(0, ["s0", "b1", "b2"], [0.0, 0.0, 0.0], False),
        _traj(1, ["s0"], [1.0], True),
        _traj(1, ["s0"], [0.0], False, valid=[False]),
    ]
    rewards = [t.env_return for t in trajectories]
    grpo = _agent(GRPOAgent, GRPOConfig()).advantages(trajectories, rewards)
    gigpo_agent = _agent(GiGPOAgent, GiGPOConfig(gamma=0.5, step_adv_weight=2.0))
    gigpo = gigpo_agent.advantages(trajectories, rewards)
    # returns: traj0 [0.5, 1.0]; traj1 [0, 0, 0]; traj2 [1.0]; traj3 [-0.1] (invalid penalty)
    std0 = torch.tensor([0.5, 0.0]).std().item()
    std1 = torch.tensor([1.0, -0.1], dtype=torch.float64).std().item()
    expected_step = [0.25 / (std0 + 1e-6), 0.0, -0.25 / (std0 + 1e-6), 0.0, 0.0, 0.55 / (std1 + 1e-6), -0.55 / (std1 + 1e-6)]
    got = [g.advantage - e.advantage for g, e in zip(gigpo, grpo)]
    assert got == pytest.approx([2.0 * v for v in expected_step], rel=1e-6)
    stats = gigpo_agent._stats
    assert stats["gigpo/anchor_groups"] == 5.0  # (0,s0) (0,a1) (0,b1) (0,b2) (1,s0)
    assert stats["gigpo/steps_in_shared_anchor_frac"] == pytest.approx(4 / 7)


def test_success_reward_mode_puts_the_outcome_on_the_last_step():
    agent = _agent(GiGPOAgent, GiGPOConfig(), reward="success")
    traj = _traj(0, ["x", "y"], [-0.1, 10.0], True, valid=[False, True])
    assert agent.step_rewards(traj, 1.0) == pytest.approx([0.0, 1.0])
    # discounted (γ 0.95) then the invalid step 0 loses 0.1 from its own return: 0.95 − 0.1
    assert agent.step_returns(traj, 1.0) == pytest.approx([0.85, 1.0])


def test_one_step_env_step_advantage_equals_episode_advantage():
    """With a single shared start state (the choice env), ω = 1 doubles GRPO's advantage."""
    trajectories = [_traj(0, ["fork"], [float(w)], bool(w)) for w in (1, 0, 0, 1, 1)]
    rewards = [t.env_return for t in trajectories]
    grpo = _agent(GRPOAgent, GRPOConfig()).advantages(trajectories, rewards)
    gigpo = _agent(GiGPOAgent, GiGPOConfig()).advantages(trajectories, rewards)
    assert [g.advantage for g in gigpo] == pytest.approx([2 * e.advantage for e in grpo], rel=1e-5)


def test_gigpo_learns_the_rewarded_action(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.rundir import read_jsonl
    from seedbench.training.trainer import train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        path = train(build_config(overrides={
            "env": "choice", "agent": "gigpo", "model": {"name": "tiny"}, "iterations": 15, "output": str(tmp_path / "g"),
            "rollout": {"max_new_tokens": 3, "tasks_per_batch": 8, "group_size": 8},
            "optim": {"lr": 0.01, "mini_batch_size": 64, "micro_batch_size": 64},
            "eval": {"num_tasks": 64, "temperature": 1.0}}))
    finally:
        torch.set_num_threads(threads)
    evals = list(read_jsonl(path / "eval.jsonl"))
    assert evals[0]["success_micro"] < 0.5 and evals[-1]["success_micro"] >= 0.9
