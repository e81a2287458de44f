"""A resumed run keeps the config it was started with.

A run directory's ``config.yaml`` is the run's resolved config. ``seedbench run --resume`` starts from it
(`resume_base`): the flags, ``--set`` values and ``--config`` recipe of the resuming command are applied
on top, so ``seedbench run --resume DIR`` alone continues the run exactly as it was configured. A given
value that differs from the saved one is a change (`config_changes`); only the fields in
`RESUMABLE_FIELDS` (how long the run goes on, where it is tracked and checkpointed, how its processes are
laid out — nothing that changes what an iteration computes) may change freely. Any other change is an
error naming each field (old → new) unless the command passes ``--allow-config-changes``
(`check_resume_changes`). A changed config is never written over silently: the old file is kept as
``config.previous-N.yaml`` and the changes are printed (`record_config`).

`run_started` tells a run directory that holds work (a checkpoint or a logged record) from one that a
failed start left behind (config.yaml, summary.json at most), which a fresh start may reuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedbench.config import (ConfigError, RunConfig, from_dict, load_yaml, to_dict, update_dataclass,
                              validate_config)
from seedbench.training.rundir import LOG_FILES

ALLOW_FLAG = "--allow-config-changes"
"""The `seedbench run` switch that lets a resume change fields outside `RESUMABLE_FIELDS`."""

RESUMABLE_FIELDS = ("iterations", "track", "save_every", "keep_checkpoints", "save_final_model", "keep_final_checkpoint",
                    "distributed.strategy", "num_env_workers", "token_signal_trajectories")
"""Fields a resume may change without ``--allow-config-changes``: the length of the run (``iterations``,
to extend it), its tracking sinks, checkpointing, process layout (checkpoints are full state dicts whatever
the strategy; env workers play the same episodes as in-process envs) and how many per-token signals are
logged. ``output`` is the run's location, never a change."""

LOCATION_FIELDS = ("output",)

_UNSET = "<unset>"


@dataclass(frozen=True)
class Change:
    field: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.field} {_text(self.old)} → {_text(self.new)}"


def _text(value: Any) -> str:
    return value if value is _UNSET else repr(value)


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optim": {"lr": 1e-5}, "env_kwargs": {"dim_room": [7, 7]}}`` → ``{"optim.lr": 1e-5,
    "env_kwargs.dim_room": [7, 7]}``; lists stay whole values."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_changes(saved: dict[str, Any], config: dict[str, Any]) -> list[Change]:
    """Every field whose value in `config` differs from the run's saved config (read onto the defaults, so
    a field added to seedbench after the run started is not a change), location fields left out."""
    before, after = flatten(to_dict(from_dict(saved))), flatten(config)
    return [Change(key, before.get(key, _UNSET), after.get(key, _UNSET)) for key in dict.fromkeys([*before, *after])
            if key not in LOCATION_FIELDS and before.get(key, _UNSET) != after.get(key, _UNSET)]


def check_resume_changes(run_dir: Path, saved: dict[str, Any], config: RunConfig, *, allow: bool,
                         done: int | None = None) -> list[Change]:
    """The changes a resume of `run_dir` makes to its saved config; a `ConfigError` naming every change
    outside `RESUMABLE_FIELDS` unless `allow`, and when ``iterations`` falls below the `done` iterations
    of the checkpoint it resumes from."""
    try:
        changes = config_changes(saved, to_dict(config))
    except ConfigError as err:
        raise ConfigError(f"{run_dir / 'config.yaml'}: {err}") from err
    blocked = [c for c in changes if c.field not in RESUMABLE_FIELDS]
    if blocked and not allow:
        raise ConfigError(f"--resume: {run_dir} was started with another config ({'; '.join(map(str, blocked))}); "
                          f"drop these flags to continue the run as it was, or pass {ALLOW_FLAG} to change them")
    if done is not None and config.iterations < done:
        raise ConfigError(f"--resume: iterations={config.iterations} is below the {done} iterations {run_dir} has done; "
                          f"pass --iterations {done} or more")
    return changes


def record_config(path: Path, config: dict[str, Any], changes: list[Change]) -> Path:
    """Write `config` as ``path/config.yaml``, keeping the one it replaces as ``config.previous-N.yaml``
    (N = 1, 2, ... in order of replacement); prints one line naming the changes and the kept file."""
    import os

    import yaml

    number = 1
    while (path / f"config.previous-{number}.yaml").exists():
        number += 1
    kept = path / f"config.previous-{number}.yaml"
    os.replace(path / "config.yaml", kept)
    tmp = path / "config.yaml.tmp"
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    os.replace(tmp, path / "config.yaml")
    print(f"seedbench: resume: config changed ({'; '.join(map(str, changes))}); the previous config is kept as "
          f"{kept.name}", flush=True)
    return kept


def resume_base(run_dir: Path, yaml_path: str | None, overrides: dict[str, Any]) -> RunConfig:
    """The config of a resumed run: the saved ``config.yaml`` < the `--config` recipe < flags and ``--set``
    (`overrides`), validated, with ``output`` = `run_dir`. A directory without config.yaml is refused: a run
    writes it before anything else (its starting-model builds included), so there is no run to resume, and
    the command's flags alone might name another run (the defaults, say)."""
    run_dir = Path(run_dir)
    saved_path = run_dir / "config.yaml"
    if not saved_path.is_file():
        if any((run_dir / "checkpoints").glob("it_*/COMPLETE")):
            raise ConfigError(f"--resume: {run_dir} has checkpoints but no config.yaml to resume them with; restore "
                              "config.yaml or start another --output")
        raise ConfigError(f"--resume: {run_dir} holds no config.yaml, so there is no run to resume (none was "
                          "started there, or it was stopped before it wrote one); start the run with the same "
                          "command without --resume")
    saved = load_yaml(saved_path)
    try:
        config = from_dict(saved)
    except ConfigError as err:
        raise ConfigError(f"{saved_path}: {err}") from err
    recipe = load_yaml(yaml_path) if yaml_path else {}
    given = (recipe, overrides)
    if any(_sets_step_cap(v, "rollout") for v in given) and not any(_sets_step_cap(v, "env_kwargs") for v in given):
        config.env_kwargs.pop("max_steps", None)  # derived from the saved rollout.max_steps, which is being replaced
    update_dataclass(config, recipe)
    update_dataclass(config, overrides)
    config.output = str(run_dir)
    return validate_config(config)


def _sets_step_cap(values: dict[str, Any], section: str) -> bool:
    return isinstance(values.get(section), dict) and "max_steps" in values[section]


def run_started(path: Path) -> bool:
    """Whether `path` holds work of a run: a complete checkpoint or any logged record. A directory with
    neither is what a start that failed before its first iteration leaves; a fresh start may reuse it."""
    path = Path(path)
    if any((path / "checkpoints").glob("it_*/COMPLETE")):
        return True
    return any((path / name).is_file() and (path / name).stat().st_size > 0 for name in LOG_FILES)
