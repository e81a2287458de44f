"""TensorBoard sink: event files in ``<run>/tensorboard`` (``tensorboard --logdir runs/``).

Scalars under their metric names (TensorBoard groups them into sections by the prefix before the first
``/``: ``rollout``, ``train``, ``seed``, ``eval``, ``time``); tables and metadata as Markdown in the Text
tab (``seed/skills``, ``eval/<split>/per_type``, ``run/config``, ``run/provenance``). On resume the writer
purges events after the checkpoint's iteration, so a killed iteration's half-logged steps disappear.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from seedbench.tracking.base import Sink, markdown_table

INSTALL = "pip install 'seedbench[tensorboard]'"


class TensorBoardSink(Sink):
    name = "tensorboard"

    def __init__(self, run_dir, state, resume, start_step):
        super().__init__(run_dir, state, resume, start_step)
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:
            raise ImportError(f"the tensorboard sink needs tensorboard: {INSTALL}") from err
        self.logdir = self.run_dir / "tensorboard"
        state["logdir"] = str(self.logdir)
        # purge_step: TensorBoard drops events of earlier files at steps >= it (a killed iteration's).
        self.writer = SummaryWriter(str(self.logdir), purge_step=start_step + 1 if resume else None)
        self._step = start_step

    def scalars(self, values: dict[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, global_step=step)
        self._step = max(self._step, step)
        self.writer.flush()

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self.writer.add_text(name, markdown_table(columns, rows), global_step=step)
        self.writer.flush()

    def metadata(self, kind: str, data: dict[str, Any]) -> None:
        text = yaml.safe_dump(data, sort_keys=False) if kind == "config" else json.dumps(data, indent=2, default=str)
        # Four-space indentation makes Markdown show it verbatim.
        self.writer.add_text(f"run/{kind}", "\n".join("    " + line for line in text.splitlines()), global_step=self._step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
