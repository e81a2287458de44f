"""A third-party env written from docs/adding_an_env.md alone (tests/plugin_example/), installed as a
plugin through the ``seedbench.envs`` entry-point group, and the one-line outcome of each broken plugin.

The slow test installs the example into a fresh virtual environment and drives the real CLI. The broken
plugins are installed in-process: a ``*.dist-info`` folder with an ``entry_points.txt`` on ``sys.path`` is
exactly what ``pip install`` leaves behind, as far as `importlib.metadata` is concerned.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seedbench.cli import main
from seedbench.envs.contract import EnvContractError
from seedbench.registry import (AGENTS, ENVS, EnvEntry, RegistryConflictError, agent_entries, env_entries, make_env,
                                register_env, resolve_env)
from tests import plugin_variants

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "adding_an_env.md"
EXAMPLE = ROOT / "tests" / "plugin_example"


def _code_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_example_package_is_the_code_of_the_docs():
    env_code, entry_code = _code_blocks("python")[:2]
    assert (EXAMPLE / "guess_env.py").read_text() == env_code + "\n" + entry_code
    assert _code_blocks("toml")[0] in (EXAMPLE / "pyproject.toml").read_text()


# ----------------------------------------------------------------------------------------------------
# In-process plugins


@pytest.fixture
def install_plugin(tmp_path, monkeypatch):
    """`install_plugin(dist, {ep name: value}, {module: source})`: a distribution with entry points in the
    ``seedbench.envs`` group, visible to `importlib.metadata`; the registry re-reads its plugins."""
    monkeypatch.syspath_prepend(str(tmp_path))
    written: list[str] = []

    def install(dist: str, entry_points: dict[str, str], modules: dict[str, str] | None = None,
                group: str = "seedbench.envs") -> None:
        for name, source in (modules or {}).items():
            (tmp_path / f"{name}.py").write_text(source)
            written.append(name)
        info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
        importlib.invalidate_caches()
        ENVS.reload()
        AGENTS.reload()

    yield install
    ENVS.reload()
    AGENTS.reload()
    for name in written:
        sys.modules.pop(name, None)


EXAMPLE_SOURCE = (EXAMPLE / "guess_env.py").read_text()


def _skip_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "seedbench.registry" and r.levelno == logging.WARNING]


def test_the_example_is_registered_through_its_entry_point(install_plugin):
    import gymnasium as gym

    install_plugin("guess-env", {"guess": "guess_env:ENTRY"}, {"guess_env": EXAMPLE_SOURCE})
    entries = env_entries()
    assert "guess" in entries and "sokoban" in entries
    assert ENVS.origin("guess") == ("entry point 'guess = guess_env:ENTRY' in group seedbench.envs "
                                    "(distribution guess-env 0.1)")
    env = make_env("seedbench/Guess-v0")
    obs, info = env.reset(seed=2, options={"split": "test"})
    assert (obs, info["task_id"], info["task_type"]) == ("Guess a number from 0 to 99.", "guess-10", "low")
    assert env.step("<action>50</action>")[0] == "50 is too high: lower."
    assert env.render() == "50 is too high: lower."
    assert gym.registry["seedbench/Guess-v0"].entry_point == "guess_env:GuessEnv"


@pytest.mark.parametrize("value, modules, error", [
    ("no_such_module:ENTRY", {}, "ModuleNotFoundError: No module named 'no_such_module'"),
    ("guess_env:ENTRYY", {"guess_env": EXAMPLE_SOURCE}, "AttributeError: module 'guess_env' has no attribute 'ENTRYY'"),
    ("broken_env:ENTRY", {"broken_env": "raise RuntimeError('boom\\nsecond line')"}, "RuntimeError: boom second line"),
    ("odd_env:ENTRY", {"odd_env": "ENTRY = {'alias': 'odd'}"}, "TypeError: it gave {'alias': 'odd'}; expected a seedbench.registry.EnvEntry"),
], ids=["missing-module", "attribute-typo", "raises-on-import", "not-an-entry"])
def test_a_broken_plugin_is_skipped_with_one_line_and_everything_else_works(install_plugin, caplog, capsys, value,
                                                                             modules, error):
    install_plugin("broken-env", {"broken": value}, modules)
    with caplog.at_level(logging.WARNING, logger="seedbench.registry"):
        assert main(["envs"]) == 0
    assert "seedbench/Sokoban-v0" in capsys.readouterr().out
    assert "broken" not in env_entries()
    (line,) = _skip_lines(caplog)
    assert line == (f"seedbench: skipped env plugin entry point 'broken = {value}' in group seedbench.envs "
                    f"(distribution broken-env 0.1): {error}")


def test_the_skip_line_is_the_only_stderr_of_a_real_command(tmp_path):
    """Without pytest's log capture: the line reaches stderr through logging's last-resort handler."""
    info = tmp_path / "broken_env-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-env\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[seedbench.envs]\nbroken = no_such_module:ENTRY\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])}
    run = subprocess.run([sys.executable, "-m", "seedbench", "envs"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0 and "seedbench/Sokoban-v0" in run.stdout
    assert run.stderr == ("seedbench: skipped env plugin entry point 'broken = no_such_module:ENTRY' in group "
                          "seedbench.envs (distribution broken-env 0.1): ModuleNotFoundError: No module named "
                          "'no_such_module'\n")


SHADOW = """from seedbench.registry import EnvEntry
ALIAS = EnvEntry(alias="sokoban", env_id="seedbench/MySokoban-v0", entry_point="shadow_env:X")
ENV_ID = EnvEntry(alias="mysokoban", env_id="seedbench/Sokoban-v0", entry_point="shadow_env:X")
"""


@pytest.mark.parametrize("attr, name, plugin", [
    ("ALIAS", "'sokoban'", "sokoban (seedbench/MySokoban-v0, shadow_env:X)"),
    ("ENV_ID", "'seedbench/Sokoban-v0'", "mysokoban (seedbench/Sokoban-v0, shadow_env:X)"),
])
def test_a_plugin_cannot_shadow_a_built_in(install_plugin, caplog, attr, name, plugin):
    install_plugin("shadow-env", {"shadow": f"shadow_env:{attr}"}, {"shadow_env": SHADOW})
    with caplog.at_level(logging.WARNING, logger="seedbench.registry"):
        assert resolve_env("sokoban").entry_point == "seedbench.envs.sokoban:SokobanEnv"
    (line,) = _skip_lines(caplog)
    assert line == (f"seedbench: skipped env plugin entry point 'shadow = shadow_env:{attr}' in group seedbench.envs "
                    f"(distribution shadow-env 0.1): RegistryConflictError: env name {name} of {plugin} is already "
                    "taken by sokoban (seedbench/Sokoban-v0, seedbench.envs.sokoban:SokobanEnv) [built-in]")
    assert "mysokoban" not in env_entries()


def test_agents_share_the_registry_rules(install_plugin, caplog):
    source = ("from seedbench.registry import AgentEntry\n"
              "GRPO = AgentEntry('grpo', 'my_agents:Mine', 'a second grpo')\n"
              "MINE = AgentEntry('mine', 'seedbench.agents.grpo:GRPOAgent', 'GRPO under another name')\n")
    install_plugin("my-agents", {"grpo": "my_agents:GRPO", "mine": "my_agents:MINE"}, {"my_agents": source},
                   group="seedbench.agents")
    with caplog.at_level(logging.WARNING, logger="seedbench.registry"):
        entries = agent_entries()
    assert entries["grpo"].factory == "seedbench.agents.grpo:GRPOAgent" and entries["mine"].description == "GRPO under another name"
    assert AGENTS.origin("mine").startswith("entry point 'mine = my_agents:MINE' in group seedbench.agents")
    (line,) = _skip_lines(caplog)
    assert line.endswith("RegistryConflictError: agent name 'grpo' of grpo (my_agents:Mine) is already taken by grpo "
                         "(seedbench.agents.grpo:GRPOAgent) [built-in]")


def test_a_plugin_env_ships_its_data_generator(install_plugin, capsys):
    source = EXAMPLE_SOURCE + (
        "\nDATA_ENTRY = EnvEntry(alias='guessdata', env_id='seedbench/GuessData-v0', entry_point='guess_env:GuessEnv',"
        " data_generator='guess_env:make_data')\n"
        "CALLS = []\n"
        "def make_data(argv):\n"
        "    CALLS.append(argv)\n"
        "    return 3\n")
    install_plugin("guess-env", {"guessdata": "guess_env:DATA_ENTRY"}, {"guess_env": source})
    assert main(["data", "guessdata", "--out", "x"]) == 3
    assert sys.modules["guess_env"].CALLS == [["--out", "x"]]
    assert main(["data", "--help"]) == 0
    usage = capsys.readouterr().out
    assert usage.startswith("usage: seedbench data {") and "alfworld" in usage and "guessdata" in usage
    assert main(["data", "sokoban"]) == 2
    err = capsys.readouterr().err
    assert "no data generator for 'sokoban'; choose one of: " in err and "guessdata" in err


def test_a_typo_in_an_entry_point_string_is_one_line(capsys):
    register_env(EnvEntry("typo", "seedbench/Typo-v0", "tests.plugin_example.guess_env:GuessEnvv"))
    try:
        assert main(["eval", "--agent", "random", "--env", "typo", "--episodes", "1"]) == 2
    finally:
        ENVS.reload()
    assert capsys.readouterr().err == (
        "seedbench: error: env 'typo' cannot be made: 'tests.plugin_example.guess_env:GuessEnvv': module "
        "'tests.plugin_example.guess_env' has no attribute 'GuessEnvv'\n")


def test_register_env_refuses_a_taken_name_and_accepts_the_same_entry_again():
    sokoban = resolve_env("sokoban")
    register_env(sokoban)  # idempotent
    with pytest.raises(RegistryConflictError, match="env name 'sokoban' of sokoban"):
        register_env(EnvEntry("sokoban", "seedbench/Other-v0", "x:Y"))
    assert resolve_env("sokoban") is sokoban


# ----------------------------------------------------------------------------------------------------
# The contract guard: a broken env rule is one line at the env boundary


@pytest.fixture
def variants():
    for alias in plugin_variants.VARIANTS:
        register_env(plugin_variants.entry(alias))
    yield
    ENVS.reload()


def test_a_raising_parse_action_is_one_line_naming_the_env_and_the_rule(variants):
    env = make_env("guess-raising-parse")
    env.reset(seed=0)
    with pytest.raises(EnvContractError) as err:
        env.step("hello")
    assert str(err.value) == (
        "env 'guess-raising-parse' (tests.plugin_variants:RaisingParseGuess) broke the env contract: "
        "parse_action('hello') raised TypeError: \"int() argument must be a string, a bytes-like object or a real "
        "number, not 'NoneType'\"; it must be total: return (text, False) for text it cannot parse")
    assert isinstance(env, plugin_variants.RaisingParseGuess)  # guarded in place: still its own class


def test_a_non_string_observation_is_one_line(variants):
    with pytest.raises(EnvContractError, match=r"^env 'guess-dict-observation' \(tests.plugin_variants:"
                                               r"DictObservationGuess\) broke the env contract: reset\(\) returned a "
                                               r"dict observation \(\{'text': 'Guess a number from 0 to 99.'\}\); "
                                               r"observations must be str$"):
        make_env("guess-dict-observation").reset(seed=0)


@pytest.mark.parametrize("argv", [
    ["eval", "--agent", "random", "--env", "guess-raising-parse", "--episodes", "1"],
    ["run", "--agent", "grpo", "--env", "guess-raising-parse", "--model", "tiny", "--iterations", "1",
     "--set", "rollout.group_size=2", "rollout.tasks_per_batch=1", "eval.num_tasks=1", "rollout.max_new_tokens=4"],
], ids=["eval", "run"])
def test_commands_on_a_broken_env_end_in_one_line(variants, argv, tmp_path, capsys):
    if argv[0] == "run":
        argv = [*argv, "--output", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("seedbench: error: env 'guess-raising-parse' (tests.plugin_variants:RaisingParseGuess) "
                          "broke the env contract: parse_action(")
    assert err.count("\n") == 1 and "Traceback" not in err


WORKER_RAISING = ("from seedbench.registry import EnvEntry\n"
                  "from tests.plugin_variants import RaisingParseGuess\n"
                  "class WorkerRaisingGuess(RaisingParseGuess):\n"
                  "    worker_processes = True  # stepped in an EnvPool worker, as ALFWorld is\n"
                  "ENTRY = EnvEntry('raising-workers', 'seedbench/WorkerRaisingGuess-v0', "
                  "'worker_raising_env:WorkerRaisingGuess')\n")


def test_a_raising_parse_in_an_env_worker_stops_run_and_eval_in_one_line(install_plugin, tmp_path, capsys):
    """An env stepped in worker processes: its broken contract reaches the command as the same one line,
    not as dropped episodes and a success of 0 (both commands once exited 0 saying nothing)."""
    install_plugin("worker-raising-env", {"raising-workers": "worker_raising_env:ENTRY"},
                   {"worker_raising_env": WORKER_RAISING})
    register_env(plugin_variants.entry("guess"))
    small = ["--model", "tiny", "--iterations", "1", "--set", "rollout.group_size=2", "rollout.tasks_per_batch=1",
             "eval.num_tasks=1", "rollout.max_new_tokens=4"]
    assert main(["run", "--agent", "grpo", "--env", "guess", "--output", str(tmp_path / "guess"), *small]) == 0
    capsys.readouterr()
    line = ("seedbench: error: env 'raising-workers' (worker_raising_env:WorkerRaisingGuess) broke the env contract: "
            "parse_action(")
    assert main(["eval", str(tmp_path / "guess"), "--env", "raising-workers", "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err
    assert main(["run", "--agent", "grpo", "--env", "raising-workers", "--output", str(tmp_path / "raising"),
                 *small]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err


# ----------------------------------------------------------------------------------------------------
# Registration needs no private call; import stays light


def test_import_seedbench_registers_the_built_ins_with_gymnasium_and_imports_nothing_heavy():
    code = ("import sys, gymnasium, seedbench; env = gymnasium.make('seedbench/Sokoban-v0'); "
            "obs, info = env.reset(seed=0); "
            "heavy = [m for m in ('torch', 'transformers', 'alfworld', 'textworld') if m in sys.modules]; "
            "print(info['task_id'], heavy)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         timeout=120).stdout
    assert out.strip() == "sokoban-train-0 []"


# ----------------------------------------------------------------------------------------------------
# The real thing: pip install into a fresh venv, then the CLI


def _fresh_venv_seeing_this_interpreter(venv: Path) -> str:
    """A venv whose ``python`` sees exactly this interpreter's packages, whatever interpreter runs the tests.

    ``venv --system-site-packages`` would expose the *base* Python's site-packages instead (from inside a
    virtualenv: not the virtualenv's, where seedbench's dependencies and build tools are), so the venv is
    made plain, without pip, and a ``.pth`` file adds this interpreter's path entries after the venv's own
    site-packages (where pip installs the plugin). Its ``python -m pip`` is this
    interpreter's pip, building with this interpreter's setuptools."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                         text=True, check=True).stdout.strip()
    entries = [os.path.abspath(entry) for entry in sys.path if entry and os.path.isdir(entry)]
    # addsitedir, not bare paths: the .pth files there run too (an editable install's import hook)
    (Path(own) / "seedbench_test_parent.pth").write_text(f"import site; list(map(site.addsitedir, {entries!r}))\n")
    return python


