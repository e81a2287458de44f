"""Policy loading options and the built-in non-learning agents."""

import torch

from seedbench.config import ModelConfig, build_config
from seedbench.training.evaluate import evaluate_agent
from seedbench.models.policy import load_policy, save_policy


def test_lora_policy_trains_only_adapters_and_reference_is_the_base(tmp_path):
    policy = load_policy(ModelConfig(name="tiny", lora_rank=4))
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)
    ids = torch.tensor([[3, 10, 11, 12]])
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.add_(0.5)
        with policy.reference() as ref:
            ref_logits = ref(input_ids=ids).logits
        logits = policy.model(input_ids=ids).logits
    assert not torch.allclose(ref_logits, logits)
    save_policy(policy, tmp_path / "merged")
    reloaded = load_policy(ModelConfig(name=str(tmp_path / "merged")), need_reference=False)
    with torch.no_grad():
        assert torch.allclose(reloaded.model(input_ids=ids).logits, logits, atol=1e-4)


def test_full_finetune_reference_is_a_frozen_copy():
    policy = load_policy(ModelConfig(name="tiny"))
    assert policy.ref_model is not policy.model
    assert not any(p.requires_grad for p in policy.ref_model.parameters())


def test_scripted_agent_solves_sokoban_and_random_does_worse():
    scripted = evaluate_agent("scripted", "sokoban", episodes=12)
    random_agent = evaluate_agent("random", "sokoban", episodes=12)
    assert scripted["success_micro"] == 1.0
    assert random_agent["success_micro"] < 1.0


def test_trained_run_directory_evaluates(tmp_path):
    from seedbench.training.trainer import train

    out = train(build_config(overrides={"env": "choice", "model": {"name": "tiny"}, "iterations": 1,
                                         "output": str(tmp_path / "run"), "eval": {"num_tasks": 4},
                                         "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2}}))
    for agent in (out, out / "final_model"):
        result = evaluate_agent(str(agent), "choice", episodes=4, max_new_tokens=3)
        assert result["num_tasks"] == 4 and 0.0 <= result["success_micro"] <= 1.0


def test_embedded_conversion_is_keyed_on_the_gguf_checksum(tmp_path, monkeypatch):
    """A second install of the same GGUF (new mtime) reuses the conversion; a different file reconverts."""
    import hashlib
    import os

    from seedbench.models import embedded as embedded_model

    gguf = tmp_path / "site" / "SmolLM2.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"weights v1")
    conversions = []

    def fake_convert(source, target):
        conversions.append(source.read_bytes())
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text("{}")

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded_model, "gguf_path", lambda: gguf)
    monkeypatch.setattr(embedded_model, "_convert", fake_convert)

    target, checksum = embedded_model.converted_dir()
    assert checksum == hashlib.sha256(b"weights v1").hexdigest() and conversions == [b"weights v1"]
    assert embedded_model.converted_dir() == (target, checksum) and len(conversions) == 1
    os.utime(gguf, (1, 1))  # the same file installed again elsewhere: another mtime
    assert embedded_model.converted_dir() == (target, checksum) and len(conversions) == 1
    gguf.write_bytes(b"weights v2")  # a different file: converted again, new checksum recorded
    assert embedded_model.converted_dir()[1] == hashlib.sha256(b"weights v2").hexdigest()
    assert conversions == [b"weights v1", b"weights v2"]
