"""Update benchmark: the plain update vs the optimised one on a quick-start batch, and SEED's update vs
GRPO's at equal work.

    python benchmarks/update_speed.py [--model smollm2-135m] [--dtype auto|fp32|bf16] [--bf16-compute auto|autocast|param_copy]
                                      [--repeats 2] [--batch PATH] [--singles] [--forward-batch-sizes N ...]
                                      [--seed-repeats 1] [--out benchmarks/results/update_speed.json]

The batch is by default one real rollout of `configs/quickstart_cpu.yaml`, the Sokoban smoke recipe (GRPO,
2 tasks × 2 episodes of ≤ 4 steps, 24 new tokens: ~16 step samples of ~400 prompt + 24 response tokens;
the figures in docs/performance.md that name no recipe use it); the README quick start's batch is
``--config configs/quickstart_frozenlake.yaml --set env=frozenlake-neighbours warm_start.demos=0``. Recorded once into
`--batch` (default: the seedbench cache) and replayed, so every variant updates the same samples from
the same weights with a fresh AdamW. Variants, timed interleaved (A, B, A, B, …; the median is kept):

* ``plain``: ``optim.old_logprobs=score``, ``optim.packing=off`` (the reference's passes and layout);
* ``optimised``: ``optim.old_logprobs=first_forward``, ``optim.packing=shared_prefix``;
* with ``--singles`` also each switch alone;
* with ``--forward-batch-sizes N …`` also ``optimised`` with ``optim.forward_batch_size=N`` (several
  micro-batches through one forward, the same gradient up to float order), one variant per N.

After each variant's first update the parameters are compared with the plain update's (max |Δ| and that
over the largest parameter change of the plain update). When the rollout's advantages are all zero
(a base model that never wins), a fixed ±1 pattern is set so that the policy-gradient term is active.

SEED at equal work: the same batch, every trajectory given the same fixed skill (the analysis generation
is left out; `benchmarks/iteration_speed.py` times whole iterations with it), SEED's teacher re-scoring +
update against GRPO's update, both optimised, interleaved. The load average is printed with the figures:
on a shared machine only the ratios mean anything.

The first line printed says what the passes computed in (`precision`): ``dtype: float32``, or for bf16
``dtype: bfloat16 (bf16 compute copy)`` / ``dtype: bfloat16 (autocast over fp32 weights)`` (``model.bf16_compute``);
the JSON keeps the same as ``dtype``, ``bf16_compute`` and ``precision``. The sibling benchmarks print theirs with
the helpers here.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = {
    "plain": {"old_logprobs": "score", "packing": "off", "forward_batch_size": None},
    "optimised": {"old_logprobs": "first_forward", "packing": "shared_prefix", "log_prob_micro_batch_size": 16},
}
"""The optimised variant keeps the recipe's `optim.forward_batch_size` (8 in the FrozenLake quick starts)."""
SINGLES = {
    "first_forward": {"old_logprobs": "first_forward", "packing": "off", "forward_batch_size": None},
    "packed": {"old_logprobs": "score", "packing": "packed", "forward_batch_size": None},
    "shared_prefix": {"old_logprobs": "score", "packing": "shared_prefix", "forward_batch_size": None},
}
FIXED_SKILL = "Push the box toward the target one step at a time, and never push it into a corner."
DTYPES = ("auto", "fp32", "bf16")
BF16_COMPUTE = ("auto", "autocast", "param_copy")
"""``model.bf16_compute``: how bf16 training passes run (src/seedbench/config/schema.py)."""
BF16_PATHS = {"param_copy": "bf16 compute copy", "autocast": "autocast over fp32 weights"}
QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart_cpu.yaml"


def write_result(out: str, result: dict) -> None:
    """The benchmark's JSON record at `out` (folders made as needed), and a line saying where."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


def replay_parser(doc: str, repeats_help: str, repeats: int, out: str) -> argparse.ArgumentParser:
    """The options of the benchmarks that replay one recorded rollout (this one, analysis_speed, prefill_speed)."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--config", default=str(QUICKSTART), help="recipe of the recorded rollout (default: the Sokoban smoke recipe)")
    p.add_argument("--repeats", type=int, default=repeats, help=repeats_help)
    p.add_argument("--batch", default=None, help="recorded batch (pickle); recorded there when missing")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="the trainer's model.dtype (auto = bf16 on CPUs with AVX-512-BF16/AMX, else fp32); printed")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides (tests: tiny shapes)")
    p.add_argument("--out", default=out)
    return p


def add_bf16_compute(p: argparse.ArgumentParser) -> None:
    """The ``--bf16-compute`` option of the benchmarks whose training passes may run in bf16."""
    p.add_argument("--bf16-compute", default="auto", choices=BF16_COMPUTE,
                   help="model.bf16_compute of bf16 training passes (auto = the bf16 compute copy); printed")


