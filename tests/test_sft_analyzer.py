"""SEED stage 1 (`seedbench sft-analyzer`): hindsight annotation → SFT → a checkpoint SEED starts from;
annotator errors are one clear line."""

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import torch

from seedbench.agents.seed.agent import ANALYZER_SFT_MARKER
from seedbench.agents.seed.annotators import AnnotationRequest, AnnotatorUnavailable, EndpointAnnotator, make_annotator
from seedbench.config import build_config
from seedbench.agents.seed.stage1 import MARKER, main
from seedbench.training.sft import progress_callback, tokenize_example


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def stage1(tmp_path_factory):
    out = tmp_path_factory.mktemp("stage1") / "sft"
    rc = main(["--env", "choice", "--annotator", "hindsight", "--model", "tiny", "--tasks", "3", "--group-size", "4",
               "--max-new-tokens", "3", "--epochs", "2", "--lr", "1e-3", "--output", str(out),
               "--set", "rollout.history_length=1"])
    assert rc == 0
    return out


def test_stage1_writes_annotations_and_a_checkpoint_with_provenance(stage1):
    records = [json.loads(line) for line in (stage1 / "annotations.jsonl").read_text().splitlines()]
    assert len(records) == 12 and all(r["ok"] and r["annotator"] == "hindsight" for r in records)
    # each analysis states its own episode's true outcome and names its step
    assert all(r["episode_summary"].startswith("Success:" if r["won"] else "Failure:") for r in records)
    assert all(r["episode_skill"].startswith(("In this won episode, ", "In this lost episode, ")) and "step 1" in r["episode_skill"] for r in records)
    assert all("episode_success: " in r["analyzer_prompt"] for r in records)
    marker = json.loads((stage1 / "model" / MARKER).read_text())
    assert MARKER == ANALYZER_SFT_MARKER
    assert marker["annotator_kind"] == "hindsight" and "trajectory alone" in marker["annotator_label"]
    assert marker["annotations_kept"] == 12 and marker["train_examples"] + marker["val_examples"] == 12
    assert marker["val_examples"] == 1  # 10 % of 12, rounded, at least one
    assert marker["val_loss_after"] < marker["val_loss_before"]  # the SFT really trained
    assert (stage1 / "model" / "config.json").exists()
    assert marker["env"] == "choice" and marker["config"] is None
    assert marker["run_overrides"] == {"rollout": {"history_length": 1}}
    assert marker["precision"] == "fp32"  # the tiny model's compute dtype; the run's policy decides


def test_stage1_takes_the_runs_recipe_and_overrides(tmp_path):
    from seedbench.agents.seed.stage1 import parse_config

    recipe = tmp_path / "run.yaml"
    recipe.write_text("env: frozenlake\nseed: 7\nenv_kwargs: {size: 5}\nrollout: {history_length: 3}\n"
                      "model: {name: tiny, dtype: fp32}\n")
    config = parse_config(["--config", str(recipe), "--annotator", "hindsight", "--set", "env_kwargs.p=0.9",
                           "rollout.max_steps=12"])
    assert (config.env, config.seed, config.history_length, config.max_steps) == ("frozenlake", 7, 3, 12)
    assert config.env_kwargs == {"size": 5, "p": 0.9, "max_steps": 12}  # the run's env, cap handed to it
    assert (config.model.name, config.model.dtype) == ("tiny", "fp32")
    assert config.run_overrides == {"env_kwargs": {"p": 0.9}, "rollout": {"max_steps": 12}}
    explicit = parse_config(["--config", str(recipe), "--annotator", "hindsight", "--max-steps", "9", "--seed", "1"])
    assert (explicit.max_steps, explicit.env_kwargs["max_steps"], explicit.seed) == (9, 9, 1)  # flags win


def test_stage1_without_an_env_is_one_line(capsys):
    assert main(["--annotator", "hindsight", "--model", "tiny"]) == 2
    assert "sft-analyzer needs the env" in capsys.readouterr().err


