"""Supervised fine-tuning on (prompt → answer) pairs, shared by the two commands that fine-tune the policy
before RL: SEED stage 1 (`seedbench sft-analyzer`, analyzer prompt → analysis) and the behaviour-cloning
warm start (`seedbench sft-policy`, acting prompt → expert answer).

Both hand over pre-tokenized rows whose prompt is exactly what the model is later asked with
(`render_prompt` of the same user message) and whose labels mask the prompt with -100, so the loss is
on the answer tokens only. TRL's `SFTTrainer` runs the loop (its collator keeps given labels as they
are); its loss is replaced by the trainer's own scoring (`seedbench.models.scoring.forward_logprobs`),
which projects only the answer positions onto the vocabulary. An acting prompt is ~20x longer than its
answer, and the full [batch, length, 49k] logits (with TRL's entropy and accuracy metrics over them) cost
more than the transformer itself on a CPU.

Precision follows the run's compute dtype (`Policy.compute_dtype`, from ``model.dtype``): where that is
bf16 (CUDA, or a CPU with AVX-512-BF16/AMX under ``auto``) the forward and backward run under bf16
autocast while the master weights and the AdamW state stay fp32, as in the RL update; fp32 otherwise.
With ``model.bf16_compute=param_copy`` the training forwards and backwards run on the policy's bf16 compute
copy instead (`seedbench.models.compute_copy`: refreshed once per optimizer step, its gradients added into
the fp32 master gradients after every backward), the Trainer's own autocast off; validation passes keep
bf16 autocast over the master weights.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedbench.progress import progress_bar
from seedbench.rollout.prompting import render_prompt


@dataclass(frozen=True)
class SFTSettings:
    """One fine-tuning job's optimisation settings."""

    epochs: float
    lr: float
    batch_size: int
    grad_accum: int = 1
    seed: int = 0
    gradient_checkpointing: bool = False
    label: str = "SFT"
    """Name shown on the progress bar and in the summary line."""


def tokenize_example(tokenizer: Any, content: str, answer: str) -> dict[str, list[int]]:
    """One training row: the chat-templated prompt of user message `content`, then `answer` and the
    end-of-sequence token; labels are -100 on the prompt."""
    prompt = render_prompt(tokenizer, content)
    completion = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": prompt + completion, "labels": [-100] * len(prompt) + completion}


def mixed_precision(policy: Any) -> dict[str, bool]:
    """The Trainer's precision switches for the policy's compute dtype: autocast in bf16 or fp16 with fp32
    master weights, or neither (fp32). ``bf16`` is always given explicitly because TRL turns it on by
    default."""
    import torch

    from seedbench.models.compute_copy import wants_compute_copy

    dtype = policy.compute_dtype
    if wants_compute_copy(policy.bf16_compute, dtype):  # the compute copy is bf16 itself: no Trainer autocast
        return {"bf16": False, "fp16": False}
    return {"bf16": dtype == torch.bfloat16, "fp16": dtype == torch.float16}


def precision_name(policy: Any) -> str:
    """How the fine-tune computes, as printed and recorded (``precision``)."""
    import torch

    from seedbench.models.compute_copy import wants_compute_copy

    if wants_compute_copy(policy.bf16_compute, policy.compute_dtype):
        return "bf16 param copy"
    return {torch.bfloat16: "bf16 autocast", torch.float16: "fp16 autocast"}.get(policy.compute_dtype, "fp32")


