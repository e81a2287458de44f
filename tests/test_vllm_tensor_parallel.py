"""``vllm.tensor_parallel_size`` reaches vLLM's ``LLM(...)``, and weight syncs under TP go through the
checkpoint directory (a fake ``vllm`` module stands in: tensor parallelism needs several GPUs)."""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import pytest
import torch


class FakeLLM:
    """Records what the engine asks of vLLM's offline ``LLM``."""

    made: list["FakeLLM"] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.rpcs: list[tuple[str, dict]] = []
        self.llm_engine = SimpleNamespace(has_unfinished_requests=lambda: False)
        FakeLLM.made.append(self)

    def collective_rpc(self, method, kwargs=None):
        self.rpcs.append((method, dict(kwargs or {})))

    def reset_prefix_cache(self):
        pass


@pytest.fixture
def fake_vllm(monkeypatch):
    module = ModuleType("vllm")
    module.LLM = FakeLLM
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.made = []
    return module


def _engine(config_overrides: dict):
    from seedbench.config import build_config
    from seedbench.engines.factory import make_engine
    from seedbench.models.tiny import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    policy = SimpleNamespace(model=tiny_model(tokenizer), tokenizer=tokenizer, device=torch.device("cpu"),
                             compute_dtype=torch.float32)
    config = build_config(overrides={"model": {"name": "tiny"}, **config_overrides})
    return make_engine("vllm", policy, config), policy


def test_tensor_parallel_size_reaches_llm_and_syncs_reload_the_checkpoint(fake_vllm, monkeypatch):
    from safetensors.torch import load_file

    monkeypatch.setattr("seedbench.engines.factory.vllm_importable", lambda: True)
    engine, policy = _engine({"vllm": {"tensor_parallel_size": 2}})
    llm = FakeLLM.made[-1]
    assert llm.kwargs["tensor_parallel_size"] == 2 and llm.kwargs["model"] == engine.checkpoint_dir
    with torch.no_grad():
        policy.model.model.norm.weight.fill_(0.5)  # an "update"
    engine.sync_weights()
    # the TP workers are other processes: no Python iterator, they reload the rewritten checkpoint
    assert llm.rpcs == [("reload_weights", {})]
    saved = load_file(f"{engine.checkpoint_dir}/model.safetensors")
    assert torch.equal(saved["model.norm.weight"], torch.full_like(saved["model.norm.weight"], 0.5))
    engine.close()


def test_without_tensor_parallelism_llm_gets_no_tp_argument_and_syncs_in_place(fake_vllm, monkeypatch):
    monkeypatch.setattr("seedbench.engines.factory.vllm_importable", lambda: True)
    engine, _ = _engine({})
    llm = FakeLLM.made[-1]
    assert "tensor_parallel_size" not in llm.kwargs  # vLLM's own default (1)
    engine.sync_weights()
    (method, kwargs), = llm.rpcs
    assert method == "reload_weights" and "weights_iterator" in kwargs
    engine.close()
