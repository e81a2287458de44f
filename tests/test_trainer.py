"""Trainer-level behaviour on the tiny model: learning, masking, invalid actions, resume after a kill."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from seedbench.config import build_config
from seedbench.training.rundir import read_jsonl
from seedbench.training.trainer import Trainer, train

LEARNING = {"rollout": {"max_new_tokens": 3, "tasks_per_batch": 8, "group_size": 8},
            "optim": {"lr": 0.01, "mini_batch_size": 64, "micro_batch_size": 64},
            "eval": {"num_tasks": 64, "temperature": 1.0}}


def _config(tmp_path, name, **over):
    values = {"env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 2,
              "output": str(tmp_path / name), **LEARNING}
    for key, value in over.items():
        if isinstance(value, dict):
            values[key] = {**values.get(key, {}), **value}
        else:
            values[key] = value
    return build_config(overrides=values)


def _evals(path):
    return list(read_jsonl(Path(path) / "eval.jsonl"))


def test_grpo_learns_the_rewarded_action_and_lr_zero_stays_at_chance(tmp_path, capsys):
    learned = train(_config(tmp_path, "learn", iterations=20))
    learned_line = capsys.readouterr().out.strip().splitlines()[-1]
    frozen = train(_config(tmp_path, "frozen", iterations=20, optim={"lr": 0.0}))
    before, after = _evals(learned)[0]["success_micro"], _evals(learned)[-1]["success_micro"]
    frozen_after = _evals(frozen)[-1]["success_micro"]
    # a random tiny model rarely says 'left'/'right' at all; chance among valid answers is 50 %
    assert before < 0.5
    assert after >= 0.9, f"GRPO did not learn: {before} -> {after}"
    assert frozen_after < 0.5 and abs(frozen_after - before) < 0.2
    # the run ends with the paired before/after difference: an interval above 0 for the learner, around 0
    # for the lr=0 control, both also in summary.json
    (change,) = json.loads((Path(learned) / "summary.json").read_text())["before_after"]
    assert change["tasks"] == 64 and change["iterations"] == [0, 20]
    assert change["before"] == pytest.approx(before) and change["after"] == pytest.approx(after)
    assert change["difference"] == pytest.approx(after - before) and change["ci95"][0] > 0.3
    assert learned_line.startswith("seedbench: held-out success on test (64 tasks): ")
    assert f"difference {after - before:+.3f}, 95% CI [" in learned_line
    (control,) = json.loads((Path(frozen) / "summary.json").read_text())["before_after"]
    assert control["ci95"][0] <= 0 <= control["ci95"][1]


def test_curve_splits_limit_the_intermediate_evaluations_and_the_ends_cover_every_split(tmp_path):
    run = train(_config(tmp_path, "curve", iterations=3, rollout={"tasks_per_batch": 2, "group_size": 2},
                        eval={"num_tasks": 2, "every": 1, "splits": ["test", "train"], "curve_splits": ["test"]}))
    assert [(r["iteration"], r["split"]) for r in _evals(run)] == [
        (0, "test"), (0, "train"), (1, "test"), (2, "test"), (3, "test"), (3, "train")]


def test_prompt_tokens_never_receive_gradient(tmp_path):
    """Only the logits that predict response tokens are computed and get gradient; a prompt token's
    prediction is not even projected onto the vocabulary, and the loss is unchanged by prompt logits."""
    trainer = Trainer(_config(tmp_path, "mask"))
    tok = trainer.policy.tokenizer
    from seedbench.agents.base import TrainSample

    long_prompt = tok("left right left right up", add_special_tokens=False)["input_ids"]
    short_prompt = tok("up down", add_special_tokens=False)["input_ids"]
    long_response = tok("right down left", add_special_tokens=False)["input_ids"]
    short_response = tok("left", add_special_tokens=False)["input_ids"]
    samples = [TrainSample(long_prompt, short_response, advantage=1.0, traj_index=0),
               TrainSample(short_prompt, long_response, advantage=-1.0, traj_index=1)]
    captured = {}

    def keep_logits(module, inputs, output):
        output.retain_grad()
        captured["logits"] = output

    handle = trainer.policy.model.lm_head.register_forward_hook(keep_logits)
    old = [[-1.0] * len(s.response_ids) for s in samples]
    mb = trainer.updater.micro_batch([0, 1], samples, old, None, True)
    handle.remove()
    assert mb.mask.sum().item() == len(short_response) + len(long_response)
    loss, _ = trainer.agent.loss(mb)
    loss.backward()
    grad = captured["logits"].grad.abs().sum(-1)  # [B, columns projected]
    # projected: one column per response token plus the column after the last one (unused)
    assert grad.shape == (2, len(long_response) + 1)
    assert (grad[0, : len(short_response)] > 0).all() and grad[0, len(short_response) :].sum().item() == 0.0
    assert (grad[1, : len(long_response)] > 0).all() and grad[1, len(long_response) :].sum().item() == 0.0
    # the same log-probs as scoring each sample alone, unpadded, with the full logits
    model = trainer.policy.model
    for row, sample in enumerate(samples):
        ids = torch.tensor([sample.prompt_ids + sample.response_ids])
        with torch.no_grad():
            full = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
        n, p = len(sample.response_ids), len(sample.prompt_ids)
        expected = full[p - 1 : p - 1 + n].gather(-1, torch.tensor(sample.response_ids)[:, None]).squeeze(-1)
        assert torch.allclose(mb.logp[row, :n].detach(), expected, atol=1e-5)
    trainer.close()


def test_invalid_actions_are_counted_and_penalised(tmp_path):
    trainer = Trainer(_config(tmp_path, "invalid", rollout={"max_new_tokens": 2}))
    metrics = trainer.iteration(1)
    assert metrics["rollout/invalid_actions"] > 0
    assert metrics["rollout/invalid_action_rate"] == pytest.approx(metrics["rollout/invalid_actions"] / metrics["env_steps"])
    episodes = [e for e in read_jsonl(trainer.run_dir.file("episodes.jsonl")) if e["phase"] == "train"]
    invalid = [e for e in episodes if e["num_invalid"]]
    assert invalid and all(e["reward"] == 0.0 and not e["won"] for e in invalid)
    trainer.close()


def test_unknown_agent_key_names_the_valid_keys(tmp_path):
    from seedbench.config import ConfigError

    with pytest.raises(ConfigError, match="clip_eps"):
        Trainer(_config(tmp_path, "bad", algo={"clip_epsilon": 0.3}))


def _run_cli(out, iterations, resume=False):
    cmd = [sys.executable, "-m", "seedbench", "run", "--env", "choice", "--agent", "grpo", "--model", "tiny",
           "--iterations", str(iterations), "--output", str(out), "--set", "rollout.max_new_tokens=3",
           "rollout.tasks_per_batch=4", "rollout.group_size=4", "optim.lr=0.01", "eval.num_tasks=8"]
    return cmd + (["--resume"] if resume else [])


def test_resume_after_kill_loses_no_completed_record_and_counts_nothing_twice(tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen(_run_cli(out, 40), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        if (out / "checkpoints" / "it_3" / "COMPLETE").exists():
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")]
    assert before and before[-1] >= 3 and before[-1] < 40
    subprocess.run(_run_cli(out, 6, resume=True), check=True, capture_output=True, timeout=300)
    iterations = [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")]
    assert iterations == list(range(1, 7))
    counters = [r["trajectories"] for r in read_jsonl(out / "metrics.jsonl")]
    assert counters == [16 * i for i in range(1, 7)]
    evals = [r["iteration"] for r in read_jsonl(out / "eval.jsonl")]
    assert evals == [0, 6]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["iterations_done"] == 6
    train_eps = [e["iteration"] for e in read_jsonl(out / "episodes.jsonl") if e["phase"] == "train"]
    assert sorted(set(train_eps)) == list(range(1, 7)) and len(train_eps) == 16 * 6


def test_existing_run_directory_needs_resume(tmp_path):
    out = tmp_path / "exists"
    out.mkdir()
    (out / "metrics.jsonl").write_text("{}\n")
    result = subprocess.run(_run_cli(out, 1), capture_output=True, text=True)
    assert result.returncode == 2 and "--resume" in result.stderr and "Traceback" not in result.stderr


def test_every_update_checks_engine_logprobs_against_the_trainer(tmp_path, capsys):
    """fp32 HF engine vs fp32 recompute: the gap is logged and tiny; a corrupted engine value is flagged."""
    trainer = Trainer(_config(tmp_path, "check", rollout={"tasks_per_batch": 2, "group_size": 2}))
    metrics = trainer.iteration(1)
    assert metrics["rollout/logprob_abs_diff"] < 1e-4 and metrics["rollout/logprob_mismatch"] == 0.0
    assert "WARNING" not in capsys.readouterr().out

    original = trainer.engine.generate

    def biased(prompts, params):  # an engine whose reported log-probs are off by 0.5 nats
        generations = original(prompts, params)
        for g in generations:
            g.logprobs = [x - 0.5 for x in g.logprobs]
        return generations

    trainer.engine.generate = biased
    metrics = trainer.iteration(2)
    assert metrics["rollout/logprob_abs_diff"] == pytest.approx(0.5, abs=1e-3)
    assert metrics["rollout/logprob_mismatch"] == 1.0
    assert "WARNING iteration 2: engine vs trainer log-probs" in capsys.readouterr().out
    trainer.close()


def test_rollout_scheduler_is_chosen_by_config_and_checked(tmp_path):
    from seedbench.rollout import continuous as async_rollout, lockstep as rollout
    from seedbench.config import ConfigError
    from seedbench.training.trainer import choose_rollout

    class SubmitEngine:
        def submit(self): ...
        def poll(self): ...
        def has_unfinished(self): ...
        def abort(self): ...

    assert choose_rollout("auto", object()) is rollout.run_episodes  # HF: whole batches only
    assert choose_rollout("auto", SubmitEngine()) is async_rollout.run_episodes
    assert choose_rollout("continuous", object()) is async_rollout.run_episodes
    assert choose_rollout("lockstep", SubmitEngine()) is rollout.run_episodes
    with pytest.raises(ConfigError, match="lockstep"):
        Trainer(_config(tmp_path, "bad-scheduler", rollout={"scheduler": "fifo"}))
    # a continuous run trains and logs like a lock-step one
    path = train(_config(tmp_path, "continuous", iterations=1, rollout={"scheduler": "continuous"},
                         eval={"num_tasks": 4}))
    metrics = list(read_jsonl(Path(path) / "metrics.jsonl"))
    assert len(metrics) == 1 and metrics[0]["trajectories"] == 64 and metrics[0]["train/samples"] > 0


def test_envs_that_ask_for_worker_processes_get_a_pool_by_default(tmp_path, monkeypatch):
    from seedbench.envs.pool import EnvPool
    from seedbench.envs.choice import TwoChoiceEnv
    from seedbench.envs.batch import LocalEnvs

    trainer = Trainer(_config(tmp_path, "local", rollout={"tasks_per_batch": 1, "group_size": 2}))
    assert isinstance(trainer.train_envs, LocalEnvs)  # choice does not ask: stepped in-process
    trainer.close()
    monkeypatch.setattr(TwoChoiceEnv, "worker_processes", True)
    trainer = Trainer(_config(tmp_path, "pool", rollout={"tasks_per_batch": 1, "group_size": 2}))
    try:
        assert isinstance(trainer.train_envs, EnvPool) and trainer.train_envs.num_workers >= 1
        metrics = trainer.iteration(1)  # the pool plays real episodes
        assert metrics["trajectories"] == 2 and metrics["rollout/dropped_episodes"] == 0
    finally:
        trainer.close()
    explicit = Trainer(_config(tmp_path, "forced-local", num_env_workers=0))
    assert isinstance(explicit.train_envs, LocalEnvs)
    explicit.close()
