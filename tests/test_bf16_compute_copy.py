"""``model.bf16_compute=param_copy``: the update's forwards and backwards run on a bf16 copy of the policy,
while the master weights, their gradients and AdamW's state stay fp32.

The tiny test model loads in fp32; each test sets ``policy.compute_dtype`` to bf16 by hand (what
``model.dtype=auto`` resolves to on a CPU with AMX) and picks ``policy.bf16_compute``.

Tolerances: bf16 keeps 8 significant bits (relative rounding 2^-9 ≈ 0.2 % per value). Through the tiny
model's two layers, the attention and the log-softmax the gradients of a bf16 pass differ from fp32 by
about 1 % in relative L2 norm, for autocast and the param copy alike; 4 % leaves room for other seeds
and platforms while a lost, stale or overwritten gradient (errors of 30-100 %) still fails.
"""

from __future__ import annotations

import copy

import pytest
import torch

from seedbench.config import ConfigError, build_config
from seedbench.models.compute_copy import ComputeCopy
from seedbench.models.scoring import forward_logprobs
from tests.test_update_paths import _rollout, _trainer, _update

GRAD_TOLERANCE = 0.04


def _relative_error(grads, reference) -> float:
    """The largest over parameters of ‖g − g_ref‖ / ‖g_ref‖."""
    return max(float((grads[n] - reference[n]).norm() / reference[n].norm()) for n in reference)


def _precision(trainer, mode: str) -> None:
    """fp32, bf16 autocast over the fp32 weights, or the bf16 compute copy."""
    trainer.policy.compute_dtype = torch.float32 if mode == "fp32" else torch.bfloat16
    trainer.policy.bf16_compute = "param_copy" if mode == "param_copy" else "autocast"


def _fresh_adamw(trainer, lr: float) -> None:
    params = [p for p in trainer.policy.model.parameters() if p.requires_grad]
    trainer.optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)


def _weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_the_copy_is_bf16_tied_and_follows_the_masters_mode(tmp_path):
    trainer = _trainer(tmp_path, "structure")
    master = trainer.policy.model
    compute = ComputeCopy(master, torch.bfloat16)
    low = compute.model
    assert all(p.dtype == torch.bfloat16 for p in low.parameters())
    assert all(p.dtype == torch.float32 for p in master.parameters())  # the master is not touched
    # buffers keep their dtype (RoPE's inverse frequencies stay fp32, as under autocast)
    assert {b.dtype for b in low.buffers()} == {b.dtype for b in master.buffers()} == {torch.float32}
    assert low.lm_head.weight is low.model.embed_tokens.weight  # tied as in the master
    assert master.lm_head.weight is master.model.embed_tokens.weight
    master.train()
    low.eval()
    master.model.layers[1].eval()
    compute.refresh()
    assert [m.training for m in low.modules()] == [m.training for m in master.modules()]
    assert low.training and not low.model.layers[1].training
    with torch.no_grad():
        master.model.norm.weight.fill_(0.5)
    compute.refresh()
    assert torch.equal(low.model.norm.weight, torch.full_like(low.model.norm.weight, 0.5))
    trainer.close()


def test_a_forward_patched_onto_the_master_instance_does_not_make_a_copy_run_the_master(tmp_path):
    """TRL's SFTTrainer replaces the model instance's ``forward`` by a wrapper closing over the original bound
    forward; copied as it is, a copy's forward would run the master's fp32 weights."""
    import functools
    import types

    trainer = _trainer(tmp_path, "patched")
    master = trainer.policy.model
    original = master.forward

    @functools.wraps(original)
    def wrapped(self, *args, **kwargs):
        return original(*args, **kwargs)  # the master's bound forward, whatever `self` is

    master.forward = types.MethodType(wrapped, master)
    low = ComputeCopy(master, torch.bfloat16).model
    ids = torch.tensor([[5, 6, 7, 8]])
    logits = low(input_ids=ids).logits
    assert logits.dtype == torch.bfloat16  # computed by the copy's bf16 weights
    logits.float().sum().backward()
    assert all(p.grad is None for p in master.parameters())
    assert low.model.norm.weight.grad is not None and low.model.norm.weight.grad.dtype == torch.bfloat16
    assert master(input_ids=ids).logits.dtype == torch.float32  # the master keeps its patch
    from seedbench.models.weights import frozen_copy

    with torch.no_grad():  # a frozen copy (generation, KL reference) computes with its own weights as well
        assert frozen_copy(master, torch.bfloat16)(input_ids=ids).logits.dtype == torch.bfloat16
    trainer.close()


