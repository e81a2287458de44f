"""Behaviour-cloning warm start (`seedbench sft-policy`): expert demos in the rollout's exact prompts and
answer format, a checkpoint with provenance that `seedbench run` starts from and records, and one-line
errors for an env without an expert and for a checkpoint of another env."""

import json
import math

import pytest
import torch

from seedbench.cli import main as cli_main
from seedbench.config import build_config
from seedbench.engines.base import Generation, SamplingParams
from seedbench.envs.batch import LocalEnvs
from seedbench.envs.frozenlake import FrozenLakeEnv
from seedbench.registry import make_env
from seedbench.rollout.lockstep import run_episodes
from seedbench.rollout.types import TaskRef
from seedbench.training.origin import WARM_START_MARKER
from seedbench.training.warm_start import collect_demos, demo_response

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm") / "bc"
    rc = cli_main(["sft-policy", "--env", "frozenlake", "--model", "tiny", "--demos", "4", "--epochs", "2",
                   "--lr", "3e-3", "--batch-size", "8", "--output", str(out), "--set", "env_kwargs.p=0.9"])
    assert rc == 0
    return out


class ReplayEngine:
    """Answers a prompt with the demo recorded for exactly those prompt ids; a prompt the demos do not
    hold is a KeyError, so a rollout that builds any prompt differently fails the test."""

    name = "replay"

    def __init__(self, demos):
        self.answers = {tuple(d.prompt_ids): d.response for d in demos}
        self.prompts = 0

    def generate(self, prompts, params):
        self.prompts += len(prompts)
        return [Generation([1], [0.0], self.answers[tuple(p)], "stop") for p in prompts]

    def sync_weights(self):
        pass


def test_demos_are_the_rollouts_own_prompts_and_answers_the_env_accepts():
    from transformers import AutoTokenizer

    from seedbench.models.embedded import converted_dir

    # The embedded model's tokenizer: the tiny test tokenizer maps the map's letters to <unk>, so two
    # states could share prompt ids and the replay below could not tell them apart.
    tokenizer = AutoTokenizer.from_pretrained(converted_dir()[0])
    config = build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"}, "rollout": {"history_length": 2}})
    demo_set = collect_demos(config, "frozenlake", tokenizer, 5, seed=3)
    env = make_env("frozenlake")
    assert demo_set.episodes == 5 and demo_set.won == 5  # the BFS expert solves every non-slippery map
    assert all(d.task.startswith(f"{env.splits[0]}:") for d in demo_set.demos)  # training split only
    assert env.splits[0] != env.eval_split
    for demo in demo_set.demos:
        action, valid = env.parse_action(demo.response)
        # FrozenLake's expert_thought hook: the tiles next to the player in this very prompt, then the move
        near = _neighbours_of(demo.content)
        safe = ", ".join(w.split()[0] for w in near.split(", ") if w.split()[1] in ("S", "F", "G"))
        assert valid and demo.response == (f"<think>Next to me: {near}. Safe: {safe}. Go {action}.</think>"
                                           f"<action>{action}</action>")
    # The real rollout, fed the demo answers, asks exactly the demo prompts and wins every task.
    tasks = sorted({d.task for d in demo_set.demos})
    tasks = [TaskRef(t.split(":")[0], int(t.split(":")[1])) for t in tasks]
    engine = ReplayEngine(demo_set.demos)
    trajectories, _ = run_episodes(LocalEnvs(lambda: make_env("frozenlake"), len(tasks)), env, engine, tokenizer,
                                   tasks, group_size=1, params=SamplingParams(), history_length=2,
                                   max_steps=env.max_steps)
    assert all(t.won and t.num_invalid == 0 for t in trajectories)
    assert engine.prompts == len(demo_set.demos) == sum(len(t.steps) for t in trajectories)
    assert len(engine.answers) == len(demo_set.demos)  # no two demo states share a prompt
    assert any("Below are the most recent 2 observations" in d.content for d in demo_set.demos)  # history shown


def _neighbours_of(prompt: str) -> str:
    """The four tiles next to P in the last map of a FrozenLake prompt, computed here independently."""
    rows = [line.split() for line in prompt.split("current observation is:\n")[-1].splitlines()[:4]]
    r, c = next((i, row.index("P")) for i, row in enumerate(rows) if "P" in row)
    steps = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}
    return ", ".join(f"{a} {rows[r + dr][c + dc] if 0 <= r + dr < 4 and 0 <= c + dc < 4 else 'edge'}"
                     for a, (dr, dc) in steps.items())


