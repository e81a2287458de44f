"""The worked example of docs/adding_an_env.md, installed as a third-party plugin through an entry point."""

import re
import sys
from pathlib import Path

import pytest

from seedbench import registry

DOC = Path(__file__).resolve().parent.parent / "docs" / "adding_an_env.md"


def _code_blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.DOTALL)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    env_code, entry_code = _code_blocks("python")[0], _code_blocks("python")[1]
    (tmp_path / "guess_env.py").write_text(env_code + "\n" + entry_code)
    dist = tmp_path / "guess_env-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: guess-env\nVersion: 0.1\n")
    toml = _code_blocks("toml")[0]
    line = next(l for l in toml.splitlines() if "=" in l and not l.startswith("["))
    (dist / "entry_points.txt").write_text("[seedbench.envs]\n" + line.replace('"', "") + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_ENVS", {})
    yield
    sys.modules.pop("guess_env", None)


def test_plugin_env_is_registered_through_its_entry_point(plugin):
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    entries = registry.env_entries()
    assert "guess" in entries and "sokoban" in entries
    env = registry.make_env("guess")
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1, options={"split": "test"})
    assert info["task"] == "guess the hidden digit"
    assert env.step("<action>9</action>")[4]["action_valid"] is False
    assert "seedbench/Guess-v0" in gym.registry


def test_plugin_env_trains(plugin, tmp_path):
    from seedbench.config import build_config
    from seedbench.training.trainer import train

    out = train(build_config(overrides={"env": "guess", "model": {"name": "tiny"}, "iterations": 1,
                                         "output": str(tmp_path / "run"), "eval": {"num_tasks": 2},
                                         "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2}}))
    assert (out / "summary.json").exists()
