"""Experiment-tracking sinks: what TensorBoard, W&B (offline) and MLflow (local file store) received is
read back from what they wrote and compared with the run-directory records; resume continues the same
tracked run; a failing sink warns once and never stops the JSONL files."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from seedbench.config import ConfigError, build_config
from seedbench.jsonio import read_jsonl
from seedbench.tracking import Tracker, check_track, open_tracker
from seedbench.tracking.base import Sink
from seedbench.training.rundir import RunDir



def needs(*modules: str) -> None:
    """The sinks' packages come with the ``track`` extra (scripts/test.sh installs it)."""
    for module in modules:
        pytest.importorskip(module, reason="pip install 'seedbench[track]'")

METRICS = [
    {"iteration": 1, "trajectories": 4, "rollout/success": 0.25, "train/loss": -0.5, "seed/gate_mean": 0.6,
     "seed/teacher_gap_mean": None, "time/iteration_s": 1.5},
    {"iteration": 2, "trajectories": 8, "rollout/success": 0.75, "train/loss": -0.25, "seed/gate_mean": 0.7,
     "seed/teacher_gap_mean": 0.1, "time/iteration_s": 1.25},
]
EVAL = {"iteration": 2, "split": "test", "success_micro": 0.5, "success_macro": 0.375,
        "per_type": {"pick": 0.25, "look": 0.5}, "per_type_counts": {"pick": 4, "look": 2}}
SKILL = {"iteration": 1, "episode_id": "it1-0-0", "won": True, "reward": 1.0, "ok": True,
         "episode_summary": "pushed the box right", "episode_skill": "stand left of a box, then push right"}
CONFIG = {"env": "sokoban", "agent": "seed", "optim": {"lr": 1e-5}, "seed": 3}
SUMMARY = {"seedbench_version": "9.9", "git_hash": "abc", "agent": "seed", "env_id": "Sokoban-v0",
           "eval_tasks": {"test": ["test:0"] * 50}, "final": {"eval/test/success_micro": 0.5}}


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_DISABLED", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def _play(tracker: Tracker, run: RunDir, metrics=METRICS, skills=(SKILL,), evals=(EVAL,), summary=SUMMARY):
    run.observers.append(tracker)
    for record in skills:
        run.log("skills.jsonl", record)
    for record in metrics:
        run.log("metrics.jsonl", record)
    for record in evals:
        run.log("eval.jsonl", record)
    if summary:
        run.update_summary(**summary)
    tracker.close()


