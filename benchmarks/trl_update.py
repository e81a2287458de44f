"""seedbench's update vs TRL's `GRPOTrainer` step on the same model, dtype, sequences and token counts.

    pip install 'seedbench[bench]'     # TRL
    python benchmarks/trl_update.py [--model smollm2-135m] [--dtype fp32|bf16] [--bf16-compute autocast|param_copy]
                                    [--repeats 2] [--batch PATH] [--out benchmarks/results/trl_update.json]

The sequences are the README quick start's recorded rollout batch (`benchmarks/update_speed.py` records it:
~16 step samples of ~400 prompt + 24 response tokens). TRL gets exactly those prompt and completion ids
through its ``rollout_func`` (no generation), as 8 prompts × ``num_generations=2``; both sides compute in
``--dtype`` (fp32: seedbench ``model.dtype=fp32``, TRL ``bf16=False``; bf16: seedbench ``model.dtype=bf16`` with
``model.bf16_compute=autocast`` by default, i.e. autocast over fp32 master weights and a bf16 reference like TRL's
``bf16=True``, or ``--bf16-compute param_copy``, seedbench's default bf16 compute copy), each side's printed
(first line: ``dtype: …`` as `benchmarks/update_speed.py` prints it, then TRL's),
micro-batches of 2 (TRL: ``per_device_train_batch_size=2``, ``gradient_accumulation_steps=8``), one optimizer
step over all 16 sequences, β_KL 0.01 with a frozen reference forward, temperature 1, AdamW at 1e-5,
gradient clipping at 1, no activation checkpointing (TRL's GRPO default turns it on; seedbench's is off).
Timed interleaved (seedbench plain, seedbench optimised, TRL, …): seedbench's
`Trainer.update` against TRL's optimizer step from ``on_step_begin`` to ``on_step_end`` (its rollout
function, reference forward, 8 forward + backward passes and the AdamW step).

Differences that remain (printed): TRL takes its advantages from its own reward grouping (pairs of
completions), seedbench from the rollout's step-sample groups (the numbers differ, the work does not);
TRL, like seedbench's ``first_forward``, skips the old-log-prob pass when the update is one on-policy
step, while seedbench ``plain`` scores it (the reference code's pass); TRL's loss is its default
``loss_type="dapo"`` (a token mean over the batch, like seedbench's) without a dual clip, seedbench's the
reference's dual-clip PPO + k3 KL + entropy bonus (both compute per-token entropies); TRL pads every
micro-batch to its longest prompt (as seedbench's ``packing=off``) and adds its Trainer's bookkeeping
(metrics gathered per step). Same sequences, so the same real token count on both sides.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

INSTALL = "pip install 'seedbench[bench]'  (or: pip install 'trl>=0.20')"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--config", default=None, help="recipe of the recorded rollout (default: the README quick start)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"), help="compute dtype of both sides")
    p.add_argument("--bf16-compute", default="autocast", choices=("autocast", "param_copy"),
                   help="seedbench's model.bf16_compute with --dtype bf16 (autocast: as TRL's bf16=True); printed")
    p.add_argument("--samples", type=int, default=0, help="use only the first N (even) samples of the batch; 0 = all")
    p.add_argument("--batch", default=None, help="recorded batch (update_speed.py's pickle); recorded when missing")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides (tests: tiny shapes)")
    p.add_argument("--out", default="benchmarks/results/trl_update.json")
    return p.parse_args(argv)


def trl_available() -> bool:
    try:
        import trl  # noqa: F401
    except ImportError:
        return False
    return True


def make_trl_trainer(model, tokenizer, samples, output_dir: str, lr: float, beta: float, micro: int, timings: list,
                     bf16: bool = False):
    """A GRPOTrainer whose rollout returns our (prompt, completion) ids, pairs of samples as groups."""
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    pairs = [samples[i : i + 2] for i in range(0, len(samples) - len(samples) % 2, 2)]
    by_prompt = {f"pair-{i}": pair for i, pair in enumerate(pairs)}
    reward_of = {tuple(s.response_ids): float(s.advantage) for s in samples}

    def rollout(prompts, trainer):
        prompt_ids, completion_ids = [], []
        for prompt in dict.fromkeys(prompts):  # TRL passes each prompt (repeated num_generations times or once)
            for sample in by_prompt[prompt]:
                prompt_ids.append(list(sample.prompt_ids))
                completion_ids.append(list(sample.response_ids))
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids,
                "logprobs": [[0.0] * len(c) for c in completion_ids]}

    def reward(completion_ids, **kwargs):
        return [reward_of.get(tuple(ids), 0.0) for ids in completion_ids]

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            timings.append(time.perf_counter() - self.t0)

    sequences = 2 * len(pairs)
    args = GRPOConfig(output_dir=output_dir, per_device_train_batch_size=micro,
                      gradient_accumulation_steps=sequences // micro, num_generations=2,
                      max_completion_length=max(len(s.response_ids) for s in samples) + 1, learning_rate=lr, beta=beta,
                      temperature=1.0, max_grad_norm=1.0, gradient_checkpointing=False, weight_decay=0.01,
                      use_cpu=True, bf16=bf16, fp16=False,
                      report_to="none", save_strategy="no", logging_steps=1, max_steps=1, seed=0,
                      dataloader_num_workers=0, disable_tqdm=True)
    dataset = Dataset.from_dict({"prompt": list(by_prompt)})
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollout, callbacks=[StepTimer()])
    ref = getattr(trainer, "ref_model", None)
    if ref is not None and not bf16 and next(ref.parameters()).dtype != torch.float32:
        ref.to(torch.float32)
    return trainer, sequences


def trl_dtype(trl_trainer) -> str:
    """The dtype TRL's forwards compute in: ``bfloat16`` under its bf16 autocast (accelerate's mixed
    precision), else its model's parameter dtype."""
    if str(getattr(trl_trainer.accelerator, "mixed_precision", "no")) == "bf16":
        return "bfloat16"
    return str(next(trl_trainer.model.parameters()).dtype).replace("torch.", "")


