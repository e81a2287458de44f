"""SEED stage 1, analyzer SFT (docs/method.md §3): ``seedbench sft-analyzer --env E --annotator A``.

1. Roll out the base policy (no skills) on training tasks, ``--tasks`` × ``--group-size`` (paper: 180 × 8)
   at ``--temperature`` (paper: 0.4).
2. An annotator (`seedbench.agents.seed.annotators`: an OpenAI-compatible endpoint, a local HF model, or the
   rule-based stand-ins ``hindsight`` and the answer-leaking ``oracle``) answers the analyzer prompt of §4
   for every finished trajectory, with its true outcome. Only parseable answers with a non-empty skill are kept.
3. The policy is fine-tuned with next-token loss on the answer given the analyzer prompt (prompt tokens
   masked), ``--epochs`` 3 at ``--lr`` 5e-6 (text; paper uses 2e-6 for vision), with a 10 % validation
   split, by the SFT loop shared with ``seedbench sft-policy`` (`seedbench.training.sft`, under the run's
   compute dtype) on pre-tokenized examples: the prompt ids are exactly the ones stage 2 generates its
   analyses from (`render_prompt` of the same analyzer prompt), and the answer is the canonical JSON of
   the parsed annotation followed by the end-of-sequence token.
4. The checkpoint is saved to ``OUTPUT/model``; ``seedbench run --agent seed --model OUTPUT/model`` starts
   from it and uses it as KL reference. It records its stage-1 provenance in
   ``seedbench_analyzer_sft.json``, including the annotation file, which the ``seed-static-skills`` and
   ``skill-prompt`` agents use as their skill library by default.

``--config``/``--set`` take the RL run's recipe and overrides, so stage 1 plays the env (and kwargs)
stage 2 trains on; the provenance records them, and a run on another env refuses the checkpoint.

Outputs: ``OUTPUT/annotations.jsonl`` (every trajectory: prompt, raw answer, parsed skill, ok flag),
``OUTPUT/sft_summary.json`` and ``OUTPUT/model/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from seedbench.config import (
    BuildTasks, ConfigError, Count, Engine, GroupSize, ModelConfig, NonNegative, NonNegativeInt, Positive, Range, add_config_flags,
    apply_config_flags, build_config, check_output_dir, env_class, load_yaml, parse_set_pairs, resolve_step_cap, set_dotted,
)
from seedbench.training.origin import ANALYZER_SFT_MARKER as MARKER, check_origin_env, checkpoint_origin
from seedbench import __version__
from seedbench.agents.seed.analysis import episode_steps, fit_analyzer_content, parse_analysis
from seedbench.agents.seed.annotators import AnnotationRequest, AnnotatorUnavailable, make_annotator
from seedbench.engines.base import SamplingParams
from seedbench.engines.factory import close_engine, make_engine
from seedbench.envs.batch import LocalEnvs
from seedbench.jsonio import append_jsonl, write_json_atomic
from seedbench.models.policy import load_policy, save_policy
from seedbench.progress import progress_bar
from seedbench.registry import UnknownNameError, make_env, resolve_env
from seedbench.rollout.lockstep import run_episodes
from seedbench.rollout.types import TaskRef
from seedbench.seeding import seed_everything
from seedbench.training.rundir import default_run_name
from seedbench.training.sft import SFTSettings, fine_tune, tokenize_example


@dataclass
class Stage1Config:
    """Stage-1 settings; every ``seedbench sft-analyzer`` flag sets one field (`STAGE1_FLAGS`)."""

    env: str = ""
    """Env alias or id (``seedbench envs``); may come from ``config`` instead."""
    config: str | None = None
    """The RL run's YAML recipe (``seedbench run --config``). With ``--set`` (the run's overrides) it gives
    stage 1 the run's env, ``env_kwargs``, model settings, ``rollout.max_steps``, ``rollout.history_length``
    and seed, so stage 1 plays exactly the env stage 2 trains on; explicit flags win."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Env constructor kwargs, from the run config (``config`` and ``--set env_kwargs.K=V``)."""
    run_overrides: dict[str, Any] = field(default_factory=dict)
    """The ``--set`` overrides of the run config, as parsed (recorded in the provenance)."""
    annotator: str = ""
    """``openai:<model>`` (with base_url), ``hf:<model path or hub id>``, a local model directory, ``hindsight``
    (rule-based, from the trajectory alone), or ``oracle`` (rule-based; LEAKS THE ANSWER: copies the expert
    plan or rewarded answer; alias ``scripted``)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The base policy: rolled out, then fine-tuned (name, device, dtype, LoRA, gradient checkpointing)."""
    output: str | None = None
    """Output directory (default ``runs/sft-analyzer__<env>__<model>__s<seed>__<time>``)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint of an ``openai:`` annotator, e.g. https://api.openai.com/v1."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the endpoint's API key ('' = none)."""
    tasks: BuildTasks = 180
    """Training tasks to roll out (paper: 180; at most 20,000)."""
    group_size: GroupSize = 8
    """Rollouts per task (paper: 8; at most 256)."""
    temperature: NonNegative = 0.4
    """Rollout temperature (paper: 0.4)."""
    max_new_tokens: Count = 96
    """Per-step response budget of the rollout."""
    max_steps: Count | None = None
    """Episode step cap, handed to the env like ``rollout.max_steps`` (None = the env's)."""
    history_length: NonNegativeInt | None = None
    """History in the acting prompt (None = the env's)."""
    rollout_batch: Count = 16
    """Tasks rolled out at once (memory bound)."""
    annotation_max_new_tokens: Count = 1024
    """Annotator answer budget."""
    max_prompt_tokens: Count = 4096
    """Analyzer prompt budget (oldest steps dropped)."""
    epochs: Positive = 3.0
    """SFT epochs (paper: 3)."""
    lr: Positive = 5e-6
    """SFT learning rate (paper: 5e-6 text, 2e-6 vision)."""
    val_fraction: Annotated[float, Range(0, 1, high_open=True)] = 0.1
    """Validation split of the annotations (paper: 10 %)."""
    batch_size: Count = 4
    """SFT examples per device step."""
    grad_accum: Count = 1
    """SFT gradient accumulation steps."""
    rehearse_acting: bool = False
    """Also train on the steps of the won rollouts (each step's prompt → the policy's own answer), so that
    a small policy keeps acting while it learns to analyse: the analyzer is the policy, and 2 epochs of
    analyses alone cost the 135M model most of its success. Not in the reference (its 1.5-7B models keep
    acting without it); every arm that starts from the checkpoint shares it."""
    seed: int = 0
    """Seeds rollouts, the train/validation split and the SFT."""
    engine: Engine = "auto"
    """Generation engine of the base-policy rollout (auto: vLLM when installed)."""


