"""The run directory, the unit of truth of a run (BALROG / lm-eval style).

    runs/<env>__<agent>__<model>__s<seed>__<time>/
        config.yaml       resolved config
        metrics.jsonl     one line per iteration (rollout/, train/, seed/, time/ metrics)
        eval.jsonl        one line per evaluation and split
        episodes.jsonl    per-episode logs: prompt, raw output, action, validity, reward per step (vision
                          envs: the step's frame by name, "image": "frames/<id>.png")
        frames/<id>.png   vision envs: each distinct frame once (id = SHA-1 of the pixels, seedbench.frames)
        skills.jsonl      SEED agents: one skill per analysed trajectory
        token_signals.jsonl  per-token signals (SEED: gate, teacher − student gap) of a few trajectories
        tracking.json     run ids of the experiment-tracking sinks (--track), for resume
        checkpoints/it_<k>/  model + optimizer + RNG state + counters; COMPLETE (written last) lists each
                          file's size, so a checkpoint is resumed from only when every file is whole
        eval_tasks.json   the eval task list: split, seed, task id and type per task, the data provenance
        summary.json      versions (plugins included), git hash, model and data checksums, eval task-list
                          hashes, final metrics

Files are written and read with `seedbench.jsonio` (whole-line fsynced appends, so a killed process
leaves at most one torn last line, which readers skip with a warning; atomic JSON writes). Whatever resume
drops as damaged (a torn or corrupt line, an unreadable summary.json) is kept beside its file as
``FILE.corrupt-<n>`` and named in a warning. Observers (the
experiment-tracking sinks, `seedbench.tracking.Tracker`) see every appended record and summary write. On resume, lines written after the last
checkpoint (an iteration that never finished) are removed, so nothing is counted twice and no record of
a completed iteration is lost.
"""

from __future__ import annotations

import json
import os
import re
import warnings
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from seedbench import __version__
from seedbench.config.errors import ConfigError
from seedbench.frames import FrameStore
from seedbench.jsonio import (RunFileWarning, append_jsonl, keep_dropped, read_json_checked, read_jsonl,
                              read_jsonl_lines, write_json_atomic)
from seedbench.yamlio import YAMLFileError, read_yaml

__all__ = ["RunDir", "append_jsonl", "read_jsonl", "write_json_atomic", "default_run_name", "git_hash",
           "package_versions"]

LOG_FILES = ("metrics.jsonl", "eval.jsonl", "episodes.jsonl", "skills.jsonl", "token_signals.jsonl")


def default_run_name(env: str, agent: str, model: str, seed: int) -> str:
    model_tag = Path(model).name.replace("/", "_") or "model"
    return f"{env}__{agent}__{model_tag}__s{seed}__{time.strftime('%Y%m%d-%H%M%S')}"


def git_hash() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str]:
    """Versions of the packages a run's results depend on: seedbench, every installed package it
    requires or offers as an extra (the env engines: alfworld, bm25s, minigrid, ...), vLLM and TRL, plus
    every installed distribution that plugs into seedbench (an entry point in a ``seedbench.*`` group),
    since a plugin env or agent is code the results come from. Run from a source tree that was never
    installed (``PYTHONPATH=src``, as the GPU check does), seedbench's version is marked so and its
    requirements are read from the tree's pyproject.toml."""
    from importlib import metadata

    try:
        requirements = metadata.requires("seedbench") or []
        versions = {}
    except metadata.PackageNotFoundError:
        requirements = _source_tree_requirements()
        versions = {"seedbench": f"{__version__} (source tree, not installed)"}
    names = ["seedbench", "vllm", "trl", *(_requirement_name(r) for r in requirements)]
    for name in names:
        try:
            versions.setdefault(name, metadata.version(name))
        except metadata.PackageNotFoundError:
            pass
    for dist in metadata.distributions():
        if any(ep.group.startswith("seedbench.") for ep in dist.entry_points) and dist.metadata["Name"]:
            versions.setdefault(dist.metadata["Name"], dist.version)
    return versions


