"""Weights & Biases sink (``wandb.init`` with the run directory as ``dir``).

Online or offline as W&B's own settings say (``WANDB_MODE=offline`` writes ``<run>/wandb/offline-run-*``,
``wandb sync`` uploads it later); the project is ``WANDB_PROJECT`` or ``seedbench``. The run id is kept in
``tracking.json`` and reused with ``resume="allow"`` on ``--resume``, so a resumed run continues the same
W&B run. The resolved config is the W&B config; the provenance goes to the run summary under
``provenance/…``; eval per-type and skills are ``wandb.Table`` at the iteration's step.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from seedbench.tracking.base import Sink, flatten

INSTALL = "pip install 'seedbench[wandb]'"


class WandbSink(Sink):
    name = "wandb"

    def __init__(self, run_dir, state, resume, start_step):
        super().__init__(run_dir, state, resume, start_step)
        try:
            import wandb
        except ImportError as err:
            raise ImportError(f"the wandb sink needs wandb: {INSTALL}") from err
        self.wandb = wandb
        run_id = state.get("run_id") or uuid.uuid4().hex[:8]
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "seedbench"), dir=str(self.run_dir), id=run_id,
                              name=self.run_dir.name, resume="allow", reinit="create_new")
        state["run_id"] = self.run.id
        state["project"] = self.run.project

    def scalars(self, values: dict[str, float], step: int) -> None:
        self.run.log(values, step=step)

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        rows = [[v if isinstance(v, (int, float, str)) or v is None else str(v) for v in row] for row in rows]
        self.run.log({name: self.wandb.Table(columns=columns, data=rows)}, step=step)

    def metadata(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "config":
            self.run.config.update(data, allow_val_change=True)
        else:
            for key, value in flatten(data, "provenance/").items():
                self.run.summary[key] = value if isinstance(value, (int, float, str, bool)) or value is None else str(value)

    def close(self) -> None:
        self.run.finish()
