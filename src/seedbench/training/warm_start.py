"""Behaviour-cloning warm start: ``seedbench sft-policy --env E [--demos N] [--epochs E] ...``.

The reference setting (SEED, GiGPO, verl-agent) starts RL from instruct models that already answer in
the env's action format; the embedded 135M base model almost never writes an ``<action>`` tag on a
multi-turn env, so every rollout is invalid and RL has no signal. This command gives it the format, and
deliberately little more, by fine-tuning on a few expert episodes:

1. the env's expert (`env.expert_plan()`, re-planned whenever its plan runs out) plays ``--demos`` tasks
   of the *training* split (seeds drawn from ``--seed``; never an eval split);
2. every step becomes one example, played through the rollout's own episode bookkeeping
   (`seedbench.rollout.episode`): the prompt is the one the run's policy would see in that state (same
   instruction, task line, ``rollout.history_length`` history, admissible actions and format line, same
   chat template), and the answer is what the env's projection accepts: a short ``<think>`` block, then
   the expert's command in an ``<action>`` tag (an env whose commands are whole tags, like Search-QA's
   ``<search>…</search>``, gets the command after the think block), then end-of-sequence;
3. the policy is fine-tuned with the loss on the answer tokens only (`seedbench.training.sft`), under
   the run's compute dtype, and saved as an HF checkpoint with ``seedbench_policy_sft.json`` next to it.

Only episodes the expert won are kept. The defaults (a few dozen demos, one epoch) are small on purpose:
the aim is a policy that answers in format and sometimes solves the task, so RL still has something to
learn. ``seedbench run --model OUTPUT/model`` starts from the checkpoint and records its provenance.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seedbench import __version__
from seedbench.config import (MAX_BUILD_TASKS, ConfigError, RunConfig, build_config, check_output_dir, load_yaml,
                              parse_set_pairs, set_dotted)
from seedbench.engines.base import Generation
from seedbench.envs.batch import LocalEnvs
from seedbench.envs.text_env import TextEnv
from seedbench.jsonio import write_json_atomic
from seedbench.models.policy import load_policy, save_policy
from seedbench.progress import progress_bar
from seedbench.registry import UnknownNameError, make_env, resolve_env
from seedbench.rollout.episode import EpisodeRules, start_episodes
from seedbench.rollout.types import TaskRef
from seedbench.seeding import seed_everything
from seedbench.training.origin import WARM_START_MARKER, check_origin_env, checkpoint_origin
from seedbench.training.rundir import default_run_name
from seedbench.training.sft import SFTSettings, fine_tune, tokenize_example

DEMO_SEED_STREAM = 0x5EED_BC
"""Second entry of the demo task seeds' RNG key (``default_rng([seed, DEMO_SEED_STREAM])``): a stream of
its own, apart from the trainer's per-iteration task draws (``[seed, iteration]``)."""


class WarmStartError(Exception):
    """A one-line error for the user."""


@dataclass
class Demo:
    """One expert step as a training example."""

    task: str
    """``split/seed`` of the task."""
    step: int
    content: str
    """The user message, exactly as the rollout builds it in this state."""
    prompt_ids: list[int]
    response: str


@dataclass
class DemoSet:
    split: str
    """The training split the tasks came from."""
    demos: list[Demo] = field(default_factory=list)
    episodes: int = 0
    won: int = 0


DEMO_FORMAT = 3
"""Version of the demonstrations' text (`demo_response`); part of a cached warm start's key, so a change of
wording rebuilds the checkpoints that learned the old one."""


def demo_response(env: Any, command: str) -> str:
    """The answer that plays `command` under the env's projection: a think block (the env's optional
    ``expert_thought(command)`` hook, which reads only what the agent sees, else "Following the plan"),
    then the action tag (or, for an env whose commands are already tags, the command itself). A `WarmStartError` when the
    env's own parser reads neither back as `command`."""
    text = env.expert_thought(command) if isinstance(env, TextEnv) else None
    if text:
        think = f"<think>{text}</think>"
    else:
        think = f"<think>Following the plan: {command}.</think>" if "<" not in command else "<think>Following the plan.</think>"
    candidates = [f"{think}{command}", f"{think}<action>{command}</action>"] if command.lstrip().startswith("<") \
        else [f"{think}<action>{command}</action>"]
    for text in candidates:
        action, valid = env.parse_action(text)
        if valid and action.strip().lower() == command.strip().lower():
            return text
    raise WarmStartError(f"the env's parser does not accept its expert's command {command!r} in the form "
                         f"{candidates[0]!r}; this env cannot be warm-started by sft-policy")


