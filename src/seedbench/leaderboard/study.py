"""A study's board: every arm of one experiment (GRPO, SEED, its ablations, a no-learning control) as one
seedbench submission each, on a board of its own, with the same validation as any submission.

``seedbench leaderboard submit-experiment EXPERIMENT_DIR --authors NAME [--budget-label cpu-study]`` reads the
experiment's complete runs, finds or creates the board for their env × base model × budget (a new board's
``board.yaml`` is written from the runs: eval splits, their task-list hashes, micro and macro success of
every split, baseline ``grpo``), and writes ``<date>_<arm>_<model>/`` per arm (`submit.write_submission`):
per-seed finals and curves, the protocol (model, step limit, updates, tasks per batch, group size, seeds,
commit) and the arm's overrides. Nothing is written when any arm would not validate.

A board asks for a number of seeds per submission (``min_seeds``; ``--min-seeds`` when the board is created,
default 3). An arm with fewer complete seeds than that is held back, named in the result, and joins the board
when its seeds are done (submit again with ``--overwrite``): a study in progress can publish its finished
arms without ranking a one-seed arm among five-seed ones.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Sequence

import yaml

from seedbench.leaderboard.catalogue import load_catalogue
from seedbench.leaderboard.schema import BOARD_FILE, board_key, load_board
from seedbench.leaderboard.submit import SubmitError, write_submission
from seedbench.report.data import Run, read_runs
from seedbench.report.tables import all_splits, group_runs


def study_budget(runs: list[Run], label: str | None) -> dict[str, Any]:
    """The budget every run of the study trained with (its board checks it), named by `label` if given."""
    iterations = sorted({int(r.config.get("iterations", r.iterations_done)) for r in runs})
    if len(iterations) != 1:
        raise SubmitError(f"the runs trained for different numbers of iterations ({iterations}); a board is one "
                          "budget: submit the runs of one experiment")
    budget: dict[str, Any] = {"iterations": iterations[0]}
    if label:
        budget["label"] = label
    return budget


def board_definition(runs: list[Run], budget: dict[str, Any], title: str | None, min_seeds: int) -> dict[str, Any]:
    """A new board's board.yaml, read off the study's runs."""
    first = runs[0]
    splits = all_splits(runs)
    hashes = {split: first.eval_task_hash.get(split) for split in splits}
    metrics = [f"eval/{split}/success_{avg}" for split in splits for avg in ("micro", "macro")]
    label = f" · {budget['label']}" if budget.get("label") else ""
    return {"title": title or f"{first.env} · {first.model} · {budget['iterations']} updates{label}",
            "env": first.env, "env_id": first.summary.get("env_id"), "model": first.model, "budget": budget,
            "splits": splits, "primary_metric": metrics[0], "metrics": metrics, "min_seeds": min_seeds,
            "eval_task_hash": hashes, "baseline": "grpo",
            "notes": "One experiment's arms, each a seedbench submission (`seedbench leaderboard submit-experiment`); "
                     "a control arm shows what no learning scores."}


@dataclass
class StudySubmission:
    folders: list[Path] = field(default_factory=list)  # one submission folder per arm written
    held_back: dict[str, int] = field(default_factory=dict)  # arm -> its complete seeds, fewer than the board asks
    min_seeds: int = 3

    def describe(self) -> str:
        text = ""
        if self.folders:
            text = (f"wrote {len(self.folders)} submission(s) to {self.folders[0].parent}: "
                    + ", ".join(f.name for f in self.folders))
        if self.held_back:
            text += ("; " if text else "") + f"held back until they have {self.min_seeds} seeds: " + ", ".join(
                f"{arm} ({n} seed{'s' if n != 1 else ''})" for arm, n in self.held_back.items())
        return text


def submit_experiment(
    paths: Sequence[str | Path],
    *,
    root: str | Path = "leaderboards",
    authors: Sequence[str],
    board: str | None = None,
    budget_label: str | None = None,
    title: str | None = None,
    methods: dict[str, str] | None = None,
    compute: str | None = None,
    notes: str | None = None,
    when: date | None = None,
    overwrite: bool = False,
    min_seeds: int = 3,
) -> StudySubmission:
    """One submission per arm of the complete runs under `paths` (one env × model), on `board` or on the
    board their env, model and budget name (created with `min_seeds` when missing). Arms with fewer complete
    seeds than the board's ``min_seeds`` are held back (`StudySubmission.held_back`)."""
    root = Path(root)
    runs = [r for r in read_runs([Path(p) for p in paths]) if r.complete]
    if not runs:
        raise SubmitError("no complete runs found under " + ", ".join(map(str, paths)))
    groups = group_runs(runs)
    if len(groups) != 1:
        raise SubmitError("a board is one env × base model; the runs have " +
                          ", ".join(f"{env}/{model}" for env, model in groups) + " (pass one experiment's runs)")
    (env, model), arms = next(iter(groups.items()))
    methods = dict(methods or {})
    unknown = sorted(set(methods) - set(arms))
    if unknown:
        raise SubmitError(f"--method names arm(s) {', '.join(unknown)} the runs do not have; arms: {', '.join(arms)}")
    budget = study_budget(runs, budget_label)
    key = board or board_key(env, runs[0].summary.get("env_id"), model, budget)
    path = root / key
    if not root.is_dir():
        raise SubmitError(f"no leaderboards directory at {root}; pass --root")
    created = not (path / BOARD_FILE).is_file()
    if created:
        if min_seeds < 1:  # before the folder exists: a refused call leaves nothing behind
            raise SubmitError(f"--min-seeds must be at least 1, got {min_seeds}")
        path.mkdir(exist_ok=True)
        (path / BOARD_FILE).write_text(yaml.safe_dump(board_definition(runs, budget, title, min_seeds),
                                                      sort_keys=False, allow_unicode=True))
    target, problems = load_board(path, root)
    if target is None:
        if created:
            shutil.rmtree(path)
        raise SubmitError(f"board {key!r} does not validate: " + "; ".join(map(str, problems)))
    result = StudySubmission(min_seeds=target.min_seeds)
    folders = result.folders
    try:
        for arm, arm_runs in arms.items():
            seeds = len({r.seed for r in arm_runs})
            if seeds < target.min_seeds:
                result.held_back[arm] = seeds
                continue
            metadata = {"method": methods.get(arm, arm), "authors": list(authors), "paper": None, "code": None,
                        "compute": compute or _compute_text(arm_runs), "reproduced": False, "source": "seedbench"}
            if notes:
                metadata["notes"] = notes
            folders.append(write_submission(arm_runs, target, metadata, root, when=when, overwrite=overwrite))
    except SubmitError:
        for folder in folders:  # all arms or none: a board with half a study would mislead
            shutil.rmtree(folder, ignore_errors=True)
        if created:
            shutil.rmtree(path, ignore_errors=True)
        raise
    catalogue = load_catalogue(root, only=[path])
    if catalogue.problems:
        raise SubmitError("the board does not validate:\n" + "\n".join(f"  {p}" for p in catalogue.problems))
    if not folders:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        raise SubmitError(f"no arm has the {target.min_seeds} complete seeds the board asks for ("
                          + ", ".join(f"{a}: {n}" for a, n in result.held_back.items()) + ")")
    return result


def _compute_text(runs: list[Run]) -> str:
    """Mean training time per run from metrics.jsonl (``time/iteration_s`` summed), when the runs logged it."""
    totals = [sum(float(m["time/iteration_s"]) for m in r.metrics if isinstance(m.get("time/iteration_s"), (int, float)))
              for r in runs]
    totals = [t for t in totals if t > 0]
    if not totals:
        return "not stated"
    return (f"{len(runs)} run{'s' if len(runs) != 1 else ''}, {sum(totals) / len(totals):.0f} s of training per run "
            "(metrics.jsonl time/iteration_s)")
