"""The update's faster paths equal the plain path on the same batch (loss, log-probs, gradients).

Tolerance: fp32 on CPU; the paths differ only in float summation order (other matrix shapes, another
attention kernel). Measured on the GRPO batch below: log-probs and loss 4.8e-7, gradients 2.9e-6 at a
largest gradient entry of 8.8 (relative 3e-7); asserted: max |difference| < 1e-5 for log-probs, loss and
every gradient entry. A wrong path is far outside it (a prefix split one token too long, or a packed row
whose members see each other: > 1e-2).
"""

import copy

import pytest
import torch

from seedbench.agents.losses import kl_k3, ppo_clip_loss
from seedbench.config import build_config
from seedbench.models.packing import common_prefix_length, pack_batch, packed_logits, unflatten
from seedbench.models.scoring import forward_logprobs, score_responses
from seedbench.models.tiny import tiny_model
from seedbench.training.trainer import Trainer

TOL = 1e-5


def _grpo_batch(tokenizer):
    """Two GRPO groups of two episodes, two steps each: the step-0 prompts of a group are identical, step 1
    shares the instruction and task, prompts and responses have different lengths (left and right padding)."""
    words = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    instruction = words("your task is to push the box to the target . you should first reason then act :")
    tasks = [words("go left"), words("go up then right")]
    samples = []
    for group, task in enumerate(tasks):
        step0 = instruction + task + words("observation : wall player box target")
        for episode in range(2):
            first = words(["left", "right up", "down"][episode + group])
            history = words("step 0 action " + ("left" if episode else "right up down") + " observation : wall box")
            second = words(["up", "left left right", "down right"][episode + group])
            samples.append((step0, first))
            samples.append((step0 + history, second))
    return [p for p, _ in samples], [r for _, r in samples]


@pytest.fixture(scope="module")
def model(tiny_tokenizer):
    return tiny_model(tiny_tokenizer, hidden_size=64, num_layers=2, seed=1)


def _loss_and_grads(model, prompts, responses, packing, old_logp=None, ref_logp=None):
    """GRPO's loss terms (PPO clip, k3 KL, entropy) on one forward, and every parameter's gradient."""
    model.zero_grad(set_to_none=True)
    logp, entropy, mask = forward_logprobs(model, prompts, responses, 0, "cpu", with_entropy=True,
                                           temperature=0.7, packing=packing)
    advantages = torch.tensor([1.0, -0.5, 0.25, -1.0, 0.7, -0.3, 0.9, -0.8][: len(prompts)])
    old = old_logp if old_logp is not None else logp.detach() - 0.05 * mask
    ref = ref_logp if ref_logp is not None else logp.detach() + 0.1 * mask
    pg, _ = ppo_clip_loss(logp, old, advantages, mask)
    loss = pg + 0.1 * (kl_k3(logp, ref) * mask).sum() - 0.01 * (entropy * mask).sum()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return float(loss.detach()), (logp * mask).detach(), grads


def _max_grad_diff(a, b):
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.mark.parametrize("packing", ["packed", "shared_prefix"])
def test_packed_layouts_equal_the_padded_one_on_a_grpo_batch(model, tiny_tokenizer, packing):
    prompts, responses = _grpo_batch(tiny_tokenizer)
    assert len({len(p) for p in prompts}) > 1 and len({len(r) for r in responses}) > 1  # both paddings occur
    loss0, logp0, grads0 = _loss_and_grads(model, prompts, responses, "off")
    loss1, logp1, grads1 = _loss_and_grads(model, prompts, responses, packing, logp0 - 0.05, logp0 + 0.1)
    loss0, _, grads0 = _loss_and_grads(model, prompts, responses, "off", logp0 - 0.05, logp0 + 0.1)
    assert float((logp0 - logp1).abs().max()) < TOL
    assert abs(loss0 - loss1) < TOL
    assert _max_grad_diff(grads0, grads1) < TOL
    assert max(g.abs().max() for g in grads0.values()) > 1e-3  # the comparison is not between zeros


