"""Assembling a run's parts, once, for both ``seedbench run`` (`Trainer`) and ``seedbench eval``
(`seedbench.training.evaluate`): the env and its episode limits, the policy, the engine, the rollout
function (sharded over the ranks here, once), the agent and the `Evaluator`. Both commands build through
`build_run`, so an evaluation plays with exactly what the run trained with.

`open_run_dir` is the start of ``seedbench run`` before anything loads: the run directory (written by rank 0
only) and its config.yaml, the checkpoint a resume continues from, and then the starting model.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from seedbench.agents.base import Agent, AgentConfig, AgentContext
from seedbench.config import ConfigError, ModelConfig, RunConfig, agent_class, agent_config, episode_limits, to_dict
from seedbench.engines.base import SamplingParams, env_stop
from seedbench.envs.batch import EnvBatch, LocalEnvs
from seedbench.envs.checks import probe_reset_seeding
from seedbench.jsonio import read_json_checked
from seedbench.registry import make_env, resolve_agent, resolve_env
from seedbench.seeding import seed_everything
from seedbench.training.checkpoint_files import load_torch_file
from seedbench.training.run_state import with_frozen_weights
from seedbench.training.distributed import SingleProcess
from seedbench.training.evaluator import Evaluator
from seedbench.training.origin import check_origin_env, checkpoint_origin
from seedbench.training.resume_config import check_resume_changes, record_config, run_started
from seedbench.locking import RunDirInUse, lock_run_dir
from seedbench.training.rundir import RunDir, default_run_name
from seedbench.training.starting_model import starting_model_name
from seedbench.engines.factory import close_engine, make_engine
from seedbench.envs.pool import EnvPool
from seedbench.envs.processes import available_cpus
from seedbench.models.compute_copy import bf16_compute_for
from seedbench.models.policy import load_policy
from seedbench.rollout import continuous as async_rollout, lockstep as rollout

ROLLOUT_SCHEDULERS = ("auto", "lockstep", "continuous")


def build_agent(config: RunConfig) -> tuple[type[Agent], AgentConfig]:
    """The agent class registered as ``config.agent`` and its checked config (`seedbench.config.agent_config`:
    the class's ``Config`` defaults, then the registry entry's overrides, then ``algo.*``)."""
    return agent_class(resolve_agent(config.agent).factory, config.agent), agent_config(config)


def make_env_batch(config: RunConfig, alias: str, env: Any, num: int):
    """`num` envs of the run: a worker pool (``num_env_workers``; default one per CPU for envs that ask for
    ``worker_processes``) or in-process `LocalEnvs`. Training and evaluation (also `seedbench eval`) use it."""
    kwargs = dict(config.env_kwargs)
    workers = config.num_env_workers
    if workers is None:
        workers = available_cpus() if env.worker_processes else 0
    if workers > 0:
        return EnvPool((alias, kwargs), num_envs=num, num_workers=workers)
    return LocalEnvs(lambda: make_env(alias, **kwargs), num)


def choose_rollout(scheduler: str, engine: Any):
    """The rollout function for ``rollout.scheduler``: lock-step (`seedbench.rollout.lockstep`) or continuous
    (`seedbench.rollout.continuous`); ``auto`` = continuous exactly when `engine` takes single requests."""
    if scheduler not in ROLLOUT_SCHEDULERS:
        raise ConfigError(f"rollout.scheduler: unknown {scheduler!r}; choose one of {', '.join(ROLLOUT_SCHEDULERS)}")
    if scheduler == "continuous" or (scheduler == "auto" and async_rollout.supports_submit(engine)):
        return async_rollout.run_episodes
    return rollout.run_episodes


@dataclass
class RunStart:
    """Where ``seedbench run`` stands before anything loads (`open_run_dir`)."""

    run_dir: RunDir
    model_config: ModelConfig  # ``model`` with the name of the built starting model (warm start, stage 1)
    model_origin: Any  # what a fine-tuned starting checkpoint says about where it came from
    checkpoint: Path | None  # the checkpoint a resume loads
    lock: Any = None  # rank 0's open `run_lock` handle: the run directory is this process's while it is open


def open_run_dir(config: RunConfig, parallel: SingleProcess, resume: bool, allow_config_changes: bool) -> RunStart:
    """Name and check the run directory, lock it and write its config.yaml (on resume: check the changes and
    record them), then build (or find in the cache) the recipe's starting model. Sets ``config.output``.

    The directory comes first: a refused ``--resume`` change, an "already exists" or a directory in use is
    said before builds that can take an hour, and a kill during the builds leaves config.yaml behind, so
    ``--resume --output D`` continues the intended run. Rank 0 decides names and writes; every rank has
    looked before it writes."""
    alias = resolve_env(config.env).alias
    # A fine-tuned checkpoint names the env it was made on; refuse another one before anything is written.
    check_origin_env(checkpoint_origin(config.model.name), alias, config.model.allow_other_env)
    out = Path(config.output) if config.output else Path("runs") / default_run_name(
        alias, config.agent, config.model.name, config.seed)
    out = Path(parallel.broadcast_object(str(out)))  # rank 0's default name on every rank
    config.output = str(out)
    run_dir = parallel.run_dir(out)
    checkpoint = run_dir.latest_checkpoint() if resume else None
    # A read-only look: a damaged summary.json is set aside (its totals recovered) by the trainer, once.
    if resume and checkpoint is None and read_json_checked(out / "summary.json")[0].get("checkpoints_deleted"):
        raise ConfigError(f"{out} is complete and its checkpoints were deleted at its end (keep_final_checkpoint: "
                          f"false), so there is nothing to resume; evaluate it with `seedbench eval {out}` or "
                          f"train on from it with --model {out / 'final_model'}")
    if not resume and out.exists() and any(out.iterdir()) and run_started(out):
        raise ConfigError(f"run directory {out} already exists; pass --resume to continue it or choose another --output")
    saved = run_dir.read_config() if resume and (out / "config.yaml").exists() else None
    changes = [] if saved is None else check_resume_changes(
        out, saved, config, allow=allow_config_changes, done=int(checkpoint.name.split("_")[1]) if checkpoint else None)
    parallel.barrier()
    lock, busy = None, None
    if parallel.is_main:
        try:
            lock = lock_run_dir(out)
        except RunDirInUse as err:
            busy = str(err)
    busy = parallel.broadcast_object(busy)  # every rank stops, not only rank 0
    if busy:
        raise RunDirInUse(busy)
    try:
        out.mkdir(parents=True, exist_ok=True)
        if saved is None:
            run_dir.write_config(to_dict(config))
        elif changes and parallel.is_main:  # rank 0 keeps the old file and writes the new one
            record_config(out, to_dict(config), changes)
        start = parallel.broadcast_object(starting_model_name(config) if parallel.is_main else None)
        origin = checkpoint_origin(start)
        check_origin_env(origin, alias, config.model.allow_other_env)
    except BaseException:  # a start that fails here must not keep the directory locked
        if lock is not None:
            lock.close()
        raise
    return RunStart(run_dir, dataclasses.replace(config.model, name=start), origin, checkpoint, lock)


@dataclass
class RunParts:
    """What a run's loop and its evaluations play and learn with (`build_run`)."""

    config: RunConfig
    env_entry: Any  # the registry entry of ``config.env``
    env: Any  # the run's own env instance: prompts, splits, provenance
    max_steps: int
    history_length: int
    sampling: SamplingParams  # the rollout's
    needs_reference: bool
    policy: Any
    engine: Any
    run_episodes: Callable  # the rollout function, this rank's share of the tasks
    context: AgentContext
    agent: Agent | None  # None: ``seedbench eval`` of a checkpoint outside a run
    evaluator: Evaluator

    def make_envs(self, num: int) -> EnvBatch:
        return make_env_batch(self.config, self.env_entry.alias, self.env, num)

    def close(self) -> None:
        self.evaluator.close()
        close_engine(self.engine)