def _check_setuptools_builds_wheels(python: str) -> None:
    """pip builds the example with the interpreter's setuptools (offline: no build isolation); setuptools
    builds wheels on its own from 70.1, older ones need the `wheel` package. The `test` extra pins it."""
    probe = ("import importlib.util, setuptools; version = tuple(int(p) for p in setuptools.__version__.split('.')[:2]); "
             "print(version >= (70, 1) or importlib.util.find_spec('wheel') is not None)")
    run = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    assert run.stdout.strip() == "True", (
        f"{sys.executable} cannot build the example plugin offline: it needs setuptools>=70.1 (or the `wheel` "
        f"package); install the test extra: pip install -e '.[test]'. {run.stdout}{run.stderr}")


def _pip_install(python: str, project: Path) -> None:
    run = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                          str(project)], timeout=300, capture_output=True, text=True)
    assert run.returncode == 0, f"pip install of the example plugin failed:\n{run.stdout}\n{run.stderr}"


def test_the_test_venv_sees_this_interpreters_packages_not_the_base_pythons(tmp_path):
    python = _fresh_venv_seeing_this_interpreter(tmp_path / "venv")
    code = "import sys, pytest, gymnasium; print(sys.prefix); print(pytest.__file__); print(gymnasium.__file__)"
    prefix, pytest_file, gymnasium_file = subprocess.run([python, "-c", code], capture_output=True, text=True,
                                                         check=True).stdout.split()
    import gymnasium

    assert prefix == str(tmp_path / "venv")
    assert (pytest_file, gymnasium_file) == (pytest.__file__, gymnasium.__file__)