def test_the_masked_path_equals_the_runs_attention(model, tiny_tokenizer):
    """Models whose attention takes no runs (eager kernels, activation checkpointing) get the row's 4-D mask;
    both paths equal the padded layout on the same batch."""
    prompts, responses = _grpo_batch(tiny_tokenizer)
    loss0, logp0, grads0 = _loss_and_grads(model, prompts, responses, "off")
    eager = copy.deepcopy(model)
    eager.config._attn_implementation = "eager"
    checkpointed = copy.deepcopy(model)
    checkpointed.gradient_checkpointing_enable()
    checkpointed.train()
    for other in (eager, checkpointed):
        loss1, logp1, grads1 = _loss_and_grads(other, prompts, responses, "shared_prefix", logp0 - 0.05, logp0 + 0.1)
        assert float((logp0 - logp1).abs().max()) < TOL and abs(loss0 - loss1) < TOL
        assert _max_grad_diff(grads0, grads1) < TOL
    assert checkpointed.config._attn_implementation == "sdpa"  # the runs' attention never outlives its call


def test_the_runs_kernel_is_chosen_on_cpu_only(model, monkeypatch):
    """Per-run SDPA calls are launch-bound on a GPU (measured on an H200), so ``auto`` keeps them to the CPU;
    the forced choices override the device, never the model's own limits."""
    from seedbench.models import tree_attention
    from seedbench.models.tree_attention import supports_tree_attention

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert supports_tree_attention(model, cpu) and supports_tree_attention(model, None)
    assert not supports_tree_attention(model, cuda)
    monkeypatch.setattr(tree_attention, "KERNEL_CHOICE", "runs")
    assert supports_tree_attention(model, cuda)
    eager = copy.deepcopy(model)
    eager.config._attn_implementation = "eager"
    assert not supports_tree_attention(eager, cpu)
    monkeypatch.setattr(tree_attention, "KERNEL_CHOICE", "mask")
    assert not supports_tree_attention(model, cpu)


@pytest.mark.parametrize("native_gqa", [True, False])
def test_the_runs_attention_with_grouped_key_value_heads(tiny_tokenizer, monkeypatch, native_gqa):
    """SmolLM2 and Qwen have fewer key/value heads than query heads: SDPA's own grouping (torch >= 2.5) and
    the repeated heads (older torch) both equal the padded layout."""
    import seedbench.models.tree_attention as tree
    from transformers import LlamaConfig, LlamaForCausalLM

    monkeypatch.setattr(tree, "NATIVE_GQA", native_gqa)
    torch.manual_seed(3)
    gqa = LlamaForCausalLM(LlamaConfig(vocab_size=len(tiny_tokenizer), hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                       tie_word_embeddings=True))
    prompts, responses = _grpo_batch(tiny_tokenizer)
    loss0, logp0, grads0 = _loss_and_grads(gqa, prompts, responses, "off")
    loss1, logp1, grads1 = _loss_and_grads(gqa, prompts, responses, "shared_prefix", logp0 - 0.05, logp0 + 0.1)
    loss0, _, grads0 = _loss_and_grads(gqa, prompts, responses, "off", logp0 - 0.05, logp0 + 0.1)
    assert float((logp0 - logp1).abs().max()) < TOL and abs(loss0 - loss1) < TOL
    assert _max_grad_diff(grads0, grads1) < TOL


