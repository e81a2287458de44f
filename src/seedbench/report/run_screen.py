"""The screen a finished ``seedbench run`` ends with: what the run measured, in a form a person reads.

It is built from the run directory alone (summary.json's ``before_after``, skills.jsonl), so it says only
what the files say: held-out success before -> after with its paired interval over tasks, one sentence on
what that interval can and cannot show for one training seed, two skills the policy wrote about its own
episodes, where the HTML report is, and the command that opens the episodes in the viewer.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from seedbench.jsonio import read_json_checked, read_jsonl

WIDTH = 100


def what_it_shows(result: dict[str, Any], fresh_streams: bool = False) -> str:
    """One honest sentence on a before -> after comparison of one run (one training seed). `fresh_streams`: the
    two evaluations sampled their own streams (``eval.same_stream`` off), so the interval, a bootstrap over
    which tasks were drawn, leaves out the sampling, and a frozen policy moves that much too."""
    low, high = result["ci95"]
    tasks = result["tasks"]
    if fresh_streams and (low > 0 or high < 0):
        return (f"The interval excludes 0, but it counts only which {tasks} tasks were drawn: the two evaluations "
                "sampled afresh (eval.same_stream off), and the same weights evaluated twice that way differ too. "
                "A control at lr 0 and several seeds say whether this run learned (`seedbench experiment`, "
                "docs/reports.md).")
    if low > 0:
        return (f"The interval is above 0: on these {tasks} held-out tasks this run improved. It is one training "
                "seed; whether the method learns reliably, or better than GRPO, takes several seeds and a control "
                "(`seedbench experiment`, docs/reports.md).")
    if high < 0:
        return (f"The interval is below 0: on these {tasks} held-out tasks this run got worse. It is one training "
                "seed; several seeds and a control say whether that is the method or this seed.")
    return (f"The interval includes 0: at this size ({tasks} held-out tasks, one seed, a few updates) the run shows "
            "the pipeline working end to end, not learning; the README's learning recipe is the longer run that "
            "measures that.")


def chosen_skills(analyses: list[dict[str, Any]], count: int = 2) -> list[dict[str, Any]]:
    """`count` parsed skills of a run's `analyses` (its skills.jsonl records): the latest update's first won and
    first lost episode where there are both (so the screen shows one of each), then the latest others;
    distinct texts only."""
    records = [r for r in analyses if r.get("ok") and r.get("episode_skill")]
    if not records:
        return []
    last = max(r.get("iteration", 0) for r in records)
    pool = [r for r in records if r.get("iteration", 0) == last]
    pool += sorted((r for r in records if r.get("iteration", 0) != last), key=lambda r: -r.get("iteration", 0))
    picked: list[dict[str, Any]] = []
    for wanted in (True, False):
        match = next((r for r in pool if bool(r.get("won")) == wanted), None)
        if match is not None:
            picked.append(match)
    for record in pool:
        if len(picked) >= count:
            break
        if all(record["episode_skill"].strip() != p["episode_skill"].strip() for p in picked):
            picked.append(record)
    return picked[:count]


def _skill_lines(run_dir: Path) -> list[str]:
    """Two parsed skills; or, when the run wrote analyses but none parsed, that fact (SEED's distillation term
    had no skill to condition on) and the start of one raw answer, so the screen never hides it."""
    path = run_dir / "skills.jsonl"
    records = list(read_jsonl(path)) if path.exists() else []
    skills = chosen_skills(records)
    if skills:
        lines = [f"Skills the policy wrote about its own episodes ({path}):"]
        for record in skills:
            outcome = "won" if record.get("won") else "lost"
            lines.append(f"  update {record.get('iteration')}, {outcome} episode on {record.get('task')}:")
            lines += _quote(record["episode_skill"])
        return lines
    if not records:
        return []
    lines = [f"None of the policy's {len(records)} self-analyses parsed into a skill ({path}), so SEED's "
             "distillation term had nothing to condition on and the updates were GRPO's. One raw answer:"]
    raw = next((r.get("raw") for r in records if r.get("raw")), "")
    return lines + _quote(raw[:300] + ("…" if len(raw) > 300 else ""))


def _quote(text: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), WIDTH - 4, initial_indent="  > ", subsequent_indent="    ")


def closing_screen(run_dir: str | Path, report_html: str | Path | None = None) -> str:
    """The closing screen of the run in `run_dir` (`report_html`: the report built for it, if any)."""
    run_dir = Path(run_dir)
    summary, _ = read_json_checked(run_dir / "summary.json")  # a missing or damaged one: a shorter screen
    lines = ["", f" seedbench: {summary.get('agent', 'run')} on {summary.get('env', '?')} complete ".center(WIDTH, "="),
             f"Run directory: {run_dir}"]
    for result in summary.get("before_after") or []:
        low, high = result["ci95"]
        lines.append(f"Held-out success on {result['split']} ({result['tasks']} tasks): {result['before']:.3f} -> "
                     f"{result['after']:.3f}, difference {result['difference']:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}] "
                     "(paired bootstrap over tasks)")
        fresh = (summary.get("protocol") or {}).get("eval_same_stream") is False
        lines += textwrap.wrap(what_it_shows(result, fresh), WIDTH - 2, initial_indent="  ", subsequent_indent="  ")
    if not summary.get("before_after"):
        lines.append("No before -> after comparison: the run evaluated once or not at all (eval.num_tasks, iterations).")
    lines += _skill_lines(run_dir)
    if report_html is not None:
        lines.append(f"Report with plots: {report_html}")
    lines.append(f"Browse the episodes and skills: seedbench view {run_dir}   (add --serve for a local web page)")
    lines.append("=" * WIDTH)
    return "\n".join(lines)
