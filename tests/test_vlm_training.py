"""Trainers on image observations with the tiny random Qwen2.5-VL: GRPO learns to read the frame (and
cannot when the frame is blank), SEED re-scores the identical response ids with the same frames, and
GiGPO / SEED run an iteration on images."""

import json

import numpy as np
import pytest
import torch

from seedbench.config import build_config
from seedbench.models.vision import prompt_images
from seedbench.rollout.prompting import insert_skill, render_prompt
from seedbench.training.rundir import read_jsonl
from seedbench.training.trainer import Trainer, train

SKILL = "answer left . choose left"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _config(tmp_path, name, env="image-choice", agent="grpo", **over):
    values = {"env": env, "agent": agent, "model": {"name": "tiny-vlm"}, "iterations": 1,
              "output": str(tmp_path / name),
              "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2}, "eval": {"num_tasks": 2}}
    for key, value in over.items():
        values[key] = {**values.get(key, {}), **value} if isinstance(value, dict) else value
    return build_config(overrides=values)


@pytest.mark.slow
def test_grpo_learns_to_read_the_image_and_a_blank_image_stays_at_chance(tmp_path):
    # One-token answers: a valid answer is then exactly one side, so the test asks only whether GRPO learns
    # to read the frame (with 3 tokens the tiny model first collapses onto one side, since image-choice
    # rejects answers naming both sides, and stays at 0.5).
    learning = dict(iterations=30, rollout={"tasks_per_batch": 8, "group_size": 8, "max_new_tokens": 1},
                    optim={"lr": 0.01, "mini_batch_size": 64, "micro_batch_size": 64},
                    algo={"kl_coef": 0.0, "entropy_coef": 0.0},
                    eval={"num_tasks": 64, "temperature": 1.0, "every": 30})
    seen = [r["success_micro"] for r in read_jsonl(train(_config(tmp_path, "seen", **learning)) / "eval.jsonl")]
    blank = [r["success_micro"] for r in read_jsonl(
        train(_config(tmp_path, "blank", env="image-choice-blank", **learning)) / "eval.jsonl")]
    print(f"\nimage-choice GRPO eval success: frames {seen[0]:.2f} -> {seen[-1]:.2f}; blank {blank[0]:.2f} -> {blank[-1]:.2f}")
    assert seen[0] < 0.3 and blank[0] < 0.3  # a random tiny model rarely even says left/right
    assert seen[-1] >= 0.8, f"GRPO did not learn to read the frame: {seen}"
    assert blank[-1] <= 0.7 and seen[-1] - blank[-1] >= 0.25, f"blank frames should stay at chance: {blank}"


def _library(tmp_path):
    path = tmp_path / "library.jsonl"
    path.write_text(json.dumps({"task_text": "the image is red or blue: say left for red, right for blue",
                                "episode_skill": SKILL, "won": True,
                                "first_observation": "What colour is the image?", "task": "train:0"}) + "\n")
    return path


def test_seed_rescoring_uses_identical_ids_and_the_same_frames(tmp_path):
    trainer = Trainer(_config(tmp_path, "seed", agent="seed-static-skills",
                              algo={"skill_library": str(_library(tmp_path))}))
    calls = []
    real_score = trainer.context.score

    def recording_score(prompts, responses, model=None):
        calls.append((list(prompts), [list(r) for r in responses]))
        return real_score(prompts, responses, model=model)

    trainer.context.score = recording_score
    from seedbench.rollout.lockstep import run_episodes
    from seedbench.rollout.types import TaskRef

    tasks = [TaskRef("train", 0), TaskRef("train", 1)]
    trajectories, _ = run_episodes(trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer,
                                   tasks, group_size=2, params=trainer.sampling, history_length=0, max_steps=1)
    prepared = trainer.agent.prepare(trajectories, [float(t.won) for t in trajectories], 1)
    steps = [s for t in trajectories for s in t.steps]
    assert len(calls) == 1
    prompts, responses = calls[0]
    tok = trainer.policy.tokenizer
    for step, sample, prompt, response, teacher in zip(steps, prepared.samples, prompts, responses,
                                                         (s.extras["teacher_logp"] for s in prepared.samples)):
        assert response == step.response_ids == sample.response_ids  # the identical sampled ids
        assert sample.prompt_ids is step.prompt_ids and step.image is not None
        assert len(prompt.images) == 1 and np.array_equal(prompt.images[0], step.image)
        assert torch.equal(prompt.pixel_values, step.prompt_ids.pixel_values)
        assert list(prompt) == list(render_prompt(tok, insert_skill(step.user_content, SKILL), prompt_images(step.prompt_ids)))
        assert len(prompt) > len(step.prompt_ids)  # the skill block is in the text part
        # the teacher's log-probs are those of this prompt *with its frame*: another frame scores differently
        other = render_prompt(tok, insert_skill(step.user_content, SKILL), [255 - step.image])
        with_other = real_score([other], [response])[0]
        assert teacher == pytest.approx(real_score([prompt], [response])[0], abs=1e-6)
        assert max(abs(a - b) for a, b in zip(teacher, with_other)) > 1e-6
    trainer.close()


@pytest.mark.parametrize("agent", ["gigpo", "seed"])
def test_agents_run_an_iteration_on_images(tmp_path, agent):
    trainer = Trainer(_config(tmp_path, agent, agent=agent))
    try:
        metrics = trainer.iteration(1)
    finally:
        trainer.close()
    assert metrics["trajectories"] == 4 and metrics["train/samples"] == 4
    assert metrics["rollout/logprob_abs_diff_max"] < 1e-4  # engine vs trainer, with pixels in both
    if agent == "seed":
        assert "seed/analysis_success_rate" in metrics


@pytest.mark.parametrize("env", ["image-choice", "sokoban-vision"])
def test_stage1_sft_analyzer_runs_on_a_vision_env_and_seed_starts_from_it(tmp_path, env):
    """Stage 1 on a vision env with a VLM: rollouts carry frames, the analyzer SFT trains on text prompts,
    and the checkpoint it writes is a vision checkpoint that stage 2 loads and plays images with."""
    from seedbench.agents.seed.stage1 import MARKER, main

    out = tmp_path / "sft"
    assert main(["--env", env, "--annotator", "hindsight", "--model", "tiny-vlm", "--tasks", "2",
                 "--group-size", "2", "--max-new-tokens", "3", "--max-steps", "1", "--epochs", "2", "--lr", "1e-3",
                 "--output", str(out)]) == 0
    marker = json.loads((out / "model" / MARKER).read_text())
    assert marker["val_loss_after"] < marker["val_loss_before"]
    assert (out / "model" / "preprocessor_config.json").is_file()
    # fp32 pinned: a checkpoint path gets model.dtype=auto, which is bf16 on CPUs with native bf16, and the
    # gap bound below is an fp32 bound (bf16 rounding alone gave 1.7e-3 on an AVX-512-BF16 CPU)
    trainer = Trainer(_config(tmp_path, "stage2", env=env, agent="seed",
                              model={"name": str(out / "model"), "dtype": "fp32"}, rollout={"max_steps": 1}))
    try:
        metrics = trainer.iteration(1)
    finally:
        trainer.close()
    assert metrics["train/samples"] == 4 and metrics["rollout/logprob_abs_diff_max"] < 1e-4
