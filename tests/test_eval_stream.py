"""eval.same_stream: every evaluation of a split samples from one RNG stream (common random numbers), so
weights that did not move score the same at every evaluation; by default each evaluation draws afresh."""

from __future__ import annotations

import json

import pytest

from seedbench.cli import main
from seedbench.training.rundir import read_jsonl

COUNTERS = ("iteration", "trajectories", "env_steps", "generated_tokens")


def _frozen_run(root, same_stream: bool, iterations: int = 2, extra: tuple[str, ...] = (), name: str = ""):
    """A control: two updates at lr 0 with an evaluation before, between and after them, at T 1.0."""
    out = root / f"same_stream_{same_stream}" if iterations else root.parent / f"no_updates_{same_stream}"
    out = root.parent / name if name else out
    assert main(["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", str(iterations),
                 "--output", str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2",
                 "rollout.group_size=2", "eval.num_tasks=6", "eval.temperature=1.0", "eval.every=1",
                 "optim.lr=0", "save_final_model=false", f"eval.same_stream={str(same_stream).lower()}", *extra]) == 0
    outputs: dict[int, list[str]] = {}
    for episode in read_jsonl(out / "episodes.jsonl"):
        if episode["phase"] == "eval/test":
            outputs.setdefault(episode["iteration"], []).append(json.dumps([s["output"] for s in episode["steps"]]))
    records = [{k: v for k, v in r.items() if k not in COUNTERS} for r in read_jsonl(out / "eval.jsonl")]
    return outputs, records


@pytest.fixture(scope="module")
def frozen_runs(tmp_path_factory):
    """Both controls, once for the module, side by side in one folder (the report reads them together)."""
    root = tmp_path_factory.mktemp("frozen")
    return root, {same_stream: _frozen_run(root, same_stream) for same_stream in (True, False)}


@pytest.mark.parametrize("same_stream", [True, False])
def test_a_frozen_policy_samples_the_same_answers_at_every_evaluation_only_with_one_stream(frozen_runs, same_stream):
    outputs, records = frozen_runs[1][same_stream]
    assert sorted(outputs) == [0, 1, 2] and all(len(texts) == 6 for texts in outputs.values())
    if same_stream:
        assert outputs[0] == outputs[1] == outputs[2]  # the same sampled text, episode by episode
        assert records[0] == records[1] == records[2]  # so the same outcomes: a flat control curve
    else:
        assert outputs[0] != outputs[1] and outputs[1] != outputs[2]  # fresh samples from unchanged weights


def test_the_protocol_card_says_which_sampling_the_evaluations_used(frozen_runs, tmp_path):
    """Runs evaluated both ways are flagged on the report's protocol card (a field with two values)."""
    root = frozen_runs[0]
    protocols = {json.loads((root / f"same_stream_{s}" / "summary.json").read_text())["protocol"]["eval_same_stream"]
                 for s in (True, False)}
    assert protocols == {True, False}
    assert main(["report", str(root), "--out", str(tmp_path / "report"), "--no-plots"]) == 0
    card = (tmp_path / "report" / "report.md").read_text().split("## Protocol cards")[1]
    (line,) = [row for row in card.splitlines() if row.startswith("| eval sampling |")]
    assert "one stream for every evaluation" in line and "a fresh stream each evaluation" in line


def test_a_run_of_no_updates_scores_what_the_lr_0_loop_ends_with_on_one_stream(frozen_runs):
    """The cheap control of an experiment (an arm with ``iterations: 0``): its one evaluation is, episode for
    episode, the lr-0 loop's last one, because both sample the same stream from the same weights."""
    outputs, records = frozen_runs[1][True]
    start_only_outputs, start_only_records = _frozen_run(frozen_runs[0], True, iterations=0)
    assert sorted(start_only_outputs) == [0]
    assert start_only_outputs[0] == outputs[2] and start_only_records[0] == records[2]


def test_without_the_evaluation_at_the_start_a_run_evaluates_only_after_updates(frozen_runs):
    """``eval.at_start: false``: the trained arms of an experiment seed skip the evaluation their start-only
    control makes for all of them. Later evaluations sample the stream they would have sampled anyway, and
    summary.json has no before → after (there is no before); a run of no updates still evaluates its start."""
    outputs, records = frozen_runs[1][True]
    late_outputs, late_records = _frozen_run(frozen_runs[0], True, extra=("eval.at_start=false",), name="late")
    assert sorted(late_outputs) == [1, 2]
    assert late_outputs[2] == outputs[2] and late_records == records[1:]
    summary = json.loads((frozen_runs[0].parent / "late" / "summary.json").read_text())
    assert summary["before_after"] == [] and summary["iterations_done"] == 2
    start_outputs, _ = _frozen_run(frozen_runs[0], True, iterations=0, extra=("eval.at_start=false",), name="start")
    assert sorted(start_outputs) == [0] and start_outputs[0] == outputs[0]
