"""The agent contract (seedbench.agents.base) is enough to write an agent: the RLOO agent of
docs/adding_an_agent.md, copied here, registers, resolves and trains; the reference model is loaded
exactly when ``needs_reference(config)`` says so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from seedbench.agents.base import Agent, AgentConfig, MiniBatch, PreparedUpdate, TrainSample
from seedbench.agents.losses import kl_k3
from seedbench.config import build_config
from seedbench.registry import AgentEntry, load_object, register_agent, resolve_agent
from seedbench.rollout.types import StepSample, TaskRef, Trajectory
from seedbench.training.rundir import read_jsonl


# -- the agent, exactly as in docs/adding_an_agent.md ------------------------------------------------
@dataclass
class RLOOConfig(AgentConfig):
    penalize_invalid: bool = True
    """Subtract the invalid-action penalty once per invalid step from the episode's score."""


def leave_one_out(scores: list[float], groups: list[int]) -> list[float]:
    """A_n = s_n − mean of the other members of n's group; 0 for a group of one."""
    out = []
    for n, (score, group) in enumerate(zip(scores, groups)):
        others = [s for m, (s, g) in enumerate(zip(scores, groups)) if g == group and m != n]
        out.append(score - sum(others) / len(others) if others else 0.0)
    return out


class RLOOAgent(Agent):
    name = "rloo"
    Config = RLOOConfig

    def prepare(self, trajectories, rewards, iteration):
        penalty = self.invalid_penalty() if self.config.penalize_invalid else 0.0
        scores = [r - penalty * t.num_invalid for t, r in zip(trajectories, rewards)]
        advantages = leave_one_out(scores, [t.group_id for t in trajectories])
        samples = [TrainSample(step.prompt_ids, step.response_ids, advantages[i], i)
                   for i, traj in enumerate(trajectories) for step in traj.steps]
        mean_abs = sum(abs(a) for a in advantages) / max(len(advantages), 1)
        return PreparedUpdate(samples, {"rloo/advantage_abs_mean": mean_abs})

    def loss(self, mb: MiniBatch):
        ratio = torch.exp(mb.logp - mb.old_logp)  # 1 on the first epoch: plain REINFORCE
        pg_sum = -(ratio * mb.advantages.unsqueeze(-1) * mb.mask).sum()
        loss, metrics = pg_sum, {"train/pg_loss": pg_sum.detach()}
        if mb.ref_logp is not None:  # loaded because needs_reference(config): kl_coef > 0
            kl_sum = (kl_k3(mb.logp, mb.ref_logp) * mb.mask).sum()
            loss = loss + self.config.kl_coef * kl_sum
            metrics["train/kl"] = kl_sum.detach()
        if mb.entropy is not None:  # computed because entropy_coef > 0
            ent_sum = (mb.entropy * mb.mask).sum()
            loss = loss - self.config.entropy_coef * ent_sum
            metrics["train/entropy"] = ent_sum.detach()
        return loss, metrics


# -- a spy on what the trainer hands the agent ----------------------------------------------------------
SEEN: list[dict] = []  # one record per loss call


class SpyRLOOAgent(RLOOAgent):
    def loss(self, mb: MiniBatch):
        SEEN.append({"advantages": mb.advantages.tolist(), "ref": mb.ref_logp is not None,
                     "entropy": mb.entropy is not None})
        return super().loss(mb)


ENTRY = AgentEntry("rloo-test", "tests.test_agent_contract:SpyRLOOAgent", "RLOO from docs/adding_an_agent.md")


@pytest.fixture
def fresh_agents():
    """Agents registered by a test are forgotten after it (the registry reloads its catalogue)."""
    from seedbench.registry import AGENTS

    AGENTS.reload()
    yield
    AGENTS.reload()


@pytest.fixture
def registered(fresh_agents):
    """The test agent in the registry for one test only."""
    register_agent(ENTRY)
    SEEN.clear()
    return ENTRY


def _config(tmp_path, name, agent, **algo):
    return build_config(overrides={
        "env": "choice", "agent": agent, "model": {"name": "tiny"}, "iterations": 2, "output": str(tmp_path / name),
        "rollout": {"max_new_tokens": 3, "tasks_per_batch": 4, "group_size": 4},
        "optim": {"lr": 0.01, "mini_batch_size": 8, "micro_batch_size": 4}, "eval": {"num_tasks": 4}, "algo": algo})


def _traj(group, valid):
    steps = [StepSample(step=0, user_content="", prompt_ids=[1], response_ids=[2], sampled_logprobs=[0.0],
                        response_text="", observation="o", action="a", action_valid=valid, env_reward=0.0)]
    return Trajectory(episode_id=f"g{group}", group_id=group, task=TaskRef("train", group), steps=steps)


