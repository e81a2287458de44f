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


# -- OPD normalisation (reference: mean over the OPD-active tokens of each micro-batch) ------------------
def test_opd_scale_turns_the_token_sum_into_the_reference_mean():
    from seedbench.agents.seed.agent import opd_scale

    # 40 tokens in the mini-batch, 2 micro-batches, 5 active tokens here: the trainer divides by 40, so
    # the factor 40 / (5 · 2) leaves sum / 5 / 2 = the active-token mean ÷ accumulation steps.
    assert opd_scale("active_tokens", 5, 40, 2) == pytest.approx(4.0)
    assert opd_scale("active_tokens", 0, 40, 2) == 0.0
    assert opd_scale("all_tokens", 5, 40, 2) == 1.0


def _seed_trainer(tmp_path, name, **overrides):
    from seedbench.config import build_config
    from seedbench.training.trainer import Trainer

    config = {"env": "choice", "agent": "seed", "model": {"name": "tiny"}, "iterations": 1,
              "output": str(tmp_path / name), "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2},
              "eval": {"num_tasks": 2}}
    for key, value in overrides.items():
        config.setdefault(key, {}).update(value) if isinstance(value, dict) else config.__setitem__(key, value)
    return Trainer(build_config(overrides=config))


@pytest.mark.parametrize("mode", ["active_tokens", "all_tokens"])
def test_seed_loss_normalises_the_distillation_term_per_opd_norm(tmp_path, mode):
    from seedbench.agents.base import MiniBatch

    trainer = _seed_trainer(tmp_path, mode, algo={"kl_coef": 0.0, "entropy_coef": 0.0, "opd_norm": mode,
                                                   "expect_analyzer_sft": False})
    try:
        logp = torch.full((2, 2), -1.0)
        mb = MiniBatch(logp=logp, old_logp=logp.clone(), mask=torch.ones(2, 2), advantages=torch.zeros(2),
                       extras={"teacher_logp": torch.tensor([[-0.5, -1.5], [0.0, 0.0]]),
                               "opd_mask": torch.tensor([[1.0, 1.0], [0.0, 0.0]])},
                       update_info={"update_tokens": 8.0, "opd_tokens": 2.0}, minibatch_tokens=8, micro_batches=2)
        loss, _ = trainer.agent.loss(mb)
        # gaps +0.5 and −0.5 on the two active tokens: Σ g·gap = 0.5·σ(2.5) − 0.5·σ(−2.5)
        opd_sum = 0.5 / (1 + math.exp(-2.5)) - 0.5 / (1 + math.exp(2.5))
        factor = 8 / (2 * 2) if mode == "active_tokens" else 1.0  # pg term is 0: advantages 0, ratio 1
        assert float(loss) == pytest.approx(trainer.agent.config.opd_coef * factor * opd_sum, rel=1e-5)
    finally:
        trainer.close()


# -- scoring temperature (reference: logits / rollout temperature) --------------------------------------
class _FixedLogits(torch.nn.Module):
    """A 'model' whose next-token logits are [0, 1] everywhere (vocabulary of two)."""

    def forward(self, input_ids, attention_mask=None, position_ids=None, logits_to_keep=None):
        from types import SimpleNamespace

        logits = torch.tensor([0.0, 1.0]).expand(input_ids.shape[0], input_ids.shape[1], 2)
        return SimpleNamespace(logits=logits)


def test_log_probs_are_scored_at_the_given_temperature():
    from seedbench.models.scoring import forward_logprobs

    logp_t1, _, _ = forward_logprobs(_FixedLogits(), [[0]], [[1]], pad_id=0, device="cpu")
    logp_t05, _, _ = forward_logprobs(_FixedLogits(), [[0]], [[1]], pad_id=0, device="cpu", temperature=0.5)
    assert float(logp_t1[0, 0]) == pytest.approx(1 - math.log(1 + math.e))  # −0.313262
    assert float(logp_t05[0, 0]) == pytest.approx(2 - math.log(1 + math.e ** 2))  # logits / 0.5 = [0, 2]


def test_the_update_scores_at_the_rollout_temperature_and_checks_engine_log_probs_there(tmp_path):
    from seedbench.models.scoring import score_responses
    from seedbench.rollout.lockstep import run_episodes
    from seedbench.training.rundir import read_jsonl

    trainer = _seed_trainer(tmp_path, "t07", agent="grpo", rollout={"temperature": 0.7})
    try:
        assert trainer.context.score_temperature == pytest.approx(0.7)
        trajectories, _ = run_episodes(trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer,
                                       trainer._train_tasks(99), group_size=2, params=trainer.sampling,
                                       history_length=trainer.history_length, max_steps=trainer.max_steps)
        steps = [s for t in trajectories for s in t.steps]
        prompts, responses = [s.prompt_ids for s in steps], [s.response_ids for s in steps]
        sampled = [x for s in steps for x in s.sampled_logprobs]

        def mean_gap(scored):
            values = [x for row in scored for x in row]
            return sum(abs(a - b) for a, b in zip(sampled, values)) / len(values)

        # scoring at temperature 1 (the older rule) measures another distribution than the rollout's
        policy = trainer.policy
        at_one = score_responses(policy.model, prompts, responses, policy.tokenizer.pad_token_id, policy.device)
        assert mean_gap(at_one) > 0.01
        assert mean_gap(trainer.context.score(prompts, responses)) < 1e-4
        trainer.train()
    finally:
        trainer.close()
    metrics = list(read_jsonl(tmp_path / "t07" / "metrics.jsonl"))[-1]
    # the engine's sampled log-probs (logits / 0.7) and the trainer's old log-probs agree
    assert metrics["rollout/logprob_abs_diff"] < 1e-3
    older = _seed_trainer(tmp_path, "one", agent="grpo", rollout={"temperature": 0.7}, optim={"score_temperature": "one"})
    greedy = _seed_trainer(tmp_path, "greedy", agent="grpo", rollout={"temperature": 0.0})
    try:
        assert older.context.score_temperature == 1.0 and greedy.context.score_temperature == 1.0
    finally:
        older.close()
        greedy.close()


# -- Skill-GRPO is evaluated without skills, Skill-GRPO* with them ---------------------------------------
def test_skill_grpo_tests_without_skills_and_the_starred_variant_with_them():
    from seedbench.config import build_config, agent_config

    assert agent_config(build_config(overrides={"agent": "skill-grpo"})).eval_skills is False
    assert agent_config(build_config(overrides={"agent": "skill-grpo-star"})).eval_skills is True
    assert agent_config(build_config(overrides={"agent": "skill-prompt"})).eval_skills is True


def test_eval_hook_of_a_seed_agent_follows_eval_skills():
    from types import SimpleNamespace

    from seedbench.agents.seed.agent import SEEDAgent, SEEDConfig

    calls = []
    for eval_skills in (False, True):
        agent = SEEDAgent.__new__(SEEDAgent)  # only the hooks are exercised: no model needed
        agent.config = SEEDConfig(act_skills=True, eval_skills=eval_skills)
        agent.transform_prompt = lambda trajectory, content: calls.append(content) or content + " +skill"
        out = agent.transform_eval_prompt(SimpleNamespace(), "prompt")
        assert out == ("prompt +skill" if eval_skills else "prompt")
    assert calls == ["prompt"]