STAGE1_FLAGS = {
    "env": "env", "config": "config", "annotator": "annotator", "model": "model.name", "output": "output", "base-url": "base_url",
    "api-key-env": "api_key_env", "tasks": "tasks", "group-size": "group_size", "temperature": "temperature",
    "max-new-tokens": "max_new_tokens", "max-steps": "max_steps", "history-length": "history_length",
    "rollout-batch": "rollout_batch", "annotation-max-new-tokens": "annotation_max_new_tokens",
    "max-prompt-tokens": "max_prompt_tokens", "epochs": "epochs", "lr": "lr", "val-fraction": "val_fraction",
    "batch-size": "batch_size", "grad-accum": "grad_accum", "rehearse-acting": "rehearse_acting", "seed": "seed", "engine": "engine",
    "device": "model.device", "dtype": "model.dtype", "lora-rank": "model.lora_rank",
    "gradient-checkpointing": "model.gradient_checkpointing",
}
"""``seedbench sft-analyzer`` flag → `Stage1Config` field."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="seedbench sft-analyzer",
                                description="SEED stage 1: annotate base-policy rollouts and fine-tune the analyzer.")
    add_config_flags(p, Stage1Config(), STAGE1_FLAGS, required=("annotator",))
    p.add_argument("--set", dest="run_set", nargs="+", action="extend", metavar="KEY=VALUE",
                   help="run config overrides, as for `seedbench run` (e.g. env_kwargs.size=6)")
    return p


def parse_config(argv: list[str] | None) -> Stage1Config:
    """The checked stage-1 config of a command line (before anything is loaded or written): the run config
    of ``--config``/``--set`` (with ``--env``, ``--model``, ``--seed``) supplies the defaults that stage 1
    shares with stage 2, then every explicit flag is applied."""
    args = build_parser().parse_args(argv)
    pairs = vars(args).pop("run_set", None) or []
    overrides = parse_set_pairs(pairs)
    run_overrides = dict(overrides)
    for dotted in ("env", "model.name", "seed", "model.device", "model.dtype"):
        if dotted in vars(args):
            set_dotted(overrides, dotted, vars(args)[dotted])
    recipe = getattr(args, "config", None)
    if "env" not in overrides and not (recipe and load_yaml(recipe).get("env")):
        raise ConfigError("sft-analyzer needs the env: pass --env NAME or a --config recipe that sets env")
    run = build_config(recipe, overrides)
    config = apply_config_flags(stage1_of_run(run, run_overrides=run_overrides), args)
    entry = resolve_env(config.env)
    config.max_steps, config.env_kwargs = resolve_step_cap(entry.alias, env_class(entry), config.max_steps,
                                                           config.env_kwargs)
    return config


def stage1_of_run(run: Any, **fields: Any) -> Stage1Config:
    """The stage-1 fields that must match the RL run they prepare (env, its kwargs, model, seed, step cap,
    history), taken from run config `run`; `fields` sets the others. The step cap stays in `max_steps`
    alone, as for a command line, so the env kwargs never carry a second copy of it."""
    shared = dict(env=run.env, model=dataclasses.replace(run.model), seed=run.seed,
                  history_length=run.rollout.history_length, max_steps=run.rollout.max_steps,
                  env_kwargs={k: v for k, v in run.env_kwargs.items() if k != "max_steps"})
    return Stage1Config(**{**shared, **fields})


class StageError(Exception):
    """A one-line error for the user."""


def main(argv: list[str] | None = None) -> int:
    try:
        run(parse_config(argv))
    except StageError as err:
        print(f"seedbench: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - registry/config errors are user errors: one line, exit 2
        if isinstance(err, (AnnotatorUnavailable, ConfigError, UnknownNameError, FileNotFoundError, ImportError)):
            print(f"seedbench: error: {err}", file=sys.stderr)
            return 2
        raise
    return 0


def acting_rows(trajectories: list[Any], eos_token_id: int) -> list[dict[str, list[int]]]:
    """SFT rows of every step of the won `trajectories`: the step's prompt ids, then the policy's answer
    and end of sequence, labels on the answer only (``rehearse_acting``)."""
    rows = []
    for trajectory in trajectories:
        if not trajectory.won:
            continue
        for step in trajectory.steps:
            prompt, answer = list(step.prompt_ids), list(step.response_ids) + [eos_token_id]
            rows.append({"input_ids": prompt + answer, "labels": [-100] * len(prompt) + answer})
    return rows


def build_for_run(config: Any, base_name: str, output: Path) -> Path:
    """Stage 1 as a step of a run's recipe (``analyzer_sft`` in the run config,
    `seedbench.training.starting_model`): the run's env, kwargs, prompt limits, engine and seed, from
    `base_name`, into ``output/model``."""
    settings = config.analyzer_sft
    stage1 = stage1_of_run(
        config, model=dataclasses.replace(config.model, name=base_name), annotator=settings.annotator,
        output=str(output), tasks=settings.tasks, group_size=settings.group_size, temperature=settings.temperature,
        max_new_tokens=config.rollout.max_new_tokens, epochs=settings.epochs, lr=settings.lr,
        batch_size=settings.batch_size, grad_accum=settings.grad_accum, rehearse_acting=settings.rehearse_acting,
        engine=config.engine)
    return run(stage1, announce=False)


@dataclass
class _Annotated:
    """What step 2 leaves for the SFT and the provenance: the kept (prompt, answer) pairs and the log's path."""
    examples: list[tuple[str, str]]
    path: Path
    seconds: float


