"""A learning test of SEED's distillation term that can fail.

A randomly initialised model ignores a skill in its prompt (teacher = student, gate ≡ 1/2, no signal), so
the tiny model is first taught, by a few supervised steps, to answer with the action a skill line names
and to answer 50/50 without one. Then SEED runs with the RL loss switched off (pg, KL and entropy weights
0) and skills from a fixed library: a skill naming the rewarded action must raise success well above
chance; a skill naming the wrong action must not.
"""

import json

import pytest
import torch

from seedbench.config import build_config
from seedbench.rollout.prompting import build_user_content, insert_skill, render_prompt
from seedbench.registry import make_env
from seedbench.training.rundir import read_jsonl
from seedbench.training.trainer import train


def skill(action):
    return f"answer {action} . choose {action} . {action}"


def _skill_following_checkpoint(path, max_steps=300):
    from seedbench.models.tiny import tiny_model, tiny_tokenizer

    torch.manual_seed(0)
    tok = tiny_tokenizer()
    model = tiny_model(tok, hidden_size=128, seed=0)
    env = make_env("choice")
    observation, info = env.reset(seed=0, options={"split": "train"})
    content = build_user_content(task=info["task"], observation=observation, step=0, history=[], history_length=0,
                                 admissible_actions=info["admissible_actions"], instruction=env.instruction)

    def ids(word):
        return tok(word, add_special_tokens=False)["input_ids"]

    rows = []
    for action in ("left", "right"):
        rows.append((render_prompt(tok, insert_skill(content, skill(action))), ids(action) + [tok.eos_token_id]))
        rows.append((render_prompt(tok, content), ids(action) + [tok.eos_token_id]))  # no skill: 50/50
    width = max(len(p) + len(r) for p, r in rows)
    inputs = torch.full((len(rows), width), tok.pad_token_id)
    attention, labels = torch.zeros_like(inputs), torch.full_like(inputs, -100)
    for i, (p, r) in enumerate(rows):
        inputs[i, : len(p) + len(r)] = torch.tensor(p + r)
        attention[i, : len(p) + len(r)] = 1
        labels[i, len(p) : len(p) + len(r)] = torch.tensor(r)
    probe = [render_prompt(tok, content), render_prompt(tok, insert_skill(content, skill("right"))),
             render_prompt(tok, insert_skill(content, skill("left")))]

    def p_right():
        with torch.no_grad():
            return [model(torch.tensor([p])).logits[0, -1].softmax(-1)[ids("right")[0]].item() for p in probe]

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(max_steps):
        loss = model(input_ids=inputs, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 19:
            plain, with_right, with_left = p_right()
            if with_right > 0.9 and with_left < 0.1 and abs(plain - 0.5) < 0.1:
                break
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return p_right()


@pytest.fixture(scope="module")
def skill_reader(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two oversubscribed cores: one thread is much faster
    path = tmp_path_factory.mktemp("skill_reader") / "model"
    probabilities = _skill_following_checkpoint(path)
    yield path, probabilities
    torch.set_num_threads(threads)


def _distill(tmp_path, model_path, action, iterations=4, lr=3e-4):
    library = tmp_path / f"library_{action}.jsonl"
    library.write_text(json.dumps({"task_text": "choose left or right", "episode_skill": skill(action)}) + "\n")
    config = build_config(overrides={
        "env": "choice", "agent": "seed-static-skills", "iterations": iterations, "output": str(tmp_path / action),
        "model": {"name": str(model_path), "dtype": "fp32"},
        "rollout": {"max_new_tokens": 3, "tasks_per_batch": 4, "group_size": 8},
        "optim": {"lr": lr, "mini_batch_size": 64, "micro_batch_size": 64},
        "eval": {"num_tasks": 64, "temperature": 1.0},
        "algo": {"skill_library": str(library), "library_match_outcome": False,
                 "pg_coef": 0.0, "kl_coef": 0.0, "entropy_coef": 0.0, "opd_coef": 1.0},
    })
    path = train(config)
    evals = list(read_jsonl(path / "eval.jsonl"))
    metrics = list(read_jsonl(path / "metrics.jsonl"))
    return evals[0]["success_micro"], evals[-1]["success_micro"], metrics


@pytest.mark.slow
def test_distillation_alone_learns_the_action_the_skill_names(tmp_path, skill_reader):
    model_path, (plain, with_right, with_left) = skill_reader
    assert with_right > 0.9 and with_left < 0.1 and abs(plain - 0.5) < 0.1, "the tiny model did not learn to read skills"

    before, after, metrics = _distill(tmp_path, model_path, "right")
    assert abs(before - 0.5) < 0.2  # chance
    assert after >= 0.8, f"distillation from a rewarded-action skill did not learn: {before} -> {after}"
    # the RL terms really are off: the whole loss is the distillation term (opd_coef = 1)
    assert all(m["train/loss"] == pytest.approx(m["seed/opd_loss"], abs=1e-6) for m in metrics)
    assert metrics[0]["seed/gate_open_frac"] > 0.2  # the gate sees the teacher's preference

    before_wrong, after_wrong, _ = _distill(tmp_path, model_path, "left")
    print(f"\nSEED distillation only (eval success, 64 episodes at T=1): rewarded-action skill {before:.3f} -> "
          f"{after:.3f}; wrong-action skill {before_wrong:.3f} -> {after_wrong:.3f}")
    assert after_wrong <= max(before_wrong, 0.5), f"a wrong skill raised success: {before_wrong} -> {after_wrong}"
