"""fp32 vs bf16 on this CPU, from the matrix product up to seedbench's update, in one run.

    python benchmarks/bf16_speed.py [--model smollm2-135m] [--repeats 2] [--tokens 848] [--batch PATH]
                                    [--parts gemm hf update scoring iteration] [--out benchmarks/results/bf16_speed.json]

Each part is timed fp32 and bf16 interleaved (fp32, bf16, bf16, fp32, …; the median is kept), with the
load average printed next to it: on a shared machine only ratios measured side by side mean anything.

* ``gemm``: ``torch.mm`` at the model's linear shapes for ``--tokens`` rows (an update's micro-batch) and
  for 16 rows (a decode step), in GFLOP/s;
* ``hf``: a plain transformers forward + backward (and forward alone) of 2 × ``--tokens // 2`` tokens,
  three sides like the update's: fp32, bf16 autocast over fp32 weights and the bf16 compute copy;
* ``update``: seedbench's update on the README quick start's recorded batch (`update_speed.py` records
  it), plain and optimised, one trainer per dtype (``model.dtype`` pinned), three sides interleaved: fp32,
  bf16 autocast over the fp32 weights (``bf16``) and the bf16 compute copy (``param_copy``,
  ``model.bf16_compute=param_copy`` on the bf16 trainer), wall and process CPU seconds, and its achieved FLOP/s as a
  share of the bf16 GEMM rate measured above (the mean over the ``--tokens``-row shapes): FLOPs = 2 × non-embedding parameters per token of every
  forward it runs (the layout's tokens, padding included) + 4 × per token of every backward, plus the
  vocabulary projection of the scored columns (attention's score products are left out: an undercount);
* ``scoring``: the no-grad scoring pass over the batch, the pass SEED's teacher re-scoring runs
  (``optim.packing`` and ``log_prob_micro_batch_size`` from the recipe);
* ``sft``: the warm start's fine-tune (`seedbench.training.sft.fine_tune`, one epoch at batch 8) on
  ``--sft-demos`` expert episodes of the recipe's env (``--config``) rendered as `seedbench sft-policy` does
  (or, with ``--sft-annotations``, stage 1's fine-tune on a stage-1 build's analyses),
  three sides interleaved like the update's, each from the same weights, wall and process CPU seconds;
* ``iteration`` (not by default: it generates): one whole quick-start GRPO iteration per dtype.

The CPU's flags that decide bf16 (``amx_bf16``, ``avx512_bf16``, ``avx2``) are printed and recorded. The
tiny test model always computes in fp32 (exact tests), so ``--model tiny`` exercises the script, not bf16.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import update_speed  # noqa: E402  (a sibling script: the recorded batch and the timed update)

from seedbench.machine import cpu_facts  # noqa: E402

DTYPES = ("fp32", "bf16")
UPDATE_SIDES = ("fp32", "bf16", "param_copy")
"""The update part's sides: ``bf16`` = autocast over fp32 weights, ``param_copy`` = the bf16 compute copy."""
PARTS = ("gemm", "hf", "update", "scoring", "sft", "iteration")
DEFAULT_PARTS = ("gemm", "hf", "update", "scoring")


def parse_args(argv=None):
    p = update_speed.replay_parser(__doc__, "timed pairs per part", 2, "benchmarks/results/bf16_speed.json")
    p.add_argument("--tokens", type=int, default=848, help="rows of the GEMMs and tokens of the HF forward")
    p.add_argument("--parts", nargs="+", default=list(DEFAULT_PARTS), choices=PARTS)
    p.add_argument("--sft-demos", type=int, default=8, help="expert episodes the sft part fine-tunes on")
    p.add_argument("--sft-annotations", type=Path, default=None,
                   help="a stage-1 build's annotations.jsonl: the sft part fine-tunes on its analyses instead "
                        "(stage 1's SFT, batch --sft-batch-size)")
    p.add_argument("--sft-batch-size", type=int, default=4, help="batch of the stage-1 SFT (the quick start's: 4)")
    p.add_argument("--shared-trainer", action="store_true",
                   help="one bf16 trainer for both dtypes (half the memory): the fp32 sides set its compute dtype "
                        "to fp32 and swap in an fp32 KL reference, as an fp32 trainer holds; not with 'iteration'")
    return p.parse_args(argv)


