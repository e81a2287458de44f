"""The public plugin API of docs/adding_an_env.md: every documented name imports, moved names keep their
old path with a DeprecationWarning, a plugin importing a seedbench name that does not exist is told
which, `seedbench --version` and CHANGELOG.md agree with pyproject.toml, and the docs' projection
examples are what the parser does."""

from __future__ import annotations

import doctest
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

from seedbench.cli import main
from seedbench.registry import ENVS, ensure_envs_loaded, env_entries, make_env
from tests.test_plugin_env import EXAMPLE_SOURCE, install_plugin  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "adding_an_env.md"


def _api_table() -> dict[str, list[str]]:
    section = DOC.read_text().split("## The plugin API\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, re.MULTILINE)
    return {module: re.findall(r"`(\w+)`", names) for module, names in rows}


def test_every_documented_plugin_name_imports_and_the_modules_all_is_the_documented_list():
    table = _api_table()
    assert list(table) == ["seedbench.envs.text_env", "seedbench.envs.action_parsing", "seedbench.envs.batch",
                           "seedbench.envs.contract", "seedbench.registry", "seedbench"]
    assert "ensure_envs_loaded" in table["seedbench.registry"] and "TextEnv" in table["seedbench.envs.text_env"]
    for module_name, names in table.items():
        module = importlib.import_module(module_name)
        assert [name for name in names if not hasattr(module, name)] == [], module_name
        if hasattr(module, "__all__"):
            assert sorted(module.__all__) == sorted(names), module_name


OLD_PATH_SOURCE = (EXAMPLE_SOURCE.replace("seedbench.envs.action_parsing", "seedbench.action_parsing")
                   .replace("seedbench.envs.text_env", "seedbench.text_env")
                   .replace('alias="guess"', 'alias="old-guess"').replace("seedbench/Guess-v0", "seedbench/OldGuess-v0")
                   .replace('"guess_env:GuessEnv"', '"old_guess_env:GuessEnv"'))


def test_a_plugin_on_the_old_import_paths_works_and_warns_once_per_moved_module(install_plugin):
    assert "from seedbench.text_env import TextEnv" in OLD_PATH_SOURCE
    for old in ("seedbench.text_env", "seedbench.action_parsing"):
        sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning) as caught:
        install_plugin("old-guess-env", {"old-guess": "old_guess_env:ENTRY"}, {"old_guess_env": OLD_PATH_SOURCE})
        assert "old-guess" in env_entries()
    ours = [w for w in caught if str(w.message).startswith("seedbench.")]
    assert sorted(str(w.message) for w in ours) == [
        f"seedbench.{name} is deprecated and will be removed in seedbench 0.3.0: import from seedbench.envs.{name} "
        "instead (the plugin API: docs/adding_an_env.md)" for name in ("action_parsing", "text_env")]
    assert {Path(w.filename).name for w in ours} == {"old_guess_env.py"}  # attributed to the plugin's import
    env = make_env("old-guess")
    obs, info = env.reset(seed=2, options={"split": "test"})
    assert (obs, info["task_id"]) == ("Guess a number from 0 to 99.", "guess-10")
    assert env.step("<action>50</action>")[0] == "50 is too high: lower."
    import seedbench.envs.action_parsing as new_parsing
    import seedbench.envs.text_env as new_text_env
    import seedbench.text_env as old_text_env

    assert old_text_env.TextEnv is new_text_env.TextEnv and sys.modules["old_guess_env"].extract_tag is new_parsing.extract_tag


def test_ensure_envs_loaded_registers_plugin_envs_with_gymnasium(install_plugin):
    import gymnasium as gym

    install_plugin("guess-env", {"guess": "guess_env:ENTRY"}, {"guess_env": EXAMPLE_SOURCE})
    gym.registry.pop("seedbench/Guess-v0", None)
    ensure_envs_loaded()
    ensure_envs_loaded()  # idempotent
    assert gym.make("seedbench/Guess-v0").reset(seed=1)[1]["task_id"] == "guess-2"
    assert ENVS.origin("guess").startswith("entry point 'guess = guess_env:ENTRY'")


