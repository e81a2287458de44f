"""One-line console messages: `seedbench envs` extras hints, "did you mean" for mistyped env and agent
names, the warning of a dead env worker, rank-0-only trainer lines, and no training warning at eval."""

from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace

import pytest

from seedbench.cli import main
from seedbench.envs.pool import EnvPool
from seedbench.extras import extra_packages, missing_packages
from seedbench.registry import UnknownNameError, resolve_agent, resolve_env
from tests.test_env_pool import TROUBLE

REQUIREMENTS = ['torch<3,>=2.4', 'alfworld==0.4.2; extra == "alfworld"', 'textworld[pddl]==1.7.0; extra == "alfworld"',
                "bm25s>=0.2; extra == 'search'", 'mlflow-skinny>=2.10 ; extra == "track"',
                'no-such-package-of-seedbench-tests>=1; extra == "webshop"', 'pytest>=8; extra == "test"']


def test_extra_packages_reads_the_requirement_names_of_one_extra():
    assert extra_packages("alfworld", REQUIREMENTS) == ["alfworld", "textworld"]
    assert extra_packages("track", REQUIREMENTS) == ["mlflow-skinny"]
    assert extra_packages("nope", REQUIREMENTS) is None
    assert missing_packages("test", REQUIREMENTS) == []  # pytest runs this
    assert missing_packages("webshop", REQUIREMENTS) == ["no-such-package-of-seedbench-tests"]
    assert missing_packages("nope", REQUIREMENTS) == ["nope"]  # unknown: say it


def test_envs_names_an_extra_only_when_its_packages_are_missing_and_once(monkeypatch, capsys):
    installed = ['pytest>=8; extra == "search"', 'pytest>=8; extra == "alfworld"', 'pytest>=8; extra == "minigrid"',
                 'no-such-package-of-seedbench-tests>=1; extra == "webshop"']
    monkeypatch.setattr(metadata, "requires", lambda name: installed if name == "seedbench" else None)
    assert main(["envs"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    for alias in ("alfworld", "minigrid-doorkey", "search", "search-countries", "search-files", "sokoban"):
        assert "needs" not in lines[alias].replace("needs env_kwargs", ""), lines[alias]
    for alias in ("webshop", "webshop-score"):
        assert lines[alias].endswith("  [needs seedbench[webshop]]") and lines[alias].count("webshop]") == 1


@pytest.mark.parametrize("lookup, name, suggestion", [
    (resolve_env, "sokobn", "sokoban"),
    (resolve_env, "Sokoban", "sokoban"),
    (resolve_env, "seedbench/Sokoban-v1", "seedbench/Sokoban-v0"),
    (resolve_agent, "grp0", "grpo"),
    (resolve_agent, "gigp", "gigpo"),
])
def test_a_mistyped_name_gets_a_suggestion(lookup, name, suggestion):
    with pytest.raises(UnknownNameError) as err:
        lookup(name)
    kind = "env" if lookup is resolve_env else "agent"
    assert str(err.value).startswith(f"unknown {kind} {name!r} (did you mean {suggestion!r}?); choose one of: ")


def test_the_cli_prints_the_suggestion_in_its_one_line(capsys):
    assert main(["eval", "--agent", "random", "--env", "frozenlak", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seedbench: error: unknown env 'frozenlak' (did you mean 'frozenlake'?); choose one of: ")
    assert err.count("\n") == 1


def test_a_dead_env_worker_prints_one_warning_line(capsys):
    with EnvPool(TROUBLE, num_envs=3, num_workers=2, timeout_s=30) as pool:
        pool.reset_many([(i, i, None) for i in range(3)])  # worker 0 hosts envs 0 and 2, worker 1 env 1
        capsys.readouterr()
        assert pool.step_many([(0, "exit"), (1, "fine")])[0] is None
        assert pool.stats.dropped_episodes == 2
        assert capsys.readouterr().err == ("seedbench: warning: env worker 0 died during step; restarted it, dropping 2 "
                                           "episodes (envs 0, 2; counted in rollout/dropped_episodes)\n")
        assert pool.step_many([(1, "fine")])[0] is not None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("is_main, printed", [(True, "seedbench: iteration 1/2 ...\n"), (False, "")])
def test_trainer_console_lines_come_from_rank_0_only(capsys, is_main, printed):
    from seedbench.training.trainer import Trainer

    trainer = object.__new__(Trainer)  # only the printing is under test
    trainer.dist = SimpleNamespace(is_main=is_main)
    trainer._say("seedbench: iteration 1/2 ...")
    assert capsys.readouterr().out == printed


def test_eval_of_a_seed_run_does_not_print_the_stage1_training_warning(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--env", "choice", "--agent", "seed", "--model", "tiny", "--iterations", "1", "--output",
                 str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=1", "rollout.group_size=2",
                 "eval.num_tasks=2", "algo.analysis_max_new_tokens=4", "save_final_model=false"]) == 0
    warning = "seedbench: warning: the starting model is not an analyzer-SFT checkpoint"
    assert capsys.readouterr().out.count(warning) == 1  # training warns
    assert main(["eval", "--agent", str(out)]) == 0
    printed = capsys.readouterr().out
    assert warning not in printed and "(test, 2 tasks, iteration 1)" in printed


def test_a_non_zero_torchrun_rank_prints_neither_the_stage1_warning_nor_run_complete(tmp_path, capsys, monkeypatch):
    """torchrun sets RANK; the lines the trainer does not print (the agent's, the CLI's) check it."""
    monkeypatch.setenv("RANK", "1")  # WORLD_SIZE unset: one process, so the run itself is the usual one
    out = tmp_path / "run"
    assert main(["run", "--env", "choice", "--agent", "seed", "--model", "tiny", "--iterations", "1", "--output",
                 str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=1", "rollout.group_size=2",
                 "eval.num_tasks=2", "algo.analysis_max_new_tokens=4", "save_final_model=false"]) == 0
    printed = capsys.readouterr().out
    assert "analyzer-SFT" not in printed and "run complete" not in printed and (out / "summary.json").exists()