def run(args: Stage1Config, announce: bool = True) -> Path:
    """Stage 1 end to end into ``args.output/model``; `announce` prints where it went and the next command.

    Four steps, in this order (the random streams depend on it): roll out the base policy, annotate each
    finished trajectory, fine-tune on the analyses (and, with ``rehearse_acting``, the won rollouts' own
    steps), save the checkpoint with its provenance."""
    entry = resolve_env(args.env)
    max_steps, env_kwargs = resolve_step_cap(entry.alias, env_class(entry), args.max_steps, args.env_kwargs)
    check_origin_env(checkpoint_origin(args.model.name), entry.alias, args.model.allow_other_env)
    out = Path(args.output) if args.output else Path("runs") / default_run_name(entry.alias, "sft-analyzer", args.model.name, args.seed)
    check_output_dir(out, "--output")
    if out.exists() and any(out.iterdir()):
        raise StageError(f"output directory {out} already exists; choose another --output")

    annotator = make_annotator(args.annotator, make_env=lambda: make_env(entry.alias, **env_kwargs),
                               env_cls=env_class(entry), base_url=args.base_url,
                               api_key_env=args.api_key_env, device=args.model.device, dtype=args.model.dtype,
                               max_new_tokens=args.annotation_max_new_tokens)
    annotator.check()  # fail before the long rollout when the annotator cannot be used
    print(f"seedbench: annotator: {annotator.label}", flush=True)
    out.mkdir(parents=True, exist_ok=True)

    seed_everything(args.seed)
    # gradient checkpointing is the SFT trainer's switch (activation_checkpointing), not the rollout model's
    policy = load_policy(dataclasses.replace(args.model, gradient_checkpointing=False), need_reference=False, seed=args.seed)
    t0 = time.perf_counter()
    trajectories = _roll_out(args, entry.alias, env_kwargs, max_steps, policy)
    t_rollout = time.perf_counter() - t0
    annotated = _annotate(args, annotator, trajectories, policy.tokenizer, out)
    train_examples, val_examples, acting, metrics = _fine_tune(args, policy, trajectories, annotated.examples, out)

    model_dir = out / "model"
    save_policy(policy, model_dir)
    provenance = {
        "stage": "seed-stage1-analyzer-sft", "env": entry.alias, "env_kwargs": env_kwargs, "config": args.config,
        "run_overrides": args.run_overrides, "base_model": args.model.name, "base_checksum": policy.checksum,
        "base_origin": checkpoint_origin(args.model.name), "seedbench_version": __version__,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "annotator": args.annotator, "annotator_kind": annotator.kind,
        "annotator_label": annotator.label, "annotations": os.path.relpath(annotated.path.resolve(), model_dir.resolve()),
        "trajectories": len(trajectories), "successful_trajectories": sum(t.won for t in trajectories),
        "annotations_kept": len(annotated.examples),
        "train_examples": train_examples, "val_examples": val_examples, "rehearse_acting": args.rehearse_acting,
        "acting_examples": acting, "epochs": args.epochs, "lr": args.lr,
        "rollout_temperature": args.temperature, "tasks": args.tasks, "group_size": args.group_size, "seed": args.seed,
        **metrics,
    }
    (model_dir / MARKER).write_text(json.dumps(provenance, indent=2))
    write_json_atomic(out / "sft_summary.json", {**provenance, "model_dir": str(model_dir.resolve()),
                                                 "timing": {"rollout_s": t_rollout, "annotate_s": annotated.seconds}})
    note = {"oracle": " (oracle annotator: skills leak the answer; hint distillation, not a trained analyzer)",
            "hindsight": " (hindsight annotator: rule-based analyses, not a model)"}.get(annotator.kind, "")
    if announce:
        print(f"seedbench: analyzer SFT checkpoint: {model_dir}{note}")
        print(f"seedbench: next: seedbench run --agent seed --env {entry.alias} --model {model_dir}")
    return model_dir