def test_the_runs_attention_under_a_lora_wrapper(tiny_tokenizer):
    """A LoRA policy is a peft wrapper around the transformers model: the runs reach the base model's layers."""
    import peft  # a core dependency
    lora = peft.get_peft_model(tiny_model(tiny_tokenizer, seed=2),
                               peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    prompts, responses = _grpo_batch(tiny_tokenizer)
    plain, _, _ = forward_logprobs(lora, prompts, responses, 0, "cpu")
    tree, _, _ = forward_logprobs(lora, prompts, responses, 0, "cpu", packing="shared_prefix")
    assert float((plain - tree).abs().max()) < TOL


def test_the_prefix_tree_layout_by_hand():
    """Prompts ``a b c``, ``a b d`` and ``x`` (ids 1 2 3 / 1 2 4 / 9), responses of 2, 1 and 2 tokens:
    the row is ``[a b] [c r r] [d r] [x r r]``; ``c`` and ``d`` continue at position 2 below ``a b``."""
    packed = pack_batch([[1, 2, 3], [1, 2, 4], [9]], [[5, 6], [7], [8, 8]])
    assert packed.input_ids.tolist() == [[1, 2, 3, 5, 6, 4, 7, 9, 8, 8]]
    assert packed.positions.tolist() == [[0, 1, 2, 3, 4, 2, 3, 0, 1, 2]]
    assert [(r.start, r.end, r.ancestors) for r in packed.runs] == [(0, 2, ()), (2, 5, (0,)), (5, 7, (0,)), (7, 10, ())]
    assert packed.logit_index.tolist() == [2, 3, 5, 7, 8]  # member by member: c→5, 5→6 | d→7 | x→8, 8→8
    assert packed.targets.tolist() == [5, 6, 7, 8, 8] and packed.prefix_length == 0
    allowed = packed.attention[0, 0]
    assert allowed[5].tolist() == [True, True, False, False, False, True, False, False, False, False]  # d sees a b d
    identical = pack_batch([[1, 2], [1, 2]], [[3], [4, 4]])  # identical prompts: the prompt once, two response runs
    assert identical.input_ids.tolist() == [[1, 2, 3, 4, 4]] and identical.logit_index.tolist() == [1, 1, 3]


def test_the_shared_prefix_is_the_groups_step0_prompt_and_saves_its_tokens(tiny_tokenizer):
    prompts, responses = _grpo_batch(tiny_tokenizer)
    group = prompts[0:4]  # one group: two step-0 prompts (identical), two step-1 prompts that extend them
    assert common_prefix_length(group) == len(prompts[0])
    packed = pack_batch(group, responses[0:4])
    padded_tokens = 4 * (max(len(p) for p in group) + max(len(r) for r in responses[0:4]))
    row = packed.input_ids.shape[1]
    # the tree: the step-0 prompt once; below it the two histories share their first words ("step 0 action")
    histories = [group[1][len(group[0]):], group[3][len(group[0]):]]
    both = common_prefix_length(histories)
    assert both >= 3
    assert row == len(group[0]) + both + sum(len(h) - both for h in histories) + sum(map(len, responses[0:4]))
    assert row < padded_tokens / 2 and packed.prefix_length == len(group[0])
    # the step-0 members (0 and 2) predict their first response token from the last prefix column, shared
    second = len(responses[0]) + len(responses[1])
    assert packed.logit_index[0] == packed.logit_index[second] == len(prompts[0]) - 1


def test_a_wrong_prefix_split_is_caught(model, tiny_tokenizer):
    """The equality check is able to fail: a prefix one token longer than the common one makes the second
    member read the first member's token, and a packed row without the block mask lets members see each
    other; both move the log-probs far beyond the tolerance."""
    prompts, responses = _grpo_batch(tiny_tokenizer)
    pair_p, pair_r = [prompts[1], prompts[3]], [responses[1], responses[3]]  # step-1 prompts that differ late
    k = common_prefix_length(pair_p)
    assert 0 < k < min(len(p) for p in pair_p)
    plain, _, mask = forward_logprobs(model, pair_p, pair_r, 0, "cpu")

    def packed_logp(packed):
        with torch.no_grad():
            logits = packed_logits(model, packed, "cpu")
        flat = torch.log_softmax(logits.float(), -1).gather(-1, packed.targets.unsqueeze(-1)).squeeze(-1)
        return unflatten(flat, mask)

    right = packed_logp(pack_batch(pair_p, pair_r, prefix_length=k))
    assert float((right - plain).abs().max().detach()) < TOL
    wrong = packed_logp(pack_batch(pair_p, pair_r, prefix_length=k + 1))
    assert float((wrong - plain).abs().max()) > 1e-2
    leaky = pack_batch(pair_p, pair_r, prefix_length=k)
    leaky.runs[2].ancestors += (1,)  # member 1's run also sees member 0's run
    assert float((packed_logp(leaky) - plain).abs().max()) > 1e-2
    leaky = pack_batch(pair_p, pair_r, prefix_length=k)
    leaky.attention = torch.ones_like(leaky.attention).tril()  # the masked path: causal only, member 1 sees member 0
    eager = copy.deepcopy(model)
    eager.config._attn_implementation = "eager"
    with torch.no_grad():
        logits = packed_logits(eager, leaky, "cpu")
    flat = torch.log_softmax(logits.float(), -1).gather(-1, leaky.targets.unsqueeze(-1)).squeeze(-1)
    assert float((unflatten(flat, mask) - plain).abs().max()) > 1e-2


def test_seed_teacher_rescoring_keeps_each_samples_own_prompt(model, tiny_tokenizer):
    """SEED scores the same response ids under a skill-augmented prompt. Scored in one packed micro-batch
    next to the plain prompts, each pair still gets the log-probs of its own prompt."""
    prompts, responses = _grpo_batch(tiny_tokenizer)
    skill = tiny_tokenizer("skill : push the box up first", add_special_tokens=False)["input_ids"]
    cut = 22  # after the task line
    augmented = [p[:cut] + skill + p[cut:] for p in prompts]
    mixed_p, mixed_r = prompts[:4] + augmented[:4], responses[:4] + responses[:4]
    plain = score_responses(model, mixed_p, mixed_r, 0, "cpu", micro_batch_size=8, temperature=0.7)
    packed = score_responses(model, mixed_p, mixed_r, 0, "cpu", micro_batch_size=8, temperature=0.7,
                             packing="shared_prefix")
    for a, b in zip(plain, packed):
        assert max(abs(x - y) for x, y in zip(a, b)) < TOL
    assert max(abs(x - y) for x, y in zip(plain[0], plain[4])) > 1e-3  # the skill does change the teacher


# -- the trainer: where π_old comes from ------------------------------------------------------------


def _trainer(tmp_path, name, **optim):
    config = build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / name),
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2},
        "optim": {"mini_batch_size": 64, "micro_batch_size": 2, "grad_clip": 1e9, **optim}, "eval": {"num_tasks": 1}})
    return Trainer(config)


