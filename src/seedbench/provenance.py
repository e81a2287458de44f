"""Where a run's eval tasks come from, and the one hash that says two runs evaluated the same tasks.

Every env describes its task data with `TextEnv.provenance()`: ``data_source`` (``procedural``,
``generated`` or ``official``), ``manifest_checksum`` (the data checksum) and ``generator_version``.
A procedurally generated env's checksum hashes its generator (module and class, ``generator_version``,
``seed_rule`` and the kwargs it was made with); ALFWorld's hashes its pool manifest (every game file's
sha256), see `seedbench.envs.alfworld.env`. A run records the provenance in summary.json
(``protocol.data_checksum``, ``data``) and writes ``eval_tasks.json``.

`task_list_hash` is the only task-list hash: the trainer, the synthetic report fixtures and leaderboard
validation all call it. It covers the task ids *and* the data checksum, so a changed generator or pool
gives another hash even where the task ids (``choice-3``, ``sokoban-test-7``) stay the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from seedbench.jsonio import read_json, read_jsonl, write_json_atomic

DATA_SOURCES = ("procedural", "generated", "official")
PROVENANCE_KEYS = ("data_source", "manifest_checksum", "generator_version")
EVAL_TASKS_FILE = "eval_tasks.json"


def digest(data: Any) -> str:
    """16 hex digits of the sha256 of `data` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def task_list_hash(task_ids: Sequence[str], data_checksum: str) -> str:
    """The hash of an eval task list: its task ids, in order, and the checksum of the data they index."""
    if not isinstance(data_checksum, str) or not data_checksum:
        raise ValueError(f"task_list_hash needs the env's data checksum, got {data_checksum!r}; "
                         "see TextEnv.provenance()")
    return digest({"data_checksum": data_checksum, "task_ids": [str(t) for t in task_ids]})


def generator_provenance(env: Any) -> dict[str, str]:
    """The default provenance of a procedurally generated env: its generator, hashed."""
    cls = type(env)
    spec = getattr(env, "spec", None)
    kwargs = {k: v for k, v in (getattr(spec, "kwargs", None) or {}).items() if k != "render_mode"}
    version = str(getattr(env, "generator_version", "1"))
    generator = {"generator": f"{cls.__module__}:{cls.__qualname__}", "generator_version": version,
                 "seed_rule": str(getattr(env, "seed_rule", "")), "kwargs": kwargs}
    return {"data_source": "procedural", "manifest_checksum": digest(generator), "generator_version": version}


def env_provenance(env: Any) -> dict[str, str]:
    """`env.provenance()` (the generator default for envs without one), checked."""
    method = getattr(env, "provenance", None)
    record = dict(method()) if callable(method) else generator_provenance(env)
    missing = [k for k in PROVENANCE_KEYS if not isinstance(record.get(k), str) or not record[k]]
    if missing:
        raise ValueError(f"{type(env).__name__}.provenance() must give non-empty strings for "
                         f"{', '.join(PROVENANCE_KEYS)}; missing or empty: {', '.join(missing)}")
    if record["data_source"] not in DATA_SOURCES:
        raise ValueError(f"{type(env).__name__}.provenance(): data_source {record['data_source']!r} is not one "
                         f"of {', '.join(DATA_SOURCES)}")
    return record


def write_eval_tasks(run_dir: str | Path, tasks: dict[str, Sequence[Any]], task_ids: dict[str, Sequence[str]],
                     data: dict[str, str]) -> Path:
    """Write the run's eval_tasks.json: the data provenance and, per split, the list's hash and every
    task's split, seed, id and type. `tasks` are the `TaskRef`s of each split in evaluation order and
    `task_ids` the ids the env reported for them; the types come from the first evaluation's episodes. A
    split once listed stays as first written; the file is rewritten only to add a split (one that a resume
    with changes began to evaluate)."""
    path = Path(run_dir) / EVAL_TASKS_FILE
    listed = read_json(path).get("splits") if path.exists() else None
    listed = listed if isinstance(listed, dict) else {}
    if path.exists() and set(task_ids) <= set(listed):
        return path
    types = _first_eval_task_types(Path(run_dir) / "episodes.jsonl", list(task_ids))
    splits = dict(listed)
    for split, ids in task_ids.items():
        if split in listed:
            continue
        refs = list(tasks[split])
        if len(refs) != len(ids):
            raise ValueError(f"eval split {split!r}: {len(refs)} tasks but {len(ids)} task ids")
        splits[split] = {"task_list_hash": task_list_hash(ids, data["manifest_checksum"]),
                         "tasks": [{"split": t.split, "seed": t.seed, "task_id": i, "task_type": types.get(i)}
                                   for t, i in zip(refs, ids)]}
    write_json_atomic(path, {"data": data, "splits": splits})
    return path


def _first_eval_task_types(episodes_path: Path, splits: Sequence[str]) -> dict[str, str]:
    """task id -> task type of the first evaluation's episodes (at the top of episodes.jsonl, so only
    those lines are read)."""
    phases = {f"eval/{s}" for s in splits}
    types: dict[str, str] = {}
    first_iteration = None
    for record in read_jsonl(episodes_path):
        if record.get("phase") not in phases:
            if first_iteration is not None:
                break
            continue
        if first_iteration is None:
            first_iteration = record.get("iteration")
        elif record.get("iteration") != first_iteration:
            break
        types[str(record.get("task_id"))] = str(record.get("task_type") or "")
    return types