def _roll_out(args: Stage1Config, alias: str, env_kwargs: dict, max_steps: int | None, policy: Any) -> list[Any]:
    """Step 1: ``args.group_size`` episodes of the policy on each of ``args.tasks`` training tasks, in chunks
    of ``args.rollout_batch`` tasks; the finished, non-dropped trajectories."""
    import numpy as np

    engine = make_engine(args.engine, policy, args)
    env = make_env(alias, **env_kwargs)
    history = args.history_length if args.history_length is not None else env.history_length
    max_steps = max_steps or env.max_steps
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    rng = np.random.default_rng([args.seed, 180])
    tasks = [TaskRef(env.splits[0], int(s)) for s in rng.integers(0, 2**31 - 1, size=args.tasks)]
    trajectories = []
    chunk = max(1, args.rollout_batch)
    envs = LocalEnvs(lambda: make_env(alias, **env_kwargs), min(chunk, len(tasks)) * args.group_size)
    starts = range(0, len(tasks), chunk)
    # one bar over every chunk's lock-step turns (a chunk's episodes may all end before max_steps: the bar
    # then jumps to the chunk's end), so the stage shows its time left from the first chunk on
    bar = progress_bar(total=len(starts) * max_steps, desc="stage-1 rollouts", unit="turn")
    try:
        for index, start in enumerate(starts):
            batch, _ = run_episodes(envs, env, engine, policy.tokenizer, tasks[start : start + chunk],
                                    group_size=args.group_size, params=params, history_length=history,
                                    max_steps=max_steps, episode_prefix=f"sft-{start}-", progress=bar)
            bar.update((index + 1) * max_steps - bar.n)
            trajectories.extend(t for t in batch if not t.dropped and t.steps)
    finally:
        bar.close()
        envs.close()
        close_engine(engine)  # frees vLLM's memory before the SFT step
    return trajectories