def test_one_step_agrees_with_fp32_and_keeps_master_weights_and_adamw_state_fp32(tmp_path):
    """The same batch and initial weights, one real AdamW step each way. AdamW's first step is
    ``lr · g / |g|`` per element, so the step itself cannot be compared with bf16 gradients on elements whose
    gradient is ~0; the gradients the optimizer saw and the steps of the elements with clear gradients are."""
    trainer = _trainer(tmp_path, "one_step")
    prepared, trajectories = _rollout(trainer)
    initial = _weights(trainer.policy.model)
    grads, after, state = {}, {}, {}
    for mode in ("fp32", "autocast", "param_copy"):
        trainer.policy.model.load_state_dict(initial)
        _precision(trainer, mode)
        _, grads[mode], _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off")
        _fresh_adamw(trainer, lr=1e-3)
        trainer.config.optim.old_logprobs = "score"
        trainer.update(copy.deepcopy(prepared), trajectories)
        after[mode] = _weights(trainer.policy.model)
        state[mode] = trainer.optimizer.state
    assert 0 < _relative_error(grads["autocast"], grads["fp32"]) < GRAD_TOLERANCE
    assert 0 < _relative_error(grads["param_copy"], grads["fp32"]) < GRAD_TOLERANCE
    for name, g in grads["fp32"].items():
        clear = g.abs() > 0.1 * g.abs().max()  # AdamW's first step = -lr · sign(g) there in both runs
        step = {mode: (after[mode][name] - initial[name])[clear] for mode in ("fp32", "param_copy")}
        assert torch.allclose(step["param_copy"], step["fp32"], atol=1e-6), name
        assert torch.allclose(step["fp32"].abs(), torch.full_like(step["fp32"], 1e-3), rtol=1e-3), name
    master = trainer.policy.model
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in master.parameters())
    moments = [t for s in state["param_copy"].values() for k, t in s.items() if k in ("exp_avg", "exp_avg_sq")]
    assert moments and all(t.dtype == torch.float32 for t in moments)
    low = trainer.policy.compute_copy().model
    assert all(p.dtype == torch.bfloat16 and p.grad is None for p in low.parameters())  # grads moved out
    trainer.close()


def test_a_step_of_relative_size_1e_6_reaches_the_master_weights(tmp_path):
    """RMSNorm weights start at 1.0; AdamW's first step of lr 1e-6 moves them to 1 ± 1e-6, which bf16
    (spacing 2^-7 at 1.0) would round away. The fp32 master keeps it."""
    trainer = _trainer(tmp_path, "tiny_step")
    prepared, trajectories = _rollout(trainer)
    _precision(trainer, "param_copy")
    norm = trainer.policy.model.model.layers[0].input_layernorm.weight
    assert torch.equal(norm, torch.ones_like(norm))
    _fresh_adamw(trainer, lr=1e-6)
    trainer.config.optim.old_logprobs = "score"
    trainer.update(copy.deepcopy(prepared), trajectories)
    moved = (norm.detach() - 1.0).abs()
    assert torch.allclose(moved, torch.full_like(moved, 1e-6), rtol=0.05)  # every element took its 1e-6 step
    assert torch.equal((1.0 + moved).bfloat16(), torch.ones_like(moved).bfloat16())  # lost in bf16 weights
    trainer.close()


