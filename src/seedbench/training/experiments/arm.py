"""An experiment's *arm*: one entry of a spec's ``agents:`` list, named by its ``label`` (default: the agent's
name), so that two entries of the same agent (GRPO and a no-learning GRPO control with ``optim.lr: 0``) get
their own run directories and their own rows in reports and on leaderboards.

The run's config cannot carry the label (the label is a property of the study, not of the training recipe),
so the experiment driver writes it next to the run as ``arm.json`` before the run starts; readers
(`seedbench.report.data`) take the arm from there and fall back to the agent's name for runs that have none.
``arm.json`` is not a sign that a run started: a directory holding only it is still a missing run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from seedbench.jsonio import write_json_atomic
from seedbench.locking import LOCK_FILE

ARM_FILE = "arm.json"
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$")
"""Letters, digits, '.', '+', '-' (up to 64 characters): safe in a run directory name, where ``__`` separates
fields, and in a leaderboard submission folder name (``<date>_<arm>_<model>``)."""


def label_problem(label: Any) -> str | None:
    """Why `label` cannot name an arm (None when it can)."""
    if not isinstance(label, str) or not LABEL_RE.match(label):
        return (f"label {label!r} must be 1-64 letters, digits, '.', '+' or '-', starting with a letter or digit "
                "(it names run directories and leaderboard rows), e.g. control or seed-no-opd")
    return None


def write_arm(run_dir: Path, arm: str, agent: str, experiment: str, overrides: dict[str, Any],
              experiment_overrides: dict[str, Any] | None = None) -> None:
    """Record the run's arm in ``<run_dir>/arm.json``: its label, agent and experiment, the entry's own
    overrides (``set``: what sets the arm apart) and the spec-level ones every arm shares (``experiment_set``)."""

    run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run_dir / ARM_FILE, {"arm": arm, "agent": agent, "experiment": experiment,
                                           "set": dict(sorted(overrides.items())),
                                           "experiment_set": dict(sorted((experiment_overrides or {}).items()))})


def read_arm(run_dir: Path) -> dict[str, Any]:
    """``arm.json`` of a run directory, or ``{}`` when it is missing, unreadable or names no usable arm."""
    try:
        data = json.loads((Path(run_dir) / ARM_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or label_problem(data.get("arm")):
        return {}
    return data


def holds_run_files(run_dir: Path) -> bool:
    """Whether `run_dir` holds anything besides ``arm.json`` (or its temporary file, left by a driver killed
    while writing it) and the run lock's file (i.e. a run was started in it: a run writes its config.yaml
    right after taking the lock, so a lock file alone is a start killed before it wrote anything, which
    `--resume` refuses)."""
    path = Path(run_dir)
    return path.is_dir() and any(p.name not in (ARM_FILE, ARM_FILE + ".tmp", LOCK_FILE) for p in path.iterdir())