def _source_tree_requirements() -> list[str]:
    """The dependencies and extras that the source tree's pyproject.toml declares ([] outside a checkout, and
    on Python 3.10, which has no TOML reader)."""
    try:
        import tomllib
    except ImportError:
        return []
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    extras = project.get("optional-dependencies", {}).values()
    return [*project.get("dependencies", []), *(r for group in extras for r in group)]


def _requirement_name(requirement: str) -> str:
    """'textworld[pddl]==1.7.0; extra == "alfworld"' -> 'textworld'."""
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0]


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self.frames = FrameStore(self.path)
        self.observers: list[Any] = []
        """Objects with ``on_record(name, record)`` and ``on_summary(summary)``, told after each write."""

    def save_frame(self, image: Any) -> str:
        """Store a vision env's frame (once per distinct frame) and return its name relative to the run
        directory, ``frames/<id>.png``, which episode records use."""
        return self.frames.save(image)

    # -- files ------------------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        return self.path / name

    def log(self, name: str, record: dict[str, Any]) -> None:
        append_jsonl(self.file(name), record)
        for observer in self.observers:
            observer.on_record(name, record)

    def records(self, name: str) -> list[dict[str, Any]]:
        return list(read_jsonl(self.file(name)))

    def write_config(self, config: dict[str, Any]) -> None:
        tmp = self.file("config.yaml.tmp")
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))
        os.replace(tmp, self.file("config.yaml"))

    def read_config(self) -> dict[str, Any]:
        """config.yaml as a mapping; a damaged one is a `ConfigError` naming the file."""
        path = self.file("config.yaml")
        try:
            data = read_yaml(path)
        except YAMLFileError as err:
            raise ConfigError(str(err)) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
        return data

    def read_summary(self) -> dict[str, Any]:
        """summary.json; when it exists but is damaged, it is moved to ``summary.json.corrupt-<n>`` with a
        warning, and what can be read back from it is returned: the resource totals when their object is
        intact, else ``resources.incomplete`` saying that earlier sessions' totals are lost (so a resumed run
        never restarts them silently)."""
        path = self.file("summary.json")
        summary, problem = read_json_checked(path)
        if problem is None:
            return summary
        text = path.read_bytes()
        kept = self.path / keep_dropped(path, text).name
        path.unlink()
        resources = _salvage_object(text.decode("utf-8", errors="replace"), "resources")
        if resources is None:
            resources = {"incomplete": f"summary.json was damaged ({kept.name}); totals of earlier sessions are lost"}
        warnings.warn(f"{path}: {problem}; moved to {kept.name}, resource totals "
                      + ("recovered from it" if "incomplete" not in resources else "of earlier sessions are lost"),
                      RunFileWarning, stacklevel=2)
        return {"resources": resources}

    def update_summary(self, *, notify: bool = True, **fields: Any) -> dict[str, Any]:
        """Merge `fields` into summary.json; `notify=False` keeps it from the observers (trackers log the
        summary's provenance, which a progress update does not change)."""
        summary = self.read_summary()
        summary.update(fields)
        write_json_atomic(self.file("summary.json"), summary)
        for observer in self.observers if notify else ():
            observer.on_summary(summary)
        return summary

    # -- checkpoints ------------------------------------------------------------------------------
    def latest_checkpoint(self) -> Path | None:
        done = self.complete_checkpoints()
        return done[0] if done else None

    def complete_checkpoints(self) -> list[Path]:
        """Checkpoints with their COMPLETE marker, newest first."""
        if not self.checkpoints.exists():
            return []
        done = [p for p in self.checkpoints.glob("it_*") if (p / "COMPLETE").exists()]
        return sorted(done, key=lambda p: int(p.name.split("_")[1]), reverse=True)

    def checkpoint_problem(self, path: Path) -> str | None:
        """Why checkpoint `path` cannot be trusted (a file missing or of another size than COMPLETE
        recorded), or None."""
        try:
            manifest = json.loads((path / "COMPLETE").read_text())
        except (OSError, json.JSONDecodeError):
            return None  # a marker without a manifest: the files are checked when loaded
        if not isinstance(manifest, dict):
            return None
        for name, size in manifest.get("files", {}).items():
            file = path / name
            if not file.exists():
                return f"{file} is missing"
            if file.stat().st_size != size:
                return f"{file} is truncated ({file.stat().st_size} of {size} bytes)"
        return None

    def set_aside_checkpoint(self, path: Path, reason: str) -> None:
        """Stop resuming from a damaged checkpoint: its COMPLETE marker becomes DAMAGED (with `reason`); the
        files stay until the run saves that iteration again."""
        (path / "DAMAGED").write_text(reason + "\n")
        (path / "COMPLETE").unlink(missing_ok=True)

    def drop_checkpoints(self) -> None:
        """Delete every checkpoint of a complete run: each COMPLETE marker first, so a deletion cut short
        leaves nothing that looks resumable."""
        for path in self.checkpoints.glob("it_*") if self.checkpoints.exists() else []:
            (path / "COMPLETE").unlink(missing_ok=True)
        shutil.rmtree(self.checkpoints, ignore_errors=True)

    def new_checkpoint_dir(self, iteration: int) -> Path:
        path = self.checkpoints / f"it_{iteration}"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def finish_checkpoint(self, path: Path, keep: int) -> None:
        """Mark a checkpoint complete and prune older ones. The marker, COMPLETE, is written last (atomically,
        after the files it lists are fsynced), so a half-written checkpoint is never resumed from, and it
        records each file's size, so one truncated afterwards is noticed."""
        files = {p.name: p.stat().st_size for p in sorted(path.iterdir()) if p.is_file() and p.name != "COMPLETE"}
        write_json_atomic(path / "COMPLETE", {"time": time.time(), "files": files})
        _fsync_dir(path)
        done = self.complete_checkpoints()
        for old in done[keep:] if keep > 0 else []:
            shutil.rmtree(old, ignore_errors=True)
        for partial in self.checkpoints.glob("it_*"):
            if not (partial / "COMPLETE").exists() and not (partial / "DAMAGED").exists():
                shutil.rmtree(partial, ignore_errors=True)

    def truncate_logs_after(self, iteration: int) -> None:
        """Drop records of iterations after `iteration` (they belong to an iteration that never
        completed). Torn or corrupt lines are dropped too, but kept in ``FILE.corrupt-<n>`` and named in a
        warning."""
        for name in LOG_FILES:
            self.drop_records(name, lambda r: int(r.get("iteration", 0)) > iteration)

    def drop_records(self, name: str, unwanted) -> None:
        """Rewrite log `name` without the records for which `unwanted(record)` is true (atomically); a line
        that is not a JSON object is moved to ``FILE.corrupt-<n>`` with a warning, never lost silently."""
        path = self.file(name)
        if not path.exists():
            return
        kept, damaged = [], []
        for number, raw, record in read_jsonl_lines(path):
            if record is None:
                damaged.append((number, raw if raw.endswith("\n") else raw + "\n"))
            elif not unwanted(record):
                kept.append(raw if raw.endswith("\n") else raw + "\n")
        if damaged:
            copy = keep_dropped(path, "".join(raw for _, raw in damaged))
            warnings.warn(f"{path}: dropped {len(damaged)} torn or corrupt line(s) (line "
                          f"{', '.join(str(n) for n, _ in damaged)}); kept in {copy.name}", RunFileWarning,
                          stacklevel=2)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write("".join(kept))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)


def _salvage_object(text: str, key: str) -> dict[str, Any] | None:
    """The JSON object that follows ``"key":`` in a damaged JSON document, when it is itself intact."""
    at = text.find(f'"{key}":')
    start = text.find("{", at) if at >= 0 else -1
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _fsync_dir(path: Path) -> None:
    """Make the renames inside directory `path` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
