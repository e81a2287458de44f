"""Keeping the logs a report is built from, without the checkpoints.

A finished run directory holds its final model (hundreds of MB) next to a few small logs; a study's
results live in those logs alone. ``seedbench report RUNS --archive DIR`` copies, from every complete run,
exactly the files `seedbench.report.data.read_run` reads (`REPORT_FILES`) into ``DIR/<run id>/``, so the
report, the leaderboard submission and every table can be rebuilt from ``DIR`` after the run directories
are gone (a machine that is wiped between sessions, a run folder deleted to free disk). The archive is a
plain run tree: ``seedbench report DIR`` reads it as it reads the runs themselves.

``episodes.jsonl`` (megabytes: every step's text) stays out; the archive keeps, as ``eval_episodes.jsonl``,
one line per held-out episode with how it ended (`EVAL_EPISODE_FIELDS` and the number of steps), so how a
run's evaluations were won and lost can still be counted (``scripts/run_facts.py`` reads it).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from seedbench.jsonio import read_jsonl
from seedbench.report.data import REPORT_FILES, read_runs

EVAL_EPISODES = "eval_episodes.jsonl"
EVAL_EPISODE_FIELDS = ("iteration", "phase", "task_id", "task_type", "won", "truncated", "num_invalid", "env_return")


@dataclass
class ArchiveResult:
    copied: list[str] = field(default_factory=list)  # run ids archived now
    skipped: list[str] = field(default_factory=list)  # run ids left out: not complete

    @property
    def summary(self) -> str:
        text = f"archived {len(self.copied)} complete run(s)"
        if self.skipped:
            text += f"; left out {len(self.skipped)} unfinished: {', '.join(self.skipped)}"
        return text


def archive_run_logs(paths: list[str | Path], dest: str | Path) -> ArchiveResult:
    """Copy the report's files of every complete run under ``paths`` into ``dest/<run id>/``.

    A run already in the archive is overwritten file by file (a finished run's logs do not change, so
    archiving again is idempotent); unfinished runs are left out, because their logs will still grow.
    """
    dest = Path(dest)
    result = ArchiveResult()
    for run in read_runs([Path(p) for p in paths]):
        if not run.complete:
            result.skipped.append(run.run)
            continue
        target = dest / run.run
        if target.resolve() == run.path.resolve():
            raise ValueError(f"--archive {dest} is where the run {run.run} already is; give another directory")
        target.mkdir(parents=True, exist_ok=True)
        for name in REPORT_FILES:
            source = run.path / name
            if source.is_file():
                shutil.copyfile(source, target / name)
        if (run.path / "episodes.jsonl").is_file():
            lines = (json.dumps(e, sort_keys=True) + "\n" for e in eval_episodes(run.path / "episodes.jsonl"))
            (target / EVAL_EPISODES).write_text("".join(lines), encoding="utf-8")
        result.copied.append(run.run)
    return result


def eval_episodes(path: Path) -> list[dict]:
    """The held-out episodes of an ``episodes.jsonl``, each cut to how it ended and its number of steps."""
    kept = []
    for episode in read_jsonl(path):
        if str(episode.get("phase", "")).startswith("eval/"):
            kept.append({**{k: episode.get(k) for k in EVAL_EPISODE_FIELDS}, "steps": len(episode.get("steps") or [])})
    return kept