def ran_dtype(trainer) -> str:
    """The compute dtype the trainer's forwards ran in, as torch names it (``float32``, ``bfloat16``)."""
    return str(trainer.policy.compute_dtype or "torch.float32").replace("torch.", "")


def precision(compute_dtype, bf16_compute: str | None = None) -> dict:
    """What a benchmark's passes computed in, for its first line and its JSON: the dtype as torch names it
    (`compute_dtype`: a torch dtype, its name, or None for fp32) and, for bf16 training passes, how they ran
    (`bf16_compute`: ``param_copy`` or ``autocast``; None for passes that only generate). ``precision`` is the
    printed text: ``float32``, ``bfloat16``, ``bfloat16 (bf16 compute copy)``, ``bfloat16 (autocast over fp32 weights)``."""
    dtype = str(compute_dtype or "float32").replace("torch.", "")
    mode = bf16_compute if dtype == "bfloat16" else None  # fp32 and fp16 runs ignore model.bf16_compute
    return {"dtype": dtype, "bf16_compute": mode, "precision": f"{dtype} ({BF16_PATHS[mode]})" if mode else dtype}


def policy_precision(policy, training: bool = True) -> dict:
    """`precision` of `policy`'s passes: with `training`, its ``model.bf16_compute`` (``auto`` resolved as an
    unsharded trainer resolves it); without, generation only (the engine's copy in the compute dtype)."""
    if not training:
        return precision(policy.compute_dtype)
    from seedbench.models.compute_copy import bf16_compute_for

    return precision(policy.compute_dtype, bf16_compute_for(policy.bf16_compute))


def engine_precision(engine) -> dict:
    """`precision` of an HF engine's generation: the dtype of the weights it generates with (its own copy's)."""
    return precision(next(engine.model.parameters()).dtype)


def run_precision(run: Path) -> dict | None:
    """`precision` of a ``seedbench run`` in folder `run`, from the ``machine`` its summary.json records before
    the first iteration (`seedbench.machine.run_machine`); None while there is none."""
    try:
        machine = json.loads((Path(run) / "summary.json").read_text())["machine"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return precision(machine["compute_dtype"], machine["bf16_compute"])


def print_precision(ran: dict, extra: str = "") -> dict:
    """The benchmark's one ``dtype: …`` line (`extra` appended); returns `ran` for its JSON."""
    print(f"dtype: {ran['precision']}{extra}", flush=True)
    return ran


def announce_run_precision(run: Path, ran: dict | None) -> dict | None:
    """For a benchmark polling a ``seedbench run`` in `run`: `ran` once known, else `run_precision`, printed
    (`print_precision`) the first time the run has written it."""
    if ran is None and (ran := run_precision(run)) is not None:
        print_precision(ran)
    return ran


def parse_args(argv=None):
    p = replay_parser(__doc__, "timed updates per variant", 2, "benchmarks/results/update_speed.json")
    p.add_argument("--singles", action="store_true", help="also time each switch alone")
    p.add_argument("--forward-batch-sizes", type=int, nargs="*", default=[], metavar="N",
                   help="also the optimised update with optim.forward_batch_size=N (multiples of micro_batch_size)")
    p.add_argument("--seed-repeats", type=int, default=1, help="SEED vs GRPO pairs at equal work (0 = skip)")
    add_bf16_compute(p)
    return p.parse_args(argv)


def make_trainer(args, agent: str, out: Path):
    import yaml

    from seedbench.config import build_config, set_dotted
    from seedbench.training.trainer import Trainer

    overrides: dict = {}
    for pair in args.set:
        key, _, raw = pair.partition("=")
        set_dotted(overrides, key, yaml.safe_load(raw))
    overrides.update({"env": overrides.get("env", "sokoban"), "agent": agent, "output": str(out / agent)})
    set_dotted(overrides, "model.name", args.model)
    if "dtype" not in overrides.get("model", {}):  # --set model.dtype=... wins over --dtype
        set_dotted(overrides, "model.dtype", getattr(args, "dtype", "auto"))
    if getattr(args, "bf16_compute", None) and "bf16_compute" not in overrides.get("model", {}):  # likewise
        set_dotted(overrides, "model.bf16_compute", args.bf16_compute)
    if agent == "seed":
        set_dotted(overrides, "algo.expect_analyzer_sft", False)
    return Trainer(build_config(args.config, overrides))


def batch_path(args) -> Path:
    """Where the replayed rollout is kept: `--batch`, else the benchmark cache's file for `--model`, `--config`
    and `--set` together, so a batch recorded under another recipe is never replayed for this one (the
    default recipe keeps the plain name ``update_batch_<model>.pkl``)."""
    import hashlib
    import json

    from seedbench.paths import cache_dir

    if args.batch:
        return Path(args.batch)
    recipe = [str(Path(args.config).resolve()) if args.config else "", sorted(args.set)]
    if recipe == [str(QUICKSTART), []] and "/" not in args.model:
        return cache_dir("benchmarks") / f"update_batch_{args.model}.pkl"
    key = hashlib.sha256(json.dumps([args.model, *recipe]).encode()).hexdigest()[:16]
    return cache_dir("benchmarks") / f"update_batch_{key}.pkl"


def record_batch(trainer, path: Path):
    """One quick-start rollout → (trajectories, rewards), pickled to `path` (or loaded from it)."""
    if path.is_file():
        with path.open("rb") as handle:
            return pickle.load(handle)
    from seedbench.training.trainer import episode_rewards

    cfg = trainer.config
    trajectories, _ = trainer.run_episodes(
        trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer, trainer._train_tasks(1),
        group_size=cfg.rollout.group_size, params=trainer.sampling, history_length=trainer.history_length,
        max_steps=trainer.max_steps, episode_prefix="bench-", transform_prompt=trainer.agent.transform_prompt)
    kept = [t for t in trajectories if not t.dropped]
    batch = (kept, episode_rewards(kept, cfg.rollout.reward))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(batch, handle)
    return batch


def active_advantages(prepared):
    """Keep the rollout's advantages unless all are zero; then a fixed ±1 pattern (stated in the output)."""
    if any(abs(s.advantage) > 0 for s in prepared.samples):
        return False
    for index, sample in enumerate(prepared.samples):
        sample.advantage = 1.0 if index % 2 == 0 else -1.0
    return True


def timed_update(trainer, initial, prepared, trajectories, settings: dict):
    """One update from `initial` weights with a fresh AdamW: (seconds, parameters after, metrics)."""
    import torch

    model = trainer.policy.model
    model.load_state_dict(initial)
    trainer.optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                          lr=trainer.config.optim.lr, weight_decay=trainer.config.optim.weight_decay)
    saved = {key: getattr(trainer.config.optim, key) for key in settings}
    for key, value in settings.items():
        setattr(trainer.config.optim, key, value)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        metrics = trainer.update(copy.deepcopy(prepared), trajectories)
        seconds = time.perf_counter() - t0
    finally:  # the recipe's own values for the next variant (what a variant leaves out, the recipe decides)
        for key, value in saved.items():
            setattr(trainer.config.optim, key, value)
    metrics["cpu_s"] = time.process_time() - c0  # this process's CPU seconds: less sensitive to other jobs
    return seconds, {k: v.detach().clone() for k, v in model.state_dict().items()}, metrics