def fine_tune(policy: Any, train_rows: list[dict], val_rows: list[dict], settings: SFTSettings, out: Path) -> dict:
    """Fine-tune ``policy.model`` in place on `train_rows` (validation loss before and after on
    `val_rows`, when any); writes ``out/sft_log.jsonl`` (the Trainer's log history) and returns
    ``train_loss``, ``final_loss`` (mean of the last logged steps), ``val_loss_before``, ``val_loss_after``,
    ``sft_steps``, ``precision``, ``train_s`` and ``first_step`` (`first_step_fingerprint`)."""
    import time

    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as err:
        raise ImportError(f"supervised fine-tuning needs TRL ({err}). Install it with: pip install 'trl>=0.20'") from err

    work = out / "sft_trainer"
    precision = mixed_precision(policy)
    config = SFTConfig(
        output_dir=str(work), num_train_epochs=settings.epochs, learning_rate=settings.lr,
        per_device_train_batch_size=settings.batch_size, per_device_eval_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.grad_accum, eval_strategy="epoch" if val_rows else "no",
        save_strategy="no", logging_steps=1, report_to="none", seed=settings.seed, max_length=None,
        use_cpu=policy.device.type == "cpu", **precision,
        activation_checkpointing=settings.gradient_checkpointing,
        dataloader_num_workers=0, disable_tqdm=True, prediction_loss_only=True,
    )
    trainer = _answer_loss_trainer(SFTTrainer, policy)(
        model=policy.model, args=config, train_dataset=Dataset.from_list(train_rows),
        eval_dataset=Dataset.from_list(val_rows) if val_rows else None, processing_class=policy.tokenizer)
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # the per-step log goes to sft_log.jsonl, not the console
    trainer.add_callback(progress_callback(settings.label))
    before = trainer.evaluate()["eval_loss"] if val_rows else None
    start = time.perf_counter()
    result = trainer.train()
    train_s = time.perf_counter() - start
    after = trainer.evaluate()["eval_loss"] if val_rows else None
    policy.model.eval()
    log = trainer.state.log_history
    (out / "sft_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    shutil.rmtree(work, ignore_errors=True)  # save_strategy="no": nothing in it worth keeping
    step_losses = [r["loss"] for r in log if "loss" in r]
    final = float(sum(step_losses[-5:]) / len(step_losses[-5:])) if step_losses else None
    name = precision_name(policy)
    print(f"seedbench: {settings.label}: {len(train_rows)} train / {len(val_rows)} val examples, "
          f"{trainer.state.global_step} steps ({name}, {train_s:.0f} s), train loss {result.training_loss:.4f}"
          + (f", final {final:.4f}" if final is not None else "")
          + (f", val loss {before:.4f} -> {after:.4f}" if val_rows else ""), flush=True)
    return {"train_loss": float(result.training_loss), "final_loss": final, "val_loss_before": before,
            "val_loss_after": after, "sft_steps": int(trainer.state.global_step), "precision": name,
            "train_s": round(train_s, 1), "first_step": trainer.first_step}


def split_rows(input_ids, labels, attention_mask) -> tuple[list[list[int]], list[list[int]]]:
    """(prompts, answers) of a right-padded collated batch of `tokenize_example` rows: the prompt is
    everything before the first label that is not -100."""
    prompts, answers = [], []
    for ids, row_labels, row_mask in zip(input_ids.tolist(), labels.tolist(), attention_mask.tolist()):
        length = sum(row_mask)
        ids, row_labels = ids[:length], row_labels[:length]
        start = next((i for i, label in enumerate(row_labels) if label != -100), length)
        prompts.append(ids[:start])
        answers.append(ids[start:])
    return prompts, answers


def first_step_fingerprint(model: Any, prompts: list[list[int]], answers: list[list[int]], loss: Any) -> dict:
    """What decides the first training forward, hashed: its token ids, the weights it ran with, the CPU
    kernels' setting, and the loss it gave. Recorded in a checkpoint's provenance so that two builds of
    one recipe whose first losses differ show which input differed (the ids, the weights, or neither: the
    kernels)."""
    import torch

    weights = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        weights.update(name.encode())
        weights.update(tensor.detach().contiguous().view(torch.uint8).numpy().tobytes())
    return {"input_ids_sha256": hashlib.sha256(json.dumps([prompts, answers]).encode()).hexdigest(),
            "weights_sha256": weights.hexdigest(), "loss": float(loss),
            "torch_threads": torch.get_num_threads(), "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def _answer_loss_trainer(base: type, policy: Any) -> type:
    """`base` (TRL's `SFTTrainer`) with the loss computed on the answer positions only: the mean
    negative log-likelihood of the answer tokens (over the optimiser step's answer tokens when the
    Trainer counts them across gradient accumulation). Training passes run on the policy's bf16 compute
    copy where it has one (``model.bf16_compute=param_copy``), refreshed when the optimizer has stepped."""
    import contextlib

    import torch

    from seedbench.models.scoring import forward_logprobs

    class AnswerLossTrainer(base):
        refreshed_at: int | None = None
        """The optimizer step whose weights the compute copy holds."""
        first_step: dict | None = None
        """`first_step_fingerprint` of the first training micro-batch."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            prompts, answers = split_rows(inputs["input_ids"], inputs["labels"], inputs["attention_mask"])
            compute = policy.compute_copy() if torch.is_grad_enabled() else None  # validation: autocast, no copy
            autocast = policy.autocast()
            if compute is not None:
                if self.refreshed_at != self.state.global_step:
                    compute.refresh()
                    self.refreshed_at = self.state.global_step
                compute.follow_mode()
                model, autocast = compute.model, contextlib.nullcontext()
            logp, _, mask = forward_logprobs(model, prompts, answers, policy.tokenizer.pad_token_id,
                                             inputs["input_ids"].device, autocast=autocast)
            count = num_items_in_batch if num_items_in_batch is not None else mask.sum().clamp(min=1)
            loss = -logp.sum() / count
            if self.first_step is None and torch.is_grad_enabled():
                self.first_step = first_step_fingerprint(model, prompts, answers, loss.detach())
            return (loss, None) if return_outputs else loss

        def training_step(self, *args, **kwargs):
            loss = super().training_step(*args, **kwargs)
            compute = policy.compute_copy()
            if compute is not None:
                compute.move_grads()  # into the fp32 master .grad, which the Trainer clips and steps
            return loss

    return AnswerLossTrainer


def progress_callback(desc: str = "SFT") -> Any:
    """A seedbench progress bar over the SFT optimiser steps, with the latest training loss. The Trainer's
    own tqdm is off because it redraws every step, which floods a log file. Built inside a function so
    that importing this module does not import transformers."""
    from transformers import TrainerCallback

    class SFTProgress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.bar = progress_bar(total=state.max_steps, desc=desc, unit="step")

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.bar.set_postfix(loss=f"{logs['loss']:.3f}", refresh=False)

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

    return SFTProgress()