def test_the_copy_is_refreshed_before_every_mini_batch(tmp_path):
    """Two mini-batches of 2: the second's forward must see the weights after the first's AdamW step."""
    trainer = _trainer(tmp_path, "refresh", mini_batch_size=2, packing="off")
    prepared, trajectories = _rollout(trainer)
    _precision(trainer, "param_copy")
    _fresh_adamw(trainer, lr=1e-2)
    updater, calls = trainer.updater, []
    real = updater.mini_batch

    def recorded(mini, samples, *args, **kwargs):
        weights = _weights(trainer.policy.model)  # the master weights this mini-batch starts from
        sums, current = real(mini, samples, *args, **kwargs)
        calls.append((weights, [samples[i] for i in mini], current, list(mini)))
        return sums, current

    updater.mini_batch = recorded
    trainer.config.optim.old_logprobs = "score"
    trainer.update(copy.deepcopy(prepared), trajectories)
    assert len(calls) == 2
    pad, device = trainer.policy.tokenizer.pad_token_id, trainer.policy.device
    master = copy.deepcopy(trainer.policy.model)

    def logprobs_under(weights, samples):
        master.load_state_dict(weights)
        low = ComputeCopy(master, torch.bfloat16).model.train()  # with gradients, as the update's forward
        logp, _, _ = forward_logprobs(low, [s.prompt_ids for s in samples], [s.response_ids for s in samples],
                                      pad, device, temperature=trainer.context.score_temperature)
        return [logp[r, : len(s.response_ids)].detach() for r, s in enumerate(samples)]

    first_weights, second_weights = calls[0][0], calls[1][0]
    _, samples, current, mini = calls[1]
    expected = logprobs_under(second_weights, samples)
    stale = logprobs_under(first_weights, samples)  # what a copy never refreshed after step 1 would compute
    for row, i in enumerate(mini):
        got = torch.tensor(current[i])
        assert torch.allclose(got, expected[row], atol=1e-5)
        assert (got - stale[row]).abs().max() > 1e-3
    trainer.close()


def test_micro_batches_accumulate_to_one_micro_batch_of_all(tmp_path):
    """Four samples as four micro-batches of 1 and as one of 4: the same fp32 master gradient (up to bf16
    rounding of the differently padded layouts); an overwritten gradient would keep one sample's share.
    ``global-token-mean`` weighs every token alike whatever the split (the default ``token-mean`` averages
    micro-batch means, which depends on the split by design)."""
    trainer = _trainer(tmp_path, "accumulate", loss_agg_mode="global-token-mean")
    prepared, trajectories = _rollout(trainer)
    _precision(trainer, "param_copy")
    grads = {}
    for size in (1, 4):
        _, grads[size], _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off",
                                    micro_batch_size=size)
    assert _relative_error(grads[1], grads[4]) < GRAD_TOLERANCE
    _precision(trainer, "fp32")
    _, exact, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off", micro_batch_size=1)
    assert _relative_error(grads[1], exact) < GRAD_TOLERANCE
    trainer.close()


@pytest.mark.parametrize("packing", ["packed", "shared_prefix"])
def test_packed_rows_and_their_tree_attention_run_on_the_copy(tmp_path, packing):
    """Packed rows (one SDPA call per run of the tree on CPU, bf16 forward / fp32 backward) give the
    padded layout's fp32 gradients up to bf16 rounding."""
    trainer = _trainer(tmp_path, f"packed_{packing}")
    prepared, trajectories = _rollout(trainer)
    _precision(trainer, "fp32")
    _, exact, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off")
    _precision(trainer, "param_copy")
    _, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing=packing)
    assert 0 < _relative_error(grads, exact) < GRAD_TOLERANCE
    trainer.close()


