"""A run directory from elsewhere cannot run code: every checkpoint file is read as tensors and plain data
(``weights_only=True``), a planted pickle payload is refused with one line before it runs, and run
directories whose ``state.pt`` keeps numpy's RNG key as an array still resume bit-exact."""

import json
import os
import warnings
from pathlib import Path

import pytest
import torch

from seedbench.cli import main
from seedbench.jsonio import RunFileWarning, read_jsonl
from seedbench.training.checkpoint_files import UnsafeCheckpointError
from seedbench.training.rng import plain_rng_state, rng_from_plain, rng_state
from seedbench.training.run_state import load_run_state
from seedbench.training.trainer import Trainer, train
from tests.test_run_state import Killed, _config, _logs


class Payload:
    """What a hostile run directory plants: unpickling it runs a shell command that leaves `marker`."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _plant(checkpoint: Path, name: str, obj) -> None:
    """Write `obj` as `checkpoint/name` and fix its size in COMPLETE, as an attacker would."""
    torch.save(obj, checkpoint / name)
    complete = json.loads((checkpoint / "COMPLETE").read_text())
    complete["files"][name] = (checkpoint / name).stat().st_size
    (checkpoint / "COMPLETE").write_text(json.dumps(complete))


def test_a_state_file_with_a_payload_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "state.pt"
    torch.save({"counters": {"iteration": 1}, "rng": Payload(marker)}, path)
    with pytest.raises(UnsafeCheckpointError, match=rf"^{path} names posix.system, which a seedbench checkpoint "
                                                    r"never holds .*it is not loaded"):
        load_run_state(path)
    assert not marker.exists()


def test_the_rng_streams_are_saved_as_plain_data_and_restore_exactly(tmp_path):
    import random

    import numpy as np

    path = tmp_path / "state.pt"
    torch.save({"counters": {"iteration": 3}, "rng": plain_rng_state(rng_state())}, path)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(path)) == []  # nothing but plain data
    state = torch.load(path, weights_only=True)
    from seedbench.training.rng import set_rng_state

    expected = (random.random(), float(np.random.rand()), torch.rand(2).tolist())
    set_rng_state(rng_from_plain(state["rng"]))
    assert (random.random(), float(np.random.rand()), torch.rand(2).tolist()) == expected


def _cli_run(out: Path, iterations: int) -> list[str]:
    return ["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", str(iterations),
            "--output", str(out), "--resume", "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2",
            "rollout.group_size=2", "eval.num_tasks=2", "eval.splits=[test,train]", "optim.lr=0.01"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["state.pt", "model.pt", "optimizer.pt"])
def test_a_planted_payload_runs_on_neither_resume_nor_eval(tmp_path, capsys, name):
    out = tmp_path / "run"
    train(_config(out, iterations=1))
    checkpoint = out / "checkpoints" / "it_1"
    marker = tmp_path / "PWNED"
    original = torch.load(checkpoint / name, weights_only=True)
    planted = {**original, "rng": Payload(marker)} if name == "state.pt" else {"payload": Payload(marker)}
    _plant(checkpoint, name, planted)
    commands = {"resume": _cli_run(out, 2), "eval": ["eval", str(out)]}
    if name == "optimizer.pt":
        del commands["eval"]  # an evaluation loads no optimizer
    for command in commands.values():
        capsys.readouterr()
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(f"seedbench: error: {checkpoint / name} names posix.system")
        assert not any("Traceback" in line for line in err)
        assert not marker.exists()
    assert (checkpoint / "COMPLETE").exists()  # refused, not set aside as damaged: nothing falls back past it


def _write_legacy_state(checkpoint: Path) -> None:
    """Rewrite `checkpoint`'s state.pt as seedbench wrote it before the plain-data layout: numpy's RNG key
    as an array (and python's stream as tuples), COMPLETE updated to its size."""
    state = torch.load(checkpoint / "state.pt", weights_only=True)
    state["rng"] = rng_from_plain(state["rng"])
    _plant(checkpoint, "state.pt", state)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(checkpoint / "state.pt"))  # numpy inside


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["plain", "legacy"])
def test_a_killed_run_resumes_bit_exact_from_either_state_layout(tmp_path, monkeypatch, layout):
    """Killed at the start of iteration 2 (after checkpoint 1), resumed: the records and the final weights
    equal those of the uninterrupted run, from today's state.pt and from one that holds numpy arrays."""
    train(_config(tmp_path / "whole", iterations=2, save_final_model=True))
    real_iteration = Trainer.iteration

    def iteration(self, number):
        if number == 2 and not iteration.resumed:
            raise Killed
        return real_iteration(self, number)

    iteration.resumed = False
    monkeypatch.setattr(Trainer, "iteration", iteration)
    out = tmp_path / "killed"
    with pytest.raises(Killed):
        train(_config(out, iterations=2, save_final_model=True))
    if layout == "legacy":
        _write_legacy_state(out / "checkpoints" / "it_1")
    iteration.resumed = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunFileWarning)  # the checkpoint loads, nothing is set aside
        train(_config(out, iterations=2, save_final_model=True), resume=True)
    assert _logs(out) == _logs(tmp_path / "whole")
    assert [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2]
    from safetensors.torch import load_file

    whole = load_file(tmp_path / "whole" / "final_model" / "model.safetensors")
    resumed = load_file(out / "final_model" / "model.safetensors")
    assert whole.keys() == resumed.keys() and all(torch.equal(whole[k], resumed[k]) for k in whole)
    saved = torch.load(out / "checkpoints" / "it_2" / "state.pt", weights_only=True)  # written plain again
    assert isinstance(saved["rng"]["numpy"][1], list)
