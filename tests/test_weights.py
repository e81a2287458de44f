"""LoRA-merged weights: the streamed merge equals peft's merge_and_unload, engine syncs use it without
copying the model, frozen copies are frozen and independent."""

import copy

import pytest
import torch

from seedbench.config import ModelConfig
from seedbench.engines.hf import HFEngine
from seedbench.models.policy import load_policy
from seedbench.models.weights import frozen_copy, merged_weights


def _perturb_adapters(model, seed: int) -> None:
    """LoRA B starts at zero (a merge would change nothing); give the adapters weight."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)


@pytest.fixture()
def lora_policy():
    policy = load_policy(ModelConfig(name="tiny", lora_rank=4), need_reference=False)
    _perturb_adapters(policy.model, 0)
    return policy


def test_merged_weights_equal_merge_and_unload_and_leave_the_model_alone(lora_policy):
    model = lora_policy.model
    before = {n: p.clone() for n, p in model.named_parameters()}
    expected = copy.deepcopy(model).merge_and_unload().state_dict()
    got = dict(merged_weights(model))
    assert list(got) == list(expected)
    assert all(torch.equal(got[n], expected[n]) for n in expected)
    # the LoRA layers really were merged: their weights differ from the base weights
    base = model.get_base_model()
    q_proj = next(n for n in expected if n.endswith("q_proj.weight"))
    base_weight = base.get_submodule(q_proj.removesuffix(".weight")).base_layer.weight
    assert not torch.equal(got[q_proj], base_weight)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    assert hasattr(model, "merge_and_unload")  # still the peft model


def test_engine_sync_copies_merged_lora_weights_without_copying_the_model(lora_policy, monkeypatch):
    model = lora_policy.model
    engine = HFEngine(model, lora_policy.tokenizer, torch.device("cpu"), dtype=torch.bfloat16)
    assert engine.model is not model and next(engine.model.parameters()).dtype == torch.bfloat16
    _perturb_adapters(model, 1)  # an "update"
    stale = next(v for n, v in engine.model.state_dict().items() if n.endswith("q_proj.weight")).clone()

    def no_deepcopy(*args, **kwargs):
        raise AssertionError("sync_weights deep-copied the model")

    monkeypatch.setattr(copy, "deepcopy", no_deepcopy)
    engine.sync_weights()
    monkeypatch.undo()
    expected = copy.deepcopy(model).merge_and_unload().state_dict()
    synced = engine.model.state_dict()
    assert set(synced) == set(expected)
    assert all(torch.equal(synced[n], expected[n].to(synced[n].dtype)) for n in expected)
    name = next(n for n in synced if n.endswith("q_proj.weight"))
    assert not torch.equal(synced[name], stale)


def test_frozen_copy_is_frozen_eval_mode_and_independent():
    policy = load_policy(ModelConfig(name="tiny"), need_reference=False)
    frozen = frozen_copy(policy.model, torch.bfloat16)
    assert not frozen.training and all(not p.requires_grad for p in frozen.parameters())
    assert all(p.dtype == torch.bfloat16 for p in frozen.parameters())
    with torch.no_grad():
        next(policy.model.parameters()).add_(1.0)
    first = next(frozen.parameters())
    assert not torch.equal(first.float(), next(policy.model.parameters()).to(torch.bfloat16).float())
