"""The test tiers of tests/conftest.py: every file and test it names exists (a renamed test would otherwise
move to the quick tier unnoticed), and its rule."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SLOW_FILES, SLOW_TESTS, is_slow

TESTS = Path(__file__).resolve().parent


def test_every_slow_file_and_test_named_in_conftest_exists():
    assert sorted(name for name in SLOW_FILES | set(SLOW_TESTS) if not (TESTS / name).is_file()) == []
    missing = []
    for name, functions in SLOW_TESTS.items():
        tree = ast.parse((TESTS / name).read_text())
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        missing += [f"{name}::{function}" for function in sorted(functions - defined)]
    assert missing == []
    assert not SLOW_FILES & set(SLOW_TESTS)  # a whole slow file needs no per-test entry


def test_the_tier_rule():
    assert is_slow("test_trainer.py", "test_anything", "tests/test_trainer.py::test_anything")
    run = "test_sokoban_episodes_run_to_the_configured_cap_and_summary_says_so"
    assert is_slow("test_config.py", run, f"tests/test_config.py::{run}")
    assert not is_slow("test_config.py", "test_numbers_from_the_command_line_are_parsed",
                       "tests/test_config.py::test_numbers_from_the_command_line_are_parsed")
    assert is_slow("test_env_registry.py", "test_check_env", "tests/test_env_registry.py::test_check_env[alfworld]")
    assert not is_slow("test_env_registry.py", "test_check_env", "tests/test_env_registry.py::test_check_env[sokoban]")
