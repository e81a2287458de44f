"""Run configuration: typed dataclasses documented field by field.

Precedence: dataclass defaults < YAML recipe (``--config``) < CLI flags / ``--set key=value``. The
resolved config is written to ``config.yaml`` in the run directory; a resumed run starts from that file
instead of the defaults (`seedbench.training.resume_config`). The defaults are a *small CPU
budget* (2 × 2 episodes, 24 new tokens per step; what a run of them costs on a 2-core CPU:
docs/performance.md); ``configs/quickstart_cpu.yaml`` is the smaller
smoke-run budget of the README, and paper-scale recipes live in ``configs/`` (e.g.
``configs/alfworld_seed_paper.yaml``).

Agent-specific settings (GRPO, SEED, GiGPO coefficients) live in ``algo``, a flat mapping validated
against the agent's own config dataclass (`seedbench.agents.*.Config`), so a typo is an error that names
the valid keys.

Validation happens at parse time (`build_config`, `validate_config`), before anything loads or is written:
every field is checked against its annotation (``Literal`` enumerations, ``Annotated[..., Range(...)]``
value ranges, types; every float must be finite) by one generic checker that also checks the agent's
config dataclass; then cross-field checks that need the env or agent catalogue (env kwargs, splits, the
step cap, the model path, response budgets against a context length known from the config) and the
agent's own checks (`seedbench.agents.base.Agent.check_config`: SEED's analysis budgets). Errors are one
line naming the field and the valid values. ``seedbench config`` prints every field with its type,
default and the documentation written under it (`field_docs`).

The package, by layer (each imports only the ones above it):

- `seedbench.config.errors`: `ConfigError`;
- `seedbench.config.schema`: `RunConfig`, its sections and the field annotations (`Range`, `Count`, ...);
  imports nothing from seedbench;
- `seedbench.config.fields`: the generic checker (`check_value`, `check_dataclass`, `update_dataclass`),
  field documentation (`field_docs`, `describe`) and CLI flags (`add_config_flags`);
- `seedbench.config.resolve`: `build_config`, `validate_config`, `agent_config`, the step cap, budgets.

Every name is re-exported here: ``from seedbench.config import X`` is the public API (plugins use it).
Modules that the resolver itself reaches (agents' base, tracking, models) import from the submodules, so
no import cycle runs through this package (scripts/import_cycles.py).
"""

from seedbench.config.errors import ConfigError
from seedbench.config.fields import (YAML_BOOL_WORDS, FieldInfo, add_config_flags, apply_config_flags, check_dataclass,
                                     check_value, describe, field_docs, format_fields, get_dotted, parse_set_pairs, set_dotted,
                                     type_text, update_dataclass)
from seedbench.config.resolve import (ANNOTATOR_CHECK, agent_class, agent_config, build_config, check_output_dir,
                                      context_length,
                                      env_class, episode_limits, from_dict, load_yaml, other_agents_algo_keys,
                                      resolve_step_cap, to_dict, validate_config)
from seedbench.config.schema import (MAX_BUILD_TASKS, MAX_EPISODES_PER_BATCH, MAX_EVAL_TASKS, MAX_GROUP_SIZE,
                                     MAX_NEW_TOKENS, MAX_SEED, MAX_TASKS_PER_BATCH, MIN_TEMPERATURE, AnalyzerSFTConfig,
                                     BuildTasks, Count, DistributedConfig, DType, Engine, EvalConfig, EvalTasks,
                                     GroupSize, HFEngineConfig, ModelConfig, NonNegative, NonNegativeInt, OptimConfig,
                                     Positive, Range, RolloutConfig, RunConfig, TasksPerBatch, Temperature, TokenBudget,
                                     UnitInterval, VLLMConfig, WarmStartConfig, ZeroOrAtLeast)

__all__ = [
    "ANNOTATOR_CHECK", "MAX_BUILD_TASKS", "MAX_EPISODES_PER_BATCH", "MAX_EVAL_TASKS", "MAX_GROUP_SIZE", "MAX_NEW_TOKENS",
    "MAX_SEED", "MAX_TASKS_PER_BATCH", "MIN_TEMPERATURE", "YAML_BOOL_WORDS", "AnalyzerSFTConfig", "BuildTasks",
    "ConfigError", "Count", "DType", "DistributedConfig", "Engine", "EvalConfig", "EvalTasks", "FieldInfo",
    "GroupSize", "HFEngineConfig", "TasksPerBatch",
    "ModelConfig", "NonNegative", "NonNegativeInt", "OptimConfig", "Positive", "Range", "RolloutConfig", "RunConfig",
    "Temperature", "TokenBudget", "UnitInterval", "VLLMConfig", "WarmStartConfig", "ZeroOrAtLeast", "add_config_flags",
    "agent_class", "agent_config", "apply_config_flags", "build_config", "check_dataclass", "check_output_dir",
    "check_value",
    "context_length", "describe", "env_class", "episode_limits", "field_docs", "format_fields", "from_dict",
    "get_dotted", "load_yaml", "parse_set_pairs", "other_agents_algo_keys", "resolve_step_cap", "set_dotted", "to_dict", "type_text",
    "update_dataclass", "validate_config",
]
