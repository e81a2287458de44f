"""scripts/run_facts.py on a hand-written run directory: the lines a results page quotes."""

import json
from pathlib import Path


def _write(path: Path, records: list[dict], cut_last: bool = False) -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(text + ('{"iteration": 9, "spl' if cut_last else ""))


def test_endings_skills_and_curves_of_a_run(tmp_path, script_module):
    facts = script_module("run_facts")
    _write(tmp_path / "eval.jsonl", [{"iteration": 0, "split": "test", "success_micro": 0.5},
                                     {"iteration": 2, "split": "test", "success_micro": 0.25}], cut_last=True)
    _write(tmp_path / "metrics.jsonl", [{"iteration": 1, "rollout/success": 0.75, "train/advantage_abs_mean": 0.0}])
    _write(tmp_path / "skills.jsonl", [{"parsed": True, "skill": "Go right."}, {"parsed": True, "skill": "go  RIGHT."},
                                       {"parsed": True, "skill": "Avoid (1, 0)."}, {"parsed": False, "skill": None}])
    _write(tmp_path / "episodes.jsonl", [
        {"phase": "eval/test", "iteration": 2, "won": True, "truncated": False, "num_invalid": 0},
        {"phase": "eval/test", "iteration": 2, "won": False, "truncated": True, "num_invalid": 3},
        {"phase": "eval/test", "iteration": 2, "won": False, "truncated": False, "num_invalid": 1},
        {"phase": "train", "iteration": 1, "won": False, "truncated": True, "num_invalid": 0},  # not an evaluation
    ])
    (tmp_path / "summary.json").write_text(json.dumps({"complete": True, "timing": {"mean_iteration_s": 12.5}}))
    lines = facts.describe(tmp_path)
    assert lines[1] == "test: 0.500 (it 0) -> 0.250 (it 2)"
    assert "rollout/success: 0.75" in lines and "train/advantage_abs_mean: 0" in lines
    assert "skills: 3 parsed of 4, 2 distinct" in lines
    assert "eval/test @ 2: invalid answers 4, lost 1, step cap 1, won 1" in lines
    assert lines[-1] == "complete: True, mean iteration 12.5 s"


def test_an_archived_run_without_episodes_has_no_endings(tmp_path, script_module):
    facts = script_module("run_facts")
    _write(tmp_path / "eval.jsonl", [{"iteration": 0, "split": "test", "success_micro": 1.0}])
    lines = facts.describe(tmp_path)
    assert not any(" @ " in line for line in lines)
    assert lines[-1] == "complete: None, mean iteration None s"


def test_an_archived_run_counts_its_endings_from_eval_episodes(tmp_path, script_module):
    """`seedbench report --archive` keeps the held-out episodes cut to how they ended; run_facts reads them."""
    facts = script_module("run_facts")
    _write(tmp_path / "eval.jsonl", [{"iteration": 0, "split": "test", "success_micro": 0.5}])
    _write(tmp_path / "eval_episodes.jsonl", [
        {"phase": "eval/test", "iteration": 0, "won": True, "truncated": False, "num_invalid": 0, "steps": 6},
        {"phase": "eval/test", "iteration": 0, "won": False, "truncated": False, "num_invalid": 2, "steps": 3}])
    assert "eval/test @ 0: invalid answers 2, lost 1, won 1" in facts.describe(tmp_path)
