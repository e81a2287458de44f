"""A resumed run keeps its records straight when its config or its eval log changed: a split that the resume
no longer evaluates stays listed, and a damaged record of an evaluation whose weights are gone is reported,
never replaced by an evaluation of other weights. Runs use the tiny model on the `choice` env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seedbench.config import build_config
from seedbench.jsonio import RunFileWarning, read_jsonl
from seedbench.training.trainer import train


def _config(out: Path, iterations: int, splits: list[str]):
    return build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": iterations, "output": str(out),
        "save_every": 1, "save_final_model": False,
        "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2},
        "eval": {"num_tasks": 2, "splits": splits, "temperature": 1.0}})


def test_a_resume_that_drops_a_recorded_split_still_lists_its_tasks(tmp_path):
    out = tmp_path / "run"
    train(_config(out, 1, ["train"]))
    (out / "eval_tasks.json").unlink()  # as a run killed before its summary listed the eval tasks
    train(_config(out, 2, ["test"]), resume=True, allow_config_changes=True)
    listed = json.loads((out / "eval_tasks.json").read_text())["splits"]
    assert sorted(listed) == ["test", "train"]
    assert [t["seed"] for t in listed["train"]["tasks"]] == [0, 1]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["protocol"]["splits"] == ["test"]


def test_a_damaged_first_eval_record_keeps_its_episodes_and_is_not_evaluated_again(tmp_path, capsys):
    out = tmp_path / "run"
    train(_config(out, 1, ["test"]))
    lines = (out / "eval.jsonl").read_text().splitlines(keepends=True)
    assert json.loads(lines[0])["iteration"] == 0
    lines[0] = lines[0][:40] + "\x00\x00\n"
    (out / "eval.jsonl").write_text("".join(lines))
    episodes_before = [r for r in read_jsonl(out / "episodes.jsonl") if r["phase"] == "eval/test" and r["iteration"] == 0]
    assert len(episodes_before) == 2
    with pytest.warns(RunFileWarning, match="eval.jsonl: dropped 1 torn or corrupt line"):
        train(_config(out, 2, ["test"]), resume=True)
    episodes_after = [r for r in read_jsonl(out / "episodes.jsonl") if r["phase"] == "eval/test" and r["iteration"] == 0]
    assert episodes_after == episodes_before
    assert [r["iteration"] for r in read_jsonl(out / "eval.jsonl")] == [1, 2]
    assert "holds no record of test at iteration 0 (a split added on resume, or a record lost" in capsys.readouterr().out
