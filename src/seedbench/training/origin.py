"""Where a checkpoint came from: the provenance file a seedbench fine-tuning command writes next to the
weights, read back when a run starts from that checkpoint.

Two commands write one (each its own file name, so a reader knows which stage made the checkpoint):

- ``seedbench sft-policy`` (behaviour-cloning warm start): ``seedbench_policy_sft.json``;
- ``seedbench sft-analyzer`` (SEED stage 1): ``seedbench_analyzer_sft.json``.

`seedbench run` records the provenance in summary.json (``model.origin``) and refuses a checkpoint
fine-tuned on another env than the run's, because its prompts, actions and skills belong to that env;
``model.allow_other_env=true`` is the explicit override (e.g. a transfer experiment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seedbench.config import ConfigError

WARM_START_MARKER = "seedbench_policy_sft.json"
ANALYZER_SFT_MARKER = "seedbench_analyzer_sft.json"
MARKERS = {WARM_START_MARKER: "sft-policy", ANALYZER_SFT_MARKER: "sft-analyzer"}
"""Provenance file name → the command that writes it."""


def checkpoint_origin(model_name: str) -> dict[str, Any] | None:
    """``{"command", "path", "provenance"}`` of a checkpoint directory that a seedbench fine-tuning command
    wrote, or None (a hub id, the embedded or tiny model, any other directory). A provenance file that is
    not valid JSON still names the command, with an empty provenance."""
    path = Path(model_name).expanduser()
    if not path.is_dir():
        return None
    for marker, command in MARKERS.items():
        file = path / marker
        if file.is_file():
            try:
                provenance = json.loads(file.read_text())
            except (OSError, ValueError):
                provenance = {}
            return {"command": command, "path": str(path.resolve()), "provenance": provenance}
    return None


def check_origin_env(origin: dict[str, Any] | None, env_alias: str, allow_other_env: bool) -> None:
    """A `ConfigError` when `origin` was fine-tuned on another env than `env_alias` (and the override is off)."""
    if origin is None or allow_other_env:
        return
    trained_on = origin["provenance"].get("env")
    if trained_on and trained_on != env_alias:
        raise ConfigError(f"model.name: {origin['path']} was fine-tuned by `seedbench {origin['command']}` on env "
                          f"{trained_on!r}, not {env_alias!r}; pass --env {trained_on}, a checkpoint made on "
                          f"{env_alias}, or --set model.allow_other_env=true to use it anyway")