def _lora_trainer(tmp_path):
    """A GRPO trainer of the tiny model with LoRA adapters, and one rollout of it."""
    config = build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny", "lora_rank": 4}, "iterations": 1,
        "output": str(tmp_path / "lora"), "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2},
        "optim": {"mini_batch_size": 64, "micro_batch_size": 2, "grad_clip": 1e9}, "eval": {"num_tasks": 1}})
    from seedbench.training.trainer import Trainer

    trainer = Trainer(config)
    return trainer, *_rollout(trainer)


def test_lora_adapters_train_through_the_copy(tmp_path):
    trainer, prepared, trajectories = _lora_trainer(tmp_path)
    _precision(trainer, "fp32")
    _, exact, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off")
    _precision(trainer, "param_copy")
    _, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off")
    assert exact and set(grads) == set(exact) and all("lora_" in name for name in grads)
    # LoRA's B starts at zero, so the A matrices have no gradient yet; the B matrices carry it
    nonzero = {name: g for name, g in exact.items() if g.norm() > 0}
    assert nonzero and all("lora_B" in name for name in nonzero)
    assert _relative_error(grads, nonzero) < GRAD_TOLERANCE
    trainer.close()


def test_param_copy_with_fsdp_is_a_config_error_naming_the_fix(tmp_path):
    overrides = {"env": "choice", "model": {"name": "tiny", "bf16_compute": "param_copy"},
                 "output": str(tmp_path / "run")}
    assert build_config(overrides=overrides).model.bf16_compute == "param_copy"
    with pytest.raises(ConfigError, match="model.bf16_compute=autocast or distributed.strategy=ddp"):
        build_config(overrides={**overrides, "distributed": {"strategy": "fsdp"}})
    with pytest.raises(ConfigError, match="bf16_compute"):
        build_config(overrides={**overrides, "model": {"name": "tiny", "bf16_compute": "bf16"}})


def test_sft_trains_through_the_copy_with_fp32_master_weights(tiny_tokenizer, tmp_path):
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy
    from seedbench.training.sft import SFTSettings, fine_tune, mixed_precision, tokenize_example

    rows = [tokenize_example(tiny_tokenizer, "Your task is to: go", "<action>down</action>")] * 4
    after = {}
    for mode in ("fp32", "param_copy"):
        policy = load_policy(ModelConfig(name="tiny"), need_reference=False)
        initial = _weights(policy.model)
        # (autograd on?, the weights' dtype) of every pass through the final norm; the copy inherits the hook
        passes = []
        policy.model.model.norm.register_forward_hook(
            lambda module, *_, passes=passes: passes.append((torch.is_grad_enabled(), module.weight.dtype)))
        if mode == "param_copy":
            policy.compute_dtype, policy.bf16_compute = torch.bfloat16, "param_copy"
            assert mixed_precision(policy) == {"bf16": False, "fp16": False}  # no Trainer autocast on top
        metrics = fine_tune(policy, rows, rows[:2], SFTSettings(epochs=1, lr=1e-3, batch_size=2), tmp_path / mode)
        assert metrics["sft_steps"] == 2
        after[mode] = _weights(policy.model)
        # fp32 trains the master itself; through the copy, the master only answers the validation passes
        trained_on = {dtype for grad, dtype in passes if grad}
        assert trained_on == ({torch.float32} if mode == "fp32" else {torch.bfloat16})
        assert {dtype for grad, dtype in passes if not grad} == {torch.float32}
    assert metrics["precision"] == "bf16 param copy"
    assert all(p.dtype == torch.float32 for p in policy.model.parameters())
    assert policy.compute_copy() is not None
    # two AdamW steps of lr 1e-3 from the same start: the clear-gradient elements moved alike
    moved = {n: (after["param_copy"][n] - initial[n]) for n in initial}
    reference = {n: (after["fp32"][n] - initial[n]) for n in initial}
    assert max(float(m.abs().max()) for m in moved.values()) > 1e-3
    assert _relative_error(moved, {n: r for n, r in reference.items() if r.norm() > 0}) < 0.2