def expert_of(env: TextEnv, alias: str):
    """The env's ``expert_plan`` method, or a `WarmStartError` naming the fix when it has none."""
    if not env.has_expert():
        raise WarmStartError(f"env {alias!r} has no scripted expert (expert_plan), so there are no demonstrations "
                             "to clone; warm-start on an env that has one (`seedbench check-env NAME` says), or "
                             "start `seedbench run` from the base model")
    return env.expert_plan


def check_expert(env: TextEnv, alias: str) -> None:
    """Ask the expert for a plan on the first training task: an env without one (no ``expert_plan``, or one
    that raises NotImplementedError) fails here, before the model loads."""
    plan = expert_of(env, alias)
    env.reset(seed=0, options={"split": env.splits[0]})
    try:
        plan()
    except NotImplementedError as err:
        raise WarmStartError(f"env {alias!r} has no scripted expert (expert_plan: {err or 'not implemented'}), so "
                             "there are no demonstrations to clone; warm-start on an env that has one, or start "
                             "`seedbench run` from the base model") from err
    finally:
        env.close()


def collect_demos(config: RunConfig, alias: str, tokenizer: Any, num_demos: int, seed: int, progress=None) -> DemoSet:
    """Play `num_demos` training-split tasks with the expert through the rollout's episode bookkeeping and
    return every step of the won episodes as a `Demo`."""
    import numpy as np

    spec = make_env(alias, **config.env_kwargs)
    max_steps = config.rollout.max_steps or spec.max_steps
    history = config.rollout.history_length if config.rollout.history_length is not None else spec.history_length
    rules = EpisodeRules(env_spec=spec, tokenizer=tokenizer, history_length=history, max_steps=max_steps)
    train_split = spec.splits[0]
    rng = np.random.default_rng([seed, DEMO_SEED_STREAM])
    tasks = [TaskRef(train_split, int(s)) for s in rng.integers(0, 2**31 - 1, size=num_demos)]
    result = DemoSet(train_split)
    chunk = 16
    envs = LocalEnvs(lambda: make_env(alias, **config.env_kwargs), min(chunk, len(tasks)))
    try:
        for start in range(0, len(tasks), chunk):
            batch = tasks[start : start + chunk]
            episodes = start_episodes(envs, batch, 1, rules, episode_prefix=f"demo-{start}-")
            expert = [expert_of(envs.envs[e.index], alias) for e in episodes]
            plans: list[list[str]] = [[] for _ in episodes]
            steps: list[list[Demo]] = [[] for _ in episodes]
            live = list(range(len(episodes)))
            while live:
                for i in list(live):
                    episode = episodes[i]
                    if not plans[i]:
                        plans[i] = list(expert[i]() or [])
                    if not plans[i]:  # the expert gives up on this state: the episode is not a demonstration
                        live.remove(i)
                        continue
                    ids = episode.prompt()
                    response = demo_response(envs.envs[episode.index], plans[i].pop(0))  # in its current state
                    steps[i].append(Demo(batch[i].key(), episode.step, episode.content, list(ids), response))
                    (outcome,) = envs.step_many([(episode.index, response)])
                    response_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
                    if not episode.record(Generation(response_ids, [0.0] * len(response_ids), response, "stop"), outcome):
                        live.remove(i)
            for episode, demo_steps in zip(episodes, steps):
                result.episodes += 1
                if episode.trajectory.won:
                    result.won += 1
                    result.demos.extend(demo_steps)
            if progress is not None:
                progress.update(len(batch))
    finally:
        envs.close()
        spec.close()
    return result


# ----------------------------------------------------------------------------------------------------
# The command


