"""Experiment-tracking sinks: TensorBoard, Weights & Biases, MLflow (``seedbench run --track``).

``metrics.jsonl`` stays the source of truth. The trainer attaches one `Tracker` to its run directory
(`seedbench.training.rundir.RunDir.observers`); every record the run directory appends to
``metrics.jsonl``, ``eval.jsonl`` or ``skills.jsonl``, and every ``summary.json`` write, is handed on to the
chosen sinks (`seedbench.tracking.base` says how). A failing sink never stops training: the tracker prints
one warning, turns that sink off for the rest of the run and the JSONL files are written as before.

Resume continues the same tracked run: sinks keep their run ids in ``tracking.json`` in the run directory
(W&B run id, MLflow run id); TensorBoard writes to ``<run>/tensorboard`` again and purges the steps after
the checkpoint it resumes from. docs/tracking.md has the details.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from seedbench.config.errors import ConfigError
from seedbench.jsonio import read_json, write_json_atomic
from seedbench.tracking.base import (Sink, SKILL_COLUMNS, eval_scalars, eval_table, metric_scalars, provenance,
                                     skill_rows)

SINKS: dict[str, tuple[str, str, str]] = {
    "tensorboard": ("seedbench.tracking.tensorboard_sink:TensorBoardSink", "tensorboard", "tensorboard"),
    "wandb": ("seedbench.tracking.wandb_sink:WandbSink", "wandb", "wandb"),
    "mlflow": ("seedbench.tracking.mlflow_sink:MLflowSink", "mlflow", "mlflow"),
}
"""name → (class, module that must be importable, the seedbench extra that installs it)."""

STATE_FILE = "tracking.json"


def check_track(values: Any, installed: bool = True) -> list[str]:
    """``track`` from a config or ``--track`` flags: a list (or comma-separated strings) of sink names,
    each known (and, with `installed`, importable here); returns the de-duplicated list. A one-line error
    names the choices or the ``pip install`` line."""
    if isinstance(values, str):
        values = [values]
    names: list[str] = []
    for value in values or []:
        for name in str(value).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in SINKS:
                raise ConfigError(f"track: unknown sink {name!r}; choose from: {', '.join(SINKS)}")
            _, module, extra = SINKS[name]
            if installed and importlib.util.find_spec(module) is None:
                raise ConfigError(f"track: {name} is not installed; pip install 'seedbench[{extra}]'")
            if name not in names:
                names.append(name)
    return names


class Tracker:
    """Fans run-directory records out to sinks; warns once and drops a sink that raises."""

    def __init__(self, sinks: list[Sink], run_dir: Path | None = None, state: dict[str, Any] | None = None):
        self.sinks = list(sinks)
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.state = state if state is not None else {}
        self._skills: dict[int, list[dict[str, Any]]] = {}
        self._saved = read_json(self.run_dir / STATE_FILE) if self.run_dir is not None else {}
        self._save_state()

    # -- RunDir observer interface ------------------------------------------------------------------
    def on_record(self, name: str, record: dict[str, Any]) -> None:
        if name == "metrics.jsonl":
            step = int(record.get("iteration", 0))
            self._each("scalars", metric_scalars(record), step)
            self._flush_skills(up_to=step)
        elif name == "eval.jsonl":
            step = int(record.get("iteration", 0))
            self._each("scalars", eval_scalars(record), step)
            self._each("table", *eval_table(record), step)
        elif name == "skills.jsonl":
            # SEED logs skills in `prepare`, before the iteration's metrics: keep them until then, so each
            # iteration's table is logged once, at its step.
            self._skills.setdefault(int(record.get("iteration", 0)), []).append(record)

    def on_summary(self, summary: dict[str, Any]) -> None:
        self._each("metadata", "provenance", provenance(summary))

    def on_config(self, config: dict[str, Any]) -> None:
        self._each("metadata", "config", config)

    def close(self) -> None:
        self._flush_skills(up_to=None)
        self._each("close")
        self._save_state()
        self.sinks = []

    # -- internals --------------------------------------------------------------------------------
    def _flush_skills(self, up_to: int | None) -> None:
        for iteration in sorted(self._skills):
            if up_to is None or iteration <= up_to:
                self._each("table", "seed/skills", list(SKILL_COLUMNS), skill_rows(self._skills.pop(iteration)), iteration)

    def _each(self, method: str, *args: Any) -> None:
        for sink in list(self.sinks):
            try:
                getattr(sink, method)(*args)
            except Exception as err:  # noqa: BLE001 - a tracker must never stop training
                self.sinks.remove(sink)
                print(f"seedbench: warning: tracking sink {sink.name} failed ({type(err).__name__}: {err}); "
                      "it is off for the rest of this run, metrics.jsonl is unaffected", file=sys.stderr, flush=True)
        self._save_state()

    def _save_state(self) -> None:
        """Write ``tracking.json`` when a sink changed its state (a new run id)."""
        if self.run_dir is not None and self.state and self.state != self._saved:
            write_json_atomic(self.run_dir / STATE_FILE, self.state)
            self._saved = json.loads(json.dumps(self.state))


def sink_class(name: str) -> type[Sink]:
    target = SINKS[name][0]
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def open_tracker(names: list[str], run_dir: Path, config: dict[str, Any], resume: bool, start_step: int) -> Tracker | None:
    """A `Tracker` over the sinks `names` for `run_dir` (None when there are none). A sink that cannot
    start is reported once and skipped; the run goes on."""
    if not names:
        return None
    run_dir = Path(run_dir)
    state = read_json(run_dir / STATE_FILE) if resume else {}
    sinks = []
    for name in names:
        try:
            sinks.append(sink_class(name)(run_dir, state.setdefault(name, {}), resume, start_step))
        except Exception as err:  # noqa: BLE001 - see Tracker._each
            print(f"seedbench: warning: tracking sink {name} could not start ({type(err).__name__}: {err}); "
                  "training goes on without it, metrics.jsonl is unaffected", file=sys.stderr, flush=True)
    tracker = Tracker(sinks, run_dir, state)
    tracker.on_config(config)
    return tracker