def test_leave_one_out_advantages_by_hand():
    agent = RLOOAgent(RLOOConfig(invalid_penalty=0.5), context=None)
    trajectories = [_traj(0, True), _traj(0, True), _traj(0, False), _traj(0, True), _traj(1, True)]
    prepared = agent.prepare(trajectories, [1.0, 0.0, 0.0, 1.0, 1.0], iteration=1)
    # group 0 scores 1, 0, −0.5 (invalid), 1: e.g. A_0 = 1 − (0 − 0.5 + 1)/3 = 5/6; a group of one gets 0
    assert [s.advantage for s in prepared.samples] == pytest.approx([5 / 6, -0.5, -7 / 6, 5 / 6, 0.0])
    assert [s.traj_index for s in prepared.samples] == [0, 1, 2, 3, 4]
    assert prepared.metrics["rloo/advantage_abs_mean"] == pytest.approx((5 / 6 + 0.5 + 7 / 6 + 5 / 6) / 5)
    assert prepared.update_info == {}


def test_documented_agent_registers_resolves_and_trains_with_its_leave_one_out_advantages(tmp_path, registered):
    from seedbench.training.trainer import train

    assert resolve_agent("rloo-test") == registered and load_object(registered.factory) is SpyRLOOAgent
    path = Path(train(_config(tmp_path, "rloo", "rloo-test")))
    metrics = list(read_jsonl(path / "metrics.jsonl"))
    assert [m["iteration"] for m in metrics] == [1, 2] and all(m["train/samples"] == 16 for m in metrics)
    episodes = [e for e in read_jsonl(path / "episodes.jsonl") if e["phase"] == "train"]
    expected = []  # by hand from the logged episodes: score = reward − 0.1 (choice's penalty) per invalid step
    for iteration in (1, 2):
        for group in range(4):
            scores = [e["reward"] - 0.1 * e["num_invalid"] for e in episodes
                      if e["iteration"] == iteration and e["group_id"] == group]
            assert len(scores) == 4
            expected += [s - (sum(scores) - s) / 3 for s in scores]
    seen = [a for record in SEEN for a in record["advantages"]]  # what the loss received, in shuffled order
    assert len(seen) == 32 and sorted(seen) == pytest.approx(sorted(expected), abs=1e-6)
    assert any(abs(a) > 0.01 for a in seen)  # the run has groups with different scores
    assert not any(record["ref"] for record in SEEN)  # kl_coef 0: no reference, no ref_logp
    assert not any(record["entropy"] for record in SEEN)
    assert all(m["rloo/advantage_abs_mean"] == pytest.approx(
        sum(abs(a) for a in expected[16 * i : 16 * i + 16]) / 16) for i, m in enumerate(metrics))


CASES = [  # (agent, algo overrides, reference expected)
    ("grpo", {}, True),
    ("grpo", {"kl_coef": 0.0}, False),
    ("gigpo", {}, True),
    ("seed", {}, True),
    ("seed", {"train": False}, False),  # Skill-Prompt style: never updates, so never needs the reference
    ("rloo-test", {}, False),
    ("rloo-test", {"kl_coef": 0.05}, True),
]


@pytest.mark.parametrize("agent, algo, expected", CASES, ids=[f"{a}-{o}" for a, o, _ in CASES])
def test_needs_reference_is_what_the_trainer_loads_and_uses(tmp_path, registered, agent, algo, expected):
    from seedbench.training.trainer import Trainer

    trainer = Trainer(_config(tmp_path, "ref", agent, **algo))
    try:
        assert type(trainer.agent).needs_reference(trainer.agent.config) is expected
        assert trainer.needs_reference is expected
        assert (trainer.policy.ref_model is not None) is expected
        if agent == "rloo-test":  # the update hands the loss reference log-probs exactly then
            trainer.iteration(1)
            assert SEEN and all(record["ref"] is expected for record in SEEN)
    finally:
        trainer.close()


def test_a_class_that_is_not_an_agent_is_a_config_error(tmp_path, fresh_agents):
    from seedbench.config import ConfigError
    from seedbench.training.trainer import Trainer

    register_agent(AgentEntry("not-an-agent", "tests.test_agent_contract:RLOOConfig", "a config, not an agent"))
    with pytest.raises(ConfigError, match="not a subclass of seedbench.agents.base.Agent"):
        Trainer(_config(tmp_path, "bad", "not-an-agent"))


def test_the_agent_here_is_the_one_in_the_docs():
    """docs/adding_an_agent.md's example and this file's copy must not drift apart."""
    doc = (Path(__file__).parents[1] / "docs" / "adding_an_agent.md").read_text()
    example = doc.split("```python\n")[1].split("```")[0]
    imports, _, code = example.partition("\n\n\n")
    here = Path(__file__).read_text()
    assert code.strip() in here
    assert all(line in here for line in imports.splitlines() if line)


def test_the_agent_context_names_and_types_every_member():
    """`AgentContext` is the whole of what an agent gets: named members typed by the classes and protocols they
    are (no catch-all ``extras`` dict, no ``Any``)."""
    import dataclasses

    from seedbench.agents.base import AgentContext

    members = {f.name: f.type for f in dataclasses.fields(AgentContext)}
    assert members == {"policy": "Policy", "engine": "GenerationEngine", "env": "TextEnv", "run_dir": "RunDir",
                       "config": "RunConfig", "sampling": "SamplingParams | None"}
