"""The generation-engine interface: token ids in, sampled token ids and their log-probs out.

Token-in/token-out: the trainer trains on exactly the ids an engine sampled, never on re-tokenized text
(re-tokenizing decoded text can change the ids and silently corrupt PPO ratios). Every engine (`hf`,
`vllm`) implements `GenerationEngine`; the helpers at the bottom are shared by both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from seedbench.prompt import PromptLike


@dataclass
class Generation:
    token_ids: list[int]
    logprobs: list[float]
    """Log-probs of the sampled tokens under the sampling distribution (logits / temperature)."""
    text: str
    finish_reason: str = "length"  # "stop" (eos or a stop string) or "length"


@dataclass
class SamplingParams:
    max_new_tokens: int = 96
    temperature: float = 1.0
    top_p: float = 1.0
    greedy: bool = False
    stop: list[str] = field(default_factory=lambda: ["</action>"])


def env_stop(env: Any) -> dict[str, list[str]]:
    """``{"stop": [...]}`` when the env names its own stop strings (``TextEnv.stop_strings``, e.g. Search-QA's
    ``</search>``, ``</answer>``), else ``{}`` (the default ``</action>``): ``SamplingParams(..., **env_stop(env))``."""
    stop = getattr(env, "stop_strings", None)
    return {} if stop is None else {"stop": list(stop)}


class GenerationEngine(Protocol):
    """What every engine offers: whole batches of prompts in, one `Generation` per prompt out, and a way to
    pick up the trainer's new weights after an update."""

    name: str

    def generate(self, prompts: list[PromptLike], params: SamplingParams) -> list[Generation]: ...

    def sync_weights(self) -> None: ...


def generate_with_progress(engine: Any, prompts: list[PromptLike], params: SamplingParams,
                           progress: Any) -> list[Generation]:
    """``engine.generate`` with a progress bar (a tqdm bar: `seedbench.progress.progress_bar`) where the engine's
    ``generate`` takes ``progress=`` (the built-in engines: decode steps as they run); an engine that does not
    (a plugin written against `GenerationEngine`) generates as usual and the bar is filled when it returns."""
    import inspect

    try:
        takes_progress = "progress" in inspect.signature(engine.generate).parameters
    except (TypeError, ValueError):
        takes_progress = False
    if takes_progress:
        return engine.generate(prompts, params, progress=progress)
    generations = engine.generate(prompts, params)
    progress.reset(total=len(prompts))
    progress.update(len(prompts))
    return generations


@runtime_checkable
class StreamingEngine(Protocol):
    """An engine that also takes requests one at a time (`seedbench.engines.vllm.VLLMEngine`): exactly what the
    continuous scheduler (`seedbench.rollout.continuous`) calls to let each episode's next request join the
    running batch as soon as its env step returns. ``isinstance(engine, StreamingEngine)`` is how the
    scheduler (and ``rollout.scheduler: auto``) tells it from a batch-only engine (`seedbench.engines.hf.HFEngine`).
    """

    def submit(self, request_id: str, prompt_ids: PromptLike, params: SamplingParams) -> None:
        """Queue one generation; its result comes back from a later `poll` under `request_id`."""

    def poll(self) -> list[tuple[str, Generation]]:
        """Advance the running batch by one engine step; the requests that finished in it."""

    def has_unfinished(self) -> bool:
        """Whether any submitted request has not come back from `poll` yet."""

    def abort(self, request_ids: list[str]) -> None:
        """Drop these requests (a failed rollout leaves none running in the engine)."""


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids = model.generation_config.eos_token_id
    ids = list(ids) if isinstance(ids, (list, tuple)) else ([ids] if ids is not None else [])
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


def response_length(ids: list[int], eos_ids: list[int], pad_id: int, tokenizer: Any, stop: list[str]) -> tuple[int, str]:
    """How many generated tokens were really sampled. A sequence ends at its first eos (kept: the model
    sampled it) or right after a stop string; `generate` fills the rest with padding, which is dropped."""
    text = ""
    for position, token in enumerate(ids):
        if token in eos_ids:
            return position + 1, "stop"
        if stop:
            text += tokenizer.decode([token], skip_special_tokens=False)
            if any(s in text for s in stop):
                return position + 1, "stop"
        if token == pad_id and pad_id not in eos_ids:
            return position, "stop"
    return len(ids), "length"
