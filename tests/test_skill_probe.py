"""`seedbench probe-skills` on a case whose answer is known: a policy built so that the skill names the action
(``go left`` → ``left``) and that without a skill either action is as likely. Its own (oracle) skill
must raise the decisive action's probability with an interval above 0; a shuffled skill must not."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from seedbench.jsonio import append_jsonl
from seedbench.models.tiny import tiny_tokenizer
from seedbench.report import skill_probe

ACTIONS = ("left", "right")


def _prompt(step: int = 0) -> str:
    return f"Your task is to: choose an action\nstep {step}"


def _response(action: str) -> str:
    return f"<think>go</think><action>{action}</action>"


class SkillReader(torch.nn.Module):
    """A policy whose answer is known: at every position it puts nearly all its mass on the two action words
    and prefers, by `margin` nats, the one that appeared last in its context (indifferent when none has). The task
    text names neither, so without a skill the action is a coin flip and a skill that names one decides it.
    It takes the forward arguments `score_responses` passes (padding, positions, ``logits_to_keep``)."""

    def __init__(self, tokenizer, margin: float = 4.0):
        super().__init__()
        self.vocab = len(tokenizer)
        self.action_ids = [tokenizer.convert_tokens_to_ids(a) for a in ACTIONS]
        self.margin = margin

    def forward(self, input_ids, attention_mask=None, position_ids=None, logits_to_keep=0, **_):
        batch, width = input_ids.shape
        logits = torch.zeros(batch, width, self.vocab)
        last = torch.full((batch,), -1)
        for t in range(width):
            for k, token in enumerate(self.action_ids):
                last = torch.where(input_ids[:, t] == token, torch.full_like(last, k), last)
            for k, token in enumerate(self.action_ids):
                logits[:, t, token] += 10.0 + self.margin * (last == k).float()
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return type("Output", (), {"logits": logits})()


@pytest.fixture(scope="module")
def skill_following_policy():
    tokenizer = tiny_tokenizer()
    return SkillReader(tokenizer), tokenizer


def _episodes(n: int = 24) -> list[skill_probe.ProbeEpisode]:
    episodes = []
    for i in range(n):
        action = ACTIONS[i % 2]
        steps = 1 + i % 2
        episodes.append(skill_probe.ProbeEpisode(
            episode_id=f"it1-{i}-0", iteration=1, task=f"train:{i}", won=i % 3 == 0, truncated=False,
            prompts=[_prompt(s) for s in range(steps)], outputs=[_response(ACTIONS[(i + 1) % 2])] * (steps - 1)
            + [_response(action)], skill=f"go {action}"))
    return episodes


def test_oracle_skill_moves_the_decisive_action_and_a_shuffled_one_does_not(skill_following_policy):
    model, tokenizer = skill_following_policy
    result = skill_probe.probe(model, tokenizer, _episodes(), resamples=1000)
    own, shuffled = result.conditions["own"], result.conditions["shuffled"]
    base = result.no_skill["decisive_prob"]
    assert 0.3 < base["mean"] < 0.7  # no skill: a coin flip between the two actions
    assert own["decisive_prob_shift"]["low"] > 0.2  # the oracle skill makes the decisive action near certain
    assert own["decisive_logp_shift"]["low"] > 0
    assert shuffled["decisive_prob_shift"]["low"] < 0 < shuffled["decisive_prob_shift"]["high"]
    assert result.own_minus_shuffled["decisive_prob_shift"]["low"] > 0
    assert own["gap_per_token"]["mean"] > shuffled["gap_per_token"]["mean"]
    assert own["gate_open_share"]["mean"] > 0  # the teacher is surer of the oracle's action tokens
    assert result.decisive_episodes == result.episodes == 24
    # each episode's own values, for a breakdown by task: their means are the table's
    rows = result.per_episode
    assert [r["episode_id"] for r in rows] == [e.episode_id for e in _episodes()]
    for condition in ("own", "shuffled"):
        shifts = [r[f"decisive_prob_shift_{condition}"] for r in rows]
        assert np.mean(shifts) == pytest.approx(result.conditions[condition]["decisive_prob_shift"]["mean"])
        assert np.mean([r[f"gap_{condition}"] for r in rows]) == pytest.approx(
            result.conditions[condition]["gap_per_token"]["mean"])
    assert np.mean([r["decisive_prob"] for r in rows]) == pytest.approx(base["mean"])


def test_decisive_span_is_the_action_payload():
    tokenizer = tiny_tokenizer()
    text = _response("right")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    span = skill_probe.action_token_span(tokenizer, text, ids)
    assert [tokenizer.convert_ids_to_tokens(ids[k]) for k in span] == ["right"]
    bare = "<think>go</think> right"
    bare_ids = tokenizer(bare, add_special_tokens=False)["input_ids"]
    assert skill_probe.action_token_span(tokenizer, bare, bare_ids) == list(range(len(bare_ids)))


def test_shuffled_skills_are_a_derangement_across_tasks():
    episodes = _episodes(6)
    for i, episode in enumerate(episodes):
        episode.skill, episode.task = f"skill {i}", f"train:{i // 2}"  # two episodes per task
    drawn = skill_probe.shuffled_skills(episodes, seed=3)
    assert drawn == skill_probe.shuffled_skills(episodes, seed=3)
    assert sorted(drawn) == sorted(e.skill for e in episodes)  # each skill given to exactly one episode
    owner = {e.skill: e for e in episodes}
    assert all(owner[skill].task != episode.task for skill, episode in zip(drawn, episodes))
    with pytest.raises(skill_probe.ProbeError):
        skill_probe.shuffled_skills(episodes[:1])


def _write_run(path, episodes):
    for e in episodes:
        append_jsonl(path / "episodes.jsonl", {
            "iteration": e.iteration, "phase": "train", "episode_id": e.episode_id, "task": e.task, "won": e.won,
            "truncated": e.truncated, "steps": [{"step": k, "prompt": p, "output": o, "action": "", "valid": True}
                                                for k, (p, o) in enumerate(zip(e.prompts, e.outputs))]})
        append_jsonl(path / "skills.jsonl", {"iteration": e.iteration, "episode_id": e.episode_id, "ok": True,
                                             "episode_skill": e.skill})
    append_jsonl(path / "skills.jsonl", {"iteration": 1, "episode_id": "unparsed", "ok": False, "episode_skill": None})


def test_cli_writes_json_and_table(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _write_run(run, _episodes(4))
    assert skill_probe.main([str(run), "--model", "tiny", "--out", str(tmp_path / "out")]) == 0
    payload = json.loads((tmp_path / "out" / "skill_probe.json").read_text())
    assert payload["episodes"] == 4 and set(payload["conditions"]) == {"own", "shuffled"}
    assert "| own |" in (tmp_path / "out" / "skill_probe.md").read_text()
    assert "| shuffled |" in capsys.readouterr().out


def test_archived_run_without_step_texts_is_refused_with_the_fix(tmp_path, capsys):
    (tmp_path / "skills.jsonl").write_text("")
    assert skill_probe.main([str(tmp_path), "--model", "tiny"]) == 2
    assert "no episodes.jsonl" in capsys.readouterr().err
