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
        checkpoints/it_<k>/  model + optimizer + RNG state + counters
        eval_tasks.json   the eval task list: split, seed, task id and type per task, the data provenance
        summary.json      versions (plugins included), git hash, model and data checksums, eval task-list
                          hashes, final metrics

Files are written and read with `seedbench.jsonio` (whole-line fsynced appends, so a killed process
leaves at most one torn last line, which readers skip; atomic JSON writes). Observers (the
experiment-tracking sinks, `seedbench.tracking.Tracker`) see every appended record and summary write. On resume, lines written after the last
checkpoint (an iteration that never finished) are removed, so nothing is counted twice and no record of
a completed iteration is lost.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from seedbench.frames import FrameStore
from seedbench.jsonio import append_jsonl, read_json, read_jsonl, write_json_atomic

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
        from seedbench import __version__

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
        return yaml.safe_load(self.file("config.yaml").read_text())

    def read_summary(self) -> dict[str, Any]:
        return read_json(self.file("summary.json"))

    def update_summary(self, **fields: Any) -> dict[str, Any]:
        summary = self.read_summary()
        summary.update(fields)
        write_json_atomic(self.file("summary.json"), summary)
        for observer in self.observers:
            observer.on_summary(summary)
        return summary

    # -- checkpoints ------------------------------------------------------------------------------
    def latest_checkpoint(self) -> Path | None:
        if not self.checkpoints.exists():
            return None
        done = [p for p in self.checkpoints.glob("it_*") if (p / "COMPLETE").exists()]
        return max(done, key=lambda p: int(p.name.split("_")[1]), default=None)

    def new_checkpoint_dir(self, iteration: int) -> Path:
        path = self.checkpoints / f"it_{iteration}"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def finish_checkpoint(self, path: Path, keep: int) -> None:
        """Mark a checkpoint complete (written last, so a half-written one is never resumed from) and
        prune older ones."""
        (path / "COMPLETE").write_text(str(time.time()))
        done = sorted((p for p in self.checkpoints.glob("it_*") if (p / "COMPLETE").exists()),
                      key=lambda p: int(p.name.split("_")[1]))
        for old in done[:-keep] if keep > 0 else []:
            shutil.rmtree(old, ignore_errors=True)
        for partial in self.checkpoints.glob("it_*"):
            if not (partial / "COMPLETE").exists():
                shutil.rmtree(partial, ignore_errors=True)

    def truncate_logs_after(self, iteration: int) -> None:
        """Drop records of iterations after `iteration` (they belong to an iteration that never
        completed) and torn lines."""
        for name in LOG_FILES:
            path = self.file(name)
            if not path.exists():
                continue
            kept = [r for r in read_jsonl(path) if int(r.get("iteration", 0)) <= iteration]
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))
            os.replace(tmp, path)