CLI_DEFAULTS = {"demos": 48, "epochs": 1.0, "lr": 3e-5, "batch_size": 8, "grad_accum": 1}
"""`seedbench sft-policy`'s settings when neither a flag nor the recipe gives them. A recipe that builds a
warm start (``warm_start.demos > 0``) gives its own, so ``sft-policy --config R`` builds what ``seedbench run
--config R`` builds and caches."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="seedbench sft-policy",
        description="Behaviour-cloning warm start: fine-tune the policy on the env's expert episodes, rendered "
                    "with the run's own prompts, and save a checkpoint for `seedbench run --model`.")
    p.add_argument("--env", help="env alias or id (see `seedbench envs`); or set env in --config")
    p.add_argument("--config", help="the run's YAML recipe: env, env_kwargs, model and rollout prompt settings")
    p.add_argument("--set", nargs="+", action="extend", metavar="KEY=VALUE",
                   help="run config overrides, as for `seedbench run` (e.g. env_kwargs.size=6)")
    p.add_argument("--model", help="base policy (default: the run config's model.name, smollm2-135m)")
    p.add_argument("--seed", type=int, help="seeds the demo tasks and the SFT (default: the recipe's warm_start.seed "
                                            "when it builds a warm start and sets one, else the run config's seed)")
    p.add_argument("--demos", type=int, help="expert episodes to play (default: the recipe's warm_start.demos "
                                               f"when it builds a warm start, else {CLI_DEFAULTS['demos']}; only won ones are kept)")
    p.add_argument("--epochs", type=float, help="SFT epochs (default: the recipe's warm_start.epochs, "
                                                 f"else {CLI_DEFAULTS['epochs']:g})")
    p.add_argument("--lr", type=float, help=f"SFT learning rate (default: the recipe's, else {CLI_DEFAULTS['lr']:g})")
    p.add_argument("--batch-size", type=int, help="examples per forward pass (default: the recipe's, else "
                                                   f"{CLI_DEFAULTS['batch_size']})")
    p.add_argument("--grad-accum", type=int,
                   help=f"forward passes per optimiser step (default: the recipe's, else {CLI_DEFAULTS['grad_accum']}; "
                        "a smaller --batch-size with more passes takes the same step in less memory)")
    p.add_argument("--output", help="output directory (default runs/sft-policy__<env>__<model>__s<seed>__<time>); "
                                    "the checkpoint goes to OUTPUT/model")
    return p


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, RunConfig]:
    """The command line and the run config it describes, checked before anything loads or is written."""

    args = build_parser().parse_args(argv)
    overrides = parse_set_pairs(args.set or [])
    for flag, dotted in (("env", "env"), ("model", "model.name"), ("seed", "seed")):
        if getattr(args, flag) is not None:
            set_dotted(overrides, dotted, getattr(args, flag))
    if "env" not in overrides and not (args.config and load_yaml(args.config).get("env")):
        raise ConfigError("sft-policy needs the env: pass --env NAME or a --config recipe that sets env")
    config = build_config(args.config, overrides)
    recipe = config.warm_start if config.warm_start.demos > 0 else None
    for name, default in CLI_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, getattr(recipe, name) if recipe is not None else default)
    if args.seed is None and recipe is not None and recipe.seed is not None:
        config = dataclasses.replace(config, seed=recipe.seed)
    for name in ("demos", "batch_size", "grad_accum"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.demos > MAX_BUILD_TASKS:
        raise ConfigError(f"--demos {args.demos} is more than {MAX_BUILD_TASKS}: every demonstration is held in "
                          "memory until the fine-tune")
    for name in ("epochs", "lr"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"--{name} must be a positive finite number, got {value}")
    if args.output:
        check_output_dir(args.output, "--output")
    check_origin_env(checkpoint_origin(config.model.name), resolve_env(config.env).alias, config.model.allow_other_env)
    return args, config


def main(argv: list[str] | None = None) -> int:

    try:
        args, config = parse_args(argv)
        warm_start(config, demos=args.demos, epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                   grad_accum=args.grad_accum,
                   output=args.output, config_path=args.config, set_pairs=args.set or [])
    except (WarmStartError, ConfigError, UnknownNameError, FileNotFoundError, ImportError) as err:
        print(f"seedbench: error: {err}", file=sys.stderr)
        return 2
    return 0


def warm_start(config: RunConfig, *, demos: int, epochs: float, lr: float, batch_size: int, grad_accum: int = 1,
               output: str | None = None,
               config_path: str | None = None, set_pairs: list[str] = (), announce: bool = True) -> Path:
    """Collect the demonstrations, fine-tune, save ``OUTPUT/model`` with its provenance; returns that path."""
    entry = resolve_env(config.env)
    check_origin_env(checkpoint_origin(config.model.name), entry.alias, config.model.allow_other_env)
    check_expert(make_env(entry.alias, **config.env_kwargs), entry.alias)  # before anything loads or is written
    out = Path(output) if output else Path("runs") / default_run_name(entry.alias, "sft-policy", config.model.name,
                                                                      config.seed)
    check_output_dir(out, "--output")
    if out.exists() and any(out.iterdir()):
        raise WarmStartError(f"output directory {out} already exists; choose another --output")

    seed_everything(config.seed)
    policy = load_policy(dataclasses.replace(config.model, gradient_checkpointing=False), need_reference=False,
                         seed=config.seed)
    t0 = time.perf_counter()
    with progress_bar(total=demos, desc="expert demos", unit="episode") as bar:
        demo_set = collect_demos(config, entry.alias, policy.tokenizer, demos, config.seed, progress=bar)
    t_demos = time.perf_counter() - t0
    if not demo_set.demos:
        raise WarmStartError(f"the expert won none of {demo_set.episodes} training tasks, so there is nothing to "
                             "clone; check the env with `seedbench check-env " + entry.alias + "`")
    print(f"seedbench: {len(demo_set.demos)} expert steps from {demo_set.won}/{demo_set.episodes} won episodes "
          f"({t_demos:.0f} s)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "demos.jsonl").open("w") as handle:
        handle.writelines(json.dumps({"task": d.task, "step": d.step, "prompt": d.content, "response": d.response}) + "\n"
                          for d in demo_set.demos)
    rows = [tokenize_example(policy.tokenizer, d.content, d.response) for d in demo_set.demos]
    settings = SFTSettings(epochs=epochs, lr=lr, batch_size=batch_size, grad_accum=grad_accum, seed=config.seed,
                           gradient_checkpointing=config.model.gradient_checkpointing, label="policy SFT")
    metrics = fine_tune(policy, rows, [], settings, out)

    model_dir = out / "model"
    save_policy(policy, model_dir)
    response_tokens = [sum(label != -100 for label in row["labels"]) for row in rows]
    provenance = {
        "stage": "behaviour-cloning-warm-start", "env": entry.alias, "env_id": entry.env_id,
        "env_kwargs": config.env_kwargs, "config": config_path, "set": list(set_pairs),
        "history_length": config.rollout.history_length, "max_steps": config.rollout.max_steps,
        "demo_split": demo_set.split, "demos_requested": demos,
        "demo_episodes": demo_set.episodes, "demo_episodes_won": demo_set.won, "demo_steps": len(demo_set.demos),
        "max_response_tokens": max(response_tokens), "epochs": epochs, "lr": lr, "batch_size": batch_size,
        "grad_accum": grad_accum,
        "seed": config.seed, "base_model": config.model.name, "base_source": policy.source,
        "base_checksum": policy.checksum, "base_origin": checkpoint_origin(config.model.name),
        "seedbench_version": __version__,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "demo_s": round(t_demos, 1), **metrics,
    }
    (model_dir / WARM_START_MARKER).write_text(json.dumps(provenance, indent=2))
    write_json_atomic(out / "sft_summary.json", {**provenance, "model_dir": str(model_dir.resolve())})
    if max(response_tokens) > config.rollout.max_new_tokens:
        print(f"seedbench: warning: the longest demonstrated answer has {max(response_tokens)} tokens, more than "
              f"rollout.max_new_tokens={config.rollout.max_new_tokens}; raise it in the run that starts from "
              "this checkpoint", flush=True)
    if not announce:
        return model_dir
    print(f"seedbench: warm-start checkpoint: {model_dir}")
    print(f"seedbench: next: seedbench run --env {entry.alias} --model {model_dir}"
          + (f" --config {config_path}" if config_path else ""))
    return model_dir