def build_run(config: RunConfig, run_dir: RunDir | None, parallel: SingleProcess | None = None, *,
              model_config: ModelConfig | None = None, weights: Path | None = None, training: bool = True) -> RunParts:
    """The run's parts. `training`: the agent as the run trains it (its reference model, sharded over the
    ranks); otherwise (``seedbench eval``) no reference model, the agent only when `run_dir` names the run,
    and the analyzer warm-start warning off. `weights`: a checkpoint's model.pt loaded before the engine is
    built. The order (seed, env, policy, engine, agent) is the random streams' order, so keep it."""
    parallel = parallel or SingleProcess()
    entry = resolve_env(config.env)
    seed_everything(config.seed)
    env = make_env(entry.alias, **config.env_kwargs)
    if config.probe_env_seeding:
        probe_reset_seeding(env, entry.alias)
    max_steps, history_length = episode_limits(config, env)
    sampling = SamplingParams(max_new_tokens=config.rollout.max_new_tokens, temperature=config.rollout.temperature,
                              top_p=config.rollout.top_p, **env_stop(env))
    agent_cls, agent_cfg = build_agent(config) if training or run_dir is not None else (None, None)
    if not training and getattr(agent_cfg, "expect_analyzer_sft", False):  # a warning about training, not eval
        agent_cfg = dataclasses.replace(agent_cfg, expect_analyzer_sft=False)
    # One rule, asked before the model loads: load the reference exactly when updates will use it.
    needs_reference = training and agent_cls.needs_reference(agent_cfg)
    policy = load_policy(model_config or config.model, need_reference=needs_reference, seed=config.seed)
    policy.bf16_compute = bf16_compute_for(policy.bf16_compute, sharded=config.distributed.strategy == "fsdp")
    if weights is not None:
        policy.model.load_state_dict(with_frozen_weights(policy.model, load_torch_file(weights, map_location=policy.device)))
    parallel.prepare_model(policy.model, config.seed)  # rank 0's weights on every rank
    engine = make_engine(config.engine, policy, config)
    rollout = choose_rollout(config.rollout.scheduler, engine)
    if config.rollout.max_prompt_tokens is not None:  # training and evaluation prompts alike
        rollout = functools.partial(rollout, max_prompt_tokens=config.rollout.max_prompt_tokens)
    # ``seedbench eval`` builds the agent for its eval prompt hook only: no rollout sampling in its context
    context = AgentContext(policy, engine, env, run_dir, config, sampling if training else None)
    agent = agent_cls(agent_cfg, context) if agent_cls is not None else None
    parallel.shard_model(policy.model)  # fsdp: after the engine's copy, before the optimizer
    parts = RunParts(config, entry, env, max_steps, history_length, sampling, needs_reference, policy, engine,
                     parallel.shard_rollout(rollout), context, agent, None)
    # Evaluation shards the tasks too, and gathers every rank's episodes for the record.
    parts.evaluator = Evaluator(config, env, engine, policy.tokenizer, parallel.shard_rollout(rollout, gather=True),
                                parts.make_envs, agent.transform_eval_prompt if agent is not None else None)
    return parts
