"""The facts of one run directory that a results page quotes, in a few lines: the evaluation curve of every
split, each update's rollout success, invalid answers and GRPO advantage, its time per phase, the skills SEED
logged (how many, how many distinct), and how the held-out episodes of each evaluation ended (won, walked
into a loss, stopped by the step cap, with how many invalid answers):

    python scripts/run_facts.py RUN_DIR [RUN_DIR ...]

Reads ``eval.jsonl``, ``metrics.jsonl``, ``skills.jsonl``, ``summary.json`` and the held-out episodes: a run
directory's ``episodes.jsonl``, or the ``eval_episodes.jsonl`` that ``seedbench report --archive`` keeps in
their place.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from seedbench.jsonio import read_jsonl
from seedbench.report.archive import EVAL_EPISODES
from seedbench.report.data import read_run
from seedbench.report.tables import skill_duplicates

METRICS = ("rollout/success", "rollout/invalid_actions", "train/advantage_abs_mean", "time/rollout_s",
           "time/analysis_s", "time/update_s", "time/iteration_s")


def eval_curves(evals: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """``{split: [(iteration, micro success), ...]}`` in the order evaluated."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for record in evals:
        curves.setdefault(record.get("split", "?"), []).append((record.get("iteration"), record.get("success_micro")))
    return curves


def episode_endings(episodes: list[dict]) -> dict[tuple[str, int], Counter]:
    """How each evaluation's episodes ended, by ``(phase, iteration)``: ``won``, ``step cap`` (truncated) or
    ``lost`` (any other ending: a hole, a wrong answer), plus ``invalid answers`` summed over their steps."""
    endings: dict[tuple[str, int], Counter] = {}
    for episode in episodes:
        phase = str(episode.get("phase", ""))
        if not phase.startswith("eval/"):
            continue
        counts = endings.setdefault((phase, episode.get("iteration")), Counter())
        counts["won" if episode.get("won") else "step cap" if episode.get("truncated") else "lost"] += 1
        counts["invalid answers"] += int(episode.get("num_invalid") or 0)
    return endings


def held_out_episodes(path: Path) -> list[dict]:
    """A run directory's ``episodes.jsonl``, else an archive's ``eval_episodes.jsonl`` (the held-out
    episodes cut to how they ended), else none."""
    for name in ("episodes.jsonl", EVAL_EPISODES):
        if (path / name).is_file():
            return list(read_jsonl(path / name))
    return []


def describe(path: Path) -> list[str]:
    """The lines `main` prints for one run directory (read as `seedbench report` reads it)."""
    run = read_run(path)
    lines = [f"== {path}"]
    for split, curve in eval_curves(run.evals).items():
        lines.append(f"{split}: " + " -> ".join(f"{s:.3f} (it {i})" for i, s in curve))
    for key in METRICS:
        values = [m.get(key) for m in run.metrics]
        if any(isinstance(v, (int, float)) for v in values):
            lines.append(f"{key}: " + ", ".join(f"{v:.3g}" if isinstance(v, (int, float)) else "-" for v in values))
    records = run.skills()
    if records:
        counts = skill_duplicates([run])
        lines.append(f"skills: {counts['skills']} parsed of {len(records)}, {counts['distinct']} distinct")
    for (phase, iteration), counts in sorted(episode_endings(held_out_episodes(path)).items(),
                                             key=lambda item: (item[0][0], item[0][1])):
        lines.append(f"{phase} @ {iteration}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    timing = run.summary.get("timing") or {}
    lines.append(f"complete: {run.summary.get('complete')}, mean iteration {timing.get('mean_iteration_s')} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (or archived runs)")
    for run in parser.parse_args(argv).runs:
        print("\n".join(describe(run)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
