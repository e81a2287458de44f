"""Every YAML the project reads (run config, --config, --set, experiment specs, a run's saved config on
resume or eval) gives one line naming the file when it cannot be read, and a report leaves out a run whose
config.yaml is damaged instead of failing for every run."""

from __future__ import annotations

import pytest

import seedbench.report
from seedbench.cli import main as cli_main
from seedbench.jsonio import RunFileWarning
from seedbench.report import synthetic
from seedbench.report.data import read_runs
from seedbench.training import experiments as ex
from seedbench.yamlio import YAMLFileError, parse_yaml, read_yaml

DEEP = "[" * 50_000


@pytest.mark.parametrize("text, message", [
    (DEEP, "nested too deeply to read"),
    ("a: [1, 2", "not valid YAML"),
    ("x: " + "9" * 5000, "not valid YAML"),
])
def test_unreadable_yaml_is_one_error_naming_its_source(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(YAMLFileError) as err:
        read_yaml(path)
    assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)
    (tmp_path / "latin1.yaml").write_bytes(b"env: \xff\n")
    with pytest.raises(YAMLFileError, match="latin1.yaml: not valid YAML"):
        read_yaml(tmp_path / "latin1.yaml")
    assert parse_yaml("a: 1", "x") == {"a": 1}


def _one_line(capsys, stream: str = "err") -> str:
    text = getattr(capsys.readouterr(), stream).strip()
    assert text.count("\n") == 0, text
    return text


def test_a_deep_recipe_or_set_value_is_one_line(tmp_path, capsys):
    (tmp_path / "deep.yaml").write_text(DEEP)
    assert cli_main(["run", "--config", str(tmp_path / "deep.yaml"), "--output", str(tmp_path / "r")]) == 2
    assert _one_line(capsys) == f"seedbench: error: {tmp_path / 'deep.yaml'}: nested too deeply to read; a config is a mapping of plain values"
    assert cli_main(["run", "--env", "choice", "--model", "tiny", "--set", f"env_kwargs.x={DEEP}"]) == 2
    assert "seedbench: error: --set env_kwargs.x: nested too deeply to read" in _one_line(capsys)
    assert not (tmp_path / "r").exists()


def test_a_run_whose_config_yaml_is_deep_is_one_line_on_resume_and_eval(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(DEEP)
    assert cli_main(["run", "--resume", str(run)]) == 2
    assert f"{run / 'config.yaml'}: nested too deeply to read" in _one_line(capsys)
    (run / "final_model").mkdir()
    (run / "final_model" / "config.json").write_text("{}")  # what eval loads: the run's final weights
    assert cli_main(["eval", str(run)]) == 2
    assert f"{run / 'config.yaml'}: nested too deeply to read" in _one_line(capsys)


def test_a_deep_experiment_spec_is_one_line(tmp_path, capsys):
    (tmp_path / "spec.yaml").write_text(DEEP)
    assert ex.main([str(tmp_path / "spec.yaml")]) == 2
    assert f"{tmp_path / 'spec.yaml'}: nested too deeply to read" in _one_line(capsys, "out")
    assert ex.main(["--agent", "grpo", "--env", "choice", "--iterations", "1", "--set", f"x={DEEP}"]) == 2
    assert "--set x: nested too deeply to read" in _one_line(capsys, "out")


def test_report_leaves_out_a_run_with_a_damaged_config_and_reports_the_rest(tmp_path):
    for seed in range(2):
        synthetic.write_run(tmp_path / "runs" / f"choice__grpo__s{seed}", env="choice", agent="grpo", seed=seed,
                            iterations=3)
    bad = tmp_path / "runs" / "choice__grpo__s1" / "config.yaml"
    bad.write_text(DEEP)
    with pytest.warns(RunFileWarning, match=f"run choice__grpo__s1 left out: {bad}: nested too deeply to read"):
        runs = read_runs(tmp_path / "runs")
    assert [r.run for r in runs] == ["choice__grpo__s0"]
    with pytest.warns(RunFileWarning):
        assert seedbench.report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    assert "choice__grpo__s0" in (tmp_path / "o" / "results.csv").read_text()