# -- readers of what each sink wrote ------------------------------------------------------------------
def tensorboard_scalars(logdir: Path) -> tuple[dict[str, list[tuple[int, float]]], dict[str, list[str]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    texts = {tag: [b"".join(e.tensor_proto.string_val).decode() for e in acc.Tensors(tag)] for tag in acc.Tags()["tensors"]}
    return scalars, texts


def wandb_records(run_dir: Path) -> list:
    """Every record of the W&B offline runs under `run_dir` (the ``.wandb`` transaction log: a 7-byte
    header, then 32 KiB blocks of [crc32c:4][length:2][type:1] records; type 1 = full, 2/3/4 = first,
    middle and last piece of a record split across blocks)."""
    from wandb.proto import wandb_internal_pb2

    records = []
    for path in sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb")):
        data, pos, pieces = path.read_bytes(), 7, b""
        while pos + 7 <= len(data):
            if 32768 - pos % 32768 < 7:
                pos += 32768 - pos % 32768
                continue
            _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
            payload, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
            if kind == 0:
                break
            pieces = payload if kind in (1, 2) else pieces + payload
            if kind in (1, 4):
                record = wandb_internal_pb2.Record()
                record.ParseFromString(pieces)
                records.append(record)
    return records


def wandb_history(records) -> dict[int, dict[str, object]]:
    history: dict[int, dict[str, object]] = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            row = history.setdefault(record.history.step.num, {})
            for item in record.history.item:
                row[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return history


# -- all three sinks get the same numbers as the JSONL --------------------------------------------------
def test_every_sink_holds_the_jsonl_values(tmp_path, offline):
    needs("tensorboard", "wandb", "mlflow")
    run = RunDir(tmp_path)
    tracker = open_tracker(["tensorboard", "wandb", "mlflow"], tmp_path, CONFIG, resume=False, start_step=0)
    assert [s.name for s in tracker.sinks] == ["tensorboard", "wandb", "mlflow"]
    _play(tracker, run)
    assert len(list(read_jsonl(tmp_path / "metrics.jsonl"))) == 2  # the JSONL is written as before
    state = json.loads((tmp_path / "tracking.json").read_text())

    scalars, texts = tensorboard_scalars(tmp_path / "tensorboard")
    assert scalars["rollout/success"] == [(1, 0.25), (2, 0.75)]
    assert scalars["train/loss"] == [(1, -0.5), (2, -0.25)]
    assert scalars["trajectories"] == [(1, 4.0), (2, 8.0)]
    assert scalars["seed/teacher_gap_mean"] == [(2, pytest.approx(0.1))]  # null in iteration 1: not logged
    assert scalars["eval/test/success_macro"] == [(2, 0.375)] and scalars["eval/test/success/pick"] == [(2, 0.25)]
    skills_text = texts["seed/skills/text_summary"]
    assert len(skills_text) == 1 and "stand left of a box, then push right" in skills_text[0]
    assert "| look | 0.5 | 2 |" in texts["eval/test/per_type/text_summary"][0]
    assert "lr: 1.0e-05" in texts["run/config/text_summary"][0]
    assert '"git_hash": "abc"' in texts["run/provenance/text_summary"][0]

    records = wandb_records(tmp_path)
    history = wandb_history(records)
    assert history[1]["rollout/success"] == 0.25 and history[2]["rollout/success"] == 0.75
    assert history[2]["eval/test/success_micro"] == 0.5 and "seed/teacher_gap_mean" not in history[1]
    assert history[1]["seed/skills/_type"] == "table-file"
    table = next(tmp_path.glob("wandb/offline-run-*/files/" + history[1]["seed/skills/path"]))
    assert json.loads(table.read_text())["data"][0][-1] == SKILL["episode_skill"]
    run_records = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run_records[0].run_id == state["wandb"]["run_id"]
    config = {u.key: json.loads(u.value_json) for r in records if r.WhichOneof("record_type") == "config"
              for u in r.config.update}
    assert config["optim"] == {"lr": 1e-5} and config["agent"] == "seed"
    summary = {u.key or "/".join(u.nested_key): json.loads(u.value_json) for r in records
               if r.WhichOneof("record_type") == "summary" for u in r.summary.update}
    assert summary["provenance/git_hash"] == "abc"

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=state["mlflow"]["tracking_uri"])
    run_id = state["mlflow"]["run_id"]
    assert state["mlflow"]["tracking_uri"] == (tmp_path / "mlruns").resolve().as_uri()
    history = [(m.step, m.value) for m in client.get_metric_history(run_id, "rollout/success")]
    assert sorted(history) == [(1, 0.25), (2, 0.75)]
    assert [(m.step, m.value) for m in client.get_metric_history(run_id, "eval/test/success/look")] == [(2, 0.5)]
    data = client.get_run(run_id)
    assert data.data.params["optim.lr"] == "1e-05" and data.data.params["agent"] == "seed"
    assert data.data.tags["seedbench.git_hash"] == "abc" and data.info.status == "FINISHED"
    skills = json.loads(Path(client.download_artifacts(run_id, "tables/seed/skills/iteration_1.json", str(tmp_path / "dl"))).read_text())
    assert skills["data"][0][-1] == SKILL["episode_skill"]


def test_resume_continues_the_same_tracked_runs(tmp_path, offline):
    needs("tensorboard", "wandb", "mlflow")
    run = RunDir(tmp_path)
    first = [{"iteration": 1, "rollout/success": 0.1}, {"iteration": 2, "rollout/success": 0.2}]
    _play(open_tracker(["tensorboard", "wandb", "mlflow"], tmp_path, CONFIG, False, 0), run, first, (), (), None)
    state = json.loads((tmp_path / "tracking.json").read_text())
    # killed after the checkpoint of iteration 1: iteration 2 is redone (with another value), then 3
    again = [{"iteration": 2, "rollout/success": 0.5}, {"iteration": 3, "rollout/success": 0.6}]
    _play(open_tracker(["tensorboard", "wandb", "mlflow"], tmp_path, CONFIG, True, 1), RunDir(tmp_path), again, (), (), None)
    assert json.loads((tmp_path / "tracking.json").read_text()) == state

    scalars, _ = tensorboard_scalars(tmp_path / "tensorboard")
    assert scalars["rollout/success"] == [(1, pytest.approx(0.1)), (2, 0.5), (3, pytest.approx(0.6))]
    runs = [r.run.run_id for r in wandb_records(tmp_path) if r.WhichOneof("record_type") == "run"]
    assert len(runs) == 2 and set(runs) == {state["wandb"]["run_id"]}  # two sessions, one W&B run

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=state["mlflow"]["tracking_uri"])
    assert len(client.search_runs([client.get_run(state["mlflow"]["run_id"]).info.experiment_id])) == 1
    steps = sorted(m.step for m in client.get_metric_history(state["mlflow"]["run_id"], "rollout/success"))
    assert steps == [1, 2, 2, 3]  # MLflow keeps the killed iteration's value too (docs/tracking.md)


# -- a failing sink -------------------------------------------------------------------------------------
class Recording(Sink):
    name = "recording"

    def __init__(self):
        self.calls = []

    def scalars(self, values, step):
        self.calls.append(("scalars", step, values))

    def table(self, name, columns, rows, step):
        self.calls.append(("table", step, name))

    def metadata(self, kind, data):
        self.calls.append(("metadata", kind))


class Broken(Recording):
    name = "broken"

    def scalars(self, values, step):
        raise OSError("disk full")


def test_a_failing_sink_warns_once_and_the_jsonl_and_other_sinks_go_on(tmp_path, capsys):
    broken, good = Broken(), Recording()
    run = RunDir(tmp_path)
    _play(Tracker([broken, good]), run, METRICS + [{"iteration": 3, "rollout/success": 1.0}])
    err = capsys.readouterr().err
    assert err.count("warning: tracking sink broken failed (OSError: disk full)") == 1
    assert [r["iteration"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3]
    assert [c[1] for c in good.calls if c[0] == "scalars"] == [1, 2, 3, 2]  # 3 metrics records + 1 eval
    assert ("table", 1, "seed/skills") in good.calls and ("metadata", "provenance") in good.calls
    assert broken.calls == []  # dropped at its first failure


def test_a_sink_that_cannot_start_is_skipped_with_a_warning(tmp_path, capsys, monkeypatch, offline):
    needs("tensorboard", "mlflow")
    import seedbench.tracking.mlflow_sink as mlflow_sink

    def refuse(*args, **kwargs):
        raise RuntimeError("no store")

    monkeypatch.setattr(mlflow_sink.MLflowSink, "__init__", refuse)
    tracker = open_tracker(["tensorboard", "mlflow"], tmp_path, CONFIG, False, 0)
    assert [s.name for s in tracker.sinks] == ["tensorboard"]
    assert "tracking sink mlflow could not start (RuntimeError: no store)" in capsys.readouterr().err
    tracker.close()


# -- configuration ----------------------------------------------------------------------------------------
def test_track_accepts_repeats_and_comma_lists_and_names_the_fix(monkeypatch):
    assert check_track(["tensorboard,mlflow", "TensorBoard", "wandb"], installed=False) == ["tensorboard", "mlflow", "wandb"]
    with pytest.raises(ConfigError, match="unknown sink 'neptune'; choose from: tensorboard, wandb, mlflow"):
        build_config(overrides={"track": ["neptune"], "model": {"name": "tiny"}})
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ConfigError, match=r"wandb is not installed; pip install 'seedbench\[wandb\]'"):
        check_track("wandb")
    # only a run needs the sink here: a recipe checked for another host and `seedbench eval` of a tracked run do not
    assert build_config(overrides={"track": ["wandb"], "model": {"name": "tiny"}}, check_host=False).track == ["wandb"]
    from seedbench.training.evaluate import eval_config

    config, _ = eval_config({"env": "choice", "model": {"name": "tiny"}, "track": ["wandb"]}, {})
    assert config.track == []


def test_a_tiny_run_with_track_tensorboard_logs_every_metric_of_metrics_jsonl(tmp_path, monkeypatch):
    needs("tensorboard")
    from seedbench.cli import main

    out = tmp_path / "run"
    code = main(["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "2", "--output",
                 str(out), "--track", "tensorboard", "--set", "rollout.max_new_tokens=3", "eval.num_tasks=2",
                 "save_final_model=false"])
    assert code == 0
    scalars, texts = tensorboard_scalars(out / "tensorboard")
    metrics = list(read_jsonl(out / "metrics.jsonl"))
    for record in metrics:
        for key, value in record.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert dict(scalars[key])[record["iteration"]] == pytest.approx(value, rel=1e-6, abs=1e-7), key
    evals = list(read_jsonl(out / "eval.jsonl"))
    assert [s for s, _ in scalars["eval/test/success_micro"]] == [r["iteration"] for r in evals] == [0, 2]
    assert "agent: grpo" in texts["run/config/text_summary"][0]
    provenance = texts["run/provenance/text_summary"]
    assert len(provenance) == 2 and '"complete": true' in provenance[-1]  # at the start and at the end
    assert not math.isnan(scalars["train/loss"][0][1])
