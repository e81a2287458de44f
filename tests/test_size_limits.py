"""Sizes that allocate per task have upper bounds, refused at config time with one line naming the field,
the limit and why (a typo such as ``eval.num_tasks=1e9`` would otherwise grow until the kernel kills it)."""

from __future__ import annotations

import pytest

from seedbench.cli import main as cli_main
from seedbench.config import (MAX_BUILD_TASKS, MAX_EPISODES_PER_BATCH, MAX_EVAL_TASKS, MAX_GROUP_SIZE,
                              MAX_TASKS_PER_BATCH, ConfigError, build_config)


@pytest.mark.parametrize("field, limit", [
    ("eval.num_tasks", MAX_EVAL_TASKS), ("rollout.tasks_per_batch", MAX_TASKS_PER_BATCH),
    ("rollout.group_size", MAX_GROUP_SIZE), ("analyzer_sft.tasks", MAX_BUILD_TASKS),
    ("analyzer_sft.group_size", MAX_GROUP_SIZE), ("warm_start.demos", MAX_BUILD_TASKS),
])
def test_a_size_above_its_limit_is_refused_naming_field_limit_and_reason(field, limit):
    section, name = field.split(".")
    build_config(overrides={"env": "choice", "model": {"name": "tiny"}, section: {name: limit}})  # the limit itself passes
    with pytest.raises(ConfigError) as err:
        build_config(overrides={"env": "choice", "model": {"name": "tiny"}, section: {name: limit + 1}})
    message = str(err.value)
    assert message.startswith(f"{field}: {limit + 1} is out of range; must be in [")
    assert f", {limit}] (" in message and "held in memory at once" in message and "\n" not in message


def test_the_episodes_of_one_update_are_bounded_as_a_product():
    tasks = MAX_TASKS_PER_BATCH
    group = MAX_EPISODES_PER_BATCH // tasks
    build_config(overrides={"env": "choice", "model": {"name": "tiny"},
                            "rollout": {"tasks_per_batch": tasks, "group_size": group}})
    with pytest.raises(ConfigError, match=rf"= {tasks * (group + 1)} episodes per update; at most "
                                          rf"{MAX_EPISODES_PER_BATCH} \(one env per episode"):
        build_config(overrides={"env": "choice", "model": {"name": "tiny"},
                                "rollout": {"tasks_per_batch": tasks, "group_size": group + 1}})


def test_a_billion_eval_tasks_is_one_line_before_the_run_directory_exists(tmp_path, capsys):
    out = tmp_path / "run"
    rc = cli_main(["run", "--env", "choice", "--model", "tiny", "--output", str(out), "--set", "eval.num_tasks=1000000000"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and not out.exists()
    assert err == (f"seedbench: error: eval.num_tasks: 1000000000 is out of range; must be in [1, {MAX_EVAL_TASKS}] "
                   "(one env per task is built and held in memory at once)")


def test_sft_policy_refuses_more_demos_than_the_limit(capsys):
    from seedbench.training.warm_start import main

    rc = main(["--env", "frozenlake", "--model", "tiny", "--demos", str(MAX_BUILD_TASKS + 1)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and f"--demos {MAX_BUILD_TASKS + 1} is more than {MAX_BUILD_TASKS}" in err