def _rollout(trainer):
    tasks = trainer._train_tasks(1)
    trajectories, _ = trainer.run_episodes(
        trainer.train_envs, trainer.env, trainer.engine, trainer.policy.tokenizer, tasks,
        group_size=trainer.config.rollout.group_size, params=trainer.sampling, history_length=trainer.history_length,
        max_steps=trainer.max_steps, episode_prefix="t-", transform_prompt=trainer.agent.transform_prompt)
    prepared = trainer.agent.prepare(trajectories, [0.0] * len(trajectories), 1)
    for index, sample in enumerate(prepared.samples):  # advantages of both signs, so the PG term has a gradient
        sample.advantage = [1.0, -1.0, 0.5, -0.5][index % 4]
    return prepared, trajectories


def _update(trainer, prepared, trajectories, **optim):
    """One update with the optimizer step replaced by a capture of the gradients (weights stay put), and the
    number of scoring passes it ran."""
    for key, value in optim.items():
        setattr(trainer.config.optim, key, value)
    grads, calls = {}, []
    score = trainer.context.score

    def counted(*args, **kwargs):
        calls.append(kwargs.get("model"))
        return score(*args, **kwargs)

    trainer.context.score = counted
    trainer.optimizer.step = lambda *a, **k: grads.update(
        {n: p.grad.detach().clone() for n, p in trainer.policy.model.named_parameters() if p.grad is not None})
    try:
        metrics = trainer.update(copy.deepcopy(prepared), trajectories)
    finally:
        del trainer.optimizer.step
        trainer.context.score = score
    return metrics, grads, len(calls)


def test_first_forward_and_engine_old_logprobs_equal_the_scoring_pass(tmp_path, capsys):
    trainer = _trainer(tmp_path, "old")
    prepared, trajectories = _rollout(trainer)
    assert len(prepared.samples) == 4
    plain, grads, passes = _update(trainer, prepared, trajectories, old_logprobs="score")
    assert passes == 2  # old + reference
    assert max(g.abs().max() for g in grads.values()) > 1e-4
    for mode in ("first_forward", "engine"):
        fast, fast_grads, fast_passes = _update(trainer, prepared, trajectories, old_logprobs=mode)
        assert fast_passes == 1, mode  # the reference pass only
        assert abs(fast["train/loss"] - plain["train/loss"]) < TOL, mode
        assert abs(fast["train/pg_loss"] - plain["train/pg_loss"]) < TOL, mode
        assert _max_grad_diff(fast_grads, grads) < TOL, mode
        assert fast["rollout/logprob_abs_diff"] == pytest.approx(plain["rollout/logprob_abs_diff"], abs=1e-5)
    assert fast["train/old_logprobs_engine"] == 1.0
    # and with the packed layout on top of the first forward
    packed, packed_grads, _ = _update(trainer, prepared, trajectories, old_logprobs="first_forward",
                                      packing="shared_prefix")
    assert abs(packed["train/loss"] - plain["train/loss"]) < TOL and _max_grad_diff(packed_grads, grads) < TOL
    assert "WARNING" not in capsys.readouterr().out
    trainer.close()


