"""SEED agent: skill insertion, paired re-scoring on the identical response ids, analysis bookkeeping,
and one tiny end-to-end iteration of every registered agent."""

import json
from pathlib import Path

import pytest
import torch

from seedbench.config import ConfigError, build_config
from seedbench.engines.base import Generation
from seedbench.rollout.prompting import SKILL_HEADER, SKILL_USAGE, TASK_PREFIX, HistoryItem, build_user_content, insert_skill, render_prompt
from seedbench.registry import agent_entries
from seedbench.rollout.lockstep import run_episodes
from seedbench.training.rundir import read_jsonl
from tests.test_env_registry import ENV_PARAMS, make_registered_env
from seedbench.training.trainer import Trainer, train

SKILL = "answer right . choose right . right"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _library(tmp_path, skill=SKILL):
    path = tmp_path / "library.jsonl"
    path.write_text(json.dumps({"task_text": "choose left or right", "episode_skill": skill, "won": True,
                                "first_observation": "You stand at a fork in the road.", "task": "train:0"}) + "\n")
    return path


def _config(tmp_path, agent, name="run", **algo):
    return build_config(overrides={
        "env": "choice", "agent": agent, "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / name),
        "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2},
        "eval": {"num_tasks": 2}, "algo": algo})


# -- the skill block lands after the task line, for every registered env -----------------------------
@pytest.mark.parametrize("alias", ENV_PARAMS)
def test_skill_block_lands_after_the_task_line_of_every_registered_env(alias):
    env = make_registered_env(alias)
    observation, info = env.reset(seed=0, options={"split": env.splits[0]})
    history = [HistoryItem(observation, "up"), HistoryItem(observation, "down")]
    content = build_user_content(task=info["task"], observation=observation, step=2, history=history,
                                 history_length=env.history_length, admissible_actions=info.get("admissible_actions"),
                                 instruction=getattr(env, "instruction", ""))
    augmented = insert_skill(content, "push from behind")
    lines, original = augmented.split("\n"), content.split("\n")
    task_at = next(i for i, line in enumerate(lines) if line.startswith(TASK_PREFIX))
    assert lines[task_at] == f"{TASK_PREFIX}{info['task']}"
    assert lines[task_at + 1 : task_at + 6] == ["", SKILL_HEADER, SKILL_USAGE, "[push from behind]", ""]
    assert lines[: task_at + 1] + lines[task_at + 6 :] == original  # nothing else moved or changed
    env.close()


# -- paired re-scoring --------------------------------------------------------------------------------
def _rollout(trainer, iteration=1):
    cfg = trainer.config
    trajectories, _ = run_episodes(trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer,
                                   trainer._train_tasks(iteration), group_size=cfg.rollout.group_size,
                                   params=trainer.sampling, history_length=trainer.history_length,
                                   max_steps=trainer.max_steps)
    return trajectories


def test_rescoring_uses_exactly_the_sampled_response_ids_and_only_the_prompt_differs(tmp_path):
    trainer = Trainer(_config(tmp_path, "seed-static-skills", skill_library=str(_library(tmp_path))))
    calls = []
    real_score = trainer.context.score

    def recording_score(prompts, responses, model=None):
        calls.append(([list(p) for p in prompts], [list(r) for r in responses]))
        return real_score(prompts, responses, model=model)

    trainer.context.score = recording_score
    trajectories = _rollout(trainer)
    prepared = trainer.agent.prepare(trajectories, [float(t.won) for t in trajectories], 1)
    samples, metrics = prepared.samples, prepared.metrics
    steps = [s for t in trajectories for s in t.steps]
    assert len(calls) == 1 and metrics["seed/rescored_samples"] == len(steps)
    prompts, responses = calls[0]
    tok = trainer.policy.tokenizer
    # the reference block with its blank lines: "\n" + block + "\n" more after the task line's own "\n"
    block = tok(f"\n{SKILL_HEADER}\n{SKILL_USAGE}\n[{SKILL}]\n\n", add_special_tokens=False)["input_ids"]
    for step, sample, prompt, response in zip(steps, samples, prompts, responses):
        assert response == step.response_ids == sample.response_ids  # the identical sampled ids
        assert sample.prompt_ids == step.prompt_ids  # the student keeps the ordinary prompt
        assert prompt == render_prompt(tok, insert_skill(step.user_content, SKILL))
        # the augmented prompt is the original with the skill block spliced in, nothing else
        original = step.prompt_ids
        assert any(prompt == original[:k] + block + original[k:] for k in range(len(original) + 1))
        assert len(sample.extras["teacher_logp"]) == len(sample.response_ids) == len(sample.extras["opd_mask"])
        assert sample.extras["opd_mask"] == [1.0] * len(sample.response_ids)
    trainer.close()


