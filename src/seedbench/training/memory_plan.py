"""The memory a run needs on each GPU, predicted from its config before anything loads (`seedbench plan`).

Pure arithmetic over the model's shapes (a table of known models, a checkpoint's ``config.json``, or
``hardware.base_model`` for a checkpoint not built yet) and the run's settings. A run's peak is the largest of
its phases, each adding what that phase allocates to what the whole run keeps:

- kept: fp32 master weights (the trainer always holds them), fp32 gradients (kept from one update to the
  next: ``zero_grad(set_to_none=True)`` runs at a mini-batch's start), AdamW's fp32 ``m`` and ``v``, the bf16
  compute copy (``model.bf16_compute``), the frozen bf16 KL reference, the engine's own weights (the HF
  engine's bf16 generation copy, or vLLM's reserved share of the GPU); FSDP divides the master weights,
  gradients and AdamW state by the number of ranks, and gathers the full fp32 weights for rollout and scoring;
- rollout / analysis: the HF engine's static KV cache for a generation batch at its full length, and one
  padded prefill's widest activation (vLLM keeps its KV cache inside its reserved share);
- update: activations of one forward batch (``optim.forward_batch_size``, else the micro-batch) at the
  rollout prompt budget plus the response budget, the response logits' fp32 log-softmax chain, and the
  compute copy's gradients; with ``model.gradient_checkpointing`` a layer keeps only its input, plus one
  layer recomputed;
- step: AdamW's temporaries (one fp32 copy of the trainable parameters).

Per-layer activation bytes per token, for a Qwen2/Llama block with SDPA attention (no ``s²`` scores) at
element size ``e``: ``24·h`` for the two RMSNorms (fp32 upcasts), ``3·e·h`` for the attention's query, output
and ``o_proj`` input, ``2·e·kv`` for keys and values, ``4·e·I`` for the gated MLP (gate, its SiLU, up, and
their product). ``validate_plan`` (and benchmarks/peak_memory_plan.py) checks these numbers against a
measured CPU peak; docs/GPU_MEMORY.md gives the literature they come from.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from seedbench.config import ConfigError, agent_config, build_config, parse_set_pairs

GIB = 1024**3
VLLM_DEFAULT_SHARE = 0.3
"""`seedbench.engines.vllm.VLLMEngine`'s ``gpu_memory_utilization`` when ``vllm.gpu_memory_utilization`` is empty."""
ROLLOUT_PROMPT_DEFAULT = 2048
"""Rollout prompt tokens assumed when the config sets no budget (verl-agent's ``data.max_prompt_length``)."""
CUDA_CONTEXT = int(1.0 * GIB)
"""The CUDA context, cuBLAS workspaces and kernels, outside torch's allocator (about 0.5-1 GiB on an H100)."""
ALLOCATOR_SLACK = 0.05
"""Fragmentation of the caching allocator, as a share of the allocated peak."""


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's sizes (HF config names in the comments)."""

    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads
    intermediate: int  # intermediate_size
    vocab: int  # vocab_size
    tied: bool = True  # tie_word_embeddings
    head_dim: int | None = None
    extra_params: int = 0  # a vision tower's parameters (trained with the rest unless frozen)

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * (self.head_dim or self.hidden // self.heads)

    @property
    def layer_params(self) -> int:
        h, kv, i = self.hidden, self.kv_dim, self.intermediate
        q_out = self.heads * (self.head_dim or h // self.heads)
        return h * q_out + q_out + 2 * (h * kv + kv) + q_out * h + 3 * h * i + 2 * h

    @property
    def params(self) -> int:
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return embeddings + self.layers * self.layer_params + self.hidden + self.extra_params

    def lora_params(self, rank: int) -> int:
        """LoRA adapters on every linear layer of every block (peft's ``all-linear``): rank × (in + out) each."""
        h, kv, i = self.hidden, self.kv_dim, self.intermediate
        return self.layers * rank * ((h + h) * 2 + (h + kv) * 2 + (h + i) * 2 + (i + h))

    def kv_bytes_per_token(self, element: int) -> int:
        return 2 * self.layers * self.kv_dim * element

    def activation_bytes_per_token(self, element: int) -> int:
        """One block's saved activations for one token (see the module docstring)."""
        return 24 * self.hidden + 3 * element * self.hidden + 2 * element * self.kv_dim + 4 * element * self.intermediate


# Shapes from each model's config.json (docs/GPU_MEMORY.md).
KNOWN_SHAPES: dict[str, ModelShape] = {
    "qwen2.5-0.5b-instruct": ModelShape(24, 896, 14, 2, 4864, 151_936),
    "qwen2.5-1.5b-instruct": ModelShape(28, 1536, 12, 2, 8960, 151_936),
    "qwen2.5-3b-instruct": ModelShape(36, 2048, 16, 2, 11008, 151_936),
    "qwen2.5-7b-instruct": ModelShape(28, 3584, 28, 4, 18944, 152_064, tied=False),
    "qwen2.5-vl-3b-instruct": ModelShape(36, 2048, 16, 2, 11008, 151_936, extra_params=669_000_000),
    "qwen2.5-vl-7b-instruct": ModelShape(28, 3584, 28, 4, 18944, 152_064, tied=False, extra_params=676_000_000),
    "smollm2-135m": ModelShape(30, 576, 9, 3, 1536, 49_152),
}
for _name in list(KNOWN_SHAPES):
    if _name.endswith("-instruct"):
        KNOWN_SHAPES[_name[: -len("-instruct")]] = KNOWN_SHAPES[_name]


def shape_from_hf_config(cfg: dict[str, Any]) -> ModelShape:
    """A `ModelShape` from a transformers config dict (a vision-language model's ``text_config`` is used)."""
    text = cfg.get("text_config") or cfg
    try:
        return ModelShape(text["num_hidden_layers"], text["hidden_size"], text["num_attention_heads"],
                          text.get("num_key_value_heads") or text["num_attention_heads"], text["intermediate_size"],
                          text["vocab_size"], bool(cfg.get("tie_word_embeddings", text.get("tie_word_embeddings", True))),
                          text.get("head_dim"))
    except KeyError as missing:
        raise ConfigError(f"the model's config.json has no {missing}: not a decoder the memory plan knows") from None


def model_shape(name: str) -> ModelShape:
    """The shapes of `name`: a known model (its HF id or the last part of it), or a directory with a config.json."""
    key = name.rstrip("/").split("/")[-1].lower()
    if key in KNOWN_SHAPES:
        return KNOWN_SHAPES[key]
    path = Path(name).expanduser()
    if (path / "config.json").is_file():
        return shape_from_hf_config(json.loads((path / "config.json").read_text()))
    raise ConfigError(f"memory plan: no shapes known for model {name!r}; set hardware.base_model to the model it is "
                      f"built from (one of {', '.join(sorted(k for k in KNOWN_SHAPES if 'instruct' in k))}) or give a "
                      "checkpoint directory with its config.json")


def parse_memory(text: str | int | float) -> int:
    """Bytes of ``80GiB``, ``80GB`` (taken as GiB, as GPU makers' "80 GB" are), ``141G`` or a plain number of GiB."""
    if isinstance(text, (int, float)):
        return int(text * GIB)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(GiB|GB|G|MiB|MB|M)?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ConfigError(f"GPU memory {text!r}: write it like 80GiB or 141GiB")
    value, unit = float(match.group(1)), (match.group(2) or "GiB").lower()
    return int(value * (GIB if unit.startswith("g") else 1024**2))


@dataclass
class Settings:
    """What of a run config the plan reads, resolved (engine, dtype, lengths); `plan_memory` builds it."""

    shape: ModelShape
    gpus: int
    gpu_memory: int
    element: int  # compute dtype bytes
    bf16_compute: str  # param_copy | autocast | none (fp32)
    fsdp: bool
    engine: str  # hf | vllm | none (a measurement of the update alone)
    vllm_share: float
    tensor_parallel: int
    lora_rank: int
    reference: bool
    checkpointing: bool
    forward_batch: int
    log_prob_batch: int
    prompt_tokens: int
    response_tokens: int
    generation_batch: int
    analysis: tuple[int, int] | None  # SEED's analysis prompt and answer budgets
    entropy: bool
    temperature_scaled: bool


@dataclass
class Term:
    name: str
    bytes: int


@dataclass
class MemoryPlan:
    """Predicted bytes per GPU: the kept terms, each phase's own terms, the peak and whether it fits."""

    model: str
    settings: Settings
    kept: list[Term]
    phases: dict[str, list[Term]]
    advice: list[str] = field(default_factory=list)

    def phase_total(self, phase: str) -> int:
        return sum(t.bytes for t in self.kept) + sum(t.bytes for t in self.phases[phase])

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phase_total)

    @property
    def allocated_peak(self) -> int:
        """The peak torch's allocator sees (``torch.cuda.max_memory_allocated``)."""
        return self.phase_total(self.peak_phase)

    @property
    def peak(self) -> int:
        """The peak the GPU sees: the allocated peak, allocator slack and the CUDA context."""
        return int(self.allocated_peak * (1 + ALLOCATOR_SLACK)) + CUDA_CONTEXT

    @property
    def fits(self) -> bool:
        return self.peak <= self.settings.gpu_memory

    def table(self) -> str:
        s = self.settings
        lines = [f"memory plan: {self.model} ({self.settings.shape.params / 1e9:.2f}B parameters) on {s.gpus} GPU(s) "
                 f"of {s.gpu_memory / GIB:.0f} GiB; engine {s.engine}"
                 + (f" (gpu_memory_utilization {s.vllm_share})" if s.engine == "vllm" else "")
                 + f"; {'fsdp' if s.fsdp else 'replicated'}; gradient checkpointing {'on' if s.checkpointing else 'off'}; "
                 f"forward batch {s.forward_batch} x {s.prompt_tokens}+{s.response_tokens} tokens",
                 "  kept for the whole run (per GPU):"]
        lines += [f"    {t.name:<44} {t.bytes / GIB:8.2f} GiB" for t in self.kept]
        for phase, terms in self.phases.items():
            lines.append(f"  {phase}: {self.phase_total(phase) / GIB:.2f} GiB in all" + ("  <- peak" if phase == self.peak_phase else ""))
            lines += [f"    + {t.name:<42} {t.bytes / GIB:8.2f} GiB" for t in terms]
        verdict = "fits" if self.fits else "DOES NOT FIT"
        lines.append(f"  predicted peak per GPU: {self.peak / GIB:.1f} GiB (allocated {self.allocated_peak / GIB:.1f} GiB "
                     f"+ {ALLOCATOR_SLACK:.0%} allocator slack + {CUDA_CONTEXT / GIB:.0f} GiB CUDA context) of "
                     f"{s.gpu_memory / GIB:.0f} GiB: {verdict}")
        lines += [f"  to fit: {a}" for a in self.advice]
        return "\n".join(lines)


def rollout_prompt_tokens(config: Any) -> int:
    """The rollout prompt budget the config sets (the rollout section's prompt cap), else verl-agent's 2,048."""
    for name in ("max_prompt_tokens", "prompt_budget", "max_prompt_length"):
        value = getattr(config.rollout, name, None)
        if value:
            return int(value)
    return ROLLOUT_PROMPT_DEFAULT


def settings_of(config: Any, gpus: int | None = None, gpu_memory: int | str | None = None,
                engine: str | None = None) -> Settings:
    """Resolve what the plan needs from a `RunConfig` (``hardware`` supplies the GPUs unless given here)."""
    hardware = getattr(config, "hardware", None)
    gpus = gpus or getattr(hardware, "gpus", None) or 1
    gpu_memory = parse_memory(gpu_memory if gpu_memory is not None else (getattr(hardware, "gpu_memory", None) or "80GiB"))
    base = getattr(hardware, "base_model", None) or config.model.name
    shape = model_shape(base)
    model = config.model
    fp32 = str(model.dtype) in ("float32", "fp32")
    fsdp = config.distributed.strategy == "fsdp" and gpus > 1
    mode = "none" if fp32 else ("autocast" if fsdp or model.bf16_compute == "autocast" else "param_copy")
    if engine is None:
        engine = config.engine
        if engine == "auto":
            engine = "vllm" if importlib.util.find_spec("vllm") is not None else "hf"
    if shape.extra_params:
        engine = "hf"  # vision policies generate with the HF engine (docs/vlm.md)
    agent = agent_config(config)
    analysis = None
    if hasattr(agent, "analysis_max_prompt_tokens") and getattr(agent, "train", True) \
            and getattr(agent, "analyzer", "policy") != "static":
        analysis = (agent.analysis_max_prompt_tokens, agent.analysis_max_new_tokens)
    optim = config.optim
    return Settings(
        shape=shape, gpus=gpus, gpu_memory=gpu_memory, element=4 if fp32 else 2, bf16_compute=mode, fsdp=fsdp,
        engine=engine, vllm_share=config.vllm.gpu_memory_utilization or VLLM_DEFAULT_SHARE,
        tensor_parallel=config.vllm.tensor_parallel_size or 1, lora_rank=model.lora_rank,
        reference=getattr(agent, "kl_coef", 0) > 0 and getattr(agent, "train", True),
        checkpointing=model.gradient_checkpointing, forward_batch=optim.forward_batch_size or optim.micro_batch_size,
        log_prob_batch=optim.log_prob_micro_batch_size or optim.micro_batch_size,
        prompt_tokens=rollout_prompt_tokens(config), response_tokens=config.rollout.max_new_tokens,
        generation_batch=config.rollout.generation_batch_size, analysis=analysis,
        entropy=getattr(agent, "entropy_coef", 0) > 0, temperature_scaled=config.rollout.temperature not in (0, 1))


def plan_from_settings(s: Settings, model: str = "") -> MemoryPlan:
    """The per-GPU terms of a run with settings `s` (see the module docstring)."""
    shape, e = s.shape, s.element
    p = shape.params
    trainable = shape.lora_params(s.lora_rank) if s.lora_rank else p
    shards = s.gpus if s.fsdp else 1
    kept = [Term("fp32 master weights" + (f" (1/{shards} shard)" if shards > 1 else ""), 4 * p // shards),
            Term("fp32 gradients" + (" (LoRA adapters)" if s.lora_rank else ""), 4 * trainable // shards),
            Term("AdamW m and v (fp32)", 8 * trainable // shards)]
    if s.lora_rank:
        kept[0] = Term("fp32 base weights + adapters", 4 * (p + trainable))
    if s.bf16_compute == "param_copy":
        kept.append(Term("bf16 compute copy", 2 * (p + (trainable if s.lora_rank else 0))))
    if s.reference and not s.lora_rank:
        kept.append(Term("bf16 KL reference", 2 * p))
    if s.engine == "vllm":
        kept.append(Term(f"vLLM's reserved share ({s.vllm_share:.2f} of the GPU)", int(s.vllm_share * s.gpu_memory)))
    elif s.engine == "hf" and e == 2:
        kept.append(Term("HF engine's bf16 generation copy", 2 * p))
    gathered = [Term(f"fp32 weights gathered from {shards} shards", 4 * p - 4 * p // shards)] if s.fsdp else []
    autocast_cache = [Term("autocast's bf16 weight casts", 2 * p)] if s.bf16_compute == "autocast" else []

    phases: dict[str, list[Term]] = {}

    def generation(prompt: int, answer: int) -> list[Term]:
        if s.engine != "hf":  # vLLM's cache lies in its reserved share
            return list(gathered)
        tokens = s.generation_batch * (prompt + answer)
        widest = s.generation_batch * prompt * (2 * shape.intermediate + 3 * shape.hidden) * e
        return gathered + [Term(f"static KV cache, {s.generation_batch} x {prompt + answer} tokens",
                                tokens * shape.kv_bytes_per_token(e)),
                           Term("prefill's widest activation (padded batch)", widest)]

    phases["rollout"] = generation(s.prompt_tokens, s.response_tokens)
    if s.analysis:
        phases["SEED analysis"] = generation(*s.analysis)
    logit_bytes = (e + 8 + (4 if s.temperature_scaled else 0) + (12 if s.entropy else 0)) * shape.vocab
    scoring_tokens = s.log_prob_batch * (s.prompt_tokens + s.response_tokens)
    phases["scoring (pi_old, reference)"] = gathered + autocast_cache + [
        Term(f"one block's forward, batch {s.log_prob_batch}", scoring_tokens * shape.activation_bytes_per_token(e)),
        Term("response logits", s.log_prob_batch * (s.response_tokens + 1) * (e + 8) * shape.vocab)]
    tokens = s.forward_batch * (s.prompt_tokens + s.response_tokens)
    per_layer = tokens * shape.activation_bytes_per_token(e)
    if s.checkpointing:
        activations = Term(f"activations, checkpointed ({tokens:,} tokens)", shape.layers * tokens * shape.hidden * e + 2 * per_layer)
    else:
        activations = Term(f"activations ({shape.layers} blocks x {tokens:,} tokens)", shape.layers * per_layer)
    update = gathered + autocast_cache + [
        activations,
        Term("response logits and log-softmax (fp32) + backward", s.forward_batch * (s.response_tokens + 1) * (logit_bytes + 8 * shape.vocab))]
    if s.bf16_compute == "param_copy":
        update.append(Term("compute copy's bf16 gradients", 2 * trainable))
    phases["update (forward + backward)"] = update
    phases["optimizer step"] = [Term("AdamW's fp32 temporaries", 4 * trainable // shards)]
    return MemoryPlan(model, s, kept, phases)


def plan_memory(config: Any, gpus: int | None = None, gpu_memory: int | str | None = None,
                engine: str | None = None, advise: bool = True) -> MemoryPlan:
    """The memory plan of a `RunConfig` on `gpus` GPUs of `gpu_memory` each (default: its ``hardware``)."""
    s = settings_of(config, gpus, gpu_memory, engine)
    hardware = getattr(config, "hardware", None)
    plan = plan_from_settings(s, getattr(hardware, "base_model", None) or config.model.name)
    if advise and not plan.fits:
        plan.advice = advice(s)
    return plan


def advice(s: Settings) -> list[str]:
    """Changes that make `s` fit, each alone where one suffices, the cheapest first."""
    tries: list[tuple[str, Settings]] = []
    if not s.checkpointing:
        tries.append(("--set model.gradient_checkpointing=true", replace(s, checkpointing=True)))
    with_ckpt = replace(s, checkpointing=True)
    batch = s.forward_batch
    while batch > 1:  # only the largest micro-batch that fits is named
        batch //= 2
        tries.append((f"--set optim.micro_batch_size={batch} (with gradient checkpointing)",
                      replace(with_ckpt, forward_batch=batch, log_prob_batch=min(s.log_prob_batch, batch))))
    if s.engine == "vllm":
        for share in (0.2, 0.15, 0.1):
            if share < s.vllm_share:
                tries.append((f"--set vllm.gpu_memory_utilization={share} (with gradient checkpointing)",
                              replace(with_ckpt, vllm_share=share)))
    if s.engine == "hf" and s.generation_batch > 8:
        tries.append((f"--set rollout.generation_batch_size={max(8, s.generation_batch // 4)} (with gradient checkpointing)",
                      replace(with_ckpt, generation_batch=max(8, s.generation_batch // 4))))
    for gpus in (2, 4, 8, 16):
        if gpus > s.gpus:
            tries.append((f"distributed.strategy=fsdp on {gpus} GPUs (torchrun --nproc-per-node {gpus}; "
                          "with gradient checkpointing)", replace(with_ckpt, fsdp=True, gpus=gpus,
                                                                    bf16_compute="autocast" if s.element == 2 else "none")))
    if not s.lora_rank:
        tries.append(("--set model.lora_rank=64 (with gradient checkpointing)", replace(with_ckpt, lora_rank=64)))
    found: list[str] = []
    for text, trial in tries:
        plan = plan_from_settings(trial)
        if plan.fits and not (text.startswith("--set optim.micro_batch_size") and any("micro_batch" in f for f in found)):
            found.append(f"{text}: {plan.peak / GIB:.1f} GiB")
            if len(found) == 3:
                break
    return found or ["nothing the plan tries fits: use GPUs with more memory"]


def checkpoint_bytes(config: Any) -> int:
    """Bytes one checkpoint writes: fp32 weights and AdamW's m and v (``model.pt``, ``optimizer.pt``)."""
    s = settings_of(config)
    trainable = s.shape.lora_params(s.lora_rank) if s.lora_rank else s.shape.params
    return 4 * s.shape.params + 8 * trainable


def check_before_run(config: Any, say=print) -> MemoryPlan | None:
    """`seedbench run`'s check before anything loads: on a CUDA device, the plan for this machine's GPU memory
    and this launch's ranks; a warning with the changes that fit when the peak exceeds the GPU. Nothing on a
    CPU, and nothing for a model whose shapes are unknown (the tiny test models, a hub id not in the table)."""
    import os

    import torch

    if config.model.device == "cpu" or not torch.cuda.is_available():
        return None
    try:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        memory = torch.cuda.get_device_properties(local).total_memory
        plan = plan_memory(config, gpus=int(os.environ.get("WORLD_SIZE", "1")), gpu_memory=memory / GIB)
    except ConfigError:
        return None
    if not plan.fits and os.environ.get("RANK", "0") == "0":
        fixes = "; ".join(plan.advice)
        say(f"seedbench: WARNING memory plan: predicted peak {plan.peak / GIB:.1f} GiB per GPU ({plan.peak_phase}) "
            f"of {memory / GIB:.0f} GiB; it will likely run out of memory. To fit: {fixes}. "
            "Details: seedbench plan --config <this config>")
    return plan


def main(argv: list[str] | None = None) -> int:
    """``seedbench plan --config C [--gpus N] [--gpu-memory 80GiB] [--engine hf|vllm] [--set k=v ...]``."""
    parser = argparse.ArgumentParser(prog="seedbench plan", description="Predict the peak GPU memory of a run "
                                     "(per GPU) from its config, before anything loads, and what to change if it does not fit.")
    parser.add_argument("--config", required=True)
    parser.add_argument("--gpus", type=int, default=None, help="GPUs (ranks) of the run; default: hardware.gpus, else 1")
    parser.add_argument("--gpu-memory", default=None, help="memory of one GPU, e.g. 80GiB; default: hardware.gpu_memory")
    parser.add_argument("--engine", choices=["hf", "vllm"], default=None,
                        help="the engine `engine: auto` resolves to (default: vllm where it is installed)")
    parser.add_argument("--agent", default=None)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    overrides = parse_set_pairs(args.set)
    if args.agent:
        overrides["agent"] = args.agent
    config = build_config(args.config, overrides=overrides, check_host=False)  # a checkpoint not built yet is fine
    plan = plan_memory(config, args.gpus, args.gpu_memory, args.engine)
    print(plan.table())
    size = checkpoint_bytes(config)
    print(f"  one checkpoint on disk: {size / GIB:.1f} GiB (fp32 weights + AdamW state); save_every={config.save_every}, "
          f"keep_checkpoints={config.keep_checkpoints}")
    return 0 if plan.fits else 1


__all__ = ["ModelShape", "KNOWN_SHAPES", "MemoryPlan", "Settings", "plan_memory", "plan_from_settings", "settings_of",
           "model_shape", "shape_from_hf_config", "parse_memory", "checkpoint_bytes", "check_before_run", "main"]


if __name__ == "__main__":
    raise SystemExit(main())
