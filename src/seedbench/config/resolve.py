"""Building and validating a run config: the checks that need the env and agent catalogue.

`build_config` merges defaults < YAML recipe < overrides and calls `validate_config`, which checks every
field (`seedbench.config.fields.check_dataclass`), then what needs the catalogue: the env (constructor
kwargs, eval splits, the step cap, `resolve_step_cap`), the agent and its ``algo`` config (`agent_config`),
response budgets against a context length known from the config, and the agent's own cross-field checks
(`seedbench.agents.base.Agent.check_config`). Agents' base, tracking, engines and models are imported
inside the functions that use them: they import the config's lower layers (`seedbench.config.errors`,
`seedbench.config.schema`), whose package runs this module, and importing the config stays cheap.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from seedbench.config.context import check_context, model_positions
from seedbench.config.errors import ConfigError
from seedbench.config.fields import check_dataclass, check_value, update_dataclass
from seedbench.config.schema import MAX_EPISODES_PER_BATCH, Count, RunConfig
from seedbench.extras import VLLM_INSTALL_HINT, vllm_importable
from seedbench.registry import agent_entries, canonical_agent, load_object, resolve_agent, resolve_env
from seedbench.yamlio import YAMLFileError, read_yaml


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = read_yaml(path) or {}
    except YAMLFileError as err:
        raise ConfigError(str(err)) from None
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


ANNOTATOR_CHECK = "seedbench.agents.seed.annotators:check_annotator_spec"
"""Checks ``analyzer_sft.annotator``. SEED's stage 1 owns the annotators; every agent of a comparison can
start from its checkpoint, so the check runs for every agent, reached by name so that the config imports
no agent."""


def validate_config(config: RunConfig, *, check_host: bool = True) -> RunConfig:
    """Check a run config completely before anything loads or is written, and resolve the step cap.

    Field types, enumerations and ranges of the run config and of the agent's ``algo`` config; the env
    (name, constructor kwargs, eval splits, step cap); the agent name; the model's context length against
    the response budgets where it is known from the config; the agent's own cross-field checks
    (`seedbench.agents.base.Agent.check_config`, e.g. SEED's analysis budgets); the stage-1 annotator;
    the tracking sinks; the output directory. With `check_host` also what
    depends on this machine: a local model path exists and holds ``config.json``, and ``engine: vllm`` has
    vLLM installed (off for recipes whose model a previous stage writes)."""
    check_dataclass(config)
    if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", config.model.device):
        raise ConfigError(f"model.device: unknown {config.model.device!r}; use auto, cpu, cuda or cuda:N")
    entry = resolve_env(config.env)
    env_cls = env_class(entry)
    if env_cls is not None:
        _check_env_kwargs(config, entry, env_cls)
        _check_eval_splits(config, entry, env_cls)
    config.rollout.max_steps, config.env_kwargs = resolve_step_cap(entry.alias, env_cls, config.rollout.max_steps,
                                                                   config.env_kwargs)
    config.agent = canonical_agent(config.agent)  # a run records the catalogue name, never an alias
    algo = agent_config(config)
    _check_final_weights_kept(config)
    _agent_class_of(config).check_config(config, algo)
    check_context(config, _agent_class_of(config), algo)
    _check_rollout_is(config)
    _check_bf16_compute(config)
    _check_forward_batch_size(config)
    _check_episodes_per_batch(config)
    if config.analyzer_sft.annotator:
        load_object(ANNOTATOR_CHECK)(config.analyzer_sft.annotator)
    from seedbench.tracking import check_track

    config.track = check_track(config.track, installed=check_host)
    if config.output:
        check_output_dir(config.output)
    if check_host:
        _check_model_path(config.model.name)
        if config.engine == "vllm":
            if not vllm_importable():
                raise ConfigError(f"engine: vllm is not installed; use engine hf or {VLLM_INSTALL_HINT}")
    return config


def agent_config(config: RunConfig) -> Any:
    """The agent's config dataclass with the registered variant's overrides and ``algo`` applied and
    checked (types, ``Literal`` enumerations) like the run config."""
    entry = resolve_agent(config.agent)
    agent_cfg = _agent_class_of(config).Config()
    foreign = set(other_agents_algo_keys(config))
    algo = {k: v for k, v in config.algo.items() if k not in foreign}
    update_dataclass(agent_cfg, {**entry.overrides, **algo}, "algo.")
    return check_dataclass(agent_cfg, "algo.")


def other_agents_algo_keys(config: RunConfig) -> list[str]:
    """The ``algo`` keys of `config` that its agent does not have but another registered agent does.

    One recipe serves every arm of a comparison (SEED and GRPO from the same checkpoints, the fair
    baseline), so SEED's analysis budget in a recipe is not an error for ``--agent grpo``: it is left out
    of that agent's config (the caller says so). A key no registered agent knows is still a typo."""
    own = {f.name for f in fields(_agent_class_of(config).Config())}
    unknown = [k for k in config.algo if k not in own]
    if not unknown:  # the usual case: no need to import every registered agent
        return []
    others: set[str] = set()
    for name, entry in agent_entries().items():
        try:
            others |= {f.name for f in fields(agent_class(entry.factory, name).Config())}
        except Exception:  # a broken plugin agent must not break every other agent's config
            continue
    return sorted(k for k in unknown if k in others)


def _agent_class_of(config: RunConfig) -> type:
    return agent_class(resolve_agent(config.agent).factory, config.agent)


def episode_limits(config: RunConfig, env: Any) -> tuple[int, int]:
    """``(step cap, history length)`` of the run's episodes: the rollout config's values, else the env's
    (`resolve_step_cap` has already handed a set cap to the env). Training and evaluation both use it."""
    history = config.rollout.history_length if config.rollout.history_length is not None else env.history_length
    return config.rollout.max_steps or env.max_steps, history


def agent_class(factory: str, name: str) -> type:
    """The class behind an agent entry; a `ConfigError` when it is not a `seedbench.agents.base.Agent`."""
    from seedbench.agents.base import Agent

    cls = load_object(factory)
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ConfigError(f"agent {name!r}: {factory} is not a subclass of seedbench.agents.base.Agent "
                          "(see docs/adding_an_agent.md)")
    return cls


def env_class(entry: Any) -> type | None:
    """The class behind an env entry (imported, not instantiated), or None when it is not a plain class
    or its module cannot be imported here (then only `make_env` will tell)."""
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
    default = getattr(env_cls, "eval_split", None)
    chosen = config.eval.splits or ([default] if isinstance(default, str) else [])
    for split in config.eval.curve_splits if chosen else []:
        if split not in chosen:
            raise ConfigError(f"eval.curve_splits: {split!r} is not one of the evaluated splits {chosen}; "
                              "name splits of eval.splits")


def resolve_step_cap(env_name: str, env_cls: type | None, max_steps: int | None,
                     env_kwargs: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """One owner for the episode step cap: ``(max_steps, env_kwargs)`` with the cap handed to the env.

    The env truncates at its own ``max_steps`` (Sokoban 15) while the rollout loop stops at the rollout's,
    so the two must agree, or a rollout cap above the env's would be cut to the env's and misrecorded. A
    set ``rollout.max_steps`` becomes the env's ``max_steps`` kwarg, a cap given only in ``env_kwargs``
    becomes the rollout's, and an env without that kwarg accepts only its fixed cap."""
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


def check_output_dir(output: str | Path, name: str = "output") -> None:
    """An output directory (a run's, a fine-tune's) must be a directory or creatable as one: not an existing
    file, not under one. `name` is the field or flag the message names."""
    path = Path(output).expanduser()
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                where = "is a file" if place == path else f"lies under the file {place}"
                raise ConfigError(f"{name}: {output} {where}, not a directory; choose another --output")
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
    or the model's ``max_position_embeddings`` (`seedbench.config.context.model_positions`: a local
    checkpoint's ``config.json`` or the Hugging Face cache's copy, never fetched); None otherwise (the tiny
    test model uses rotary positions and has no hard limit)."""
    if config.vllm.max_model_len and config.engine in ("vllm", "auto"):
        return config.vllm.max_model_len, "vllm.max_model_len"
    return model_positions(config.model.name)


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


def _check_bf16_compute(config: RunConfig) -> None:
    """A bf16 compute copy pairs each whole master parameter with its copy; FSDP's parameters are shards
    (``auto`` is autocast there: `seedbench.models.compute_copy.bf16_compute_for`)."""
    if config.model.bf16_compute == "param_copy" and config.distributed.strategy == "fsdp":
        raise ConfigError("model.bf16_compute=param_copy needs whole parameters, but distributed.strategy=fsdp "
                          "shards them; set model.bf16_compute=autocast or distributed.strategy=ddp")


def _check_forward_batch_size(config: RunConfig) -> None:
    """A forward holds whole micro-batches, so each keeps its own loss normalisation."""
    optim = config.optim
    if optim.forward_batch_size and optim.forward_batch_size % optim.micro_batch_size:
        raise ConfigError(f"optim.forward_batch_size={optim.forward_batch_size} is not a multiple of "
                          f"optim.micro_batch_size={optim.micro_batch_size}; use a multiple of it, or leave it empty")


def _check_episodes_per_batch(config: RunConfig) -> None:
    """The trainer builds one env per episode of an update before its first step, so the product of the two
    sizes, each within its own bound, is bounded too."""
    episodes = config.rollout.tasks_per_batch * config.rollout.group_size
    if episodes > MAX_EPISODES_PER_BATCH:
        raise ConfigError(f"rollout.tasks_per_batch × rollout.group_size = {episodes} episodes per update; at most "
                          f"{MAX_EPISODES_PER_BATCH} (one env per episode is built and held in memory at once)")


def _check_final_weights_kept(config: RunConfig) -> None:
    if not config.keep_final_checkpoint and not config.save_final_model:
        raise ConfigError("keep_final_checkpoint: false with save_final_model: false would delete the run's only "
                          "final weights; set save_final_model: true or keep_final_checkpoint: true")


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def from_dict(values: dict[str, Any]) -> RunConfig:
    return update_dataclass(RunConfig(), values)