GHOST_ENTRY = ("from seedbench.registry import EnvEntry\n"
               "ENTRY = EnvEntry(alias='ghost', env_id='seedbench/Ghost-v0', entry_point='ghost_env:GhostEnv')\n")


@pytest.mark.parametrize("import_line, error", [
    ("from seedbench.envs.text_env import TextEnvv",
     "env 'ghost' cannot be made: it imports a seedbench name that does not exist (cannot import name 'TextEnvv' "
     "from 'seedbench.envs.text_env' ("),
    ("import seedbench.envs.gone",
     "env 'ghost' cannot be made: it imports a seedbench name that does not exist (No module named "
     "'seedbench.envs.gone'); plugins import the API listed in docs/adding_an_env.md\n"),
    ("import no_such_dependency_of_ghost",
     "env 'ghost' needs a missing package (No module named 'no_such_dependency_of_ghost').\n"),
], ids=["missing-name", "missing-module", "third-party"])
def test_an_env_importing_a_missing_seedbench_name_is_told_which_not_a_missing_package(install_plugin, capsys,
                                                                                        import_line, error):
    install_plugin("ghost-env", {"ghost": "ghost_entry:ENTRY"},
                   {"ghost_entry": GHOST_ENTRY, "ghost_env": import_line + "\n"})
    assert main(["eval", "--agent", "random", "--env", "ghost", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seedbench: error: " + error.rstrip("\n")) and err.count("\n") == 1
    if "seedbench." in import_line:
        assert "missing package" not in err and err.endswith("plugins import the API listed in docs/adding_an_env.md\n")


def test_version_flag_pyproject_and_changelog_agree(capsys):
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == f"seedbench {version}\n"
    import seedbench

    assert seedbench.__version__ == version
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.findall(r"^## \[([^\]]+)\]", changelog, re.MULTILINE)[:2] == ["Unreleased", version]
    unreleased = changelog.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert "`seedbench --version`" in unreleased and "seedbench.text_env" in unreleased


def test_the_docs_projection_examples_are_what_the_parser_does():
    (block,) = re.findall(r"```pycon\n(.*?)```", DOC.read_text(), re.DOTALL)
    test = doctest.DocTestParser().get_doctest(textwrap.dedent(block), {}, "adding_an_env", str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert (runner.failures, runner.tries) == (0, 5)
    assert "**requires a\n  `<think>…</think>` block**" in DOC.read_text()


MOVED_MODULES = [
    ("seedbench.envs.sokoban_image", "seedbench.envs.sokoban.image", "render_frame"),
    ("seedbench.envs.boxoban", "seedbench.envs.sokoban.boxoban", "BoxobanEnv"),
    ("seedbench.envs.sokoban_hindsight", "seedbench.envs.sokoban.hindsight", "sokoban_facts"),
    ("seedbench.training.experiment", "seedbench.training.experiments", "run_experiment"),
    ("seedbench.training.run_lock", "seedbench.locking", "build_lock"),  # to the foundation layer
    ("seedbench.report.stats", "seedbench.stats", "paired_difference_ci"),
    ("seedbench.agents.policy_losses", "seedbench.agents.losses", "register_policy_loss"),  # one loss registry
]


@pytest.mark.parametrize("old, new, name", MOVED_MODULES)
def test_a_module_that_became_part_of_a_package_keeps_its_old_path_with_a_warning(old, new, name):
    sys.modules.pop(old, None)
    message = rf"{re.escape(old)} is deprecated .* import from {re.escape(new)} instead"
    with pytest.warns(DeprecationWarning, match=message):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_the_sokoban_package_keeps_the_old_modules_names_and_catalogue_entries():
    import seedbench.envs.sokoban as sokoban
    from seedbench.envs.sokoban.env import SokobanEnv
    from seedbench.envs.sokoban.solver import solve
    from seedbench.models import checkpoint, policy

    assert sokoban.SokobanEnv is SokobanEnv and sokoban.solve is solve and sokoban.WALL == 0
    assert policy.checkpoint_checksum is checkpoint.checkpoint_checksum  # the old import path of the helper
    ensure_envs_loaded()
    for alias in ("sokoban", "sokoban-vision", "sokoban-vision-boxoban"):
        assert alias in env_entries()
    assert type(make_env("sokoban")).__mro__[1] is SokobanEnv
