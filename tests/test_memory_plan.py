"""The memory plan (`seedbench plan`): hand-computed terms at a small shape, every paper config on its stated
hardware, the advice for a config that does not fit, and the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from seedbench.config import ConfigError, build_config
from seedbench.training.memory_plan import (ALLOCATOR_SLACK, CUDA_CONTEXT, GIB, KNOWN_SHAPES, ModelShape, Settings,
                                            checkpoint_bytes, main, parse_memory, plan_from_settings, plan_memory)

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
PAPER_CONFIGS = ["alfworld_seed_paper", "alfworld_grpo_paper", "alfworld_grpo_3b_paper", "alfworld_grpo_7b_fsdp",
                 "alfworld_grpo_7b_vllm_tp", "alfworld_seed_7b", "webshop_grpo_paper", "webshop_grpo_7b",
                 "ezpoints_seed_paper", "sokoban_vision_seed_paper", "search_grpo", "search_grpo_7b"]

SMALL = ModelShape(layers=2, hidden=8, heads=2, kv_heads=1, intermediate=16, vocab=10)


def small_settings(**changes) -> Settings:
    base = dict(shape=SMALL, gpus=1, gpu_memory=80 * GIB, element=4, bf16_compute="none", fsdp=False, engine="none",
                vllm_share=0.0, tensor_parallel=1, lora_rank=0, reference=False, checkpointing=False, forward_batch=2,
                log_prob_batch=2, prompt_tokens=3, response_tokens=5, generation_batch=4, analysis=None,
                entropy=False, temperature_scaled=False)
    return Settings(**{**base, **changes})


def test_small_shape_by_hand():
    # a block: q 8x8 + bias 8, k and v 8x4 + bias 4 each, o 8x8, MLP 3 x 8x16, two norms of 8 = 608
    assert SMALL.layer_params == 64 + 8 + 2 * (32 + 4) + 64 + 384 + 16 == 608
    assert SMALL.params == 10 * 8 + 2 * 608 + 8 == 1304  # tied embeddings, final norm
    # per token and block, fp32: norms 24h, q/out/o_proj input 3·4·h, k and v 2·4·kv, MLP 4·4·I
    assert SMALL.activation_bytes_per_token(4) == 192 + 96 + 32 + 256 == 576
    plan = plan_from_settings(small_settings())
    assert sum(t.bytes for t in plan.kept) == 4 * 1304 + 4 * 1304 + 8 * 1304 == 20864  # weights, grads, m and v
    update = plan.phases["update (forward + backward)"]
    # activations: 2 blocks x (2 samples x 8 tokens) x 576; logits: 2 x 6 rows x 10 x (4 + 8 forward + 8 backward)
    assert [t.bytes for t in update] == [2 * 16 * 576, 2 * 6 * 10 * 20] == [18432, 2400]
    assert plan.phase_total("optimizer step") == 20864 + 4 * 1304
    assert plan.peak_phase == "update (forward + backward)" and plan.allocated_peak == 41696
    assert plan.peak == int(41696 * (1 + ALLOCATOR_SLACK)) + CUDA_CONTEXT


def test_checkpointing_keeps_block_inputs_and_one_recomputed_block():
    plan = plan_from_settings(small_settings(checkpointing=True))
    activations = plan.phases["update (forward + backward)"][0].bytes
    assert activations == 2 * 16 * 8 * 4 + 2 * 16 * 576  # every block's input, plus one block's forward and its grads


def test_fsdp_divides_the_sharded_state_and_gathers_the_weights():
    one = plan_from_settings(small_settings(element=2, bf16_compute="autocast"))
    four = plan_from_settings(small_settings(element=2, bf16_compute="autocast", fsdp=True, gpus=4))
    p = SMALL.params
    assert [t.bytes for t in four.kept[:3]] == [4 * p // 4, 4 * p // 4, 8 * p // 4]
    assert four.phases["rollout"][0].bytes == 4 * p - 4 * p // 4  # the full fp32 weights gathered on every rank
    assert sum(t.bytes for t in one.kept[:3]) == 16 * p


def test_known_qwen_sizes_match_their_published_parameter_counts():
    assert KNOWN_SHAPES["qwen2.5-1.5b-instruct"].params == pytest.approx(1.54e9, rel=0.01)
    assert KNOWN_SHAPES["qwen2.5-3b-instruct"].params == pytest.approx(3.09e9, rel=0.01)
    assert KNOWN_SHAPES["qwen2.5-7b-instruct"].params == pytest.approx(7.62e9, rel=0.01)


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_paper_config_fits_its_stated_hardware(name):
    config = build_config(CONFIGS / f"{name}.yaml", check_host=False)
    assert config.hardware.gpus >= 1 and config.hardware.gpu_memory.endswith("GiB")
    if config.hardware.gpus > 1 and config.vllm.tensor_parallel_size is None:
        assert config.distributed.strategy == "fsdp"
    assert config.save_every == 10  # the reference's cadence
    engines = ["hf", "vllm"] if config.engine == "auto" else [config.engine]
    for engine in engines:
        plan = plan_memory(config, engine=engine)
        assert plan.fits, plan.table()
    assert f"{checkpoint_bytes(config) / GIB:.0f} GiB" in (CONFIGS / f"{name}.yaml").read_text()


def test_paper_1_5b_without_checkpointing_does_not_fit_and_the_plan_says_what_to_change():
    config = build_config(CONFIGS / "alfworld_grpo_paper.yaml", check_host=False,
                          overrides={"model": {"gradient_checkpointing": False}, "optim": {"micro_batch_size": 8}})
    plan = plan_memory(config, engine="hf")
    assert not plan.fits and plan.peak > 100 * GIB
    assert plan.advice[0].startswith("--set model.gradient_checkpointing=true")
    assert "DOES NOT FIT" in plan.table() and "to fit: --set model.gradient_checkpointing=true" in plan.table()


def test_parse_memory_and_unknown_models():
    assert parse_memory("80GiB") == parse_memory("80GB") == parse_memory("80") == 80 * GIB
    assert parse_memory("512MiB") == 512 * 1024**2
    with pytest.raises(ConfigError, match="80GiB"):
        parse_memory("eighty")
    config = build_config(CONFIGS / "alfworld_seed_paper.yaml", check_host=False, overrides={"hardware": {"base_model": ""}})
    with pytest.raises(ConfigError, match="hardware.base_model"):
        plan_memory(config)


def test_plan_command_prints_the_table_and_exits_1_when_it_does_not_fit(capsys):
    assert main(["--config", str(CONFIGS / "alfworld_grpo_paper.yaml"), "--engine", "hf"]) == 0
    out = capsys.readouterr().out
    assert "predicted peak per GPU" in out and ": fits" in out and "one checkpoint on disk: 17.3 GiB" in out
    assert main(["--config", str(CONFIGS / "alfworld_grpo_paper.yaml"), "--engine", "hf", "--gpu-memory", "40GiB"]) == 1
    assert "DOES NOT FIT" in capsys.readouterr().out


def test_run_warns_with_the_fix_on_a_gpu_the_plan_overflows(monkeypatch):
    import torch

    from seedbench.training.memory_plan import check_before_run

    config = build_config(CONFIGS / "alfworld_grpo_paper.yaml", check_host=False,
                          overrides={"engine": "hf", "model": {"gradient_checkpointing": False},
                                     "optim": {"micro_batch_size": 8}})
    said: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert check_before_run(config, said.append) is None and said == []  # CPU: no plan
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: type("P", (), {"total_memory": 80 * GIB}))
    plan = check_before_run(config, said.append)
    assert not plan.fits and len(said) == 1
    assert "WARNING memory plan" in said[0] and "model.gradient_checkpointing=true" in said[0]
