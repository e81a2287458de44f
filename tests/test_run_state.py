"""Nothing is lost when a process dies or the disk fills: whole appends, evaluations committed by their
record, damaged lines and summaries set aside with a warning, checkpoints saved atomically and a damaged
one replaced by the one before it. Runs use the tiny model on the `choice` env."""

import errno
import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
import torch

from seedbench import jsonio
from seedbench.config import build_config
from seedbench.jsonio import DiskFullError, RunFileWarning, append_jsonl, read_jsonl
from seedbench.training import rundir as rundir_module
from seedbench.training import run_state as run_state_module
from seedbench.training.checkpoint_files import save_torch_atomic
from seedbench.training.resources import ResourceMeter
from seedbench.training.rundir import RunDir
from seedbench.training.trainer import Trainer, train

SPLITS = ["test", "train"]


def _config(out: Path, iterations: int = 2, **over):
    values = {"env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": iterations,
              "output": str(out), "save_every": 1, "keep_checkpoints": 2, "save_final_model": False,
              "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2},
              "optim": {"lr": 0.01}, "eval": {"num_tasks": 2, "splits": SPLITS, "temperature": 1.0}, **over}
    return build_config(overrides=values)


# ----------------------------------------------------------------------------------------------------
# appends on a full disk


def test_a_short_write_on_a_full_disk_leaves_the_file_as_it_was_and_says_so(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, {"iteration": 1})
    before = path.read_bytes()
    real_write = os.write

    def full_disk(fd, data):  # the device takes 5 bytes, then has no space left
        if len(data) > 5:
            return real_write(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonio.os, "write", full_disk)
    with pytest.raises(DiskFullError, match=f"no space left on device while writing {path}"):
        append_jsonl(path, {"iteration": 2, "loss": 0.5})
    assert path.read_bytes() == before  # cut back: no torn line for the next record to be glued to
    monkeypatch.setattr(jsonio.os, "write", real_write)
    append_jsonl(path, {"iteration": 3})
    assert [r["iteration"] for r in read_jsonl(path)] == [1, 3]


