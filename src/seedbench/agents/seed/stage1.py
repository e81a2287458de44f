"""SEED stage 1, analyzer SFT (SEED_METHOD §3): ``seedbench sft-analyzer --env E --annotator A``.

1. Roll out the base policy (no skills) on training tasks, ``--tasks`` × ``--group-size`` (paper: 180 × 8)
   at ``--temperature`` (paper: 0.4).
2. An annotator (`seedbench.agents.seed.annotators`: an OpenAI-compatible endpoint, a local HF model, or the
   rule-based ``scripted`` stand-in) answers the analyzer prompt of §4 for every finished trajectory,
   with its true outcome. Only parseable answers with a non-empty skill are kept.
3. The policy is fine-tuned with next-token loss on the answer given the analyzer prompt (prompt tokens
   masked), ``--epochs`` 3 at ``--lr`` 5e-6 (text; paper uses 2e-6 for vision), with a 10 % validation
   split, by TRL's `SFTTrainer` on pre-tokenized examples: the prompt ids are exactly the ones stage 2
   generates its analyses from (`render_prompt` of the same analyzer prompt), and the answer is the
   canonical JSON of the parsed annotation followed by the end-of-sequence token.
4. The checkpoint is saved to ``OUTPUT/model``; ``seedbench run --agent seed --model OUTPUT/model`` starts
   from it and uses it as KL reference. It records its stage-1 provenance in
   ``seedbench_analyzer_sft.json``, including the annotation file, which the ``seed-static-skills`` and
   ``skill-prompt`` agents use as their skill library by default.

Outputs: ``OUTPUT/annotations.jsonl`` (every trajectory: prompt, raw answer, parsed skill, ok flag),
``OUTPUT/sft_summary.json`` and ``OUTPUT/model/``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

MARKER = "seedbench_analyzer_sft.json"  # same name as seedbench.agents.seed.agent.ANALYZER_SFT_MARKER


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="seedbench sft-analyzer",
                                description="SEED stage 1: annotate base-policy rollouts and fine-tune the analyzer.")
    p.add_argument("--env", required=True, help="env alias or id (see `seedbench envs`)")
    p.add_argument("--annotator", required=True,
                   help="openai:<model> (with --base-url), hf:<model path or hub id>, a local model directory, or "
                        "scripted (rule-based from env data; for tests and smoke runs only)")
    p.add_argument("--model", default="smollm2-135m", help="base policy (HF id, local path, smollm2-135m, tiny)")
    p.add_argument("--output", help="output directory (default runs/sft-analyzer__<env>__<model>__s<seed>__<time>)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. https://api.openai.com/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key ('' = none)")
    p.add_argument("--tasks", type=int, default=180, help="training tasks to roll out (paper: 180)")
    p.add_argument("--group-size", type=int, default=8, help="rollouts per task (paper: 8)")
    p.add_argument("--temperature", type=float, default=0.4, help="rollout temperature (paper: 0.4)")
    p.add_argument("--max-new-tokens", type=int, default=96, help="per-step response budget of the rollout")
    p.add_argument("--max-steps", type=int, help="episode step cap (default: the env's)")
    p.add_argument("--history-length", type=int, help="history in the acting prompt (default: the env's)")
    p.add_argument("--rollout-batch", type=int, default=16, help="tasks rolled out at once (memory bound)")
    p.add_argument("--annotation-max-new-tokens", type=int, default=1024, help="annotator answer budget")
    p.add_argument("--max-prompt-tokens", type=int, default=4096, help="analyzer prompt budget (oldest steps dropped)")
    p.add_argument("--epochs", type=float, default=3.0, help="SFT epochs (paper: 3)")
    p.add_argument("--lr", type=float, default=5e-6, help="SFT learning rate (paper: 5e-6 text, 2e-6 vision)")
    p.add_argument("--val-fraction", type=float, default=0.1, help="validation split (paper: 10 %%)")
    p.add_argument("--batch-size", type=int, default=4, help="SFT examples per device step")
    p.add_argument("--grad-accum", type=int, default=1, help="SFT gradient accumulation steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engine", default="auto", choices=["auto", "hf", "vllm"],
                   help="generation engine of the base-policy rollout (auto: vLLM when installed)")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="auto", help="compute dtype of rollout and annotation (training keeps fp32 weights)")
    p.add_argument("--lora-rank", type=int, default=0, help="LoRA rank (0 = full fine-tune); adapters are merged on save")
    p.add_argument("--gradient-checkpointing", action="store_true",
                   help="recompute activations in the backward pass (less memory, ~20 %% slower; TRL's default is on)")
    return p


class StageError(Exception):
    """A one-line error for the user."""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except StageError as err:
        print(f"seedbench: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - registry/config errors are user errors: one line, exit 2
        from seedbench.agents.seed.annotators import AnnotatorUnavailable
        from seedbench.config import ConfigError
        from seedbench.registry import UnknownNameError

        if isinstance(err, (AnnotatorUnavailable, ConfigError, UnknownNameError, FileNotFoundError, ImportError)):
            print(f"seedbench: error: {err}", file=sys.stderr)
            return 2
        raise
    return 0


def run(args: argparse.Namespace) -> Path:
    import numpy as np

    from seedbench.agents.seed.analysis import episode_steps, fit_analyzer_content, parse_analysis
    from seedbench.agents.seed.annotators import AnnotationRequest, make_annotator
    from seedbench.config import ModelConfig
    from seedbench.engines.factory import close_engine, make_engine
    from seedbench.engines.base import SamplingParams
    from seedbench.models.policy import load_policy
    from seedbench.registry import make_env, resolve_env
    from seedbench.rollout.types import TaskRef
    from seedbench.envs.batch import LocalEnvs
    from seedbench.rollout.lockstep import run_episodes
    from seedbench.seeding import seed_everything
    from seedbench.jsonio import append_jsonl, write_json_atomic
    from seedbench.training.rundir import default_run_name

    if args.tasks < 1 or args.group_size < 1:
        raise StageError("--tasks and --group-size must be at least 1")
    if not 0.0 <= args.val_fraction < 1.0:
        raise StageError("--val-fraction must be in [0, 1)")
    entry = resolve_env(args.env)
    out = Path(args.output) if args.output else Path("runs") / default_run_name(entry.alias, "sft-analyzer", args.model, args.seed)
    if out.exists() and any(out.iterdir()):
        raise StageError(f"output directory {out} already exists; choose another --output")

    annotator = make_annotator(args.annotator, make_env=lambda: make_env(entry.alias), base_url=args.base_url,
                               api_key_env=args.api_key_env, device=args.device, dtype=args.dtype,
                               max_new_tokens=args.annotation_max_new_tokens)
    annotator.check()  # fail before the long rollout when the annotator cannot be used
    print(f"seedbench: annotator: {annotator.label}", flush=True)
    out.mkdir(parents=True, exist_ok=True)

    seed_everything(args.seed)
    model_cfg = ModelConfig(name=args.model, device=args.device, dtype=args.dtype, lora_rank=args.lora_rank)
    policy = load_policy(model_cfg, need_reference=False, seed=args.seed)
    tokenizer = policy.tokenizer
    engine = make_engine(args.engine, policy, args)
    env = make_env(entry.alias)
    history = args.history_length if args.history_length is not None else env.history_length
    max_steps = args.max_steps or env.max_steps
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature)

    # 1. rollouts of the base policy, in chunks of tasks
    rng = np.random.default_rng([args.seed, 180])
    tasks = [TaskRef(env.splits[0], int(s)) for s in rng.integers(0, 2**31 - 1, size=args.tasks)]
    t0 = time.perf_counter()
    trajectories = []
    chunk = max(1, args.rollout_batch)
    envs = LocalEnvs(lambda: make_env(entry.alias), min(chunk, len(tasks)) * args.group_size)
    try:
        for start in range(0, len(tasks), chunk):
            batch, _ = run_episodes(envs, env, engine, tokenizer, tasks[start : start + chunk], group_size=args.group_size,
                                    params=params, history_length=history, max_steps=max_steps,
                                    episode_prefix=f"sft-{start}-")
            trajectories.extend(t for t in batch if not t.dropped and t.steps)
            print(f"seedbench: rollout {min(start + chunk, len(tasks))}/{len(tasks)} tasks", flush=True)
    finally:
        envs.close()
        close_engine(engine)  # frees vLLM's memory before the SFT step
    t_rollout = time.perf_counter() - t0

    # 2. annotate with the true outcome; keep parseable answers
    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    contents = [fit_analyzer_content(t.task_text, t.won, episode_steps(t), count, args.max_prompt_tokens)
                for t in trajectories]
    t0 = time.perf_counter()
    answers = annotator.annotate([AnnotationRequest(c, t) for c, t in zip(contents, trajectories)])
    t_annotate = time.perf_counter() - t0
    annotations_path = out / "annotations.jsonl"
    examples = []
    for traj, content, answer in zip(trajectories, contents, answers):
        analysis = parse_analysis(answer)
        append_jsonl(annotations_path, {
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
                         f"see {annotations_path}")
    successes = sum(t.won for t in trajectories)
    print(f"seedbench: {len(examples)}/{len(trajectories)} annotations kept "
          f"({successes} successful episodes); written to {annotations_path}", flush=True)

    # 3. supervised fine-tuning on (analyzer prompt → answer), prompt masked
    order = list(range(len(examples)))
    random.Random(args.seed).shuffle(order)
    n_val = int(round(len(order) * args.val_fraction)) if len(order) > 1 else 0
    if args.val_fraction > 0 and n_val == 0 and len(order) > 1:
        n_val = 1
    val_idx, train_idx = order[:n_val], order[n_val:]
    rows = [_tokenize(tokenizer, *examples[i]) for i in range(len(examples))]
    metrics = _fine_tune(policy, [rows[i] for i in train_idx], [rows[i] for i in val_idx], args, out)

    # 4. the checkpoint
    from seedbench.models.policy import save_policy

    model_dir = out / "model"
    save_policy(policy, model_dir)
    provenance = {
        "stage": "seed-stage1-analyzer-sft", "env": entry.alias, "base_model": args.model,
        "base_checksum": policy.checksum, "annotator": args.annotator, "annotator_kind": annotator.kind,
        "annotator_label": annotator.label, "annotations": str(annotations_path.resolve()),
        "trajectories": len(trajectories), "successful_trajectories": successes, "annotations_kept": len(examples),
        "train_examples": len(train_idx), "val_examples": len(val_idx), "epochs": args.epochs, "lr": args.lr,
        "rollout_temperature": args.temperature, "tasks": args.tasks, "group_size": args.group_size, "seed": args.seed,
        **metrics,
    }
    (model_dir / MARKER).write_text(json.dumps(provenance, indent=2))
    write_json_atomic(out / "sft_summary.json", {**provenance, "model_dir": str(model_dir.resolve()),
                                                 "time": {"rollout_s": t_rollout, "annotate_s": t_annotate}})
    note = " (scripted annotator: rule-based skills, a pipeline smoke test, not a trained analyzer)" if annotator.kind == "scripted" else ""
    print(f"seedbench: analyzer SFT checkpoint: {model_dir}{note}")
    print(f"seedbench: next: seedbench run --agent seed --env {entry.alias} --model {model_dir}")
    return model_dir


def _tokenize(tokenizer: Any, content: str, answer: str) -> dict[str, list[int]]:
    from seedbench.rollout.prompting import render_prompt

    prompt = render_prompt(tokenizer, content)
    completion = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": prompt + completion, "labels": [-100] * len(prompt) + completion}


def _fine_tune(policy: Any, train_rows: list[dict], val_rows: list[dict], args: argparse.Namespace, out: Path) -> dict:
    """TRL `SFTTrainer` on pre-tokenized rows whose ``labels`` already mask the prompt with -100."""
    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as err:
        raise ImportError(f"analyzer SFT needs TRL ({err}). Install it with: pip install 'seedbench[trl]'") from err

    work = out / "sft_trainer"
    cpu = policy.device.type == "cpu"
    config = SFTConfig(
        output_dir=str(work), num_train_epochs=args.epochs, learning_rate=args.lr,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum, eval_strategy="epoch" if val_rows else "no",
        save_strategy="no", logging_steps=1, report_to="none", seed=args.seed, max_length=None,
        use_cpu=cpu, bf16=(not cpu and str(policy.compute_dtype) == "torch.bfloat16"),  # TRL defaults bf16 on
        activation_checkpointing=args.gradient_checkpointing,
        dataloader_num_workers=0, disable_tqdm=True,
    )
    trainer = SFTTrainer(model=policy.model, args=config, train_dataset=Dataset.from_list(train_rows),
                         eval_dataset=Dataset.from_list(val_rows) if val_rows else None,
                         processing_class=policy.tokenizer)
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # the per-step log goes to sft_log.jsonl, not the console
    trainer.add_callback(_progress_callback())
    before = trainer.evaluate()["eval_loss"] if val_rows else None
    result = trainer.train()
    after = trainer.evaluate()["eval_loss"] if val_rows else None
    policy.model.eval()
    (out / "sft_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trainer.state.log_history))
    shutil.rmtree(work, ignore_errors=True)  # save_strategy="no": nothing in it worth keeping
    print(f"seedbench: analyzer SFT: {len(train_rows)} train / {len(val_rows)} val examples, "
          f"{trainer.state.global_step} steps, train loss {result.training_loss:.4f}"
          + (f", val loss {before:.4f} -> {after:.4f}" if val_rows else ""), flush=True)
    return {"train_loss": float(result.training_loss), "val_loss_before": before, "val_loss_after": after,
            "sft_steps": int(trainer.state.global_step)}


def _progress_callback() -> Any:
    """A seedbench progress bar over the SFT optimiser steps, with the latest training loss. The Trainer's
    own tqdm is off because it redraws every step, which floods a log file. Built inside a function so
    that importing this module does not import transformers."""
    from transformers import TrainerCallback

    from seedbench.progress import progress_bar

    class SFTProgress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.bar = progress_bar(total=state.max_steps, desc="analyzer SFT", unit="step")

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.bar.set_postfix(loss=f"{logs['loss']:.3f}", refresh=False)

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

    return SFTProgress()