def test_every_env_with_an_expert_gets_answers_its_parser_reads_back():
    from seedbench.envs.cards import EZPointsEnv
    from seedbench.envs.sokoban import SokobanEnv

    for env in (FrozenLakeEnv(), SokobanEnv(), EZPointsEnv()):
        env.reset(seed=1, options={"split": env.splits[0]})
        for command in env.expert_plan()[:3]:
            assert env.parse_action(demo_response(env, command)) == (command, True)


def test_the_checkpoint_records_its_provenance_and_learned(warm):
    provenance = json.loads((warm / "model" / WARM_START_MARKER).read_text())
    assert provenance["env"] == "frozenlake" and provenance["env_kwargs"] == {"p": 0.9}
    assert provenance["set"] == ["env_kwargs.p=0.9"] and provenance["demo_split"] == "train"
    assert (provenance["demos_requested"], provenance["demo_episodes"], provenance["demo_episodes_won"]) == (4, 4, 4)
    demos = [json.loads(line) for line in (warm / "demos.jsonl").read_text().splitlines()]
    assert provenance["demo_steps"] == len(demos) and {d["task"].split(":")[0] for d in demos} == {"train"}
    assert provenance["base_checksum"] == "tiny-random-seed0" and provenance["seed"] == 0
    assert provenance["epochs"] == 2 and provenance["lr"] == 3e-3 and provenance["precision"] == "fp32"
    assert provenance["sft_steps"] == 2 * math.ceil(len(demos) / 8)
    assert provenance["seedbench_version"] and provenance["time"].endswith("+00:00")
    losses = [r["loss"] for r in map(json.loads, (warm / "sft_log.jsonl").read_text().splitlines()) if "loss" in r]
    assert provenance["final_loss"] < losses[0]  # the SFT really trained


def test_run_starts_from_the_checkpoint_and_records_where_it_came_from(warm, tmp_path):
    from seedbench.training.trainer import Trainer

    config = build_config(overrides={"env": "frozenlake", "agent": "grpo", "model": {"name": str(warm / "model")},
                                     "output": str(tmp_path / "run")})
    trainer = Trainer(config)
    trainer.close()
    origin = json.loads((tmp_path / "run" / "summary.json").read_text())["model"]["origin"]
    assert origin["command"] == "sft-policy" and origin["path"] == str((warm / "model").resolve())
    assert origin["provenance"]["env"] == "frozenlake" and origin["provenance"]["demo_episodes"] == 4