class _CannedEngine:
    """Answers analyzer prompts: valid JSON for even calls, garbage for odd ones."""

    def __init__(self):
        self.prompts, self.params = [], None

    def generate(self, prompts, params):
        self.prompts.extend(prompts)
        self.params = params
        texts = ['{"episode_summary": "s", "episode_skill": "answer right"}' if i % 2 == 0 else "no idea"
                 for i in range(len(prompts))]
        return [Generation(token_ids=[1], logprobs=[0.0], text=t) for t in texts]


def test_failed_analyses_get_no_distillation_signal_and_are_counted(tmp_path):
    trainer = Trainer(_config(tmp_path, "seed"))
    engine = _CannedEngine()
    trainer.agent._analysis_engine = engine
    trajectories = _rollout(trainer)
    prepared = trainer.agent.prepare(trajectories, [float(t.won) for t in trajectories], 1)
    samples, metrics = prepared.samples, prepared.metrics
    assert engine.params.greedy and len(engine.prompts) == len(trajectories)  # every trajectory, batched, greedy
    assert metrics["seed/analysis_success_rate"] == 0.5 and metrics["seed/analysis_failures"] == len(trajectories) // 2
    for sample in samples:
        analysed = sample.traj_index % 2 == 0
        assert sample.extras["opd_mask"] == [float(analysed)] * len(sample.response_ids)
    records = list(read_jsonl(Path(trainer.run_dir.path) / "skills.jsonl"))
    assert [r["ok"] for r in records] == [i % 2 == 0 for i in range(len(trajectories))]
    assert [r["episode_id"] for r in records] == [t.episode_id for t in trajectories]
    assert records[0]["episode_skill"] == "answer right" and records[1]["raw"] == "no idea"
    trainer.close()


def test_gate_statistics_are_means_over_opd_active_tokens(tmp_path):
    from seedbench.agents.base import MiniBatch

    trainer = Trainer(_config(tmp_path, "seed", kl_coef=0.0, entropy_coef=0.0))
    agent = trainer.agent
    update_info = {"update_tokens": 4.0, "opd_tokens": 2.0}  # as prepare returns them for this one micro-batch
    logp = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
    mb = MiniBatch(logp=logp, old_logp=logp.clone(), mask=torch.ones(2, 2), advantages=torch.zeros(2),
                   extras={"teacher_logp": torch.tensor([[-0.5, -1.5], [0.0, 0.0]]),
                           "opd_mask": torch.tensor([[1.0, 1.0], [0.0, 0.0]])}, update_info=update_info)
    _, metrics = agent.loss(mb)
    per_token = {k: float(v) / update_info["update_tokens"] for k, v in metrics.items()}  # what the trainer reports
    g = torch.sigmoid(torch.tensor([2.5, -2.5]))
    assert per_token["seed/gate_mean"] == pytest.approx(float(g.mean()))
    assert per_token["seed/gate_open_frac"] == pytest.approx(0.5)
    assert per_token["seed/teacher_gap_mean"] == pytest.approx(0.0)
    assert per_token["seed/opd_active_ratio"] == pytest.approx(0.5)
    trainer.close()