def test_an_append_after_a_torn_last_line_moves_the_tail_aside_first(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"iteration": 1}\n{"iteration": 2, "ph')  # killed mid-write
    with pytest.warns(RunFileWarning, match="last line was torn"):
        append_jsonl(path, {"iteration": 3})
    assert path.read_text() == '{"iteration": 1}\n{"iteration": 3}\n'
    assert (tmp_path / "episodes.jsonl.corrupt-1").read_text() == '{"iteration": 2, "ph'


# ----------------------------------------------------------------------------------------------------
# damaged lines and summaries


def test_a_corrupt_line_dropped_on_resume_is_named_and_kept(tmp_path):
    run = RunDir(tmp_path)
    lines = [json.dumps({"iteration": i}) for i in range(1, 7)]
    lines[3] = lines[3][:7] + "\x00\x00"  # iteration 4's line, damaged in the middle of the file
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(RunFileWarning, match=r"metrics.jsonl line 4: not a JSON object"):
        assert [r["iteration"] for r in run.records("metrics.jsonl")] == [1, 2, 3, 5, 6]
    with pytest.warns(RunFileWarning, match=r"metrics.jsonl: dropped 1 torn or corrupt line\(s\) \(line 4\); "
                                            r"kept in metrics.jsonl.corrupt-1"):
        run.truncate_logs_after(5)
    assert (tmp_path / "metrics.jsonl.corrupt-1").read_text() == lines[3] + "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten file reads clean
        assert [r["iteration"] for r in run.records("metrics.jsonl")] == [1, 2, 3, 5]


def test_a_damaged_summary_is_set_aside_and_its_resource_totals_recovered_or_marked_lost(tmp_path):
    run = RunDir(tmp_path)
    summary = {"complete": False, "resources": {"cpu_seconds": 120.5, "gpu_seconds": 0.0, "wall_seconds": 90.0,
                                                "processes": 1, "gpus": 0, "sessions": 2}, "seed": 0, "zz": "x" * 50}
    text = json.dumps(summary, indent=2, sort_keys=True)
    (tmp_path / "summary.json").write_text(text[: text.index('"zz"') + 10])  # torn after the resources
    with pytest.warns(RunFileWarning, match="summary.json: not valid JSON .*moved to summary.json.corrupt-1, "
                                            "resource totals recovered"):
        recovered = run.read_summary()
    assert recovered["resources"]["cpu_seconds"] == 120.5 and recovered["resources"]["sessions"] == 2
    assert not (tmp_path / "summary.json").exists() and (tmp_path / "summary.json.corrupt-1").exists()
    totals = ResourceMeter(recovered["resources"]).totals([{"cpu_seconds": 1.0, "gpu_seconds": 0.0, "wall_seconds": 2.0}])
    assert totals["cpu_seconds"] == 121.5 and totals["sessions"] == 3 and "incomplete" not in totals

    (tmp_path / "summary.json").write_text("")  # a power cut: nothing to recover
    with pytest.warns(RunFileWarning, match="corrupt-2, resource totals of earlier sessions are lost"):
        lost = run.read_summary()
    totals = ResourceMeter(lost["resources"]).totals([{"cpu_seconds": 1.0, "gpu_seconds": 0.0, "wall_seconds": 2.0}])
    assert totals["cpu_seconds"] == 1.0 and "summary.json.corrupt-2" in totals["incomplete"]
    again = ResourceMeter(totals).totals([{"cpu_seconds": 1.0, "gpu_seconds": 0.0, "wall_seconds": 2.0}])
    assert again["incomplete"] == totals["incomplete"]  # later sessions keep saying it


def test_a_resume_before_the_first_checkpoint_keeps_a_damaged_summarys_resource_totals(tmp_path):
    """The resume checks that look at summary.json only read it: the damaged file is set aside once, by
    the trainer, which carries its recovered totals on."""
    out = tmp_path / "run"
    train(_config(out, iterations=1))
    shutil.rmtree(out / "checkpoints")  # as if killed before its first checkpoint
    summary = json.loads((out / "summary.json").read_text())
    summary["resources"].update(cpu_seconds=1000.0, sessions=4)
    text = json.dumps(summary, indent=2, sort_keys=True)
    (out / "summary.json").write_text(text[: text.index('"seedbench_version"') + 10])  # torn after the resources
    with pytest.warns(RunFileWarning, match="resource totals recovered"):
        train(_config(out, iterations=1), resume=True)
    resources = json.loads((out / "summary.json").read_text())["resources"]
    assert resources["cpu_seconds"] > 1000.0 and resources["sessions"] == 5 and "incomplete" not in resources


def test_a_session_killed_after_a_checkpoint_keeps_its_cost_in_the_resource_totals(tmp_path, monkeypatch):
    """Each checkpoint writes the resource totals: the work of a session killed between checkpoints counts
    up to its last one. The CPU clock is a fake that each finished iteration moves by 50 s."""
    from seedbench.training import resources as resources_module

    clock = [0.0]
    monkeypatch.setattr(resources_module, "process_cpu_seconds", lambda: clock[0])
    real_iteration = Trainer.iteration

    def iteration(self, number):
        if number == 2 and not getattr(iteration, "resumed", False):
            raise Killed  # the first session dies at the start of iteration 2, after checkpoint 1
        result = real_iteration(self, number)
        clock[0] += 50.0
        return result

    monkeypatch.setattr(Trainer, "iteration", iteration)
    out = tmp_path / "run"
    with pytest.raises(Killed):
        train(_config(out, iterations=2))
    killed = json.loads((out / "summary.json").read_text())
    assert killed["iterations_done"] == 1 and not killed["complete"]
    assert killed["resources"]["cpu_seconds"] == 50.0 and killed["resources"]["sessions"] == 1

    iteration.resumed = True
    train(_config(out, iterations=2), resume=True)
    done = json.loads((out / "summary.json").read_text())
    assert done["complete"] and done["iterations_done"] == 2
    assert done["resources"]["cpu_seconds"] == 100.0 and done["resources"]["sessions"] == 2


# ----------------------------------------------------------------------------------------------------
# kills at every write of a run: the resumed run's records equal the uninterrupted run's


class Killed(BaseException):
    """Stands for SIGKILL: raised at a write, after which the run directory is left as it is."""


VOLATILE = ("time/", "_seconds", "_s")
REAL_WRITES = (rundir_module.append_jsonl, run_state_module.save_torch_atomic, rundir_module.write_json_atomic)


def _stable(record: dict) -> dict:
    return {k: v for k, v in record.items() if not any(k.startswith(p) or k.endswith(p) for p in VOLATILE)}


def _logs(out: Path) -> dict[str, list[dict]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunFileWarning)
        return {name: [_stable(r) for r in read_jsonl(out / name)]
                for name in ("metrics.jsonl", "eval.jsonl", "episodes.jsonl")}


def _kill_at(monkeypatch, kill_at: int | None, counter: list[int]):
    """Count every write of the run (log appends, checkpoint files, summary and COMPLETE writes); at write
    number `kill_at` die: an append dies half-way through its line (a torn line), any other write before
    it starts."""
    real_append, real_save, real_json = REAL_WRITES

    def tick():
        counter[0] += 1
        return counter[0] == kill_at

    def append(path, record):
        if tick():
            line = json.dumps(record).encode()
            with open(path, "ab") as handle:
                handle.write(line[: len(line) // 2])
            raise Killed
        real_append(path, record)

    def save(obj, path):
        if tick():
            raise Killed
        real_save(obj, path)

    def write_json(path, data):
        if tick():
            raise Killed
        real_json(path, data)

    monkeypatch.setattr(rundir_module, "append_jsonl", append)
    monkeypatch.setattr(run_state_module, "save_torch_atomic", save)
    monkeypatch.setattr(rundir_module, "write_json_atomic", write_json)


@pytest.mark.slow
def test_a_kill_at_any_write_resumes_to_the_records_of_an_uninterrupted_run(tmp_path, monkeypatch, capsys):
    """Every write of a 1-iteration run with two eval splits is a kill point, including those between an
    evaluation's episodes and its record. After each kill, one resume must give exactly the records of the
    uninterrupted run, each split's evaluation once with all its episodes, and a complete summary."""
    counter = [0]
    _kill_at(monkeypatch, None, counter)
    train(_config(tmp_path / "whole", iterations=1))
    writes = counter[0]
    expected = _logs(tmp_path / "whole")
    assert [(r["iteration"], r["split"]) for r in expected["eval.jsonl"]] == [(0, "test"), (0, "train"),
                                                                            (1, "test"), (1, "train")]
    assert len([e for e in expected["episodes.jsonl"] if e["phase"].startswith("eval/")]) == 4 * 2

    kills, compared, differences = 0, 0, []
    for kill_at in range(1, writes + 1):
        out = tmp_path / f"kill{kill_at}"
        counter[0] = 0
        _kill_at(monkeypatch, kill_at, counter)
        with pytest.raises(Killed):
            train(_config(out, iterations=1))
        kills += 1
        _kill_at(monkeypatch, None, counter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunFileWarning)  # the torn line the kill left is set aside
            train(_config(out, iterations=1), resume=True)
        got = _logs(out)
        for name, records in expected.items():
            compared += len(records)
            if got[name] != records:
                differences.append((kill_at, name, len(got[name]), len(records)))
        summary = json.loads((out / "summary.json").read_text())
        if not (summary["complete"] and set(summary["final"]) >= {f"eval/{s}/success_micro" for s in SPLITS}):
            differences.append((kill_at, "summary.json", summary.get("complete"), sorted(summary["final"])))
    with capsys.disabled():
        print(f"\nkill/resume: {writes} writes, {kills} kills tried, {compared} records compared, "
              f"{len(differences)} differences")
    assert kills == writes >= 20 and differences == []


# ----------------------------------------------------------------------------------------------------
# checkpoints


def test_a_truncated_checkpoint_file_falls_back_to_the_previous_checkpoint(tmp_path):
    out = tmp_path / "run"
    train(_config(out, iterations=2))
    model = out / "checkpoints" / "it_2" / "model.pt"
    model.write_bytes(model.read_bytes()[:1000])
    with pytest.warns(RunFileWarning, match=f"checkpoint it_2 is not usable: {model} is truncated"):
        train(_config(out, iterations=3), resume=True)
    assert [r["iteration"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3]
    assert json.loads((out / "summary.json").read_text())["iterations_done"] == 3

    # a marker without file sizes: the damaged file is found when torch reads it
    state = out / "checkpoints" / "it_3" / "state.pt"
    (out / "checkpoints" / "it_3" / "COMPLETE").write_text("1796433693.19")
    state.write_bytes(state.read_bytes()[:200])
    with pytest.warns(RunFileWarning, match=f"checkpoint it_3 is not usable: {state} is truncated or corrupt"):
        trainer = Trainer(_config(out, iterations=3), resume=True)
    try:
        assert trainer.counters["iteration"] == 2
    finally:
        trainer.close()


def test_no_loadable_checkpoint_is_a_one_line_error_naming_the_fix(tmp_path, capsys):
    from seedbench.cli import main

    out = tmp_path / "run"
    train(_config(out, iterations=1))
    optimizer = out / "checkpoints" / "it_1" / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[:100])
    args = ["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "2", "--output",
            str(out), "--resume", "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2",
            "rollout.group_size=2", "eval.num_tasks=2", "eval.splits=[test,train]"]
    with pytest.warns(RunFileWarning, match=f"{optimizer} is truncated"):
        assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("seedbench: error: ") and "no complete checkpoint can be loaded" in err[-1]
    assert not any("Traceback" in line for line in err)
    # the advice is a command that works: the run's own config, started afresh in a new directory
    advice = err[-1].split("start the run again in a new directory: ")[1].split()
    assert advice[:4] == ["seedbench", "run", "--config", str(out / "config.yaml")] and advice[4] == "--output"
    fresh = tmp_path / "again"
    assert main([*advice[1:5], str(fresh)]) == 0
    # the config the resume asked for (2 iterations), with the run's budgets (2 tasks x 2 rollouts)
    assert [r["trajectories"] for r in read_jsonl(fresh / "metrics.jsonl")] == [4, 8]


def test_a_full_disk_while_saving_a_checkpoint_names_the_file(tmp_path, monkeypatch):
    target = tmp_path / "model.pt"
    (tmp_path / "model.pt.tmp").symlink_to("/dev/full")  # every write to it fails with ENOSPC
    with pytest.raises(DiskFullError, match=f"^no space left on device while saving {target};"):
        save_torch_atomic({"w": torch.zeros(10_000)}, target)
    assert not target.exists() and not os.path.lexists(tmp_path / "model.pt.tmp")

    def short_write(obj, handle):  # how torch reports a full disk when it writes the file itself
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 4160 vs 4054")

    monkeypatch.setattr(torch, "save", short_write)
    with pytest.raises(DiskFullError, match=f"no space left on device while saving {target}"):
        save_torch_atomic({"w": torch.zeros(10)}, target)
    save = torch.serialization.save
    monkeypatch.setattr(torch, "save", save)
    save_torch_atomic({"w": torch.ones(3)}, target)
    assert torch.equal(torch.load(target)["w"], torch.ones(3)) and not (tmp_path / "model.pt.tmp").exists()


def test_a_lora_checkpoint_keeps_the_adapters_only_and_resumes_to_the_uninterrupted_run(tmp_path, monkeypatch):
    """The frozen base weights are the starting model's: a LoRA run's model.pt holds the adapters alone, and a
    run killed after its first checkpoint resumes to the records and weights of a run that was never stopped."""
    lora = {"model": {"name": "tiny", "lora_rank": 4}, "keep_final_checkpoint": True}
    train(_config(tmp_path / "whole", iterations=2, **lora))
    real_iteration = Trainer.iteration

    def die_at_the_second(self, iteration):
        if iteration == 2:
            raise Killed
        return real_iteration(self, iteration)

    monkeypatch.setattr(Trainer, "iteration", die_at_the_second)
    with pytest.raises(Killed):
        train(_config(tmp_path / "split", iterations=2, **lora))
    saved = torch.load(tmp_path / "split" / "checkpoints" / "it_1" / "model.pt", weights_only=True)
    assert saved and all("lora_" in name for name in saved)
    monkeypatch.setattr(Trainer, "iteration", real_iteration)
    train(_config(tmp_path / "split", iterations=2, **lora), resume=True)
    assert _logs(tmp_path / "split") == _logs(tmp_path / "whole")
    whole = torch.load(tmp_path / "whole" / "checkpoints" / "it_2" / "model.pt", weights_only=True)
    split = torch.load(tmp_path / "split" / "checkpoints" / "it_2" / "model.pt", weights_only=True)
    assert whole.keys() == split.keys() and all(torch.equal(whole[k], split[k]) for k in whole)


def test_a_lora_checkpoint_without_an_adapter_tensor_is_not_loaded(tmp_path):
    lora = {"model": {"name": "tiny", "lora_rank": 4}}
    train(_config(tmp_path / "run", iterations=1, **lora))
    path = tmp_path / "run" / "checkpoints" / "it_1" / "model.pt"
    state = torch.load(path, weights_only=True)
    state.pop(sorted(state)[0])
    from seedbench.models.policy import load_policy
    from seedbench.training.checkpoint_files import CheckpointFileError
    from seedbench.training.run_state import with_frozen_weights

    policy = load_policy(_config(tmp_path / "x", **lora).model, need_reference=False, seed=0)
    with pytest.raises(CheckpointFileError, match="lacks 1 of the LoRA adapters' tensors"):
        with_frozen_weights(policy.model, state)