def test_a_checkpoint_of_another_env_is_refused_unless_overridden(warm, tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli_main(["run", "--env", "sokoban", "--model", str(warm / "model"), "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert err.count("\n") == 0 and "fine-tuned by `seedbench sft-policy` on env 'frozenlake'" in err
    assert "model.allow_other_env=true" in err
    from seedbench.training.trainer import Trainer

    config = build_config(overrides={"env": "sokoban", "model": {"name": str(warm / "model"), "allow_other_env": True},
                                     "output": str(out)})
    Trainer(config).close()
    assert (out / "summary.json").exists()


def test_a_missing_checkpoint_directory_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    rc = cli_main(["run", "--env", "frozenlake", "--model", "runs/warm", "--output", "out"])  # not a hub id: runs/ is here
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "model.name: runs/warm does not exist; pass an HF checkpoint directory" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", ["no method", "not implemented"])
def test_an_env_without_an_expert_is_one_line_and_writes_nothing(how, tmp_path, monkeypatch, capsys):
    if how == "no method":
        monkeypatch.delattr(FrozenLakeEnv, "expert_plan")
    else:
        def expert_plan(self):
            raise NotImplementedError

        monkeypatch.setattr(FrozenLakeEnv, "expert_plan", expert_plan)
    out = tmp_path / "bc"
    rc = cli_main(["sft-policy", "--env", "frozenlake", "--model", "tiny", "--output", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and not out.exists()
    assert "has no scripted expert" in err and "start `seedbench run` from the base model" in err


def test_sft_trains_under_the_runs_compute_dtype_with_fp32_master_weights(tiny_tokenizer, tmp_path):
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy
    from seedbench.training.sft import SFTSettings, fine_tune, mixed_precision, tokenize_example

    policy = load_policy(ModelConfig(name="tiny", bf16_compute="autocast"), need_reference=False)
    assert mixed_precision(policy) == {"bf16": False, "fp16": False}
    policy.compute_dtype = torch.bfloat16  # what model.dtype=auto resolves to on a CPU with AMX or on CUDA
    assert mixed_precision(policy) == {"bf16": True, "fp16": False}
    rows = [tokenize_example(tiny_tokenizer, "Your task is to: go", "<action>down</action>")] * 4
    metrics = fine_tune(policy, rows, [], SFTSettings(epochs=1, lr=1e-3, batch_size=2), tmp_path)
    assert metrics["precision"] == "bf16 autocast" and metrics["sft_steps"] == 2
    assert all(p.dtype == torch.float32 for p in policy.model.parameters())


def test_the_answer_only_loss_equals_the_models_own_masked_loss(tiny_tokenizer):
    """The SFT loss projects only the answer positions onto the vocabulary; it must equal the causal-LM
    loss of the full logits with the prompt labels masked (-100), on a right-padded batch of unequal rows."""
    from transformers.data.data_collator import DataCollatorForSeq2Seq

    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy
    from seedbench.training.sft import _answer_loss_trainer, tokenize_example

    policy = load_policy(ModelConfig(name="tiny"), need_reference=False, seed=4)
    rows = [tokenize_example(tiny_tokenizer, "Your task is to: go down", "<action>down</action>"),
            tokenize_example(tiny_tokenizer, "Your task is to: go", "<think>plan</think><action>left</action>")]
    tiny_tokenizer.padding_side = "right"
    batch = DataCollatorForSeq2Seq(tiny_tokenizer, padding=True)(rows)
    tiny_tokenizer.padding_side = "left"
    expected = policy.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            labels=batch["labels"]).loss
    trainer = object.__new__(_answer_loss_trainer(object, policy))
    loss = trainer.compute_loss(policy.model, batch)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    answer_tokens = sum(sum(label != -100 for label in row["labels"]) for row in rows)
    assert trainer.compute_loss(policy.model, batch, num_items_in_batch=2 * answer_tokens).item() == \
        pytest.approx(expected.item() / 2, rel=1e-5)


def test_the_first_training_step_is_fingerprinted_so_two_builds_can_be_told_apart(tiny_tokenizer, tmp_path):
    """Equal inputs give equal fingerprints; another data order changes only the ids' hash, other weights
    only the weights' hash; the recorded loss is the first step's logged loss."""
    from seedbench.config import ModelConfig
    from seedbench.models.policy import load_policy
    from seedbench.training.sft import SFTSettings, fine_tune, tokenize_example

    rows = [tokenize_example(tiny_tokenizer, f"Your task is to: go {word}", f"<action>{word}</action>")
            for word in ("down", "left", "right", "up", "down left", "up right")]

    def first_step(seed: int, weights_seed: int, name: str) -> dict:
        policy = load_policy(ModelConfig(name="tiny"), need_reference=False, seed=weights_seed)
        out = tmp_path / name
        out.mkdir()
        metrics = fine_tune(policy, rows, [], SFTSettings(epochs=1, lr=1e-3, batch_size=2, seed=seed), out)
        logged = [json.loads(line) for line in (out / "sft_log.jsonl").read_text().splitlines()]
        assert metrics["first_step"]["loss"] == pytest.approx(next(r["loss"] for r in logged if "loss" in r), rel=1e-4)
        return metrics["first_step"]

    a, again = first_step(0, 0, "a"), first_step(0, 0, "again")
    assert a == again and len(a["input_ids_sha256"]) == len(a["weights_sha256"]) == 64
    other_order = first_step(1, 0, "order")
    assert other_order["input_ids_sha256"] != a["input_ids_sha256"]
    assert other_order["weights_sha256"] == a["weights_sha256"]
    other_weights = first_step(0, 1, "weights")
    assert other_weights["input_ids_sha256"] == a["input_ids_sha256"]
    assert other_weights["weights_sha256"] != a["weights_sha256"] and other_weights["loss"] != a["loss"]
