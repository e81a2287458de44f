"""The contract of an experiment-tracking sink, and how run-directory records become what sinks log.

A sink (TensorBoard, W&B, MLflow) receives four kinds of calls, all derived from the records the run
directory writes (`seedbench.tracking.Tracker` turns each ``metrics.jsonl`` / ``eval.jsonl`` /
``skills.jsonl`` record and each ``summary.json`` write into them), so a tracker never sees a number that
the JSONL files do not hold:

- ``scalars(values, step)``: one number per documented metric name (docs/metrics.md), step = iteration;
- ``table(name, columns, rows, step)``: eval per-type tables and SEED's skills;
- ``metadata(kind, data)``: the resolved config (``kind="config"``, once) and the summary's provenance
  (``kind="provenance"``, at the start and the end);
- ``close()``.

A sink keeps what it needs to continue the same tracked run on ``--resume`` (a W&B or MLflow run id) in
the ``state`` dict it is given; the tracker stores it in ``tracking.json`` in the run directory.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar


class Sink(ABC):
    """One tracker. ``state`` is this sink's entry of ``tracking.json`` (fill it in ``__init__``);
    ``start_step`` is the last completed iteration when resuming (0 for a new run)."""

    name: ClassVar[str] = ""

    def __init__(self, run_dir: Path, state: dict[str, Any], resume: bool, start_step: int):
        self.run_dir = Path(run_dir)
        self.state = state
        self.resume = resume
        self.start_step = start_step

    @abstractmethod
    def scalars(self, values: dict[str, float], step: int) -> None:
        """Log numbers under their metric names at `step` (the iteration)."""

    @abstractmethod
    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        """Log a small table (eval per type, skills) at `step`."""

    @abstractmethod
    def metadata(self, kind: str, data: dict[str, Any]) -> None:
        """Attach run metadata: ``config`` (the resolved run config) or ``provenance`` (from summary.json)."""

    def close(self) -> None:
        """Flush and finish; the default does nothing."""


# ----------------------------------------------------------------------------------------------------
# Records → scalars and tables (pure functions, shared by every sink)

PROVENANCE_KEYS = ("seedbench_version", "git_hash", "packages", "model", "env", "env_id", "agent", "seed",
                   "iterations", "iterations_done", "complete", "counters", "protocol", "eval_task_hash", "final",
                   "timing")
"""The summary.json keys a tracker shows as run metadata (the long eval task lists are left out)."""

SKILL_COLUMNS = ["iteration", "episode_id", "won", "reward", "ok", "episode_summary", "episode_skill"]


def metric_scalars(record: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of a ``metrics.jsonl`` record under their own names (counters included;
    ``null`` metrics and non-numbers are left out)."""
    return {key: float(value) for key, value in record.items() if _number(value)}


def eval_scalars(record: dict[str, Any]) -> dict[str, float]:
    """An ``eval.jsonl`` record under the names reports use: ``eval/<split>/success_micro``,
    ``…/success_macro`` and ``eval/<split>/success/<task_type>``."""
    split = record["split"]
    values = {f"eval/{split}/{key}": float(record[key]) for key in ("success_micro", "success_macro")
              if _number(record.get(key))}
    for task_type, rate in (record.get("per_type") or {}).items():
        if _number(rate):
            values[f"eval/{split}/success/{task_type}"] = float(rate)
    return values


def eval_table(record: dict[str, Any]) -> tuple[str, list[str], list[list[Any]]]:
    """``(name, columns, rows)``: success and task count per task type of one evaluation."""
    counts = record.get("per_type_counts") or {}
    rows = [[task_type, rate, counts.get(task_type)] for task_type, rate in sorted((record.get("per_type") or {}).items())]
    return f"eval/{record['split']}/per_type", ["task_type", "success", "tasks"], rows


def skill_rows(records: list[dict[str, Any]]) -> list[list[Any]]:
    return [[r.get(column) for column in SKILL_COLUMNS] for r in records]


def provenance(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: summary[key] for key in PROVENANCE_KEYS if key in summary}


def markdown_table(columns: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (TensorBoard's text plugin renders it); cell text is kept on one line."""
    def cell(value: Any) -> str:
        return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optim": {"lr": 1e-5}}`` → ``{"optim.lr": 1e-5}`` (for trackers with flat parameters)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
