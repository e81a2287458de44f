"""Where each run of an experiment stands on disk (`run_status`) and how it ended (`Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seedbench.jsonio import read_json
from seedbench.training.experiments.arm import ARM_FILE, holds_run_files, read_arm
from seedbench.training.experiments.spec import ExperimentError, RunSpec
from seedbench.yamlio import YAMLFileError, read_yaml


def run_status(run: RunSpec) -> str:
    """``complete`` (summary says so, at the requested budget), ``partial`` (anything on disk) or
    ``missing`` (nothing, or only the driver's ``arm.json``). Raises if the directory holds a different run."""
    path = run.run_dir
    recorded = read_arm(path).get("arm")
    if recorded is not None and recorded != run.arm:
        raise ExperimentError(f"{path} holds a run of arm {recorded!r} ({ARM_FILE}), not {run.arm!r}; "
                              "move it away or use another --output")
    if not holds_run_files(path):
        return "missing"
    config = {}
    if (path / "config.yaml").is_file():
        try:
            config = read_yaml(path / "config.yaml") or {}
        except YAMLFileError:
            config = {}
    for key, expected in (("env", run.env), ("agent", run.agent), ("seed", run.seed)):
        if key in config and config[key] != expected:
            raise ExperimentError(f"{path} holds a run with {key}={config[key]!r}, not {expected!r}; "
                                  "move it away or use another --output")
    summary = read_json(path / "summary.json")
    if summary.get("complete") and int(summary.get("iterations_done", -1)) >= run.iterations:
        return "complete"
    return "partial"


def archived(run: RunSpec, archive: Path | None) -> bool:
    """Whether the archive folder holds this run complete at the requested budget (its summary.json): the
    run's logs were kept, so the run need not exist on this machine to count as done."""
    if archive is None:
        return False
    summary = read_json(archive / run.name / "summary.json")
    return bool(summary.get("complete")) and int(summary.get("iterations_done", -1)) >= run.iterations


@dataclass
class Outcome:
    run: str
    status: str  # skipped | archived | completed | failed | interrupted
    action: str  # none | fresh | resume
    returncode: int | None = None
    seconds: float = 0.0
