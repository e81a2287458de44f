"""Starting and resuming `seedbench run`: a resume keeps the run's saved config.yaml (flags that change it are
refused unless allowed, and never overwrite it silently); inputs that used to pass validation and crash
after the run directory existed are one-line errors that write nothing; a failed start does not block its
retry; an env whose reset ignores its seed is refused by `run` and `eval`. In-process, tiny model."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
import yaml

from seedbench.cli import main
from seedbench.training.rundir import read_jsonl

TINY_RUN = ["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "1",
            "--set", "rollout.tasks_per_batch=2", "rollout.group_size=3", "rollout.max_new_tokens=3",
            "optim.lr=0.05", "eval.num_tasks=1", "save_final_model=false"]
"""A non-default env, model and budgets (2 tasks x 3 rollouts = 6 trajectories per iteration; the defaults
would be sokoban, smollm2-135m and 2 x 2 = 4)."""


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("seedbench: error: "), err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One finished 1-iteration run, copied by each test that changes it."""
    out = tmp_path_factory.mktemp("started") / "run"
    assert main([*TINY_RUN, "--output", str(out)]) == 0
    return out


@pytest.fixture
def run_copy(finished_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    return out


# ----------------------------------------------------------------------------------------------------
# Resume under the saved config


def test_resume_with_only_the_directory_continues_under_the_saved_config(run_copy, capsys):
    original = (run_copy / "config.yaml").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "--output", str(run_copy), "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    assert "config changed (iterations 1 → 2); the previous config is kept as config.previous-1.yaml" in out
    # the saved budgets, not the defaults: 6 trajectories per iteration, counted on from the checkpoint
    assert [(r["iteration"], r["trajectories"]) for r in read_jsonl(run_copy / "metrics.jsonl")] == [(1, 6), (2, 12)]
    assert (run_copy / "config.previous-1.yaml").read_text() == original
    before, after = yaml.safe_load(original), yaml.safe_load((run_copy / "config.yaml").read_text())
    assert after.pop("iterations") == 2 and before.pop("iterations") == 1
    assert after.pop("output") == str(run_copy)  # the location, written with the change (this copy moved)
    before.pop("output")
    assert after == before
    assert after["env"] == "choice" and after["model"]["name"] == "tiny"

    # `--resume DIR` alone: nothing changes, nothing is rewritten, the finished run stays finished
    settled = (run_copy / "config.yaml").read_text()
    assert main(["run", "--resume", str(run_copy)]) == 0
    assert (run_copy / "config.yaml").read_text() == settled and not (run_copy / "config.previous-2.yaml").exists()
    assert json.loads((run_copy / "summary.json").read_text())["iterations_done"] == 2


def test_resume_refuses_flags_that_change_the_run_and_names_each_change(run_copy, capsys):
    original = (run_copy / "config.yaml").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", "--output", str(run_copy), "--model", "smollm2-135m",
                 "--set", "rollout.group_size=2", "optim.lr=0.05"]) == 2  # lr equals the saved value: no change
    err = _one_line_error(capsys)
    assert (f"--resume: {run_copy} was started with another config (model.name 'tiny' → 'smollm2-135m'; "
            "rollout.group_size 3 → 2); drop these flags to continue the run as it was, or pass "
            "--allow-config-changes to change them") in err
    assert (run_copy / "config.yaml").read_text() == original
    assert sorted(p.name for p in run_copy.glob("config*")) == ["config.yaml"]


def test_allowed_changes_keep_the_previous_config(run_copy, capsys):
    original = (run_copy / "config.yaml").read_text()
    assert main(["run", "--resume", str(run_copy), "--iterations", "2", "--set", "optim.lr=0.02",
                 "--allow-config-changes"]) == 0
    assert "(iterations 1 → 2; optim.lr 0.05 → 0.02)" in capsys.readouterr().out
    assert (run_copy / "config.previous-1.yaml").read_text() == original
    assert yaml.safe_load((run_copy / "config.yaml").read_text())["optim"]["lr"] == 0.02