def _annotate(args: Stage1Config, annotator: Any, trajectories: list[Any], tokenizer: Any, out: Path) -> _Annotated:
    """Step 2: the annotator's answer for every trajectory, each logged to ``out/annotations.jsonl`` with
    its true outcome; the parseable ones become SFT examples. No parseable answer at all is an error."""
    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    contents = [fit_analyzer_content(t.task_text, t.won, episode_steps(t), count, args.max_prompt_tokens)
                for t in trajectories]
    t0 = time.perf_counter()
    answers = annotator.annotate([AnnotationRequest(c, t) for c, t in zip(contents, trajectories)])
    seconds = time.perf_counter() - t0
    path = out / "annotations.jsonl"
    examples = []
    for traj, content, answer in zip(trajectories, contents, answers):
        analysis = parse_analysis(answer)
        append_jsonl(path, {
            "task": traj.task.key(), "task_id": traj.task_id, "task_type": traj.task_type, "task_text": traj.task_text,
            "episode_id": traj.episode_id, "won": traj.won, "num_steps": len(traj.steps),
            "first_observation": traj.steps[0].observation, "actions": [s.action for s in traj.steps],
            "annotator": annotator.kind, "ok": analysis is not None, "raw": answer,
            "episode_summary": analysis.summary if analysis else None,
            "episode_skill": analysis.skill if analysis else None, "analyzer_prompt": content,
        })
        if analysis is not None:
            examples.append((content, analysis.to_json()))
    if not examples:
        raise StageError(f"the annotator gave no parseable analysis for {len(trajectories)} trajectories; "
                         f"see {path}")
    print(f"seedbench: {len(examples)}/{len(trajectories)} annotations kept "
          f"({sum(t.won for t in trajectories)} successful episodes); written to {path}", flush=True)
    return _Annotated(examples, path, seconds)


def _fine_tune(args: Stage1Config, policy: Any, trajectories: list[Any], examples: list[tuple[str, str]],
               out: Path) -> tuple[int, int, int, dict]:
    """Step 3: supervised fine-tuning on (analyzer prompt → answer), the prompt masked, with a validation
    share of the analyses held out, plus the won rollouts' acting steps when ``rehearse_acting`` (the
    analyzer is the policy, and a small one forgets how to act otherwise). Returns the numbers of training
    analyses, validation analyses and acting steps, and the SFT's metrics."""
    tokenizer = policy.tokenizer
    order = list(range(len(examples)))
    random.Random(args.seed).shuffle(order)
    n_val = int(round(len(order) * args.val_fraction)) if len(order) > 1 else 0
    if args.val_fraction > 0 and n_val == 0 and len(order) > 1:
        n_val = 1
    val_idx, train_idx = order[:n_val], order[n_val:]
    rows = [tokenize_example(tokenizer, *examples[i]) for i in range(len(examples))]
    acting = acting_rows(trajectories, tokenizer.eos_token_id) if args.rehearse_acting else []
    if acting:
        print(f"seedbench: rehearsing acting: {len(acting)} steps of won rollouts join the analyses", flush=True)
    settings = SFTSettings(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, grad_accum=args.grad_accum,
                           seed=args.seed, gradient_checkpointing=args.model.gradient_checkpointing,
                           label="analyzer SFT")
    train_rows = [rows[i] for i in train_idx] + acting
    random.Random(args.seed).shuffle(train_rows)
    metrics = fine_tune(policy, train_rows, [rows[i] for i in val_idx], settings, out)
    return len(train_idx), len(val_idx), len(acting), metrics