def test_random_tiny_model_ignores_the_skill_so_the_gate_carries_no_signal(tmp_path):
    """Why the learning test first teaches the tiny model to read a skill line."""
    trainer = Trainer(_config(tmp_path, "seed-static-skills", skill_library=str(_library(tmp_path))))
    trajectories = _rollout(trainer)
    samples = trainer.agent.prepare(trajectories, [float(t.won) for t in trajectories], 1).samples
    student = trainer.context.score([s.prompt_ids for s in samples], [s.response_ids for s in samples])
    gaps = [abs(t - s) for sample, st in zip(samples, student) for t, s in zip(sample.extras["teacher_logp"], st)]
    assert max(gaps) < 0.05
    trainer.close()


def test_unknown_analyzer_and_missing_library_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="analyzer"):
        Trainer(_config(tmp_path, "seed", "a", analyzer="oracle"))
    with pytest.raises(ConfigError, match="skill_library"):
        Trainer(_config(tmp_path, "seed-static-skills", "b"))


# -- every registered agent runs one tiny iteration ---------------------------------------------------
@pytest.mark.parametrize("agent", sorted(agent_entries()))
def test_every_registered_agent_runs_one_iteration(tmp_path, agent):
    entry = agent_entries()[agent]
    algo = {}
    family = entry.factory.endswith("DistillAgent")  # the distillation family's teachers read skills too
    if entry.overrides.get("analyzer") == "static" or entry.overrides.get("act_skills") or family:
        algo["skill_library"] = str(_library(tmp_path))
    if entry.overrides.get("retire"):  # RetireOPD phase 2: the phase-1 teacher and its validation score
        algo.update(teacher_model="tiny", teacher_success=0.5)
    if agent.startswith("seed"):
        algo["analysis_max_new_tokens"] = 8
    path = train(_config(tmp_path, agent, **algo))
    metrics = list(read_jsonl(Path(path) / "metrics.jsonl"))
    assert len(metrics) == 1 and metrics[0]["rollout/episode_length"] == 1.0
    if entry.factory.endswith("SEEDAgent") and entry.overrides.get("train", True) and entry.overrides.get("opd_coef", 1):
        assert "seed/analysis_success_rate" in metrics[0]
        skills = list(read_jsonl(Path(path) / "skills.jsonl"))
        assert len(skills) == 4 and all("episode_id" in r for r in skills)
    if agent in ("seed", "seed-no-sft", "seed-frozen-analyzer"):
        # a random tiny model cannot write the JSON: SEED degrades to GRPO, visibly
        assert metrics[0]["seed/analysis_success_rate"] == 0.0 and metrics[0]["seed/gate_mean"] is None
    if agent == "seed-static-skills":
        assert metrics[0]["seed/analysis_success_rate"] == 1.0 and metrics[0]["seed/opd_active_ratio"] == 1.0
        assert 0.0 < metrics[0]["seed/gate_mean"] < 1.0
    if agent == "gigpo":
        assert "gigpo/anchor_groups" in metrics[0]
    if family:
        assert all(v is None or v == v for v in metrics[0].values() if isinstance(v, float))  # nothing NaN
        from seedbench.report.data import read_run
        from seedbench.report.tables import protocol_cards

        fields = protocol_cards([read_run(path)])[0]["fields"]  # the card says where the teacher's context came from
        assert fields[f"privileged context ({agent})"] == [f"skills: JSONL skill library {_library(tmp_path)} "
                                                           "(TF-IDF retrieval by task text + first observation)"]
        if not entry.overrides.get("act_skills"):  # a teacher re-scored every step and the term was logged
            assert metrics[0]["distill/teacher_scored_samples"] == 4.0
            term = "rlsd/lambda" if entry.overrides.get("advantage_shaping") else "distill/loss"
            assert term in metrics[0]
    if entry.overrides.get("act_skills") and not family:
        assert metrics[0]["train/samples"] == (0 if agent == "skill-prompt" else 4)
        assert "seed/analysis_success_rate" not in metrics[0]
        episodes = list(read_jsonl(Path(path) / "episodes.jsonl"))
        train_prompts = [s["prompt"] for e in episodes if e["phase"] == "train" for s in e["steps"]]
        eval_prompts = [s["prompt"] for e in episodes if e["phase"] != "train" for s in e["steps"]]
        assert train_prompts and eval_prompts and all(SKILL in p for p in train_prompts)
        # Skill-GRPO (paper) is tested without its skills; Skill-GRPO* and Skill-Prompt keep them
        with_skills_at_eval = entry.overrides.get("eval_skills", True)
        assert all((SKILL in p) == with_skills_at_eval for p in eval_prompts)