@pytest.mark.parametrize("argv, message", [
    (["--resume"], "--resume needs the run directory: --resume DIR or --resume --output DIR"),
    (["--resume", "a", "--output", "b"], "--resume a and --output b name two directories; give the run once"),
])
def test_resume_flags_misused_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a run without --output would go
    assert main([*TINY_RUN, "--iterations", "0", *argv]) == 2
    assert message in _one_line_error(capsys)
    assert list(tmp_path.iterdir()) == []


def test_resume_cannot_go_back_below_the_done_iterations(run_copy, capsys):
    assert main(["run", "--resume", str(run_copy), "--iterations", "0"]) == 2
    assert "iterations=0 is below the 1 iterations" in _one_line_error(capsys)


# ----------------------------------------------------------------------------------------------------
# Inputs checked before anything is written


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-5"], "seed: -5 is out of range; must be in [0, 4294967295]"),
    (["--seed", "1180591620717411303424"], "seed: 1180591620717411303424 is out of range; must be in [0, 4294967295]"),
    (["--set", "rollout.temperature=.nan"], "rollout.temperature: nan is not a finite number"),
    (["--set", "eval.temperature=.inf"], "eval.temperature: inf is not a finite number"),
    (["--set", "rollout.temperature=1e-300"], "rollout.temperature: 1e-300 is out of range; must be 0 or >= 0.01"),
    (["--set", "rollout.max_new_tokens=1000000000000"],
     "rollout.max_new_tokens: 1000000000000 is out of range; must be in [1, 131072]"),
    (["--set", "optim.lr=.nan"], "optim.lr: nan is not a finite number"),
    (["--set", "algo.kl_coef=.inf"], "algo.kl_coef: inf is not a finite number"),  # the agent's own dataclass
])
def test_inputs_that_crashed_after_writing_are_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "run"
    assert main([*TINY_RUN, "--output", str(out), *argv]) == 2
    assert message in _one_line_error(capsys)
    assert not out.exists()


def test_output_that_is_a_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    assert main([*TINY_RUN, "--output", str(path)]) == 2
    assert f"output: {path} is a file, not a directory; choose another --output" in _one_line_error(capsys)
    assert main([*TINY_RUN, "--output", str(path / "run")]) == 2
    assert f"lies under the file {path}" in _one_line_error(capsys)
    assert path.read_text() == "mine\n"


def test_a_start_that_failed_before_its_first_record_does_not_block_the_retry(tmp_path, monkeypatch):
    import seedbench.training.build as build

    out = tmp_path / "run"

    def unavailable(*args, **kwargs):
        raise RuntimeError("weights unavailable")

    with monkeypatch.context() as patch:
        patch.setattr(build, "load_policy", unavailable)
        with pytest.raises(RuntimeError, match="weights unavailable"):
            main([*TINY_RUN, "--output", str(out)])
    assert (out / "config.yaml").exists() and not (out / "metrics.jsonl").exists()
    assert main([*TINY_RUN, "--output", str(out)]) == 0  # the same command again
    assert [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")] == [1]


# ----------------------------------------------------------------------------------------------------
# The seeding probe of run and eval


@pytest.fixture
def seed_ignoring_env():
    from seedbench.registry import ENVS, register_env
    from tests import plugin_variants

    register_env(plugin_variants.entry("guess-seed-ignoring"))
    yield "guess-seed-ignoring"
    ENVS.reload()


PROBE_MESSAGE = ("env 'guess-seed-ignoring': reset(seed=0, options={'split': 'train'}) gave a different first "
                 "observation, info or np_random state the second time")


def test_run_and_eval_refuse_an_env_whose_reset_ignores_its_seed(seed_ignoring_env, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--env", seed_ignoring_env, "--model", "tiny", "--iterations", "0", "--output", str(out),
                 "--set", "eval.num_tasks=1", "rollout.max_new_tokens=2", "save_final_model=false"]) == 2
    err = _one_line_error(capsys)
    assert PROBE_MESSAGE in err and "envs must honour reset(seed=...)" in err and "probe_env_seeding=false" in err
    random.seed(3)  # the variant draws its number from Python's global stream: fix which two it draws
    assert main(["eval", "--agent", "random", "--env", seed_ignoring_env, "--episodes", "1"]) == 2
    assert PROBE_MESSAGE in _one_line_error(capsys)
    # the switch: an env that cannot be probed runs as before
    random.seed(3)
    assert main(["eval", "--agent", "random", "--env", seed_ignoring_env, "--episodes", "1",
                 "--set", "probe_env_seeding=false"]) == 0


