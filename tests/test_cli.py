import subprocess
import sys

import pytest

from seedbench.cli import main
from seedbench.config import ConfigError, build_config


def test_import_seedbench_is_light():
    code = ("import sys, time; t = time.perf_counter(); import seedbench, seedbench.cli, seedbench.registry; "
            "dt = time.perf_counter() - t; heavy = [m for m in ('torch', 'transformers', 'peft', 'alfworld') if m in sys.modules]; "
            "print(heavy, dt)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    heavy, seconds = out.rsplit(" ", 1)
    assert heavy == "[]"
    assert float(seconds) < 1.0


@pytest.mark.parametrize("argv, expected", [
    (["run", "--env", "nope", "--agent", "grpo"], "unknown env 'nope'; choose one of: "),
    (["run", "--env", "choice", "--agent", "nope"], "unknown agent 'nope'; choose one of: "),
    (["run", "--env", "choice", "--set", "optim.lrr=1"], "unknown config key 'optim.lrr'; valid keys: "),
    (["run", "--env", "choice", "--config", "missing.yaml"], "config file not found: missing.yaml"),
    (["run", "--env", "choice", "--set", "optim.lr=fast"], "optim.lr: expected a number"),
    (["eval", "--agent", "/no/such/dir", "--env", "choice"], "neither 'random', 'scripted', the embedded model (smollm2-135m) nor an existing"),
    (["eval", "/no/such/dir", "--env", "choice"], "neither 'random', 'scripted', the embedded model (smollm2-135m) nor an existing"),
    (["eval", "--env", "choice"], "name what to evaluate once, `seedbench eval RUN` or `seedbench eval --agent RUN`"),
    (["eval", "random", "--agent", "random", "--env", "choice"], "name what to evaluate once"),
    (["data", "nope"], "no data generator for 'nope'"),
])
def test_bad_input_is_one_line_without_traceback(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.count("\n") == 1


def test_unknown_env_lists_the_registered_envs(capsys):
    main(["run", "--env", "nope", "--agent", "grpo"])
    err = capsys.readouterr().err
    assert "choice" in err and "sokoban" in err


def test_envs_and_agents_list_everything(capsys):
    assert main(["envs"]) == 0 and main(["agents"]) == 0
    out = capsys.readouterr().out
    assert "seedbench/Sokoban-v0" in out and "grpo" in out


def test_config_precedence_defaults_yaml_flags(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("iterations: 7\noptim:\n  lr: 0.5\nrollout:\n  group_size: 3\n")
    config = build_config(recipe, {"optim": {"lr": 0.25}})
    assert config.iterations == 7 and config.rollout.group_size == 3 and config.optim.lr == 0.25
    assert config.rollout.tasks_per_batch == 2  # untouched default


def test_yaml_with_unknown_key_is_rejected(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rollout:\n  groups: 3\n")
    with pytest.raises(ConfigError, match="rollout.groups"):
        build_config(recipe)


def test_every_recipe_in_configs_is_valid():
    from pathlib import Path

    # configs/*.yaml are run recipes; *_protocol.yaml are env protocol cards, configs/experiments/ specs.
    recipes = [p for p in (Path(__file__).resolve().parent.parent / "configs").glob("*.yaml")
               if not p.name.endswith("_protocol.yaml")]
    assert recipes
    for path in recipes:
        # check_host=False: a recipe may start from a checkpoint an earlier stage writes (stage-1 model)
        build_config(path, check_host=False)


def test_eval_takes_the_embedded_base_model_by_name(monkeypatch):
    """``seedbench eval --agent smollm2-135m --env E``: the base row of a competence table, without knowing
    where the converted model lives; the config's model name is the alias, resolved as a run resolves it."""
    from seedbench.training import evaluate

    seen = {}

    def fake_evaluate(config, state, counters, run_dir):
        seen.update(model=config.model.name, env=config.env, tasks=config.eval.num_tasks, state=state)
        return [({"iteration": 0, "split": "test", "success": 0.0}, [])]

    monkeypatch.setattr(evaluate, "_evaluate_model", fake_evaluate)
    evaluate.evaluate_agent("smollm2-135m", "frozenlake", episodes=5)
    assert seen == {"model": "smollm2-135m", "env": "frozenlake", "tasks": 5, "state": None}