def test_transform_prompt_inserts_one_library_skill_per_episode(tmp_path):
    from seedbench.agents.seed.agent import current_observation
    from seedbench.rollout.types import TaskRef, Trajectory

    trainer = Trainer(_config(tmp_path, "skill-prompt", skill_library=str(_library(tmp_path))))
    agent = trainer.agent
    assert not agent.needs_reference(agent.config) and trainer.policy.ref_model is None
    traj = Trajectory(episode_id="e0", group_id=0, task=TaskRef("train", 0), task_text="choose left or right")
    content = build_user_content(task="choose left or right", observation="You stand\nat a fork.", step=0,
                                 history=[], history_length=0, admissible_actions=["left", "right"])
    assert current_observation(content) == "You stand\nat a fork."
    assert agent.transform_prompt(traj, content) == insert_skill(content, SKILL)
    prepared = agent.prepare([traj], [0.0], 1)
    assert prepared.samples == [] and prepared.metrics["seed/act_skill_episodes"] == 1.0  # no training at all
    plain = Trainer(_config(tmp_path, "seed", "plain"))
    assert plain.agent.transform_prompt(traj, content) == content  # SEED itself never touches acting prompts
    trainer.close()
    plain.close()
    ours = Trainer(_config(tmp_path, "skill-prompt", "ours", skill_library=str(_library(tmp_path)), skill_block="seedbench"))
    assert ours.agent.transform_prompt(traj, content) == insert_skill(content, SKILL, "seedbench")
    assert "Episode-Level Skill\nUse the following skill" in ours.agent.transform_prompt(traj, content)
    ours.close()


def test_frozen_analyzer_analyses_with_the_initial_weights(tmp_path):
    trainer = Trainer(_config(tmp_path, "seed-frozen-analyzer"))
    engine = trainer.agent._analysis_engine
    assert engine is not None and engine is not trainer.engine
    assert engine.model is trainer.policy.ref_model  # the frozen starting weights, shared with the KL reference
    trainer.close()


def test_self_analysis_runs_under_a_progress_bar_of_its_decode_steps(tmp_path, monkeypatch):
    """Each update's self-analysis shows a bar (``iter N self-analysis``) that the engine fills with decode
    steps: ``analysis_max_new_tokens`` per generation batch, complete when the analyses are."""
    import seedbench.agents.seed.agent as seed_agent

    bars = []
    real = seed_agent.progress_bar

    def recording_bar(**kwargs):
        bar = real(**kwargs)
        bars.append((kwargs["desc"], bar, kwargs.get("total")))
        return bar

    monkeypatch.setattr(seed_agent, "progress_bar", recording_bar)
    trainer = Trainer(_config(tmp_path, "seed", analysis_max_new_tokens=5))
    monkeypatch.setenv("SEEDBENCH_PROGRESS", "1")  # the suite turns bars off; a disabled bar counts nothing
    trajectories = _rollout(trainer)
    analyses, records = trainer.agent.analyse(trajectories, [0.0] * len(trajectories), 1)
    assert len(records) == len(trajectories) == 4
    assert [desc for desc, _, _ in bars] == ["iter 1 self-analysis"]
    _, bar, created_with = bars[0]
    assert created_with is None  # one bar, whose total is the engine's (a first guess would show as a second bar)
    assert bar.total == 5 and bar.n == 5  # one batch of 4 analyses (engine batch 32), 5 new tokens at most
    trainer.close()
