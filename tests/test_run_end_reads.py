"""The end of a run reads eval.jsonl once: summary.json's final metrics, task ids and before/after
comparison, and the closing console line, all come from that one read."""

import json

import pytest

from seedbench.cli import main
from seedbench.training import rundir
from seedbench.training.evaluator import before_after_line

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


def test_a_finished_run_reads_eval_jsonl_once_after_its_last_evaluation(tmp_path, monkeypatch, capsys):
    events = []
    real_read, real_log = rundir.read_jsonl, rundir.RunDir.log

    def read_jsonl(path, *args, **kwargs):
        events.append(("read", path.name))
        return real_read(path, *args, **kwargs)

    def log(self, name, record):
        events.append(("write", name))
        real_log(self, name, record)

    monkeypatch.setattr(rundir, "read_jsonl", read_jsonl)
    monkeypatch.setattr(rundir.RunDir, "log", log)
    out = tmp_path / "run"
    assert main(["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "1",
                 "--output", str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2",
                 "rollout.group_size=2", "eval.num_tasks=4", "eval.temperature=1.0"]) == 0
    last_write = max(i for i, event in enumerate(events) if event == ("write", "eval.jsonl"))
    assert events[last_write + 1:].count(("read", "eval.jsonl")) == 1
    summary = json.loads((out / "summary.json").read_text())
    (comparison,) = summary["before_after"]
    assert comparison["iterations"] == [0, 1] and comparison["tasks"] == 4
    assert before_after_line(comparison) in capsys.readouterr().out.splitlines()  # the closing line
