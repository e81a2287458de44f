"""Run config validation at parse time, the step cap's single owner, `seedbench config`, and
`seedbench eval <run>` replaying the run's own evaluation."""

import json
from dataclasses import fields
from pathlib import Path

import pytest

from seedbench.agents.grpo import GRPOAgent
from seedbench.cli import main
from seedbench.config import ConfigError, RunConfig, build_config, describe, field_docs
from seedbench.training.rundir import read_jsonl

def _hf_dir(tmp_path, context: int) -> Path:
    """A directory that looks like an HF checkpoint to the config (only config.json is read)."""
    path = tmp_path / f"ckpt{context}"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"max_position_embeddings": context}))
    return path


@pytest.mark.parametrize("argv, message", [
    (["--set", "rollout.group_size=0"], "rollout.group_size: 0 is out of range; must be in [1, 256]"),
    (["--set", "rollout.temperature=-1"], "rollout.temperature: -1.0 is out of range; must be 0 or >= 0.01"),
    (["--set", "rollout.top_p=0"], "rollout.top_p: 0.0 is out of range; must be in (0, 1]"),
    (["--model", "/no/such/dir"], "model.name: /no/such/dir does not exist; pass an HF checkpoint directory, a hub id"),
    (["--set", "rollout.reward=succes"], "rollout.reward: unknown 'succes'; choose one of: return, success"),
    (["--set", "rollout.scheduler=fifo"], "rollout.scheduler: unknown 'fifo'; choose one of: auto, lockstep, continuous"),
    (["--set", "model.dtype=fp64"], "model.dtype: unknown 'fp64'; choose one of: auto, bf16"),
    (["--set", "model.device=gpu"], "model.device: unknown 'gpu'; use auto, cpu, cuda or cuda:N"),
    (["--set", "algo.adv_norm=trajectroy"], "algo.adv_norm: unknown 'trajectroy'; choose one of: step, step_mean_only, trajectory, trajectory_mean_only"),
    (["--agent", "seed", "--set", "algo.analyzer=curent"], "algo.analyzer: unknown 'curent'; choose one of: current, frozen, static"),
    (["--agent", "gigpo", "--set", "algo.step_adv_norm=var"], "algo.step_adv_norm: unknown 'var'; choose one of: std, mean_only"),
    (["--set", "algo.kl_coef=-1"], "algo.kl_coef: -1.0 is out of range; must be >= 0"),
    (["--set", "algo.clip_ratio_c=0.5"], "algo.clip_ratio_c: 0.5 is out of range; must be > 1"),
    (["--agent", "gigpo", "--set", "algo.gamma=1.5"], "algo.gamma: 1.5 is out of range; must be in [0, 1]"),
    (["--agent", "seed", "--set", "algo.opd_coef=-0.1"], "algo.opd_coef: -0.1 is out of range; must be >= 0"),
    (["--set", "algo.clip_epsilon=0.3"], "unknown config key 'algo.clip_epsilon'; valid keys: "),
    (["--agent", "retire-opd"], "algo.retire needs the phase-1 teacher's validation success: pass --set algo.teacher_success"),
    (["--set", "rollout.max_steps=3"], "rollout.max_steps: env choice has a fixed step cap of 1 (its constructor takes no max_steps)"),
    (["--set", "env_kwargs.rewarded=up", "env_kwargs.sides=3"], "env_kwargs: unknown 'sides' for env choice; valid keys: "),
    (["--set", "env_kwargs.rewarded=up", "--set", "env_kwargs.sides=3"], "env_kwargs: unknown 'sides' for env choice"),  # --set repeated
    (["--env", "sokoban", "--set", "rollout.max_steps=30", "--set", "env_kwargs.max_steps=15"],
     "rollout.max_steps=30 and env_kwargs.max_steps=15 disagree; set the step cap once, with rollout.max_steps"),
    (["--set", "eval.splits=[valid]"], "eval.splits: 'valid' is not a split of choice; choose from: train, test"),
    (["--set", "eval.every=-1"], "eval.every: -1 is out of range; must be >= 0"),
    (["--set", "eval.splits=[test]", "eval.curve_splits=[train]"],
     "eval.curve_splits: 'train' is not one of the evaluated splits ['test']; name splits of eval.splits"),
    (["--set", "vllm.gpu_memory_utilization=1.5"], "vllm.gpu_memory_utilization: 1.5 is out of range; must be in (0, 1]"),
    (["--agent", "seed", "--engine", "vllm", "--set", "vllm.max_model_len=1024"],
     "algo.analysis_max_prompt_tokens + algo.analysis_max_new_tokens = 4352 tokens does not fit the context length 1024 (vllm.max_model_len)"),
    # stage 1 may precede any agent's run (GRPO from the stage-1 checkpoint is SEED's fair baseline)
    (["--set", "analyzer_sft.annotator=hindsite"], "analyzer_sft.annotator: unknown 'hindsite'; use one of hindsight, "),
])
def test_invalid_config_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    assert main(["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--output", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not out.exists()


def test_seed_budgets_are_checked_against_a_local_checkpoints_context(tmp_path):
    ckpt = _hf_dir(tmp_path, 2048)
    with pytest.raises(ConfigError, match=r"analysis_max_new_tokens = 4352 tokens does not fit the context length 2048 "
                                          r"\(max_position_embeddings of "):
        build_config(overrides={"env": "choice", "agent": "seed", "model": {"name": str(ckpt)}})
    fits = build_config(overrides={"env": "choice", "agent": "seed", "model": {"name": str(ckpt)},
                                   "algo": {"analysis_max_prompt_tokens": 1792, "analysis_max_new_tokens": 256}})
    assert fits.algo["analysis_max_prompt_tokens"] == 1792
    # static skills are retrieved, not generated, and an agent that does not train analyses nothing: no
    # analysis budget to fit
    build_config(overrides={"env": "choice", "agent": "seed-static-skills", "model": {"name": str(ckpt)}})
    build_config(overrides={"env": "choice", "agent": "seed", "model": {"name": str(ckpt)}, "algo": {"train": False}})
    with pytest.raises(ConfigError, match=r"rollout.max_new_tokens \+ one prompt token = 4097 tokens does not fit the context length 2048"):
        build_config(overrides={"env": "choice", "model": {"name": str(ckpt)}, "rollout": {"max_new_tokens": 4096}})
    with pytest.raises(ConfigError, match=r"eval.max_new_tokens \+ one prompt token = 2049 tokens does not fit"):
        build_config(overrides={"env": "choice", "model": {"name": str(ckpt)}, "eval": {"max_new_tokens": 2048}})
    build_config(overrides={"env": "choice", "model": {"name": str(ckpt)}, "eval": {"max_new_tokens": 2047}})
    with pytest.raises(ConfigError, match="has no config.json"):
        build_config(overrides={"env": "choice", "model": {"name": str(tmp_path)}})


def test_trainer_rejects_an_invalid_config_built_in_code_before_writing(tmp_path):
    from seedbench.training.trainer import Trainer

    config = build_config(overrides={"env": "choice", "model": {"name": "tiny"}, "output": str(tmp_path / "run")})
    config.rollout.group_size = 0
    with pytest.raises(ConfigError, match="rollout.group_size: 0 is out of range"):
        Trainer(config)
    assert not (tmp_path / "run").exists()


def test_numbers_from_the_command_line_are_parsed():
    config = build_config(overrides={"env": "choice", "optim": {"lr": "1e-6"}, "rollout": {"max_steps": None}})
    assert config.optim.lr == 1e-6 and isinstance(config.optim.lr, float)


def test_enumeration_words_yaml_reads_as_booleans_keep_their_meaning(tmp_path):
    from seedbench.cli import _run_overrides, build_parser

    args = build_parser().parse_args(["run", "--set", "optim.packing=off", "hf.share_prompt_prefill=false"])
    config = build_config(overrides=_run_overrides(args))
    assert config.optim.packing == "off" and config.hf.share_prompt_prefill is False
    recipe = tmp_path / "r.yaml"
    recipe.write_text("optim:\n  packing: off\n")
    assert build_config(recipe).optim.packing == "off"
    with pytest.raises(ConfigError, match="rollout.scheduler: unknown True"):  # no such word among its choices
        build_config(overrides={"rollout": {"scheduler": True}})


def test_step_cap_has_one_owner_the_env_gets_it():
    config = build_config(overrides={"env": "sokoban", "rollout": {"max_steps": 30}})
    assert config.env_kwargs == {"max_steps": 30} and config.rollout.max_steps == 30
    from seedbench.registry import make_env

    assert make_env("sokoban", **config.env_kwargs).max_steps == 30
    only_env = build_config(overrides={"env": "sokoban", "env_kwargs": {"max_steps": 9}})
    assert only_env.rollout.max_steps == 9
    with pytest.raises(ConfigError, match="rollout.max_steps=30 and env_kwargs.max_steps=9 disagree"):
        build_config(overrides={"env": "sokoban", "env_kwargs": {"max_steps": 9}, "rollout": {"max_steps": 30}})
    assert build_config(overrides={"env": "sokoban"}).env_kwargs == {}  # None: the env's own default


def test_sokoban_episodes_run_to_the_configured_cap_and_summary_says_so(tmp_path):
    """rollout.max_steps above Sokoban's own 15: episodes used to end at 15 while 30 was recorded."""
    from seedbench.training.trainer import train

    out = train(build_config(overrides={
        "env": "sokoban", "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / "run"),
        "rollout": {"max_steps": 18, "max_new_tokens": 2, "tasks_per_batch": 1, "group_size": 2},
        "eval": {"num_tasks": 1}, "save_final_model": False}))
    episodes = [e for e in read_jsonl(out / "episodes.jsonl") if e["phase"] == "train"]
    assert episodes and all(len(e["steps"]) == 18 for e in episodes if not e["won"])
    assert json.loads((out / "summary.json").read_text())["protocol"]["max_steps"] == 18


def test_every_field_is_documented_and_listed_by_seedbench_config(capsys):
    rows = describe(RunConfig())
    assert all(row.doc for row in rows), [row.name for row in rows if not row.doc]
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    for row in rows:
        assert f"\n{row.name}: " in out or f"[{row.name}]" in out, row.name
    assert "rollout.group_size: int in [1, 256] = 2" in out
    assert "rollout.reward: one of: return, success = 'return'" in out
    from seedbench.agents.seed.agent import SEEDConfig

    assert main(["config", "--agent", "seed"]) == 0
    out = capsys.readouterr().out
    for f in fields(SEEDConfig):
        assert f"algo.{f.name}: " in out
    assert "algo.analyzer: one of: current, frozen, static = 'current'" in out
    assert field_docs(SEEDConfig)["opd_coef"].startswith("λ_opd")  # inherited and own field docs


def test_run_help_points_to_seedbench_config(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "`seedbench config`" in capsys.readouterr().out


def test_a_run_that_deletes_its_final_checkpoint_keeps_what_eval_needs_and_refuses_resume(tmp_path, capsys):
    """keep_final_checkpoint=false: the complete run keeps final_model/ and its logs, not checkpoints/;
    `seedbench eval <run>` replays its last evaluation from final_model/, and --resume says why it cannot."""
    out = tmp_path / "run"
    argv = ["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "1", "--output", str(out),
            "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2", "rollout.group_size=2",
            "eval.num_tasks=6", "eval.temperature=1.0", "optim.lr=0.05", "keep_final_checkpoint=false"]
    assert main(argv) == 0
    assert not (out / "checkpoints").exists() and (out / "final_model" / "config.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and summary["checkpoints_deleted"] is True
    last = list(read_jsonl(out / "eval.jsonl"))[-1]
    records = tmp_path / "replay.jsonl"
    assert main(["eval", str(out), "--records", str(records)]) == 0  # the positional form of --agent
    (replay,) = list(read_jsonl(records))
    assert replay == last and replay["iteration"] == 1  # the final weights, the run's prompts and eval list
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checkpoints were deleted at its end" in err and "final_model" in err
    assert main([*argv[:-1], "save_final_model=false", "keep_final_checkpoint=false",
                 "--output", str(tmp_path / "other")]) == 2
    assert "would delete the run's only final weights" in capsys.readouterr().err


def test_eval_of_a_run_reproduces_its_last_eval_record(tmp_path, capsys):
    """A tiny Sokoban run with a non-default step cap, history length and response budget; `seedbench eval
    <run>` must rebuild all of them from config.yaml and replay the final evaluation exactly."""
    out = tmp_path / "run"
    assert main(["run", "--env", "sokoban", "--agent", "grpo", "--model", "tiny", "--iterations", "1",
                 "--output", str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=1",
                 "rollout.group_size=2", "rollout.max_steps=5", "rollout.history_length=1", "eval.num_tasks=6",
                 "eval.temperature=1.0", "optim.lr=0.05", "save_final_model=false"]) == 0
    last = list(read_jsonl(out / "eval.jsonl"))[-1]
    assert last["iteration"] == 1
    capsys.readouterr()
    records = tmp_path / "replay.jsonl"
    assert main(["eval", "--agent", str(out), "--records", str(records)]) == 0
    printed = capsys.readouterr().out
    assert "overriding" not in printed and "iteration 1" in printed
    (replay,) = list(read_jsonl(records))
    assert replay == last  # same success numbers, task ids, counters and hash
    # episode by episode: same outputs, actions and lengths (5 steps, history 1, 3-token answers)
    from seedbench.training.evaluate import evaluate_agent

    logged = [e for e in read_jsonl(out / "episodes.jsonl") if e["phase"] == "eval/test" and e["iteration"] == 1]
    replayed = evaluate_agent(str(out))["episodes"]
    assert replayed == logged and len(logged) == 6
    steps = sum(len(e["steps"]) for e in logged)
    valid = sum(s["valid"] for e in logged for s in e["steps"])
    assert f"  valid actions: {valid} / {steps} steps ({valid / steps:.3f})" in printed.splitlines()
    assert all(len(e["steps"]) == 5 for e in logged if not e["won"])
    # the comparison can fail: the env's own history length (2) instead of the run's (1) changes the prompts
    other = evaluate_agent(str(out), set_values={"rollout": {"history_length": 2}})
    assert other["overrides"] == ["rollout.history_length = 2 (run: 1)"] and other["episodes"] != logged

    assert main(["eval", "--agent", str(out), "--temperature", "0", "--episodes", "3", "--records", str(records)]) == 0
    printed = capsys.readouterr().out
    assert "overriding the run's config: eval.temperature = 0.0 (run: 1.0)" in printed
    assert "overriding the run's config: eval.num_tasks = 3 (run: 6)" in printed
    assert sum("overriding" in line for line in printed.splitlines()) == 2
    (greedy,) = list(read_jsonl(records))
    assert greedy["num_tasks"] == 3 and greedy["task_ids"] == last["task_ids"][:3] and greedy["temperature"] == 0.0


def test_eval_of_builtin_agents_still_works(capsys):
    assert main(["eval", "--agent", "scripted", "--env", "sokoban", "--episodes", "3"]) == 0
    assert "scripted on sokoban (test, 3 tasks, iteration 0): success micro=1.000" in capsys.readouterr().out
    assert main(["eval", "--agent", "random", "--env", "sokoban", "--split", "train", "--episodes", "2", "--seed", "3"]) == 0
    assert "random on sokoban (train, 2 tasks, iteration 0)" in capsys.readouterr().out


def test_stage1_flags_map_onto_its_typed_config(tmp_path, capsys):
    from seedbench.agents.seed.stage1 import STAGE1_FLAGS, Stage1Config, main, parse_config

    config = parse_config(["--env", "sokoban", "--annotator", "oracle", "--model", "tiny", "--max-steps", "20",
                           "--lora-rank", "4", "--gradient-checkpointing", "--val-fraction", "0"])
    assert isinstance(config, Stage1Config) and config.model.name == "tiny" and config.model.lora_rank == 4
    assert config.model.gradient_checkpointing and config.max_steps == 20 and config.val_fraction == 0.0
    assert config.tasks == Stage1Config.tasks == 180  # defaults live in the dataclass
    from_the_run_config = {"env_kwargs", "run_overrides"}  # set by --config / --set, as for `seedbench run`
    assert {f.split(".")[0] for f in STAGE1_FLAGS.values()} == {f.name for f in fields(Stage1Config)} - from_the_run_config
    for argv, message in [(["--tasks", "0"], "tasks: 0 is out of range; must be in [1, 20000]"),
                          (["--val-fraction", "1"], "val_fraction: 1.0 is out of range; must be in [0, 1)"),
                          (["--engine", "tgi"], "engine: unknown 'tgi'; choose one of: auto, hf, vllm"),
                          (["--max-steps", "3"], "rollout.max_steps: env choice has a fixed step cap of 1"),
                          (["--model", "/no/such/dir"], "model.name: /no/such/dir does not exist")]:
        out = tmp_path / "x"
        assert main(["--env", "choice", "--annotator", "hindsight", "--model", "tiny", "--output", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists()


def test_one_recipe_serves_every_arm_other_agents_algo_keys_are_left_out(tmp_path):
    """SEED's analysis budget in a shared recipe is not an error for GRPO (the fair baseline runs the same
    file); the GRPO config lacks it and a real typo still fails."""
    from seedbench.config import agent_config, other_agents_algo_keys

    recipe = tmp_path / "r.yaml"
    recipe.write_text("algo:\n  analysis_max_new_tokens: 99\n  clip_eps: 0.3\n")
    grpo = build_config(recipe, {"env": "choice", "agent": "grpo", "model": {"name": "tiny"}})
    assert other_agents_algo_keys(grpo) == ["analysis_max_new_tokens"]
    algo = agent_config(grpo)
    assert algo.clip_eps == 0.3 and not hasattr(algo, "analysis_max_new_tokens")
    seed = build_config(recipe, {"env": "choice", "agent": "seed", "model": {"name": "tiny"}})
    assert other_agents_algo_keys(seed) == [] and agent_config(seed).analysis_max_new_tokens == 99
    recipe.write_text("algo:\n  analysis_max_new_tokns: 99\n")
    with pytest.raises(ConfigError, match="unknown config key 'algo.analysis_max_new_tokns'"):
        build_config(recipe, {"env": "choice", "agent": "grpo", "model": {"name": "tiny"}})


CHECKED = []


class KLGroupAgent(GRPOAgent):
    """A plugin agent whose own rule ties an ``algo`` field to the run config (`Agent.check_config`)."""

    name = "kl-group-test"

    @classmethod
    def check_config(cls, run_config, config):
        CHECKED.append((run_config.agent, config.kl_coef))
        if config.kl_coef > 0 and run_config.rollout.group_size < 4:
            raise ConfigError(f"algo.kl_coef: {cls.name} needs rollout.group_size >= 4 with a KL term; "
                              "raise it or set algo.kl_coef=0")


@pytest.fixture
def kl_group_agent():
    from seedbench.registry import AGENTS, AgentEntry, register_agent

    AGENTS.reload()
    register_agent(AgentEntry("kl-group-test", "tests.test_config:KLGroupAgent", "GRPO with a group rule"))
    CHECKED.clear()
    yield
    AGENTS.reload()


def test_an_agent_checks_its_own_fields_when_the_config_is_validated(kl_group_agent, tmp_path, capsys):
    """The resolver calls the agent class's hook with the checked ``algo`` config (the string from
    ``--set`` already a float) before anything is written; the base class's hook checks nothing."""
    out = tmp_path / "run"
    argv = ["run", "--env", "choice", "--model", "tiny", "--output", str(out), "--set", "algo.kl_coef=0.5"]
    assert main([*argv, "--agent", "kl-group-test"]) == 2
    err = capsys.readouterr().err
    assert err == ("seedbench: error: algo.kl_coef: kl-group-test needs rollout.group_size >= 4 with a KL term; "
                   "raise it or set algo.kl_coef=0\n")
    assert CHECKED == [("kl-group-test", 0.5)] and not out.exists()
    config = build_config(overrides={"env": "choice", "agent": "kl-group-test", "model": {"name": "tiny"},
                                     "algo": {"kl_coef": 0.5}, "rollout": {"group_size": 4}})
    assert config.rollout.group_size == 4 and CHECKED[-1] == ("kl-group-test", 0.5)
    build_config(overrides={"env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "algo": {"kl_coef": 0.5}})
    assert len(CHECKED) == 2  # GRPO's own (default) hook ran, not this agent's


def test_every_name_imported_from_seedbench_config_is_exported():
    """``from seedbench.config import X`` is public API (plugins use it): every name the project imports
    from the package itself resolves, whichever submodule defines it."""
    import ast

    import seedbench.config

    root = Path(__file__).resolve().parents[1]
    imported = set()
    for folder in ("src", "tests", "benchmarks", "scripts"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == "seedbench.config" and not node.level:
                    imported |= {alias.name for alias in node.names}
    assert {"ConfigError", "RunConfig", "build_config", "NonNegative", "agent_class", "resolve_step_cap"} <= imported
    assert sorted(name for name in imported if not hasattr(seedbench.config, name)) == []
    assert sorted(name for name in seedbench.config.__all__ if not hasattr(seedbench.config, name)) == []