def test_a_stage1_checkpoint_of_another_env_is_refused(stage1, tmp_path, capsys):
    from seedbench.cli import main as cli_main

    out = tmp_path / "run"
    rc = cli_main(["run", "--agent", "grpo", "--env", "frozenlake", "--model", str(stage1 / "model"),
                   "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists() and err.count("\n") == 0
    assert "fine-tuned by `seedbench sft-analyzer` on env 'choice', not 'frozenlake'" in err


def test_seed_starts_from_the_stage1_checkpoint_and_finds_its_library(stage1, tmp_path):
    from seedbench.training.trainer import Trainer

    config = build_config(overrides={"env": "choice", "agent": "seed-static-skills", "iterations": 1,
                                     "model": {"name": str(stage1 / "model")}, "output": str(tmp_path / "run"),
                                     "rollout": {"max_new_tokens": 3, "tasks_per_batch": 1, "group_size": 2}})
    trainer = Trainer(config)
    assert trainer.agent.stage1 is not None and trainer.policy.ref_model is not None  # also the KL reference
    origin = json.loads((tmp_path / "run" / "summary.json").read_text())["model"]["origin"]
    assert origin["command"] == "sft-analyzer" and origin["provenance"]["annotations_kept"] == 12
    assert trainer.agent.library is not None and len(trainer.agent.library.entries) == 12
    for ours, reference in zip(trainer.policy.model.parameters(), trainer.policy.ref_model.parameters()):
        assert torch.equal(ours.to(reference.dtype), reference)
    trainer.close()


@pytest.mark.parametrize("marker_path", ["as written", "absolute, of the build folder"])
def test_a_moved_stage1_checkpoint_still_finds_its_library(stage1, tmp_path, marker_path):
    """The starting-model cache builds stage 1 in a scratch folder and renames it into place: the checkpoint's
    skill library must be found where the checkpoint is now, also from a marker that recorded the absolute
    path of the folder it was built in (checkpoints cached before the marker recorded a relative path)."""
    from seedbench.training.trainer import Trainer

    moved = tmp_path / "cache" / "analyzer-sft-key"
    shutil.copytree(stage1, moved)
    marker_file = moved / "model" / MARKER
    marker = json.loads(marker_file.read_text())
    assert marker["annotations"] == "../annotations.jsonl"
    if marker_path != "as written":
        marker["annotations"] = str(tmp_path / ".analyzer-sft-key.building-1" / "annotations.jsonl")  # gone
        marker_file.write_text(json.dumps(marker))
    config = build_config(overrides={"env": "choice", "agent": "seed-static-skills", "iterations": 1,
                                     "model": {"name": str(moved / "model")}, "output": str(tmp_path / "run"),
                                     "rollout": {"max_new_tokens": 3, "tasks_per_batch": 1, "group_size": 2}})
    trainer = Trainer(config)
    assert len(trainer.agent.library.entries) == 12
    trainer.close()


def test_sft_progress_bar_counts_optimiser_steps_and_shows_the_loss(monkeypatch, capsys):
    from transformers import TrainerState

    monkeypatch.setenv("SEEDBENCH_PROGRESS", "1")
    callback, state = progress_callback("analyzer SFT"), TrainerState(max_steps=3)
    callback.on_train_begin(None, state, None)
    for step in (1, 2, 3):
        state.global_step = step
        callback.on_step_end(None, state, None)
        callback.on_log(None, state, None, logs={"loss": 1.0 / step})
    assert (callback.bar.n, callback.bar.total) == (3, 3)
    assert callback.bar.postfix == "loss=0.333"
    callback.on_train_end(None, state, None)
    assert "analyzer SFT" in capsys.readouterr().err


def test_prompt_tokens_are_masked_in_the_sft_labels(tiny_tokenizer):
    from seedbench.rollout.prompting import render_prompt

    row = tokenize_example(tiny_tokenizer, "Task: choose", '{"episode_skill": "right"}')
    prompt = render_prompt(tiny_tokenizer, "Task: choose")
    assert row["input_ids"][: len(prompt)] == prompt
    assert row["labels"][: len(prompt)] == [-100] * len(prompt)
    assert row["labels"][len(prompt):] == row["input_ids"][len(prompt):]
    assert row["input_ids"][-1] == tiny_tokenizer.eos_token_id


@pytest.mark.parametrize("argv, message", [
    (["--annotator", "openai:gpt-4o"], "--base-url"),
    (["--annotator", "openai:gpt-4o", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", ""], "unreachable"),
    (["--annotator", "hf:/nonexistent/annotator-model"], "no annotator model is reachable offline"),
    (["--annotator", "gpt-5"], "unknown annotator"),
])
def test_unavailable_annotators_fail_with_one_clear_line(tmp_path, capsys, argv, message):
    rc = main(["--env", "choice", "--model", "tiny", "--output", str(tmp_path / "x"), *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()  # failed before any rollout


def test_missing_api_key_is_named(monkeypatch):
    monkeypatch.delenv("SEEDBENCH_TEST_KEY", raising=False)
    annotator = make_annotator("openai:m", make_env=lambda: None, base_url="http://127.0.0.1:9/v1",
                               api_key_env="SEEDBENCH_TEST_KEY")
    with pytest.raises(AnnotatorUnavailable, match="SEEDBENCH_TEST_KEY"):
        annotator.check()


def test_endpoint_annotator_speaks_openai_chat_completions(monkeypatch):
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # /models
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"data": []}')

        def do_POST(self):
            seen["path"], seen["auth"] = self.path, self.headers.get("Authorization")
            seen["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = {"choices": [{"message": {"content": '{"episode_summary": "s", "episode_skill": "k"}'}}]}
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("SEEDBENCH_TEST_KEY", "sk-test")
        annotator = EndpointAnnotator("judge-1", f"http://127.0.0.1:{server.server_port}/v1",
                                      api_key_env="SEEDBENCH_TEST_KEY", max_tokens=64)
        annotator.check()
        texts = annotator.annotate([AnnotationRequest("analyse this", None)])
    finally:
        server.shutdown()
    assert texts == ['{"episode_summary": "s", "episode_skill": "k"}']
    assert seen["path"] == "/v1/chat/completions" and seen["auth"] == "Bearer sk-test"
    assert seen["body"]["model"] == "judge-1" and seen["body"]["temperature"] == 0.0
    assert seen["body"]["messages"] == [{"role": "user", "content": "analyse this"}]


def test_scripted_is_an_alias_of_the_answer_leaking_oracle(capsys):
    from seedbench.registry import make_env

    annotator = make_annotator("scripted", make_env=lambda: make_env("choice"))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scripted is an alias of oracle, which leaks the answer" in err
    assert annotator.kind == "oracle" and "LEAKS THE ANSWER" in annotator.label
    oracle = make_annotator("oracle", make_env=lambda: make_env("choice"))
    assert capsys.readouterr().err == ""  # the new name does not warn
    from seedbench.rollout.types import StepSample, TaskRef, Trajectory

    lost = Trajectory("e", 0, TaskRef("train", 0), "choose left or right", won=False, final_observation="Nothing here.")
    lost.steps.append(StepSample(0, "", [], [], [], "left", "You stand at a fork in the road.", "left", True, 0.0))
    assert oracle.analyse(lost)["episode_skill"] == "Do not choose left; choose right."  # the hidden answer


def test_rehearsing_acting_adds_the_won_rollouts_own_steps(tmp_path):
    """``--rehearse-acting``: every step of each won rollout becomes an SFT row (its prompt ids, masked,
    then the policy's own answer and EOS); lost rollouts add nothing; the provenance counts them."""
    from types import SimpleNamespace

    from seedbench.agents.seed.stage1 import acting_rows

    step = lambda p, r: SimpleNamespace(prompt_ids=p, response_ids=r)  # noqa: E731
    won = SimpleNamespace(won=True, steps=[step([1, 2], [3]), step([1, 2, 3, 4], [5, 6])])
    lost = SimpleNamespace(won=False, steps=[step([7], [8])])
    assert acting_rows([won, lost], eos_token_id=0) == [
        {"input_ids": [1, 2, 3, 0], "labels": [-100, -100, 3, 0]},
        {"input_ids": [1, 2, 3, 4, 5, 6, 0], "labels": [-100] * 4 + [5, 6, 0]}]
    out = tmp_path / "sft"
    assert main(["--env", "choice", "--annotator", "hindsight", "--model", "tiny", "--tasks", "2", "--group-size", "4",
                 "--max-new-tokens", "3", "--epochs", "1", "--output", str(out), "--rehearse-acting"]) == 0
    marker = json.loads((out / "model" / MARKER).read_text())
    won_steps = sum(r["won"] * r["num_steps"] for r in map(json.loads, (out / "annotations.jsonl").read_text().splitlines()))
    assert marker["rehearse_acting"] and marker["acting_examples"] == won_steps  # the tiny model rarely wins


def test_stage1_fine_tunes_in_the_runs_bf16_compute_dtype_with_fp32_master_weights(tmp_path, monkeypatch):
    """Where the run computes in bf16 (`model.dtype=auto` on a CPU with AMX or AVX-512-BF16), stage 1's SFT
    does too; the saved analyzer keeps fp32 weights. The tiny model is forced to fp32 by load_policy, so the
    policy stage 1 loads is given the bf16 compute dtype that `auto` resolves to on such a CPU."""
    import seedbench.agents.seed.stage1 as stage1_module

    real_load = stage1_module.load_policy

    def bf16_policy(*args, **kwargs):
        policy = real_load(*args, **kwargs)
        policy.compute_dtype = torch.bfloat16
        return policy

    monkeypatch.setattr(stage1_module, "load_policy", bf16_policy)
    out = tmp_path / "sft"
    rc = main(["--env", "choice", "--annotator", "hindsight", "--model", "tiny", "--tasks", "2", "--group-size", "2",
               "--max-new-tokens", "3", "--epochs", "1", "--lr", "1e-3", "--output", str(out),
               "--set", "model.bf16_compute=autocast"])
    assert rc == 0
    marker = json.loads((out / "model" / MARKER).read_text())
    assert marker["precision"] == "bf16 autocast"
    saved = json.loads((out / "model" / "config.json").read_text())
    assert saved.get("dtype", saved.get("torch_dtype")) == "float32"