def parameter_difference(after, reference, initial) -> dict:
    diff = max(float((after[k] - reference[k]).abs().max()) for k in reference)
    moved = max(float((reference[k] - initial[k]).abs().max()) for k in reference)
    return {"max_abs": diff, "relative_to_largest_change": diff / moved if moved else float("nan"),
            "largest_change": moved}


def seed_at_equal_work(args, grpo, initial, trajectories, rewards, out: Path) -> dict:
    """SEED's re-scoring + update vs GRPO's update on the same samples (both optimised), interleaved."""
    from seedbench.agents.seed.analysis import Analysis

    seed = make_trainer(args, "seed", out)
    seed.policy.model.load_state_dict(initial)
    seed.agent.analyse = lambda trajs, rews, it: ([Analysis("bench", FIXED_SKILL) for _ in trajs], [])
    for key, value in VARIANTS["optimised"].items():  # the teacher re-scoring runs in `prepare`, before the update
        setattr(seed.config.optim, key, value)
    times = {"grpo": [], "seed": []}
    prepared_grpo = grpo.agent.prepare(trajectories, rewards, 1)
    forced = active_advantages(prepared_grpo)
    for _ in range(args.seed_repeats):
        seconds, _, _ = timed_update(grpo, initial, prepared_grpo, trajectories, VARIANTS["optimised"])
        times["grpo"].append(seconds)
        seed.policy.model.load_state_dict(initial)
        t0 = time.perf_counter()
        prepared_seed = seed.agent.prepare(trajectories, rewards, 1)
        rescore = time.perf_counter() - t0
        if forced:
            for index, sample in enumerate(prepared_seed.samples):
                sample.advantage = 1.0 if index % 2 == 0 else -1.0
        seconds, _, metrics = timed_update(seed, initial, prepared_seed, trajectories, VARIANTS["optimised"])
        times["seed"].append(rescore + seconds)
        print(f"  grpo update {times['grpo'][-1]:.1f} s | seed re-scoring {rescore:.1f} s + update {seconds:.1f} s "
              f"(OPD-active ratio {metrics.get('seed/opd_active_ratio', 0):.2f})", flush=True)
    seed.close()
    ratio = statistics.median(times["seed"]) / statistics.median(times["grpo"])
    return {"grpo_s": times["grpo"], "seed_s": times["seed"], "ratio": ratio}


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    out = Path(tempfile.mkdtemp(prefix="update_speed_"))
    trainer = make_trainer(args, "grpo", out)
    ran = print_precision(policy_precision(trainer.policy))
    recorded = batch_path(args)
    trajectories, rewards = record_batch(trainer, recorded)
    prepared = trainer.agent.prepare(trajectories, rewards, 1)
    forced = active_advantages(prepared)
    samples = prepared.samples
    shape = {"samples": len(samples), "prompt_tokens_mean": statistics.mean(len(s.prompt_ids) for s in samples),
             "response_tokens_mean": statistics.mean(len(s.response_ids) for s in samples),
             "advantages_forced": forced, "dtype": ran["dtype"], "micro_batch_size": trainer.config.optim.micro_batch_size,
             "mini_batch_size": trainer.config.optim.mini_batch_size, "threads": torch.get_num_threads()}
    print(f"batch: {shape['samples']} step samples, {shape['prompt_tokens_mean']:.0f} prompt + "
          f"{shape['response_tokens_mean']:.1f} response tokens on average ({recorded})", flush=True)
    initial = {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}
    variants = {**VARIANTS, **(SINGLES if args.singles else {}),
                **{f"optimised_forward{n}": {**VARIANTS["optimised"], "forward_batch_size": n}
                   for n in args.forward_batch_sizes}}
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    after: dict[str, dict] = {}
    losses: dict[str, float] = {}
    load_before = os.getloadavg()
    for repeat in range(args.repeats):
        # A B B A …: the optimised variants first in even repeats, so a load that falls over the run favours plain
        order = list(variants)[::-1] if repeat % 2 == 0 else list(variants)
        for name in order:
            seconds, params, metrics = timed_update(trainer, initial, prepared, trajectories, variants[name])
            times[name].append(seconds)
            cpu[name].append(metrics["cpu_s"])
            if repeat == 0:
                after[name], losses[name] = params, metrics["train/loss"]
            print(f"  {name:<14} {seconds:7.1f} s  (CPU {metrics['cpu_s']:.1f} s, load {os.getloadavg()[0]:.1f})  "
                  f"loss {metrics['train/loss']:.8f}", flush=True)
            if repeat == 0 and name != "plain" and "plain" in after:
                d = parameter_difference(after[name], after["plain"], initial)
                print(f"    {name} vs plain: max |Δparam| {d['max_abs']:.2e} (largest change {d['largest_change']:.2e})",
                      flush=True)
    load_after = os.getloadavg()
    median = {name: statistics.median(values) for name, values in times.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    result = {"model": args.model, **ran, "batch": shape, "repeats": args.repeats, "seconds": times, "median_s": median,
              "cpu_seconds": cpu, "median_cpu_s": median_cpu,
              "speedup_vs_plain": {name: median["plain"] / median[name] for name in variants},
              "cpu_speedup_vs_plain": {name: median_cpu["plain"] / median_cpu[name] for name in variants},
              "parameter_difference_vs_plain": {name: parameter_difference(after[name], after["plain"], initial)
                                                for name in variants if name != "plain"},
              "loss_difference_vs_plain": {name: abs(losses[name] - losses["plain"]) for name in variants},
              "loadavg_before": load_before, "loadavg_after": load_after}
    print(f"\nupdate seconds ({ran['precision']}, median of {args.repeats}, interleaved); "
          f"load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    for name in variants:
        line = (f"{name:<14}{median[name]:8.1f} s  x{result['speedup_vs_plain'][name]:.2f}  "
                f"(CPU {median_cpu[name]:.1f} s, x{result['cpu_speedup_vs_plain'][name]:.2f})")
        if name != "plain":
            d = result["parameter_difference_vs_plain"][name]
            line += f"  max |Δparam| {d['max_abs']:.2e} (relative {d['relative_to_largest_change']:.1e})"
            line += f"  |Δloss| {result['loss_difference_vs_plain'][name]:.1e}"
        print(line)
    if args.seed_repeats > 0:
        print("\nSEED vs GRPO at equal work (same samples, fixed skill, optimised update):", flush=True)
        result["seed_vs_grpo"] = seed_at_equal_work(args, trainer, initial, trajectories, rewards, out)
        result["seed_vs_grpo"]["loadavg"] = os.getloadavg()
        print(f"seed / grpo (re-scoring + update) = x{result['seed_vs_grpo']['ratio']:.2f}")
    trainer.close()
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
