"""An update whose every response is empty (a one-token budget that sampled end-of-text) has nothing to learn
from: it is skipped with zero loss and ``train/update_skipped`` logged, under every π_old strategy, and a run
resumed at such an iteration goes on. Tiny model on the `choice` env; the engine is made to answer nothing."""

import pytest
import torch

from seedbench.config import build_config
from seedbench.engines.base import Generation
from seedbench.jsonio import read_jsonl
from seedbench.training.trainer import Trainer


def _config(out, old_logprobs: str):
    return build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 2, "output": str(out),
        "save_final_model": False, "eval": {"num_tasks": 1, "splits": ["test"]},
        "rollout": {"max_new_tokens": 1, "tasks_per_batch": 1, "group_size": 2, "scheduler": "lockstep",
                    "temperature": 1.0},
        "optim": {"lr": 0.05, "old_logprobs": old_logprobs}})


def _answer_nothing(trainer: Trainer) -> None:
    """Every generation of the rollout engine ends at once: no response token at all."""
    def generate(prompts, params, **kwargs):
        return [Generation(token_ids=[], logprobs=[], text="", finish_reason="stop") for _ in prompts]

    trainer.engine.generate = generate


def _weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.policy.model.named_parameters()}


@pytest.mark.parametrize("old_logprobs", ["first_forward", "score", "engine"])
def test_an_update_whose_responses_are_all_empty_is_skipped_and_says_so(tmp_path, old_logprobs):
    trainer = Trainer(_config(tmp_path / "run", old_logprobs))
    try:
        _answer_nothing(trainer)
        before = _weights(trainer)
        metrics = trainer.iteration(1)
        assert metrics["train/update_skipped"] == 1.0 and metrics["train/loss"] == 0.0
        assert metrics["train/response_tokens"] == 0 and metrics["train/samples"] == 2
        assert all(torch.equal(before[n], p) for n, p in _weights(trainer).items())  # no optimizer step
        assert trainer.optimizer.state == {}
        (logged,) = read_jsonl(tmp_path / "run" / "metrics.jsonl")
        assert logged["train/update_skipped"] == 1.0 and logged["iteration"] == 1
    finally:
        trainer.close()


def test_a_run_resumed_at_an_update_with_nothing_to_learn_goes_on(tmp_path):
    out = tmp_path / "run"
    trainer = Trainer(_config(out, "first_forward"))
    try:
        trainer.iteration(1)  # a real update, then the checkpoint a resume starts from
        trainer.save_checkpoint()
    finally:
        trainer.close()
    resumed = Trainer(_config(out, "first_forward"), resume=True)
    try:
        assert resumed.counters["iteration"] == 1
        _answer_nothing(resumed)
        metrics = resumed.iteration(2)
        assert metrics["train/update_skipped"] == 1.0 and metrics["train/loss"] == 0.0
    finally:
        resumed.close()
    assert [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2]
    assert "train/update_skipped" not in next(iter(read_jsonl(out / "metrics.jsonl")))
