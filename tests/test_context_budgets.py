"""Context lengths derived from the run's budgets (`seedbench.config.context`) and refused at config time when
the model cannot hold them; the acting prompt's budget (``rollout.max_prompt_tokens``) in the episode."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from seedbench.config import ConfigError, build_config
from seedbench.config.context import generation_budgets, model_positions, required_context
from seedbench.registry import resolve_agent
from seedbench.config import agent_class, agent_config


def _checkpoint(tmp_path, positions: int):
    path = tmp_path / "ckpt"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2", "max_position_embeddings": positions}))
    return str(path)


def _required(config):
    return required_context(config, agent_class(resolve_agent(config.agent).factory, config.agent), agent_config(config))


def test_required_context_is_the_longest_prompt_plus_response_of_the_run():
    seed = build_config(overrides={"agent": "seed", "rollout": {"max_prompt_tokens": 2048, "max_new_tokens": 512},
                                   "algo": {"analysis_max_prompt_tokens": 12288, "analysis_max_new_tokens": 1024}})
    assert _required(seed) == 12288 + 1024
    grpo = build_config(overrides={"agent": "grpo", "rollout": {"max_prompt_tokens": 2048, "max_new_tokens": 512},
                                   "eval": {"max_new_tokens": 600}})
    assert _required(grpo) == 2048 + 600
    assert generation_budgets(grpo) == [("rollout.max_prompt_tokens + eval.max_new_tokens", 2648)]
    assert _required(build_config(overrides={"agent": "grpo"})) is None  # acting prompts unbounded


def test_a_rollout_budget_over_the_model_positions_is_refused_with_the_fix(tmp_path):
    ckpt = _checkpoint(tmp_path, 4096)
    with pytest.raises(ConfigError, match=r"rollout.max_prompt_tokens \+ rollout.max_new_tokens = 4608 tokens does not "
                                          r"fit the context length 4096 \(max_position_embeddings of .*\); lower them"):
        build_config(overrides={"env": "choice", "model": {"name": ckpt},
                                "rollout": {"max_prompt_tokens": 4096, "max_new_tokens": 512}})
    build_config(overrides={"env": "choice", "model": {"name": ckpt},
                            "rollout": {"max_prompt_tokens": 3584, "max_new_tokens": 512}})  # exactly fits


def test_an_explicit_max_model_len_below_the_rollout_budget_is_refused():
    with pytest.raises(ConfigError, match=r"= 2560 tokens does not fit the context length 2048 \(vllm.max_model_len\)"):
        build_config(overrides={"engine": "vllm", "vllm": {"max_model_len": 2048},
                                "rollout": {"max_prompt_tokens": 2048, "max_new_tokens": 512}})


def test_hub_model_positions_come_from_the_local_cache_never_the_network(tmp_path, monkeypatch):
    import huggingface_hub.constants

    snapshot = tmp_path / "models--Org--Model" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    (tmp_path / "models--Org--Model" / "refs").mkdir()
    (tmp_path / "models--Org--Model" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert model_positions("Org/Model") == (32768, "max_position_embeddings of Org/Model")
    assert model_positions("Org/Absent") is None
    with pytest.raises(ConfigError, match=r"analysis_max_new_tokens = 33792 tokens does not fit the context length 32768 "
                                          r"\(max_position_embeddings of Org/Model\)"):
        build_config(overrides={"agent": "seed", "model": {"name": "Org/Model"},
                                "algo": {"analysis_max_prompt_tokens": 32768, "analysis_max_new_tokens": 1024}})


# -- the acting prompt's budget ------------------------------------------------------------------------------
def _episode(budget: int | None, history_steps: int):
    from seedbench.models.tiny import tiny_tokenizer
    from seedbench.rollout.episode import Episode, EpisodeRules
    from seedbench.rollout.prompting import HistoryItem
    from seedbench.rollout.types import TaskRef, Trajectory

    spec = SimpleNamespace(instruction="", format_instruction=None)
    rules = EpisodeRules(spec, tiny_tokenizer(), history_length=5, max_steps=30, max_prompt_tokens=budget)
    episode = Episode(rules, 0, Trajectory("0-0", 0, TaskRef("train", 0), task_text="push the box"),
                      observation="you see a wall", info={})
    episode.history = [HistoryItem(f"you see a box {i} " * 6, "go left") for i in range(history_steps)]
    episode.step = history_steps
    return episode


def test_a_prompt_over_the_budget_shows_fewer_past_steps_until_it_fits():
    full = len(_episode(None, 5).prompt())
    one_fewer = _episode(None, 4)
    one_fewer.step = 5
    shorter = len(one_fewer.prompt())  # the same step with 4 past steps shown
    episode = _episode(full - 1, 5)
    ids = episode.prompt()
    assert shorter <= len(ids) <= full - 1
    assert episode.content.count("go left") == 4 and episode.prompt_ids is ids
    assert _episode(full, 5).prompt().__len__() == full  # at the budget: untouched


def test_a_prompt_that_cannot_fit_even_without_history_stops_with_the_field_to_raise():
    from seedbench.rollout.episode import PromptTooLong

    bare = len(_episode(None, 0).prompt())
    with pytest.raises(PromptTooLong, match=f"tokens without any history, over rollout.max_prompt_tokens={bare - 1}; "
                                            "raise rollout.max_prompt_tokens"):
        _episode(bare - 1, 3).prompt()


def test_the_runs_rollout_and_evaluation_apply_the_prompt_budget(tmp_path):
    """`build_run` hands ``rollout.max_prompt_tokens`` to the rollout function that training and evaluation use."""
    from seedbench.rollout.episode import PromptTooLong
    from seedbench.rollout.types import TaskRef
    from seedbench.training.build import build_run

    config = build_config(overrides={"env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "engine": "hf",
                                     "rollout": {"max_prompt_tokens": 8, "max_new_tokens": 4},
                                     "output": str(tmp_path / "run")})
    parts = build_run(config, None, training=False)
    try:
        envs = parts.make_envs(2)
        with pytest.raises(PromptTooLong, match="over rollout.max_prompt_tokens=8"):
            parts.run_episodes(envs, parts.env, parts.engine, parts.policy.tokenizer, [TaskRef("train", 0)],
                               group_size=2, params=parts.sampling, history_length=parts.history_length,
                               max_steps=parts.max_steps)
        envs.close()
    finally:
        parts.close()