def parse_args_checked(argv=None):
    args = parse_args(argv)
    if args.shared_trainer and "iteration" in args.parts:
        raise SystemExit("bf16_speed.py: --shared-trainer times no whole iteration (its engine generates in bf16); "
                         "drop 'iteration' from --parts")
    return args


@contextlib.contextmanager
def computing_in(trainer, dtype: str, fp32_side: dict | None = None):
    """`trainer` computing its update and scoring passes in `dtype` (``--shared-trainer``): for fp32 the
    compute dtype and the fp32 KL reference (``fp32_side["ref_model"]``) an fp32 trainer would hold.
    Without `fp32_side` (one trainer per dtype) nothing changes."""
    import torch

    if fp32_side is None or dtype != "fp32":
        yield
        return
    policy = trainer.policy
    saved = policy.compute_dtype, policy.ref_model
    policy.compute_dtype, policy.ref_model = torch.float32, fp32_side["ref_model"]
    try:
        yield
    finally:
        policy.compute_dtype, policy.ref_model = saved


def interleaved(run, repeats: int, warm_up: bool = True, sides=DTYPES) -> dict[str, list[float]]:
    """`run(side)` → seconds, for every side (both dtypes by default), alternating the order; one untimed
    call each first (`warm_up`; the update and the iteration, minutes each, go without: their first call
    is timed)."""
    for side in sides if warm_up else ():
        run(side)
    times: dict[str, list[float]] = {side: [] for side in sides}
    for repeat in range(repeats):
        for side in sides if repeat % 2 == 0 else sides[::-1]:
            times[side].append(run(side))
    return times


def summary(times: dict[str, list[float]], flops: float | None = None) -> dict:
    median = {dtype: statistics.median(values) for dtype, values in times.items()}
    out = {"seconds": times, "median_s": median, "bf16_speedup": median["fp32"] / median["bf16"],
           "loadavg": os.getloadavg()[0]}
    if "param_copy" in median:
        out["param_copy_speedup"] = median["fp32"] / median["param_copy"]
        out["param_copy_vs_autocast"] = median["bf16"] / median["param_copy"]
    if flops is not None:
        out["gflop"] = flops / 1e9
        out["gflop_per_s"] = {dtype: flops / 1e9 / value for dtype, value in median.items()}
    return out


def say(name: str, part: dict, unit: str = "s") -> None:
    m = part["median_s"]
    rate = ""
    if "gflop_per_s" in part:
        rate = f"  ({part['gflop_per_s']['fp32']:.0f} / {part['gflop_per_s']['bf16']:.0f} GFLOP/s)"
    scale, label = (1e3, "ms") if unit == "ms" else (1.0, "s")
    print(f"{name:<44} fp32 {m['fp32'] * scale:9.2f} {label}  bf16 {m['bf16'] * scale:9.2f} {label}  "
          f"x{part['bf16_speedup']:.2f}{rate}  load {part['loadavg']:.1f}", flush=True)