def test_auto_is_the_copy_except_under_fsdp(tmp_path):
    """The default ``auto`` is the reference's bf16 compute copy; FSDP's shards cannot be paired with a copy,
    so there it is autocast. The config keeps ``auto``, so a run may resume under the other strategy; the
    trainer's policy holds the meaning."""
    from seedbench.models.compute_copy import bf16_compute_for, wants_compute_copy

    base = {"env": "choice", "model": {"name": "tiny"}}
    assert build_config(overrides=base).model.bf16_compute == "auto"
    assert build_config(overrides={**base, "distributed": {"strategy": "fsdp"}}).model.bf16_compute == "auto"
    assert [bf16_compute_for("auto", sharded) for sharded in (False, True)] == ["param_copy", "autocast"]
    assert bf16_compute_for("autocast") == "autocast" and bf16_compute_for("param_copy") == "param_copy"
    assert wants_compute_copy("auto", torch.bfloat16) and not wants_compute_copy("auto", torch.float32)
    trainer = _trainer(tmp_path, "auto")
    assert trainer.policy.bf16_compute == "param_copy"
    trainer.close()


def test_scores_run_on_the_copys_path_so_teacher_and_reference_gaps_are_not_precision(tmp_path):
    """With the copy, a score of the current weights (SEED's teacher re-scoring, π_old) is the copy's forward,
    and a model held in bf16 (the KL reference) is scored without autocast: the same weights give the same
    log-probs on both, so a gap between them is a difference of weights or prompts, never of precision
    paths. Autocast over the fp32 master gives other bf16 roundings (a non-zero gap on the same weights)."""
    from seedbench.models.weights import frozen_copy

    trainer = _trainer(tmp_path, "scoring_path", packing="off")
    prepared, _ = _rollout(trainer)
    prompts = [s.prompt_ids for s in prepared.samples]
    responses = [s.response_ids for s in prepared.samples]
    _precision(trainer, "param_copy")
    current = trainer.context.score(prompts, responses)
    pad, device = trainer.policy.tokenizer.pad_token_id, trainer.policy.device
    low = ComputeCopy(trainer.policy.model, torch.bfloat16).model.eval()
    logp, _, _ = forward_logprobs(low, prompts, responses, pad, device,
                                  temperature=trainer.context.score_temperature)
    for row, values in enumerate(current):
        assert torch.equal(torch.tensor(values), logp[row, : len(values)].float())
    reference = frozen_copy(trainer.policy.model, torch.bfloat16)
    assert {p.dtype for p in reference.parameters()} == {torch.bfloat16}
    assert {b.dtype for b in reference.buffers()} == {torch.float32}  # RoPE's frequencies not rounded to bf16
    assert reference.lm_head.weight is reference.model.embed_tokens.weight
    assert trainer.context.score(prompts, responses, model=reference) == current  # k3 KL exactly 0 at the start
    _precision(trainer, "autocast")
    under_autocast = trainer.context.score(prompts, responses)
    gap = max(abs(a - b) for x, y in zip(under_autocast, current) for a, b in zip(x, y))
    assert gap > 0
    trainer.close()


def test_lora_adapters_still_train_when_the_reference_is_scored_before_the_copy_exists(tmp_path):
    """The KL reference of a LoRA policy is the master with its adapters switched off; a compute copy first
    made inside that context kept them off, and the update's loss had no gradient at all."""
    trainer, prepared, trajectories = _lora_trainer(tmp_path)
    _precision(trainer, "param_copy")
    trainer.policy._compute_copy = None
    with trainer.policy.reference():
        trainer.policy.compute_copy()  # what the reference's scoring pass asks for first
    _, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score", packing="off")
    assert any("lora_B" in name and g.norm() > 0 for name, g in grads.items())
    trainer.close()