@pytest.mark.slow
def test_example_plugin_in_a_fresh_venv_lists_checks_evaluates_and_trains(tmp_path):
    """47 s on the shared 2-core CPU box (60 s under load): venv + pip ~5 s, the rest is five CLI processes."""
    start = time.perf_counter()
    venv = tmp_path / "venv"
    python = _fresh_venv_seeing_this_interpreter(venv)
    _check_setuptools_builds_wheels(python)
    project = tmp_path / "guess-env"  # a copy: pip builds in place, the source tree stays clean
    project.mkdir()
    for name in ("pyproject.toml", "guess_env.py"):
        (project / name).write_text((EXAMPLE / name).read_text())
    _pip_install(python, project)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SEEDBENCH_PROGRESS": "0"}
    env.pop("SEEDBENCH_ALFWORLD_DATA", None)

    def seedbench(*args: str, timeout: int = 300) -> str:
        run = subprocess.run([python, "-m", "seedbench", *args], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=timeout)
        assert run.returncode == 0, run.stderr
        assert "skipped" not in run.stderr, run.stderr
        return run.stdout

    where = subprocess.run([python, "-c", "import seedbench, guess_env; print(seedbench.__file__, guess_env.__file__)"],
                           capture_output=True, text=True, env=env, check=True).stdout.split()
    assert where[0] == str(ROOT / "src" / "seedbench" / "__init__.py") and str(venv) in where[1]

    assert re.search(r"^guess +seedbench/Guess-v0 +find a hidden number", seedbench("envs"), re.MULTILINE)
    from seedbench import __version__

    assert seedbench("--version") == f"seedbench {__version__}\n"
    checked = seedbench("check-env", "guess")
    assert "(distribution guess-env 0.1.0)" in checked.splitlines()[0]
    assert checked.splitlines()[-1] == "seedbench: check-env guess: passed"
    evaluated = seedbench("eval", "--agent", "scripted", "--env", "guess", "--episodes", "6")
    assert "scripted on guess (test, 6 tasks, iteration 0): success micro=1.000 macro=1.000" in evaluated
    out = tmp_path / "run"
    trained = seedbench("run", "--model", "tiny", "--env", "guess", "--agent", "grpo", "--iterations", "2",
                        "--output", str(out), "--set", "rollout.group_size=2", "rollout.tasks_per_batch=1",
                        "eval.num_tasks=2", "rollout.max_new_tokens=8")
    assert f"run complete: {out}" in trained
    metrics = (out / "metrics.jsonl").read_text().splitlines()
    assert len(metrics) == 2
    made = subprocess.run([python, "-c", "import gymnasium, seedbench.registry as r; r.ensure_envs_loaded(); "
                                         "print(gymnasium.make('seedbench/Guess-v0').reset(seed=1)[1]['task_id'])"],
                          capture_output=True, text=True, env=env, check=True).stdout
    assert made.strip() == "guess-2"
    print(f"venv plugin test: {time.perf_counter() - start:.1f} s")
