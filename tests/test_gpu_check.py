"""The GPU check runs first time on the GPU: its whole code path, on CPU with tiny shapes, writes every
figure it promises; its FLOP count is the hand-computed one."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.benchmark_loader import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
gpu_check = load_benchmark("gpu_check")


def test_tiny_run_writes_every_field(tmp_path):
    out = tmp_path / "gpu_check.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--tiny", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["failed_parts"] == [] and record["tiny"] is True
    assert set(record["versions"]) >= {"torch", "torch_cuda", "transformers", "vllm", "nvidia_driver"}
    assert proc.stdout.rstrip().endswith("gpu_check: verdict PASS") and record["verdict"] == "PASS"
    plan = record["memory_plan"]
    if "skipped" not in plan:  # the plan's module is there: both checkpointing settings measured and predicted
        assert [row["checkpointing"] for row in plan["rows"]] == [False, True] and plan["judged"] is False
        assert all(row["measured_gib"] > 0 and row["predicted_gib"] > 0 for row in plan["rows"])
    checkpoint = record["models"]["qwen2-tiny"]["checkpoint"]
    params = record["models"]["qwen2-tiny"]["model"]["params"]
    assert checkpoint["seconds"] > 0 and checkpoint["bytes"] >= 12 * params  # fp32 weights + AdamW m and v
    vllm = record["models"]["qwen2-tiny"]["vllm"]
    if importlib.util.find_spec("vllm") is None:
        assert vllm["skipped"].startswith("vLLM is not installed") and "gpu_check: vllm: {\"skipped\"" in proc.stdout
    model = record["models"]["qwen2-tiny"]
    assert model["model"]["params"] > 0
    gen = model["generation"]["2"]
    for kv in ("dynamic", "static"):
        assert 0 < gen[kv]["new_tokens"] <= 2 * 4 and gen[kv]["tokens_per_s"] > 0
    assert gen["static_over_dynamic"] > 0
    update = model["update"]
    assert update["tokens_per_s"] == pytest.approx(2 * (24 + 8) / update["seconds_per_step"])
    assert update["model_tflops"] > 0 and update["mfu_vs_spec"] is None  # no GPU peak on CPU
    gap = model["logprob_gap_bf16"]
    assert gap["dtype"] == "torch.bfloat16" and gap["tokens"] > 0 and 0 <= gap["mean_abs_diff"] < gap["threshold"]
    packing = model["packing"]  # 2 groups of 2 identical prompts: the tree equals the padded layout
    row = packing["response_2"]
    assert packing["samples"] == 4 and row["fp32_logprob_max_abs_diff"] < 1e-4
    assert row["fp32_grad_max_abs_diff"] < 1e-4 * max(1.0, row["fp32_grad_max_abs"])
    assert set(row["bf16_seconds"]) == {"off", "packed", "shared_prefix", "shared_prefix_runs", "shared_prefix_mask"}
    assert row["speedup_vs_off"]["off"] == 1.0 and min(row["bf16_seconds"].values()) > 0
    for agent in ("grpo", "seed"):
        it = record["iterations"][agent]
        assert it["time/iteration_s"] > 0 and it["env_steps"] > 0 and "rollout/logprob_abs_diff" in it
    assert "time/analysis_s" in record["iterations"]["seed"]


def test_flop_count_by_hand():
    config = SimpleNamespace(hidden_size=2, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                             intermediate_size=3, vocab_size=5)
    # body weights 2·2² (q, o) + 2·2·2 (k, v) + 3·2·3 (MLP) = 34; 2 tokens: 2·34·2 + attention 2·1·2·2² +
    # vocabulary 2·2·5·(1 + 1) = 192 forward FLOPs, ×3 with the backward
    assert gpu_check.train_flops_per_step(config, batch=1, prompt=1, response=1) == 576


def test_missing_gymnasium_without_wheels_names_the_fix(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gymnasium" else real(name, *a))
    with pytest.raises(SystemExit, match="pip download gymnasium farama-notifications"):
        gpu_check.ensure_gymnasium(tmp_path / "wheelhouse")


def test_verdict_fails_on_a_failed_part_a_flagged_gap_or_a_plan_below_the_measured_peak():
    def record(**parts):
        return {"memory_plan": parts.pop("plan", {"rows": [], "underpredicted": []}),
                "models": {"m": {"shape": {}, "model": {}, **parts}}, "iterations": {}}

    gap = {"mean_abs_diff": 0.01, "threshold": 0.05, "flagged": False}
    assert gpu_check.verdict(record(logprob_gap_bf16=gap, vllm={"skipped": "vLLM is not installed"})) == "PASS"
    assert gpu_check.verdict(record(update={"error": "OutOfMemoryError: ..."})) == "FAIL (m/update failed)"
    flagged = {"logprob_gap": {"mean_abs_diff": 0.2, "threshold": 0.05, "flagged": True}}
    assert gpu_check.verdict(record(vllm=flagged)) == \
        "FAIL (m/vllm: engine log-probs flagged (0.2000 > 0.05))"
    assert gpu_check.verdict(record(plan={"underpredicted": ["qwen2.5-1.5b ckpt=False"]})) == \
        "FAIL (memory plan below the measured peak: qwen2.5-1.5b ckpt=False)"
