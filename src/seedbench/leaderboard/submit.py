"""Turn finished runs into a leaderboard submission folder (summary.json + metadata.yaml).

The summary keeps what a board needs and nothing heavy: per seed the final value of every board metric
and the eval curve (trajectories and each eval metric at every evaluation), plus the eval task ids and
their hashes, the protocol card (the runs' eval protocol with the training budget: iterations, tasks per
batch, group size, seeds), the versions that produced the runs, and for an experiment arm its label and
overrides (``arm``, ``overrides``). The folder is written next to the
board, validated, and removed again if it does not validate, so a failed submit leaves nothing behind.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path
from typing import Any, Sequence

import yaml

from seedbench.leaderboard.schema import METADATA_FILE, SCHEMA, SUMMARY_FILE, Board, slug
from seedbench.leaderboard.catalogue import load_catalogue
from seedbench.report.data import Run, read_runs
from seedbench.report.tables import final_eval


class SubmitError(ValueError):
    """The runs cannot form a submission; shown as one line (or a list of validation problems)."""


def _metric_value(run: Run, metric: str) -> float | None:
    parts = metric.split("/")
    if len(parts) == 3 and parts[0] == "eval":
        record = final_eval(run, parts[1])
        value = record.get(parts[2]) if record else None
        return float(value) if isinstance(value, (int, float)) else None
    value = (run.summary.get("final") or {}).get(metric)
    return float(value) if isinstance(value, (int, float)) else None


def _curve(run: Run, board: Board) -> dict[str, list[float]]:
    splits = sorted({m.split("/")[1] for m in board.metrics if m.startswith("eval/")} | set(board.splits))
    points: dict[int, dict[str, float]] = {}
    for record in run.evals:
        if record.get("split") not in splits or not isinstance(record.get("trajectories"), (int, float)):
            continue
        point = points.setdefault(int(record["trajectories"]), {})
        for key in ("success_micro", "success_macro"):
            if isinstance(record.get(key), (int, float)):
                point[f"eval/{record['split']}/{key}"] = float(record[key])
    xs = sorted(points)
    keys = sorted({k for p in points.values() for k in p})
    keys = [k for k in keys if all(k in points[x] for x in xs)]  # only series defined at every x
    return {"trajectories": xs, **{k: [points[x][k] for x in xs] for k in keys}}


def find_board(catalogue, env_id: str | None, model: str, iterations: int | None) -> Board:
    matches = [b for b in catalogue.boards.values()
               if b.env_id == env_id and b.model_matches(model)
               and (iterations is None or b.budget.get("iterations") in (None, iterations))]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(catalogue.boards)) or "none"
    if not matches:
        raise SubmitError(f"no board for env {env_id!r}, model {model!r}, {iterations} iterations; "
                          f"pass --board (known boards: {known})")
    raise SubmitError(f"several boards match ({', '.join(b.name for b in matches)}); pass --board")


def training_protocol(runs: list[Run]) -> dict[str, Any]:
    """What the runs were trained under, for the board's protocol column: iterations, tasks per batch,
    group size and the seeds (the eval half, step limit included, is the runs' own protocol card)."""
    first = runs[0]
    rollout = first.config.get("rollout") if isinstance(first.config.get("rollout"), dict) else {}
    out: dict[str, Any] = {"iterations": int(first.config.get("iterations", first.iterations_done))}
    for key in ("tasks_per_batch", "group_size"):
        if isinstance(rollout.get(key), int):
            out[key] = int(rollout[key])
    out["seeds"] = sorted(r.seed for r in runs)
    return out


def make_summary(runs: list[Run], board: Board) -> dict[str, Any]:
    first = runs[0]
    hashes: dict[str, str] = {}
    for run in runs:
        for split, digest in run.eval_task_hash.items():
            if hashes.setdefault(split, digest) != digest:
                raise SubmitError(f"runs were evaluated on different task lists for split {split!r} "
                                  f"({hashes[split]} vs {digest} in {run.run}); they cannot form one submission")
    seeds = []
    for run in sorted(runs, key=lambda r: r.seed):
        final = {}
        for metric in board.metrics:
            value = _metric_value(run, metric)
            if value is None:
                raise SubmitError(f"run {run.run} has no value for board metric {metric!r}")
            final[metric] = value
        seeds.append({"seed": run.seed, "run": run.run, "iterations": run.iterations_done, "final": final,
                      "curve": _curve(run, board)})
    protocol = {**training_protocol(runs), **first.protocol}
    ids = first.summary.get("eval_task_ids") or {}
    arm = {"arm": first.arm, "overrides": dict(first.arm_set)} if first.arm != first.agent or first.arm_set else {}
    return {
        "schema": SCHEMA, "board": board.name, "source": "seedbench", **arm,
        "env": first.env, "env_id": first.summary.get("env_id"), "agent": first.agent, "model": first.model,
        "budget": {"iterations": int(first.config.get("iterations", first.iterations_done))},
        "seedbench_version": first.summary.get("seedbench_version"), "git_hash": first.summary.get("git_hash"),
        "eval_task_hash": {s: hashes[s] for s in sorted(hashes)},
        "eval_task_ids": {s: list(ids[s]) for s in sorted(hashes) if ids.get(s)},
        "protocol": protocol,
        "seeds": seeds,
    }


def submit(
    paths: Sequence[str | Path],
    *,
    root: str | Path = "leaderboards",
    board: str | None = None,
    method: str,
    authors: Sequence[str],
    paper: str | None = None,
    code: str | None = None,
    compute: str | dict | None = None,
    reproduced: bool = False,
    notes: str | None = None,
    when: date | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``<root>/<board>/<date>_<agent>_<model>/`` from the complete runs under ``paths`` (runs of one
    experiment arm: the folder is named after the arm, `seedbench.training.experiments.arm`)."""
    root = Path(root)
    catalogue = load_catalogue(root)
    runs = [r for r in read_runs([Path(p) for p in paths]) if r.complete]
    if not runs:
        raise SubmitError("no complete runs found under " + ", ".join(map(str, paths)))
    identities = sorted({(r.env, r.arm, r.model) for r in runs})
    if len(identities) != 1:
        raise SubmitError("a submission is one env × agent × model; found " +
                          "; ".join("/".join(i) for i in identities) + " (pass the runs of one agent, or use "
                          "`seedbench leaderboard submit-experiment` for every arm of an experiment)")
    first = runs[0]
    if board is None:
        target = find_board(catalogue, first.summary.get("env_id"), first.model, first.config.get("iterations"))
    elif board not in catalogue.boards:
        raise SubmitError(f"unknown board {board!r}; known boards: {', '.join(sorted(catalogue.boards)) or 'none'}")
    else:
        target = catalogue.boards[board]
    metadata = {"method": method, "authors": list(authors), "paper": paper, "code": code,
                "compute": compute or "not stated", "reproduced": bool(reproduced), "source": "seedbench"}
    if notes:
        metadata["notes"] = notes
    return write_submission(runs, target, metadata, root, when=when, overwrite=overwrite)


def write_submission(runs: list[Run], target: Board, metadata: dict[str, Any], root: Path, *,
                     when: date | None = None, overwrite: bool = False) -> Path:
    """Write ``<board>/<date>_<arm>_<model>/`` (summary.json from `runs`, `metadata`), validate it and remove
    it again if it does not validate."""
    first = runs[0]
    summary = make_summary(runs, target)
    name = f"{(when or date.today()).isoformat()}_{slug(first.arm)}_{slug(first.model)}"
    folder = target.path / name
    if folder.exists():
        if not overwrite:
            raise SubmitError(f"{folder} already exists; pass --overwrite to replace it")
        shutil.rmtree(folder)
    staging = target.path / f".{name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (staging / METADATA_FILE).write_text(yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True))
    staging.rename(folder)
    problems = load_catalogue(root, only=[folder]).problems
    if problems:
        shutil.rmtree(folder)
        raise SubmitError("the submission does not validate:\n" + "\n".join(f"  {p}" for p in problems))
    return folder