def test_old_logprobs_fall_back_to_the_scoring_pass(tmp_path, capsys):
    """first_forward needs a single pass (two epochs: scored); engine needs agreement (a biased engine
    is flagged by the first mini-batch's check and the update is redone with scored π_old)."""
    trainer = _trainer(tmp_path, "fallback")
    prepared, trajectories = _rollout(trainer)
    _, _, passes = _update(trainer, prepared, trajectories, old_logprobs="first_forward", ppo_epochs=2)
    assert passes == 2
    trainer.config.optim.ppo_epochs = 1
    plain, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score")
    biased = copy.deepcopy(trajectories)
    for traj in biased:
        for step in traj.steps:
            step.sampled_logprobs = [x - 0.5 for x in step.sampled_logprobs]
    fallback, fallback_grads, passes = _update(trainer, prepared, biased, old_logprobs="engine")
    assert passes == 2 and fallback["train/old_logprobs_engine"] == 0.0
    assert fallback["rollout/logprob_mismatch"] == 1.0
    assert "falls back to a scoring pass" in capsys.readouterr().out
    assert _max_grad_diff(fallback_grads, grads) < TOL and abs(fallback["train/loss"] - plain["train/loss"]) < TOL
    trainer.close()


def test_engine_old_logprobs_are_chosen_and_dropped_by_every_rank_together(tmp_path, monkeypatch, capsys):
    """Under DDP a rank that re-ran its first mini-batch alone would hang in the gradient all-reduce: the
    engine strategy is taken, and dropped, only when every rank agrees. Another rank is simulated by adding
    its vote to `sum_values` (the ranks' sum)."""
    trainer = _trainer(tmp_path, "ranks")
    prepared, trajectories = _rollout(trainer)
    plain, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score")
    real = trainer.dist.sum_values
    votes = []

    def other_rank(key):
        def summed(values):
            votes.append(sorted(values))
            return {k: v + (1.0 if k == key else 0.0) for k, v in real(values).items()}
        return summed

    # another rank's check flags its engine log-probs: this rank's agree, yet it re-runs with a scoring pass too
    monkeypatch.setattr(trainer.dist, "sum_values", other_rank("flagged"))
    fallback, fallback_grads, passes = _update(trainer, prepared, trajectories, old_logprobs="engine")
    assert ["flagged"] in votes and passes == 2 and fallback["train/old_logprobs_engine"] == 0.0
    assert "another rank's check was flagged; optim.old_logprobs=engine falls back" in capsys.readouterr().out
    assert _max_grad_diff(fallback_grads, grads) < TOL
    # another rank has no engine log-probs for its samples: every rank scores from the start
    votes.clear()
    monkeypatch.setattr(trainer.dist, "sum_values", other_rank("unusable"))
    scored, _, passes = _update(trainer, prepared, trajectories, old_logprobs="engine")
    assert ["unusable"] in votes and ["flagged"] not in votes
    assert passes == 2 and scored["train/old_logprobs_engine"] == 0.0
    assert "falls back" not in capsys.readouterr().out
    trainer.close()


def test_scoring_passes_take_their_own_micro_batch_size(tmp_path, monkeypatch):
    """``optim.log_prob_micro_batch_size`` sizes the no-grad scoring passes (π_old, reference) and leaves the
    loss's micro-batches alone; grouped by prompt into prefix trees, the update equals the plain one."""
    import seedbench.models.scoring as scoring

    trainer = _trainer(tmp_path, "score_mb")
    prepared, trajectories = _rollout(trainer)
    plain, grads, _ = _update(trainer, prepared, trajectories, old_logprobs="score")
    sizes, real = [], scoring.score_responses
    monkeypatch.setattr(scoring, "score_responses", lambda *a, **k: sizes.append(a[5]) or real(*a, **k))
    tree, tree_grads, passes = _update(trainer, prepared, trajectories, old_logprobs="score", packing="shared_prefix",
                                       log_prob_micro_batch_size=4)
    assert passes == 2 and sizes == [4, 4]
    assert abs(tree["train/loss"] - plain["train/loss"]) < TOL and _max_grad_diff(tree_grads, grads) < TOL
    trainer.config.optim.log_prob_micro_batch_size = None
    sizes.clear()
    _update(trainer, prepared, trajectories, old_logprobs="score")
    assert sizes == [2, 2]  # empty: the loss's micro_batch_size
    trainer.close()


