"""Context lengths a run needs, derived from its own budgets, and the check that the model can hold them.

Every generation of a run is a prompt plus a response, and each has a budget in the config: the acting
prompt (``rollout.max_prompt_tokens``) plus the per-step response (``rollout.max_new_tokens``, at evaluation
``eval.max_new_tokens``), and an agent's own generations (SEED's self-analysis:
``algo.analysis_max_prompt_tokens + algo.analysis_max_new_tokens``, `seedbench.agents.base.Agent.context_budgets`).
The longest of them is what the generation engine must allocate for (vLLM's ``max_model_len``,
`required_context`), and what the model's positions (``max_position_embeddings``) must hold
(`check_context`, at config time, before anything loads).
"""

from __future__ import annotations

import json
from pathlib import Path

from seedbench.config.errors import ConfigError
from seedbench.config.schema import RunConfig


def generation_budgets(config: RunConfig, agent_cls: type | None = None, algo: object = None) -> list[tuple[str, int]]:
    """``(what, prompt + response tokens)`` of every generation the run makes whose prompt is bounded: the
    acting step when ``rollout.max_prompt_tokens`` is set, and the agent's own (`Agent.context_budgets`)."""
    budgets: list[tuple[str, int]] = []
    prompt = config.rollout.max_prompt_tokens
    if prompt is not None:
        response = max(config.rollout.max_new_tokens, config.eval.max_new_tokens or 0)
        where = "eval.max_new_tokens" if (config.eval.max_new_tokens or 0) > config.rollout.max_new_tokens \
            else "rollout.max_new_tokens"
        budgets.append((f"rollout.max_prompt_tokens + {where}", prompt + response))
    if agent_cls is not None and algo is not None:
        budgets.extend(agent_cls.context_budgets(config, algo))
    return budgets


def required_context(config: RunConfig, agent_cls: type | None = None, algo: object = None) -> int | None:
    """The longest prompt + response of the run, the engine's context length; None when the acting prompt
    has no budget (``rollout.max_prompt_tokens`` empty: the engine then allocates the model's own limit)."""
    if config.rollout.max_prompt_tokens is None:
        return None
    return max(total for _, total in generation_budgets(config, agent_cls, algo))


def model_positions(name: str) -> tuple[int, str] | None:
    """``max_position_embeddings`` of the model (or of its text model) and where it was read: a local
    checkpoint's ``config.json``, or the Hugging Face cache's copy for a hub id (never fetched); None when
    neither is on this machine."""
    path = Path(name).expanduser() / "config.json"
    if not path.is_file():
        if Path(name).expanduser().exists() or name.count("/") != 1:
            return None
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        cached = try_to_load_from_cache(name, "config.json")
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for section in (data, data.get("text_config") or {}):
        if isinstance(section.get("max_position_embeddings"), int):
            return section["max_position_embeddings"], f"max_position_embeddings of {name}"
    return None


def check_context(config: RunConfig, agent_cls: type | None = None, algo: object = None) -> None:
    """Every bounded generation must fit the model's positions (where they are known on this machine) and an
    explicit ``vllm.max_model_len``, and without a prompt budget every response budget must leave room for a
    prompt; a `ConfigError` names the budget and the fix. The one context check of a config."""
    budgets = generation_budgets(config, agent_cls, algo)
    limits = []
    positions = model_positions(config.model.name)
    if positions is not None:
        limits.append((positions[0], positions[1], "or use a model with more positions"))
    if config.vllm.max_model_len and config.engine in ("vllm", "auto"):
        limits.append((config.vllm.max_model_len, "vllm.max_model_len", "or raise vllm.max_model_len (or leave it "
                                                                         "empty: the run's own budgets set it)"))
    if config.rollout.max_prompt_tokens is None:  # unbounded prompts: the response alone must leave room for one
        budgets += [(f"{where} + one prompt token", value + 1) for where, value in
                    (("rollout.max_new_tokens", config.rollout.max_new_tokens),
                     ("eval.max_new_tokens", config.eval.max_new_tokens)) if value is not None]
    for limit, source, fix in limits:
        for what, total in budgets:
            if total > limit:
                raise ConfigError(f"{what} = {total} tokens does not fit the context length {limit} ({source}); "
                                  f"lower them {fix}")
