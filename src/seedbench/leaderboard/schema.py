"""What a leaderboard is made of: boards, submissions and the problems validation reports.

Layout (data in git, built by the library — balrog-ai/experiments style)::

    leaderboards/
      <board>/board.yaml                         the board's definition (env version, base model, budget)
      <board>/<date>_<agent>_<model>/summary.json    per-seed final metrics and curves, task hash, protocol
      <board>/<date>_<agent>_<model>/metadata.yaml   method, authors, links, compute, reproduced, source
      README.md, leaderboard.csv, index.html     written by `seedbench leaderboard build`

A board is keyed by env version + base model + budget, and its folder is named after that key
(`board_key`). A submission's ``source`` is ``seedbench`` (per-seed results produced by seedbench runs)
or ``paper-reported`` (numbers copied from a paper: aggregate values only, never mixed into the
seedbench ranking).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "seedbench.submission/1"
SOURCES = ("seedbench", "paper-reported")
MAX_FILE_BYTES = 1 << 20  # 1 MiB per file: a summary with curves for 10 seeds is ~50 KB
MAX_TOTAL_BYTES = 4 << 20  # per submission folder; leaderboards live in git
FOLDER_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})_([A-Za-z0-9.+-]+)_([A-Za-z0-9.+-]+)$")
BOARD_FILE = "board.yaml"
SUMMARY_FILE = "summary.json"
METADATA_FILE = "metadata.yaml"
OUTPUT_FILES = ("README.md", "leaderboard.csv", "index.html")


@dataclass(frozen=True)
class Problem:
    """One validation problem: which file, where in it (a field path), and what is wrong."""

    file: str  # path relative to the leaderboards root
    where: str  # field path such as seeds[2].final["eval/valid_seen/success_micro"], or "" for the file
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}" if self.where else f"{self.file}: {self.message}"


def slug(text: str) -> str:
    """Lower-case name safe in a folder name: ``Qwen/Qwen2.5-3B-Instruct`` → ``qwen2.5-3b-instruct``."""
    text = str(text).rsplit("/", 1)[-1].lower()
    return re.sub(r"[^a-z0-9.+-]+", "-", text).strip("-") or "x"


def budget_slug(budget: dict[str, Any]) -> str:
    """A board's budget in its key: its ``label`` when it has one (``cpu-study``: a study's board, whose
    budget fields are still checked), else ``<N>it`` or ``<N>traj``."""
    if budget.get("label"):
        return slug(str(budget["label"]))
    if budget.get("iterations"):
        return f"{int(budget['iterations'])}it"
    if budget.get("trajectories"):
        return f"{int(budget['trajectories'])}traj"
    return str(budget.get("label") or "paper")


def env_slug(env: str, env_id: str | None) -> str:
    """``seedbench/ALFWorld-v0`` → ``alfworld-v0``; an env seedbench does not have yet → its name."""
    return slug(env_id) if env_id else slug(env)


def board_key(env: str, env_id: str | None, model: str, budget: dict[str, Any]) -> str:
    return f"{env_slug(env, env_id)}__{slug(model)}__{budget_slug(budget)}"


@dataclass
class Board:
    name: str  # folder name == board_key(...)
    path: Path
    title: str
    env: str
    env_id: str | None
    model: str
    budget: dict[str, Any]
    splits: list[str]
    primary_metric: str
    metrics: list[str]
    min_seeds: int = 3
    eval_task_hash: dict[str, str | None] = field(default_factory=dict)
    baseline: str = "grpo"
    notes: str = ""

    @property
    def key(self) -> str:
        return board_key(self.env, self.env_id, self.model, self.budget)

    def model_matches(self, model: str) -> bool:
        return slug(model) == slug(self.model)


BOARD_FIELDS = {"title": str, "env": str, "env_id": (str, type(None)), "model": str, "budget": dict,
                "splits": list, "primary_metric": str, "metrics": list, "min_seeds": int,
                "eval_task_hash": dict, "baseline": str, "notes": str}
BOARD_REQUIRED = ("title", "env", "env_id", "model", "budget", "splits", "primary_metric", "metrics")


def load_board(path: Path, root: Path) -> tuple[Board | None, list[Problem]]:
    """Read ``<path>/board.yaml``; returns the board (None if unusable) and its problems."""
    import yaml

    file = (path / BOARD_FILE).relative_to(root).as_posix()
    if not (path / BOARD_FILE).is_file():
        return None, [Problem(file, "", "missing: every board folder needs a board.yaml")]
    try:
        data = yaml.safe_load((path / BOARD_FILE).read_text())
    except RecursionError:
        return None, [Problem(file, "", "nested too deeply to read; a board is one mapping of plain fields")]
    except yaml.YAMLError as err:
        return None, [Problem(file, "", f"not valid YAML ({err})")]
    if not isinstance(data, dict):
        return None, [Problem(file, "", "expected a mapping at the top level")]
    problems = []
    for key in BOARD_REQUIRED:
        if key not in data:
            problems.append(Problem(file, key, "required field is missing"))
    for key, value in data.items():
        if key not in BOARD_FIELDS:
            problems.append(Problem(file, key, f"unknown field; valid fields: {', '.join(sorted(BOARD_FIELDS))}"))
        elif not isinstance(value, BOARD_FIELDS[key]) or isinstance(value, bool):
            problems.append(Problem(file, key, f"expected {_type_name(BOARD_FIELDS[key])}, got {type(value).__name__}"))
    if problems:
        return None, problems
    board = Board(name=path.name, path=path, title=data["title"], env=data["env"], env_id=data["env_id"],
                  model=data["model"], budget=data["budget"], splits=[str(s) for s in data["splits"]],
                  primary_metric=data["primary_metric"], metrics=[str(m) for m in data["metrics"]],
                  min_seeds=int(data.get("min_seeds", 3)), eval_task_hash=dict(data.get("eval_task_hash") or {}),
                  baseline=str(data.get("baseline", "grpo")), notes=str(data.get("notes", "")))
    if board.primary_metric not in board.metrics:
        problems.append(Problem(file, "primary_metric", f"{board.primary_metric!r} is not listed in metrics"))
    if board.name != board.key:
        problems.append(Problem(file, "", f"board folder must be named after its key {board.key!r} "
                                          "(env version __ base model __ budget)"))
    return (None if problems else board), problems


def _type_name(t) -> str:
    if isinstance(t, tuple):
        return " or ".join("null" if x is type(None) else x.__name__ for x in t)
    return {"str": "a string", "dict": "a mapping", "list": "a list", "int": "an integer"}.get(t.__name__, t.__name__)


def board_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def submission_dirs(board_path: Path) -> list[Path]:
    return sorted(p for p in board_path.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