def main(argv=None) -> int:
    args = parse_args(argv)
    if not trl_available():
        print(f"trl_update.py needs TRL, which is not installed: {INSTALL}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    import update_speed

    config = ["--config", args.config] if args.config is not None else []
    bench_args = update_speed.parse_args(["--model", args.model, "--dtype", args.dtype, "--bf16-compute", args.bf16_compute,
                                          *config, "--set", *args.set])
    out = Path(tempfile.mkdtemp(prefix="trl_update_"))
    trainer = update_speed.make_trainer(bench_args, "grpo", out)
    trajectories, rewards = update_speed.record_batch(trainer, update_speed.batch_path(args))
    prepared = trainer.agent.prepare(trajectories, rewards, 1)
    update_speed.active_advantages(prepared)
    samples = prepared.samples[: args.samples or len(prepared.samples)]
    samples = samples[: len(samples) - len(samples) % 2]  # whole TRL pairs
    prepared.samples = samples
    tokens = sum(len(s.prompt_ids) + len(s.response_ids) for s in samples)
    initial = {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}
    optim, algo = trainer.config.optim, trainer.agent.config
    trl_model = copy.deepcopy(trainer.policy.model)
    # TRL builds its reference from the model's path: give it the same fp32 initial weights, saved locally
    trl_model.save_pretrained(out / "initial")
    trl_model.config._name_or_path = str(out / "initial")
    trl_timings: list[float] = []
    trl_trainer, sequences = make_trl_trainer(trl_model, trainer.policy.tokenizer, samples, str(out / "trl"), optim.lr,
                                              algo.kl_coef, optim.micro_batch_size, trl_timings, bf16=args.dtype == "bf16")
    assert sequences == len(samples)
    dtypes = {"seedbench": update_speed.ran_dtype(trainer), "trl": trl_dtype(trl_trainer)}
    ran = update_speed.print_precision(update_speed.policy_precision(trainer.policy), f"; TRL {dtypes['trl']}")
    if len(set(dtypes.values())) != 1:
        raise SystemExit(f"trl_update.py: the two sides run different dtypes ({dtypes}); nothing to compare")
    times = {"seedbench_plain": [], "seedbench_optimised": [], "trl": []}
    load_before = os.getloadavg()
    for _ in range(args.repeats):
        for name in ("plain", "optimised"):
            seconds, _, metrics = update_speed.timed_update(trainer, initial, prepared, trajectories,
                                                            update_speed.VARIANTS[name])
            times[f"seedbench_{name}"].append(seconds)
            print(f"  seedbench {name:<10} {seconds:7.1f} s (CPU {metrics['cpu_s']:.1f} s, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
        trl_model.load_state_dict(initial)
        before = len(trl_timings)
        c0 = time.process_time()
        trl_trainer.train()
        trl_cpu = time.process_time() - c0  # includes TRL's set-up inside train()
        if len(trl_timings) != before + 1:
            raise RuntimeError("TRL ran no optimizer step; check its batch settings")
        times["trl"].append(trl_timings[-1])
        trl_tokens = int(trl_trainer.state.num_input_tokens_seen)  # prompt + completion tokens TRL trained on
        print(f"  trl GRPOTrainer      {trl_timings[-1]:7.1f} s (CPU of train() {trl_cpu:.1f} s, "
              f"load {os.getloadavg()[0]:.1f})", flush=True)
    load_after = os.getloadavg()
    median = {name: statistics.median(values) for name, values in times.items()}
    result = {"model": args.model, "sequences": len(samples), "tokens": tokens, "trl_tokens": trl_tokens,
              **ran, "dtypes": dtypes,
              "threads": torch.get_num_threads(), "seconds": times, "median_s": median,
              "tokens_per_s": {name: tokens / value for name, value in median.items()},
              "trl_over_seedbench": {name: median["trl"] / median[name] for name in ("seedbench_plain", "seedbench_optimised")},
              "loadavg_before": load_before, "loadavg_after": load_after,
              "differences": ["advantages: TRL's reward grouping (pairs) vs seedbench's step-sample groups",
                              "TRL skips the old-log-prob pass (one on-policy step), seedbench plain scores it",
                              "loss: TRL dapo (no dual clip) vs seedbench dual-clip PPO + k3 KL + entropy bonus",
                              "TRL's Trainer bookkeeping (per-step metrics) is inside its timed step"]}
    print(f"\n{len(samples)} sequences, {tokens} tokens (TRL counted {trl_tokens}), {ran['precision']}; "
          f"load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    for name, value in median.items():
        print(f"{name:<22}{value:8.1f} s  {tokens / value:7.1f} tokens/s")
    for name, value in result["trl_over_seedbench"].items():
        print(f"TRL seconds / {name}: x{value:.2f}")
    trainer.close()
    update_speed.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
