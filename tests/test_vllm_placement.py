"""Where the trainer and the vLLM engine run in each process layout, and the context length the engine gets:
the pure functions of `seedbench.engines.vllm_args` and `seedbench.models.policy.device_name`, then the
arguments `VLLMEngine` hands ``LLM(...)`` (a fake ``vllm`` module records them: no vLLM on this machine)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch

from seedbench.engines.vllm_args import ProcessLayout, engine_max_model_len, engine_seed, llm_kwargs, placement_kwargs
from seedbench.models.policy import device_name

ONE = ProcessLayout()
RANK_3_OF_4 = ProcessLayout(rank=3, local_rank=3, world_size=4)


def test_layout_from_torchrun_environment():
    assert ProcessLayout.from_environment({}) == ONE
    assert ProcessLayout.from_environment({"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}) == \
        ProcessLayout(rank=5, local_rank=1, world_size=8)


@pytest.mark.parametrize("name, cuda, local_rank, expected", [
    ("auto", True, 0, "cuda:0"), ("auto", True, 3, "cuda:3"), ("cuda", True, 2, "cuda:2"),
    ("auto", False, 3, "cpu"), ("cpu", True, 1, "cpu"), ("cuda:1", True, 0, "cuda:1"),
])
def test_trainer_device_is_the_local_rank_gpu_never_a_bare_cuda(name, cuda, local_rank, expected):
    assert device_name(name, cuda_available=cuda, local_rank=local_rank) == expected


def test_one_process_uses_vllm_in_process_executor_on_gpu_0():
    assert placement_kwargs("cuda", 0, ONE, 1) == {}
    assert placement_kwargs("cpu", None, ONE, 1) == {}
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES=2 and model.device=cuda"):
        placement_kwargs("cuda", 2, ONE, 1)


def test_one_process_with_tensor_parallelism_lets_vllm_start_its_workers():
    assert placement_kwargs("cuda", 0, ONE, 4) == {"tensor_parallel_size": 4}


def test_torchrun_ranks_each_hold_an_engine_on_their_own_gpu():
    assert placement_kwargs("cuda", 3, RANK_3_OF_4, 1) == {"distributed_executor_backend": "external_launcher",
                                                          "tensor_parallel_size": 1}
    assert placement_kwargs("cpu", None, RANK_3_OF_4, 1)["distributed_executor_backend"] == "external_launcher"
    with pytest.raises(ValueError, match="runs on cuda:3 \\(LOCAL_RANK\\)"):
        placement_kwargs("cuda", 0, RANK_3_OF_4, 1)


def test_tensor_parallelism_across_torchrun_ranks_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="set vllm.tensor_parallel_size=1, or run one process"):
        placement_kwargs("cuda", 3, RANK_3_OF_4, 2)


def test_each_rank_samples_its_own_stream_and_rank_0_keeps_the_run_seed():
    assert engine_seed(7, ONE) == 7
    assert [engine_seed(7, ProcessLayout(rank=r, local_rank=r, world_size=4)) for r in range(4)] == [7, 8, 9, 10]


def test_context_length_is_derived_and_checked_against_the_model():
    assert engine_max_model_len(None, 13312, 32768) == 13312  # the run's own budget
    assert engine_max_model_len(None, None, 32768) is None  # no prompt budget: vLLM takes the model's limit
    assert engine_max_model_len(16384, 13312, 32768) == 16384  # an explicit length wins when it covers the run
    with pytest.raises(ValueError, match="vllm.max_model_len=4096 is shorter than .* \\(13312\\)"):
        engine_max_model_len(4096, 13312, 32768)
    with pytest.raises(ValueError, match="needs 13312 tokens of context but the model has 8192 positions"):
        engine_max_model_len(None, 13312, 8192)


def test_llm_kwargs_of_a_gpu_rank_under_torchrun():
    kwargs = llm_kwargs(checkpoint_dir="/ckpt", dtype="bfloat16", seed=5, on_cpu=False, layout=RANK_3_OF_4,
                        device_index=3, max_model_len=2560, gpu_memory_utilization=0.4)
    assert kwargs == dict(model="/ckpt", tokenizer="/ckpt", dtype="bfloat16", seed=8, enable_prefix_caching=True,
                          max_model_len=2560, max_num_seqs=256, enforce_eager=False,
                          logprobs_mode="processed_logprobs", max_logprobs=0, gpu_memory_utilization=0.4,
                          distributed_executor_backend="external_launcher", tensor_parallel_size=1)


def test_llm_kwargs_on_cpu_size_the_kv_cache_in_bytes_and_run_eager():
    kwargs = llm_kwargs(checkpoint_dir="/c", dtype="float32", seed=0, on_cpu=True, layout=ONE, cpu_kv_cache_gib=0.5)
    assert kwargs["kv_cache_memory_bytes"] == 1 << 29 and kwargs["enforce_eager"] is True
    assert "gpu_memory_utilization" not in kwargs and "distributed_executor_backend" not in kwargs


# -- the engine as the factory builds it, with a fake vLLM ------------------------------------------------------
class FakeLLM:
    made: list["FakeLLM"] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.llm_engine = SimpleNamespace(has_unfinished_requests=lambda: False)
        FakeLLM.made.append(self)


@pytest.fixture
def fake_vllm(monkeypatch):
    module = ModuleType("vllm")
    module.LLM = FakeLLM
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr("seedbench.engines.factory.vllm_importable", lambda: True)
    FakeLLM.made = []
    return module


def _llm_kwargs(overrides: dict) -> dict:
    from seedbench.config import build_config
    from seedbench.engines.factory import make_engine
    from seedbench.models.tiny import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    policy = SimpleNamespace(model=tiny_model(tokenizer), tokenizer=tokenizer, device=torch.device("cpu"),
                             compute_dtype=torch.float32)
    engine = make_engine("vllm", policy, build_config(overrides={"model": {"name": "tiny"}, **overrides}))
    engine.close()
    return FakeLLM.made[-1].kwargs


def test_engine_under_torchrun_joins_the_ranks_with_its_own_seed(fake_vllm, monkeypatch):
    for key, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(key, value)
    kwargs = _llm_kwargs({"seed": 3})
    assert kwargs["distributed_executor_backend"] == "external_launcher" and kwargs["seed"] == 4


def test_engine_context_length_comes_from_the_run_budgets(fake_vllm):
    kwargs = _llm_kwargs({"agent": "seed", "rollout": {"max_prompt_tokens": 1024, "max_new_tokens": 64},
                          "algo": {"analysis_max_prompt_tokens": 1536, "analysis_max_new_tokens": 128}})
    assert kwargs["max_model_len"] == 1536 + 128  # the analysis is the run's longest generation
    kwargs = _llm_kwargs({"rollout": {"max_prompt_tokens": 1024, "max_new_tokens": 64}, "eval": {"max_new_tokens": 96}})
    assert kwargs["max_model_len"] == 1024 + 96
    assert _llm_kwargs({})["max_model_len"] is None  # no prompt budget: the model's own limit
    with pytest.raises(ValueError, match="the model has 2048 positions"):  # the tiny model
        _llm_kwargs({"rollout": {"max_prompt_tokens": 2048, "max_new_tokens": 64}})


# -- two torchrun ranks with a real CPU vLLM (docs/engines.md has the CPU install) -------------------------------
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                    reason="vLLM is not installed in this environment (optional; see docs/engines.md for the CPU venv recipe)")
def test_two_torchrun_ranks_each_hold_their_own_engine_with_their_own_seed():
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root / "src"), SEEDBENCH_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(root / "tests" / "vllm_two_ranks.py")], env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(text for text in proc.stdout.splitlines() if text.startswith("RANKS "))
    ranks = json.loads(line.split(" ", 1)[1])
    assert [r["rank"] for r in ranks] == [0, 1] and [r["local_rank"] for r in ranks] == [0, 1]
    assert [r["seed"] for r in ranks] == [3, 4] and all(r["max_model_len"] == 512 for r in ranks)
    assert ranks[0]["greedy"] == ranks[1]["greedy"] and len(ranks[0]["greedy"]) == 6  # same weights, same answer
    assert ranks[0]["sampled"] != ranks[1]["sampled"]  # each rank draws its own stream
    # vLLM's teardown ends the process group it joined: the engine is closed last (seedbench.training.trainer)
    assert proc.stdout.count("PROCESS_GROUP_AFTER_CLOSE False") == 2