def gemm_part(config, tokens: int, repeats: int) -> dict:
    import torch

    hidden, inter = config.hidden_size, config.intermediate_size
    shapes = {f"{tokens}x{hidden}x{inter}": (tokens, hidden, inter), f"{tokens}x{inter}x{hidden}": (tokens, inter, hidden),
              f"{tokens}x{hidden}x{hidden}": (tokens, hidden, hidden), f"decode 16x{hidden}x{inter}": (16, hidden, inter)}
    out = {}
    for name, (m, k, n) in shapes.items():
        a32, b32 = torch.randn(m, k), torch.randn(k, n)
        operands = {"fp32": (a32, b32), "bf16": (a32.bfloat16(), b32.bfloat16())}
        inner = max(3, min(200, int(2e10 // (2 * m * k * n))))  # up to ~20 GFLOP per timing

        def run(dtype, a_b=operands, inner=inner):
            a, b = a_b[dtype]
            t0 = time.perf_counter()
            for _ in range(inner):
                torch.mm(a, b)
            return (time.perf_counter() - t0) / inner

        out[name] = summary(interleaved(run, repeats), 2.0 * m * k * n)
        say(f"GEMM {name}", out[name], "ms")
    return out


def hf_part(model, tokens: int, repeats: int) -> dict:
    """A bare transformers forward + backward (and forward alone) in three sides, interleaved: fp32, bf16
    autocast over the fp32 weights (``bf16``) and the bf16 compute copy (``param_copy``: the model's
    parameters cast to bf16, `seedbench.models.compute_copy.ComputeCopy`, the trainer's default on a bf16 CPU)."""
    import torch

    from seedbench.models.compute_copy import ComputeCopy

    ids = torch.randint(0, model.config.vocab_size, (2, max(2, tokens // 2)), generator=torch.Generator().manual_seed(0))
    copy = ComputeCopy(model, torch.bfloat16).model
    models = {"fp32": model, "bf16": model, "param_copy": copy}

    def step(side, backward: bool):
        net = models[side]
        net.zero_grad(set_to_none=True)
        region = torch.autocast("cpu", dtype=torch.bfloat16) if side == "bf16" else torch.autocast("cpu", enabled=False)
        t0 = time.perf_counter()
        with torch.set_grad_enabled(backward):
            with region:
                logits = net(input_ids=ids).logits
            if backward:
                logits.float().logsumexp(-1).mean().backward()
        return time.perf_counter() - t0

    out = {"forward_backward": summary(interleaved(lambda d: step(d, True), repeats, sides=UPDATE_SIDES)),
           "forward": summary(interleaved(lambda d: step(d, False), repeats, sides=UPDATE_SIDES))}
    for net in (model, copy):
        net.zero_grad(set_to_none=True)
    for name, part in (("forward+backward", out["forward_backward"]), ("forward", out["forward"])):
        say(f"HF {name}, 2 x {ids.shape[1]} tokens", part)
        print(f"    bf16 compute copy {part['median_s']['param_copy']:.2f} s: fp32/param_copy x{part['param_copy_speedup']:.2f}",
              flush=True)
    return out


def non_embedding_parameters(model) -> int:
    embedding = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters() if p is not embedding)


def layout_tokens(prompts, responses, packing: str) -> int:
    """Tokens one forward computes for these members in `packing`'s layout (padding included)."""
    from seedbench.models.packing import pack_batch

    if packing == "off":
        return len(prompts) * (max(map(len, prompts)) + max(1, max(map(len, responses))))
    return int(pack_batch(prompts, responses, shared_prefix=packing == "shared_prefix").input_ids.shape[1])


def update_flops(trainer, samples, settings: dict) -> float:
    """Model FLOPs of one update with `settings` (see the module docstring): the reference pass, a π_old pass
    when ``old_logprobs=score``, the loss forwards and their backwards, in the trainer's own grouping."""
    cfg = copy.copy(trainer.config.optim)
    for key, value in settings.items():
        setattr(cfg, key, value)
    model = trainer.policy.model
    params, vocab_flops = non_embedding_parameters(model), 2 * model.config.hidden_size * model.config.vocab_size
    prompts = [s.prompt_ids for s in samples]
    responses = [s.response_ids for s in samples]
    scored = sum(map(len, responses))

    def scoring_pass() -> float:
        order = sorted(range(len(samples)), key=lambda i: list(prompts[i])) if cfg.packing == "shared_prefix" \
            else list(range(len(samples)))
        size = cfg.log_prob_micro_batch_size or cfg.micro_batch_size
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        tokens = sum(layout_tokens([prompts[i] for i in c], [responses[i] for i in c], cfg.packing) for c in chunks)
        return 2.0 * params * tokens + vocab_flops * scored

    order = list(range(len(samples)))
    random.Random(trainer.config.seed * 1_000_003 + trainer.counters["iteration"]).shuffle(order)
    loss_tokens = sum(layout_tokens([prompts[i] for i in order[s : s + cfg.micro_batch_size]],
                                    [responses[i] for i in order[s : s + cfg.micro_batch_size]], cfg.packing)
                      for s in range(0, len(order), cfg.micro_batch_size))
    flops = 6.0 * params * loss_tokens + 3 * vocab_flops * scored  # forward 2, backward 4 per parameter and token
    passes = int(trainer.needs_reference) + int(cfg.old_logprobs == "score")
    return flops + passes * scoring_pass()


def update_part(args, trainers: dict, batch, repeats: int, gemm_rate: float | None, fp32_side=None) -> dict:
    trajectories, rewards = batch
    prepared = {d: t.agent.prepare(trajectories, rewards, 1) for d, t in trainers.items()}
    for value in prepared.values():
        update_speed.active_advantages(value)
    weights = {id(t): {k: v.detach().clone() for k, v in t.policy.model.state_dict().items()} for t in trainers.values()}
    initial = {d: weights[id(t)] for d, t in trainers.items()}  # one copy per trainer (--shared-trainer: one)
    out = {}
    for name, settings in update_speed.VARIANTS.items():
        cpu: dict[str, list[float]] = {side: [] for side in UPDATE_SIDES}
        passes: dict[str, list[dict]] = {side: [] for side in UPDATE_SIDES}

        def run(side, settings=settings, cpu=cpu, passes=passes):
            dtype = "bf16" if side == "param_copy" else side
            policy = trainers[dtype].policy
            policy.bf16_compute = "param_copy" if side == "param_copy" else "autocast"
            with computing_in(trainers[dtype], dtype, fp32_side):
                seconds, _, metrics = update_speed.timed_update(trainers[dtype], initial[dtype], prepared[dtype],
                                                                trajectories, settings)
            policy.bf16_compute = "autocast"
            cpu[side].append(metrics["cpu_s"])
            passes[side].append({k: v for k, v in metrics.items() if k.startswith("time/update_")})
            return seconds

        flops = update_flops(trainers["fp32"], prepared["fp32"].samples, settings)
        out[name] = summary(interleaved(run, repeats, warm_up=False, sides=UPDATE_SIDES), flops)
        # this process's CPU seconds: on a shared machine less sensitive to the other jobs than the wall clock
        out[name]["cpu_seconds"] = cpu
        out[name]["pass_seconds"] = passes  # seedbench.training.pass_clock: every update's split by pass
        median_cpu = {side: statistics.median(values) for side, values in cpu.items()}
        out[name]["bf16_cpu_speedup"] = median_cpu["fp32"] / median_cpu["bf16"]
        out[name]["param_copy_cpu_speedup"] = median_cpu["fp32"] / median_cpu["param_copy"]
        out[name]["param_copy_vs_autocast_cpu"] = median_cpu["bf16"] / median_cpu["param_copy"]
        if gemm_rate:
            out[name]["bf16_share_of_bf16_gemm_rate"] = out[name]["gflop_per_s"]["bf16"] / gemm_rate
            out[name]["param_copy_share_of_bf16_gemm_rate"] = out[name]["gflop_per_s"]["param_copy"] / gemm_rate
        say(f"seedbench update, {name}", out[name])
        m = out[name]["median_s"]
        print(f"    wall s: fp32 {m['fp32']:.1f}, bf16 autocast {m['bf16']:.1f}, bf16 param_copy {m['param_copy']:.1f}; "
              f"fp32/autocast x{out[name]['bf16_speedup']:.2f}, fp32/param_copy x{out[name]['param_copy_speedup']:.2f}, "
              f"autocast/param_copy x{out[name]['param_copy_vs_autocast']:.2f}")
        print(f"    CPU s:  fp32 {median_cpu['fp32']:.1f}, bf16 autocast {median_cpu['bf16']:.1f}, "
              f"bf16 param_copy {median_cpu['param_copy']:.1f}; fp32/autocast x{out[name]['bf16_cpu_speedup']:.2f}, "
              f"fp32/param_copy x{out[name]['param_copy_cpu_speedup']:.2f}, "
              f"autocast/param_copy x{out[name]['param_copy_vs_autocast_cpu']:.2f}")
        if gemm_rate:
            print(f"    achieved {out[name]['gflop_per_s']['bf16']:.0f} GFLOP/s in bf16 autocast, "
                  f"{out[name]['gflop_per_s']['param_copy']:.0f} with the param copy = "
                  f"{100 * out[name]['bf16_share_of_bf16_gemm_rate']:.1f} / "
                  f"{100 * out[name]['param_copy_share_of_bf16_gemm_rate']:.1f} % of the bf16 GEMM rate ({gemm_rate:.0f})")
        print_pass_split(passes)
    for dtype, trainer in trainers.items():
        trainer.policy.model.load_state_dict(initial[dtype])
    return out


def print_pass_split(passes: dict[str, list[dict]]) -> None:
    """Each side's seconds per pass of the update (the first timed update of the side), one line a side."""
    for side, runs in passes.items():
        if runs:
            split = ", ".join(f"{key[len('time/update_'):-2]} {value:.1f}" for key, value in runs[0].items())
            print(f"    passes, {side} (s): {split}", flush=True)


def warm_start_rows(trainer, demos: int) -> tuple[list[dict], int, str]:
    """The warm start's SFT examples: `demos` expert episodes of the trainer's env rendered as `seedbench
    sft-policy` does; (rows, batch size 8, label)."""
    from seedbench.training.sft import tokenize_example
    from seedbench.training.warm_start import collect_demos

    policy, config = trainer.policy, trainer.config
    demo_set = collect_demos(config, config.env, policy.tokenizer, demos, seed=0)
    rows = [tokenize_example(policy.tokenizer, d.content, d.response) for d in demo_set.demos]
    return rows, 8, f"warm-start SFT ({len(rows)} examples)"


def stage1_rows(trainer, annotations: Path, batch_size: int) -> tuple[list[dict], int, str]:
    """Stage 1's analysis examples from a stage-1 build's ``annotations.jsonl`` (analyzer prompt → the parsed
    analysis, as `seedbench sft-analyzer` trains on them; its rehearsed acting steps are not in the file)."""
    from seedbench.agents.seed.analysis import parse_analysis
    from seedbench.jsonio import read_jsonl
    from seedbench.training.sft import tokenize_example

    rows = []
    for record in read_jsonl(annotations):
        analysis = parse_analysis(record["raw"]) if record.get("ok") else None
        if analysis is not None:
            rows.append(tokenize_example(trainer.policy.tokenizer, record["analyzer_prompt"], analysis.to_json()))
    if not rows:
        raise SystemExit(f"bf16_speed.py: no parsed analysis in {annotations}; pass a stage-1 build's annotations.jsonl")
    return rows, batch_size, f"stage-1 analyzer SFT ({len(rows)} analyses)"


def sft_part(trainer, examples: tuple[list[dict], int, str], repeats: int) -> dict:
    """One epoch of the SFT on `examples` (`warm_start_rows` or `stage1_rows`) from the trainer's weights on
    every side: fp32, bf16 autocast, bf16 compute copy."""
    import dataclasses

    import torch

    from seedbench.training.sft import SFTSettings, fine_tune

    policy = trainer.policy
    rows, batch_size, label = examples
    initial = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    cpu: dict[str, list[float]] = {side: [] for side in UPDATE_SIDES}

    def run(side):
        policy.model.load_state_dict(initial)
        side_policy = dataclasses.replace(policy, compute_dtype=torch.float32 if side == "fp32" else torch.bfloat16,
                                          bf16_compute="param_copy" if side == "param_copy" else "autocast",
                                          _compute_copy=None)
        start, cpu_start = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory(prefix="bf16_speed_sft_") as out:
            fine_tune(side_policy, rows, [], SFTSettings(epochs=1, lr=3e-5, batch_size=batch_size, seed=0), Path(out))
        cpu[side].append(time.process_time() - cpu_start)
        return time.perf_counter() - start

    out = summary(interleaved(run, repeats, warm_up=False, sides=UPDATE_SIDES))
    policy.model.load_state_dict(initial)
    out.update(examples=len(rows), cpu_seconds=cpu)
    median_cpu = {side: statistics.median(values) for side, values in cpu.items()}
    say(label, out)
    print(f"    wall s: fp32 {out['median_s']['fp32']:.1f}, bf16 autocast {out['median_s']['bf16']:.1f}, bf16 param_copy "
          f"{out['median_s']['param_copy']:.1f}; CPU s: fp32 {median_cpu['fp32']:.1f}, autocast {median_cpu['bf16']:.1f}, "
          f"param_copy {median_cpu['param_copy']:.1f}")
    return out


def scoring_part(trainers: dict, batch, repeats: int, fp32_side=None) -> dict:
    trajectories, rewards = batch
    samples = {d: t.agent.prepare(trajectories, rewards, 1).samples for d, t in trainers.items()}

    def run(dtype):
        trainer = trainers[dtype]
        with computing_in(trainer, dtype, fp32_side):
            t0 = time.perf_counter()
            trainer.context.score([s.prompt_ids for s in samples[dtype]], [s.response_ids for s in samples[dtype]])
            return time.perf_counter() - t0

    out = summary(interleaved(run, repeats))
    say("scoring pass (SEED's re-scoring pass)", out)
    return out


def iteration_part(trainers: dict, repeats: int) -> dict:
    counter = {d: 0 for d in trainers}

    def run(dtype):
        counter[dtype] += 1
        return trainers[dtype].iteration(counter[dtype])["time/iteration_s"]

    out = summary(interleaved(run, repeats, warm_up=False))
    say("quick-start GRPO iteration", out)
    return out


def main(argv=None) -> int:
    args = parse_args_checked(argv)
    import torch

    flags = cpu_facts()
    print("CPU: " + ", ".join(f"{k}={v}" for k, v in flags.items()), flush=True)
    result: dict = {"model": args.model, "cpu": flags, "repeats": args.repeats, "tokens": args.tokens,
                    "loadavg_before": os.getloadavg()}
    out = Path(tempfile.mkdtemp(prefix="bf16_speed_"))
    trainers, fp32_side = {}, None
    for dtype in DTYPES[::-1] if args.shared_trainer else DTYPES:
        args.dtype = dtype
        if args.shared_trainer and trainers:
            trainers[dtype] = trainers["bf16"]
            continue
        trainers[dtype] = update_speed.make_trainer(args, "grpo", out / dtype)
    result["dtypes"] = {d: update_speed.ran_dtype(t) for d, t in trainers.items()}
    if args.shared_trainer:
        from seedbench.models.weights import frozen_copy

        result["dtypes"]["fp32"] = "float32"
        result["shared_trainer"] = True
        policy = trainers["bf16"].policy  # its loaded weights are the reference weights
        fp32_side = {"ref_model": None if policy.ref_model is None else frozen_copy(policy.model, torch.float32)}
    print(f"dtypes ran: fp32 side {result['dtypes']['fp32']}, bf16 side {result['dtypes']['bf16']}", flush=True)
    model = trainers["fp32"].policy.model
    gemm_rate = None
    if "gemm" in args.parts:
        result["gemm"] = gemm_part(model.config, args.tokens, args.repeats)
        rates = [v["gflop_per_s"]["bf16"] for k, v in result["gemm"].items() if not k.startswith("decode")]
        gemm_rate = result["bf16_gemm_gflop_per_s"] = statistics.mean(rates)
    if "hf" in args.parts:
        result["hf"] = hf_part(model, args.tokens, args.repeats)
    batch = None
    if {"update", "scoring"} & set(args.parts):
        batch = update_speed.record_batch(trainers["fp32"], update_speed.batch_path(args))
    if "update" in args.parts:
        result["update"] = update_part(args, trainers, batch, args.repeats, gemm_rate, fp32_side)
    if "scoring" in args.parts:
        result["scoring"] = scoring_part(trainers, batch, args.repeats, fp32_side)
    if "sft" in args.parts:
        examples = (stage1_rows(trainers["fp32"], args.sft_annotations, args.sft_batch_size) if args.sft_annotations
                    else warm_start_rows(trainers["fp32"], args.sft_demos))
        result["sft"] = sft_part(trainers["fp32"], examples, args.repeats)
    if "iteration" in args.parts:
        result["iteration"] = iteration_part(trainers, args.repeats)
    for trainer in {id(t): t for t in trainers.values()}.values():
        trainer.close()
    result["loadavg_after"] = os.getloadavg()
    print(f"load average {result['loadavg_before'][0]:.2f} -> {result['loadavg_after'][0]:.2f}; "
          f"threads {torch.get_num_threads()}, OMP_WAIT_POLICY {flags['omp_wait_policy']}")
    update_speed.write_result(args.out, result)
    return 0


if __name__ == "__main__":
    from seedbench import threads

    threads.configure()  # the wait policy the seedbench command would choose, before torch loads
    sys.exit(main())
