"""MLflow sink, through `mlflow.tracking.MlflowClient` (no global active run).

The tracking URI is ``MLFLOW_TRACKING_URI`` when set, else a file store inside the run directory
(``file:<run>/mlruns``; MLflow 3 keeps that backend behind ``MLFLOW_ALLOW_FILE_STORE``, which this sink
sets for its own store only when it chose it). Experiment: ``MLFLOW_EXPERIMENT_NAME`` or ``seedbench``.
Scalars are metrics with ``step`` = iteration; the resolved config is the run's params (flattened,
``optim.lr``); the provenance is ``provenance.json`` and tables are ``tables/<name>/iteration_<k>.json``
artifacts. The run id is kept in ``tracking.json`` and reused on ``--resume``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from seedbench.tracking.base import Sink, flatten

INSTALL = "pip install 'seedbench[mlflow]'"
PARAM_CHARS = 500
"""Longest param value the MLflow file store keeps (longer values are cut)."""


class MLflowSink(Sink):
    name = "mlflow"

    def __init__(self, run_dir, state, resume, start_step):
        super().__init__(run_dir, state, resume, start_step)
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as err:
            raise ImportError(f"the mlflow sink needs mlflow: {INSTALL}") from err
        uri = state.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or (self.run_dir / "mlruns").resolve().as_uri()
        if uri.startswith("file:"):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri=uri)
        run_id = state.get("run_id")
        if run_id is None:
            name = os.environ.get("MLFLOW_EXPERIMENT_NAME", "seedbench")
            experiment = self.client.get_experiment_by_name(name)
            experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
            run_id = self.client.create_run(experiment_id, run_name=self.run_dir.name).info.run_id
        else:
            self.client.update_run(run_id, status="RUNNING")
        state.update(tracking_uri=uri, run_id=run_id)
        self.run_id = run_id

    def scalars(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, value, now, step) for key, value in values.items()]
        for start in range(0, len(metrics), 1000):  # log_batch takes at most 1000 metrics
            self.client.log_batch(self.run_id, metrics=metrics[start:start + 1000])

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self.client.log_dict(self.run_id, {"columns": columns, "data": rows}, f"tables/{name}/iteration_{step}.json")

    def metadata(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "config":
            from mlflow.entities import Param

            existing = self.client.get_run(self.run_id).data.params
            params = [Param(k, str(v)[:PARAM_CHARS]) for k, v in flatten(data).items() if k not in existing]
            for start in range(0, len(params), 100):  # log_batch takes at most 100 params
                self.client.log_batch(self.run_id, params=params[start:start + 100])
            self.client.log_dict(self.run_id, data, "config.json")
        else:
            self.client.log_dict(self.run_id, data, "provenance.json")
            for key in ("seedbench_version", "git_hash", "env_id", "agent"):
                if data.get(key) is not None:
                    self.client.set_tag(self.run_id, f"seedbench.{key}", str(data[key]))

    def close(self) -> None:
        self.client.set_terminated(self.run_id)