def test_the_probe_leaves_the_global_random_streams_as_it_found_them():
    from seedbench.envs.checks import probe_reset_seeding
    from seedbench.registry import make_env

    random.seed(11)
    np.random.seed(11)
    expected = random.random(), np.random.random()
    random.seed(11)
    np.random.seed(11)
    probe_reset_seeding(make_env("sokoban"), "sokoban")
    assert (random.random(), np.random.random()) == expected


# ----------------------------------------------------------------------------------------------------
# The run directory is settled before the starting model is built


class Killed(BaseException):
    """Stands for SIGKILL during the starting-model builds."""


def test_a_kill_during_the_starting_model_builds_resumes_the_intended_run(tmp_path, monkeypatch, capsys):
    """config.yaml is written before the builds, so `--resume --output D` after a kill there continues the
    command's run (choice, tiny, 6 trajectories an iteration), not the defaults (sokoban, smollm2, 4)."""
    import seedbench.training.build as build

    out = tmp_path / "run"
    seen = []

    def killed_while_building(config):
        seen.append(yaml.safe_load((out / "config.yaml").read_text()))
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(build, "starting_model_name", killed_while_building)
        with pytest.raises(Killed):
            main([*TINY_RUN, "--output", str(out)])
    assert seen and seen[0]["env"] == "choice" and seen[0]["model"]["name"] == "tiny"
    capsys.readouterr()
    assert main(["run", "--resume", "--output", str(out)]) == 0
    assert "holds no config.yaml" not in capsys.readouterr().out
    assert [(r["iteration"], r["trajectories"]) for r in read_jsonl(out / "metrics.jsonl")] == [(1, 6)]
    assert yaml.safe_load((out / "config.yaml").read_text())["env"] == "choice"


def test_the_run_directory_is_refused_before_anything_is_built(run_copy, tmp_path, monkeypatch, capsys):
    import seedbench.training.build as build

    builds = []
    monkeypatch.setattr(build, "starting_model_name", lambda config: builds.append(config) or config.model.name)
    assert main([*TINY_RUN, "--output", str(run_copy)]) == 2
    assert "already exists; pass --resume" in _one_line_error(capsys)
    assert main(["run", "--resume", str(run_copy), "--set", "rollout.group_size=2"]) == 2
    assert "rollout.group_size 3 → 2" in _one_line_error(capsys)
    assert builds == []


def test_a_resume_of_a_directory_without_config_yaml_is_refused_not_started_from_the_defaults(tmp_path, capsys):
    empty = tmp_path / "never"
    for argv in (["run", "--resume", "--output", str(empty)], ["run", "--resume", str(empty)]):
        assert main(argv) == 2
        assert (f"--resume: {empty} holds no config.yaml, so there is no run to resume"
                in _one_line_error(capsys))
    assert not empty.exists()
    (empty / "").mkdir()
    (empty / ".lock").write_text("")  # a start killed right after taking the lock
    assert main(["run", "--resume", str(empty)]) == 2
    assert "start the run with the same command without --resume" in _one_line_error(capsys)
    assert main([*TINY_RUN, "--output", str(empty)]) == 0  # which then works
