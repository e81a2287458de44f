"""A plugin written exactly as seedbench 0.1's docs showed (tests/plugin_example_v01/) still works: installed
offline into a fresh virtual environment, it trains unmodified, and its bare ``<action>X</action>`` answers
count as valid actions, with the `DeprecationWarning` of `parse_choice` without ``projection=`` on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest

from seedbench.envs.action_parsing import parse_choice
from tests.test_plugin_env import _check_setuptools_builds_wheels, _fresh_venv_seeing_this_interpreter, _pip_install

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "plugin_example_v01"
WARNING = ("parse_choice() without projection= uses the 'seedbench' rule of seedbench 0.1 (a bare <action>X</action> "
           "is accepted); its default becomes 'reference' (a <think>...</think> block required) in seedbench 0.3.0: "
           "pass projection='seedbench' to keep this rule or projection='reference' for the reference one "
           "(docs/adding_an_env.md)")


def test_parse_choice_without_projection_keeps_the_01_rule_and_warns():
    with pytest.warns(DeprecationWarning) as caught:
        assert parse_choice("<action>B2</action>", ["A1", "B2"]) == ("B2", True)
    assert [str(w.message) for w in caught] == [WARNING]
    assert caught[0].filename == __file__  # attributed to the caller: the plugin's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_choice("<action>B2</action>", ["A1", "B2"], projection="reference") == ("", False)
        assert parse_choice("<think>x</think><action>B2</action>", ["A1", "B2"], "reference") == ("B2", True)
        assert parse_choice("<action>B2</action>", ["A1", "B2"], projection="seedbench") == ("B2", True)


def test_built_in_envs_keep_the_reference_projection_without_the_warning():
    from seedbench.envs.frozenlake import FrozenLakeEnv
    from seedbench.envs.sokoban.env import SokobanEnv

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for env_class in (SokobanEnv, FrozenLakeEnv):
            assert env_class.parse_action("<action>up</action>") == ("", False)
            assert env_class.parse_action("<think>go</think><action>up</action>") == ("up", True)


@pytest.mark.slow
def test_the_01_docs_plugin_installs_plays_bare_tags_and_trains_unmodified(tmp_path):
    python = _fresh_venv_seeing_this_interpreter(tmp_path / "venv")
    _check_setuptools_builds_wheels(python)
    project = tmp_path / "guess-env-v01"
    project.mkdir()
    for name in ("pyproject.toml", "guess_env.py"):
        (project / name).write_text((PLUGIN / name).read_text())
    _pip_install(python, project)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SEEDBENCH_PROGRESS": "0"}

    # The 0.1 answer format scores: bare tags are valid actions, and guessing every digit wins (reward 1).
    play = ("import gymnasium, seedbench.registry as r; r.ensure_envs_loaded(); "
            "env = gymnasium.make('seedbench/Guess-v0').unwrapped; env.reset(seed=3)\n"
            "for digit in '01234':\n"
            "    obs, reward, done, _, info = env.step(f'<action>{digit}</action>'); assert info['action_valid']\n"
            "    if done: print(digit, reward); break\n")
    played = subprocess.run([python, "-W", "ignore", "-c", play], capture_output=True, text=True, env=env, check=True)
    assert played.stdout.split()[1] == "1.0"

    out = tmp_path / "run"
    run = subprocess.run([python, "-m", "seedbench", "run", "--model", "tiny", "--env", "guess", "--agent", "grpo",
                          "--iterations", "2", "--output", str(out), "--set", "rollout.group_size=2",
                          "rollout.tasks_per_batch=2", "eval.num_tasks=2", "rollout.max_new_tokens=8"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    assert f"run complete: {out}" in run.stdout
    assert f"DeprecationWarning: {WARNING}" in run.stderr  # once, at the plugin's parse_choice line
    assert run.stderr.count("DeprecationWarning") == 1, run.stderr
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 2 and all("rollout/invalid_action_rate" in m for m in metrics)