@pytest.mark.parametrize("packing", ["off", "shared_prefix"])
@pytest.mark.parametrize("loss_agg_mode", ["token-mean", "seq-mean-token-mean"])
def test_micro_batches_sharing_one_forward_keep_their_own_loss(tmp_path, packing, loss_agg_mode):
    """``optim.forward_batch_size=4`` runs two micro-batches of 2 through one forward and backward: the loss
    and gradients equal two forwards of 2, and under ``token-mean`` differ from one micro-batch of 4
    (another normalisation), so each micro-batch really keeps its own."""
    trainer = _trainer(tmp_path, "forward", loss_agg_mode=loss_agg_mode, packing=packing)
    prepared, trajectories = _rollout(trainer)
    lengths = [len(s.response_ids) for s in prepared.samples]
    forwards = []
    real_forward = trainer.updater.forward
    trainer.updater.forward = lambda indices, *a: forwards.append(len(indices)) or real_forward(indices, *a)
    separate, grads, _ = _update(trainer, prepared, trajectories, forward_batch_size=None)
    assert forwards == [2, 2]
    forwards.clear()
    shared, shared_grads, _ = _update(trainer, prepared, trajectories, forward_batch_size=4)
    assert forwards == [4]
    assert abs(shared["train/loss"] - separate["train/loss"]) < TOL
    assert abs(shared["train/pg_loss"] - separate["train/pg_loss"]) < TOL
    assert _max_grad_diff(shared_grads, grads) < TOL
    assert max(g.abs().max() for g in grads.values()) > 1e-4
    if loss_agg_mode == "token-mean":  # the sequence means weigh a sequence alike however the rows are split
        _, one_grads, _ = _update(trainer, prepared, trajectories, forward_batch_size=None, micro_batch_size=4)
        assert len(set(lengths)) > 1, lengths  # responses of unequal length, so the token means differ
        assert _max_grad_diff(one_grads, grads) > 1e-4
    trainer.close()


def test_a_forward_batch_that_splits_a_micro_batch_is_one_line():
    from seedbench.config import ConfigError

    with pytest.raises(ConfigError, match=r"optim.forward_batch_size=3 is not a multiple of optim.micro_batch_size=2"):
        build_config(overrides={"env": "choice", "model": {"name": "tiny"},
                                "optim": {"micro_batch_size": 2, "forward_batch_size": 3}})


def test_every_update_reports_the_seconds_of_each_pass(tmp_path):
    """``time/update_<pass>_s``: the scoring passes only where the strategy runs them, every loss pass timed,
    no casts without a compute copy (the tiny model trains in fp32), and the passes add up to no more than
    the update's own wall time."""
    import time

    from seedbench.training.pass_clock import PASSES

    trainer = _trainer(tmp_path, "clock")
    prepared, trajectories = _rollout(trainer)
    start = time.perf_counter()
    scored, _, _ = _update(trainer, prepared, trajectories, old_logprobs="score")
    wall = time.perf_counter() - start
    seconds = {name: scored[f"time/update_{name}_s"] for name in PASSES}
    assert all(seconds[name] > 0 for name in ("old_logprobs", "reference", "forward", "loss", "backward", "step"))
    assert seconds["casts"] == 0.0
    assert sum(seconds.values()) <= wall
    first, _, _ = _update(trainer, prepared, trajectories, old_logprobs="first_forward")
    # π_old is the loss forward itself: no scoring pass, only the checks on the log-probs it kept
    assert first["time/update_old_logprobs_s"] < seconds["old_logprobs"] / 2
    trainer.close()


def test_the_pass_clock_adds_up_blocks_and_refuses_an_unknown_pass():
    from seedbench.training.pass_clock import PassClock

    ticks = iter([1.0, 1.5, 10.0, 10.25])
    clock = PassClock(now=lambda: next(ticks))
    for _ in range(2):
        with clock.timed("forward"):
            pass
    assert clock.metrics()["time/update_forward_s"] == 0.75 and clock.metrics()["time/update_step_s"] == 0.0
    with pytest.raises(KeyError, match="unknown update pass 'fwd'"):
        with clock.timed("fwd"):
            pass
