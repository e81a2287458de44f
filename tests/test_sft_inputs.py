"""`seedbench sft-policy` and `sft-analyzer` check their input before anything loads: a checkpoint
fine-tuned on another env is refused as `seedbench run` refuses it, epochs must be finite, and an
``--output`` that names a file is one line."""

from __future__ import annotations

import json

import pytest

from seedbench.agents.seed import stage1
from seedbench.training import warm_start
from seedbench.training.origin import ANALYZER_SFT_MARKER, WARM_START_MARKER


@pytest.fixture
def frozenlake_checkpoint(tmp_path):
    """A checkpoint directory whose provenance says `seedbench sft-policy` made it on frozenlake."""
    model = tmp_path / "warm" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    (model / WARM_START_MARKER).write_text(json.dumps({"env": "frozenlake"}))
    return model


COMMANDS = {
    "sft-policy": (warm_start.main, []),
    "sft-analyzer": (stage1.main, ["--annotator", "hindsight"]),
}


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_checkpoint_of_another_env_is_refused_unless_overridden(command, frozenlake_checkpoint, tmp_path, capsys,
                                                                   monkeypatch):
    main, extra = COMMANDS[command]
    out = tmp_path / "out"
    argv = ["--env", "sokoban", "--model", str(frozenlake_checkpoint), "--output", str(out), *extra]
    assert main(argv) == 2
    err = _error(capsys)
    assert "was fine-tuned by `seedbench sft-policy` on env 'frozenlake', not 'sokoban'" in err
    assert "model.allow_other_env=true" in err and not out.exists()

    class Loaded(Exception):
        """Raised where the model would load: the checks before it all passed."""

    def stop(*args, **kwargs):
        raise Loaded

    monkeypatch.setattr(warm_start, "load_policy", stop)
    monkeypatch.setattr(stage1, "load_policy", stop)
    with pytest.raises(Loaded):
        main([*argv, "--set", "model.allow_other_env=true"])
    assert not any(out.glob("model"))


def test_an_analyzer_checkpoint_of_another_env_is_refused_too(tmp_path, capsys):
    model = tmp_path / "stage1" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 2048}))
    (model / ANALYZER_SFT_MARKER).write_text(json.dumps({"env": "frozenlake"}))
    assert stage1.main(["--env", "sokoban", "--model", str(model), "--annotator", "hindsight",
                        "--output", str(tmp_path / "out")]) == 2
    assert "fine-tuned by `seedbench sft-analyzer` on env 'frozenlake'" in _error(capsys)


@pytest.mark.parametrize("epochs", ["inf", "nan", "-1", "0"])
def test_sft_policy_epochs_must_be_positive_and_finite(epochs, capsys):
    assert warm_start.main(["--env", "frozenlake", "--model", "tiny", "--epochs", epochs]) == 2
    assert _error(capsys) == f"seedbench: error: --epochs must be a positive finite number, got {float(epochs)}"


def test_sft_analyzer_epochs_must_be_finite(capsys):
    assert stage1.main(["--env", "frozenlake", "--model", "tiny", "--annotator", "hindsight", "--epochs", "inf"]) == 2
    assert "epochs: inf is not a finite number" in _error(capsys)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_that_is_a_file_is_one_line(command, tmp_path, capsys):
    main, extra = COMMANDS[command]
    file = tmp_path / "taken"
    file.write_text("not a directory")
    assert main(["--env", "frozenlake", "--model", "tiny", "--output", str(file), *extra]) == 2
    assert _error(capsys) == f"seedbench: error: --output: {file} is a file, not a directory; choose another --output"
    assert main(["--env", "frozenlake", "--model", "tiny", "--output", str(file / "sub"), *extra]) == 2
    assert f"lies under the file {file}" in _error(capsys)
    assert file.read_text() == "not a directory"
