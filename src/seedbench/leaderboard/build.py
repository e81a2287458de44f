"""Build leaderboards/README.md, leaderboard.csv and index.html from the validated submissions.

Numbers come from `seedbench.report.tables.summarize_scores` (the code reports use) and pages are
rendered by the report's document renderers. The output is deterministic — sorted inputs, a fixed
bootstrap seed, no timestamps — so building twice gives byte-identical files and a diff of a built
board shows exactly what a new submission changed.

Results produced by seedbench are ranked by the board's primary metric. Paper-reported rows are listed
in a separate table below them, never ranked with them: they were measured on other task samples,
sometimes with other averages, and usually with one seed (docs/method.md §8.1).

Every string from a board, a summary or metadata enters the pages through `md_escape` or `md_code`
(`seedbench.report.document`), and links only after validation parsed them as http(s) URLs.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from seedbench.leaderboard.schema import OUTPUT_FILES, Board
from seedbench.registry import canonical_agent
from seedbench.leaderboard.catalogue import Catalogue, load_catalogue
from seedbench.leaderboard.submission import Submission
from seedbench.report import tables as T
from seedbench.report.document import (
    Bullets, Document, Section, Table, Text, md_code, md_escape, md_markup, to_markdown,
)
from seedbench.report.html import to_html

CSV_COLUMNS = ("board", "source", "submission", "method", "agent", "model", "metric", "n_seeds", "mean", "low",
               "high", "iqm", "std", "average", "poi_vs_baseline", "poi_low", "poi_high", "reproduced", "control")


class BuildError(ValueError):
    """The leaderboards do not validate; nothing was written."""


def _final_values(sub: Submission, metric: str) -> list[float]:
    return [float(seed["final"][metric]) for seed in sub.summary["seeds"] if metric in seed.get("final", {})]


def _arm(sub: Submission) -> str:
    """The submission's arm: an experiment arm's label, else its agent."""
    return str(sub.summary.get("arm") or sub.summary.get("agent", ""))


def _is_control(sub: Submission) -> bool:
    """A no-learning control, by the reports' rule (`seedbench.report.tables.is_control_arm`): its score is what
    the starting checkpoint earns, a reference line for the methods, so the board lists it unranked."""
    overrides = sub.summary.get("overrides")
    return T.is_control_arm(_arm(sub), [overrides if isinstance(overrides, dict) else {}])


def _baseline(board: Board, subs: list[Submission]) -> Submission | None:
    """The board's reference run: its latest seedbench submission of the baseline arm, else of the baseline
    agent without an arm label (a GRPO control, labelled, is never the baseline)."""
    ours = [s for s in subs if s.source == "seedbench"]
    candidates = [s for s in ours if s.summary.get("arm") == board.baseline] or [
        s for s in ours if not s.summary.get("arm")
        and canonical_agent(s.summary.get("agent", "")) == canonical_agent(board.baseline)]
    return max(candidates, key=lambda s: s.name) if candidates else None


def _ranks(order: list[str], primary: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each submission's rank cell: "control" for a no-learning control, else its competition rank by the
    primary metric's mean (1, 1, 3): submissions with the same mean share a rank, so a tie never reads as a
    win for whichever name sorts first."""
    ranks: dict[str, str] = {}
    previous: tuple[float, int] | None = None
    for position, name in enumerate((n for n in order if not primary[n]["control"]), start=1):
        mean = _nan_low(primary[name]["mean"])
        rank = previous[1] if previous is not None and math.isclose(previous[0], mean, abs_tol=1e-9) else position
        ranks[name], previous = str(rank), (mean, rank)
    return {name: ranks.get(name, "control") for name in order}


SEEDBENCH_PROTOCOL = (("max_steps", "step limit"), ("iterations", "updates"), ("tasks_per_batch", "tasks/batch"),
                      ("group_size", "group"), ("num_tasks", "eval tasks"), ("temperature", "eval temperature"))


def seedbench_protocol_text(summary: dict[str, Any]) -> str:
    """One line of what a seedbench submission was trained and evaluated under: model, step limit, updates,
    batch, group size, seeds, commit, and an arm's overrides."""
    protocol = summary.get("protocol") if isinstance(summary.get("protocol"), dict) else {}
    parts = [f"model {summary.get('model')}"]
    parts += [f"{label} {protocol[key]}" for key, label in SEEDBENCH_PROTOCOL if protocol.get(key) is not None]
    seeds = protocol.get("seeds")
    if isinstance(seeds, list):
        parts.append("seeds " + " ".join(map(str, seeds)))
    parts.append(f"commit {str(summary.get('git_hash') or '?')[:10]}")
    overrides = summary.get("overrides")
    if isinstance(overrides, dict) and overrides:
        parts.append("set " + " ".join(f"{k}={v}" for k, v in sorted(overrides.items(), key=lambda kv: str(kv[0]))))
    return ", ".join(parts)


def board_rows(board: Board, subs: list[Submission]) -> list[dict[str, Any]]:
    """One record per (seedbench submission, metric) with the aggregate over seeds."""
    base = _baseline(board, subs)
    rows = []
    for sub in subs:
        if sub.source != "seedbench":
            continue
        for metric in board.metrics:
            baseline_values = None
            if base is not None and sub is not base and metric == board.primary_metric:
                baseline_values = _final_values(base, metric)
            agg = T.summarize_scores(_final_values(sub, metric), baseline_values)
            rows.append({"board": board.name, "source": "seedbench", "submission": sub.name,
                         "method": sub.metadata["method"], "agent": canonical_agent(sub.summary["agent"]),
                         "arm": _arm(sub), "model": sub.summary["model"], "metric": metric, "n_seeds": agg["n"], "mean": agg["mean"], "low": agg["low"],
                         "high": agg["high"], "iqm": agg["iqm"], "std": _std(_final_values(sub, metric)),
                         "average": "micro" if metric.endswith("_micro") else ("macro" if metric.endswith("_macro") else ""),
                         "poi_vs_baseline": agg["poi"], "poi_low": agg["poi_low"], "poi_high": agg["poi_high"],
                         "reproduced": bool(sub.metadata.get("reproduced")), "is_baseline": sub is base,
                         "control": _is_control(sub), "protocol": seedbench_protocol_text(sub.summary)})
    return rows


def paper_rows(board: Board, subs: list[Submission]) -> list[dict[str, Any]]:
    rows = []
    for sub in subs:
        if sub.source != "paper-reported":
            continue
        for metric, entry in sub.summary["reported"].items():
            rows.append({"board": board.name, "source": "paper-reported", "submission": sub.name,
                         "method": sub.metadata["method"], "agent": canonical_agent(sub.summary["agent"]), "model": sub.summary["model"],
                         "metric": metric, "n_seeds": entry.get("n_seeds"), "mean": float(entry["value"]),
                         "low": math.nan, "high": math.nan, "iqm": math.nan,
                         "std": math.nan if entry.get("std") is None else float(entry["std"]),
                         "average": entry.get("average", "unknown"), "poi_vs_baseline": math.nan,
                         "poi_low": math.nan, "poi_high": math.nan,
                         "reproduced": bool(sub.metadata.get("reproduced")), "note": entry.get("note", ""),
                         "max_steps": _paper_protocol(sub).get("max_steps"),
                         "protocol": protocol_text(_paper_protocol(sub))})
    return rows


def _paper_protocol(sub: Submission) -> dict[str, Any]:
    protocol = sub.summary.get("protocol")
    return protocol if isinstance(protocol, dict) else {}


PROTOCOL_LABELS = (("model", "model"), ("max_steps", "step limit"), ("updates", "updates"),
                   ("tasks_per_batch", "tasks/batch"), ("group_size", "group"), ("seeds", "seeds"),
                   ("eval_split", "eval"), ("framework", "framework"), ("framework_commit", "commit"))


def protocol_text(protocol: dict[str, Any]) -> str:
    """One line of a paper row's recorded protocol; fields the paper leaves open read "?"."""
    if not protocol:
        return "not recorded"
    return ", ".join(f"{label} {'?' if protocol.get(key) is None else protocol[key]}"
                     for key, label in PROTOCOL_LABELS if key in protocol)


def step_limit_groups(papers: list[dict[str, Any]]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Paper rows grouped by their episode step limit (None: not recorded), smallest limit first: success
    within 30 steps and within 50 is not one quantity, so the board never puts them in one table."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in papers:
        groups.setdefault(row.get("max_steps"), []).append(row)
    return sorted(groups.items(), key=lambda item: (item[0] is None, item[0] or 0))


def _std(values: list[float]) -> float:
    if len(values) < 2:
        return math.nan
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6f}"
    return str(value)


def _short(metric: str) -> str:
    """``eval/valid_seen/success_micro`` → ``valid_seen micro``."""
    parts = metric.split("/")
    if len(parts) == 3 and parts[0] == "eval":
        return f"{parts[1]} {parts[2].replace('success_', '')}"
    return metric


def _links(meta: dict[str, Any]) -> str:
    # validation allows no whitespace, quotes or angle brackets in a link; parentheses would end it early
    links = [f"[{name}]({meta[name].replace('(', '%28').replace(')', '%29')})" for name in ("paper", "code")
             if meta.get(name)]
    return " ".join(links) or "–"


def _compute(meta: dict[str, Any]) -> str:
    compute = meta.get("compute")
    if isinstance(compute, dict):
        return ", ".join(f"{md_escape(k)}: {md_escape(v)}" for k, v in sorted(compute.items(), key=lambda kv: str(kv[0])))
    return md_escape(compute or "–")


def board_section(board: Board, subs: list[Submission]) -> Section:
    links = _links
    section = Section(md_escape(board.title))
    budget = ", ".join(f"{k} {v}" for k, v in board.budget.items() if k != "label")
    if not budget:
        budget = "the paper's own" if board.budget.get("label") == "paper" else str(board.budget.get("label"))
    facts = [f"board key: {md_code(board.name)}", f"env: {md_code(board.env)}" + (
                 f" ({md_code(board.env_id)})" if board.env_id else " (no seedbench env yet: paper-reported rows only)"),
             f"base model: {md_code(board.model)}", f"budget: {md_escape(budget)}",
             f"eval splits: {md_escape(', '.join(board.splits))}",
             f"ranked by: {md_code(board.primary_metric)}; at least {board.min_seeds} seeds per submission"]
    pinned = {k: v for k, v in board.eval_task_hash.items() if v}
    if pinned:
        facts.append("eval task lists: " + ", ".join(f"{md_escape(k)} {md_code(v)}" for k, v in sorted(pinned.items())))
    section.add(Bullets(facts))
    if board.notes:
        section.add(Text(md_markup(board.notes.strip())))

    rows = board_rows(board, subs)
    ours = Section("Results produced with seedbench")
    if not rows:
        ours.add(Text("No seedbench submissions yet. See docs/leaderboard.md to submit one."))
    else:
        by_sub: dict[str, dict[str, dict[str, Any]]] = {}
        for row in rows:
            by_sub.setdefault(row["submission"], {})[row["metric"]] = row
        primary = {name: by_sub[name][board.primary_metric] for name in by_sub}
        order = sorted(by_sub, key=lambda name: (primary[name]["control"], -_nan_low(primary[name]["mean"]), name))
        header = ["rank", "method", "agent", "seeds", f"{md_escape(_short(board.primary_metric))} % [95% CI]", "IQM %"]
        others = [m for m in board.metrics if m != board.primary_metric]
        header += [f"{md_escape(_short(m))} % [95% CI]" for m in others]
        header += [f"P(> {md_escape(board.baseline)}) [95% CI]", "reproduced", "compute", "protocol", "links",
                   "submission"]
        table_rows = []
        subs_by_name = {s.name: s for s in subs}
        ranks = _ranks(order, primary)
        for name in order:
            r = primary[name]
            agent = r["agent"] if r["arm"] == r["agent"] else f"{r['agent']} (arm {r['arm']})"
            cells = [ranks[name], md_escape(r["method"]), md_escape(agent), str(r["n_seeds"]),
                     T.fmt_ci(r["mean"], r["low"], r["high"]),
                     T.fmt_pct(r["iqm"])]
            cells += [T.fmt_ci(by_sub[name][m]["mean"], by_sub[name][m]["low"], by_sub[name][m]["high"]) for m in others]
            poi = "baseline" if r["is_baseline"] else ("–" if math.isnan(r["poi_vs_baseline"]) else
                                                       T.fmt_ci(r["poi_vs_baseline"], r["poi_low"], r["poi_high"], pct=False))
            meta = subs_by_name[name].metadata
            cells += [poi, "yes" if r["reproduced"] else "no", _compute(meta), md_escape(r["protocol"]), links(meta),
                      md_code(name)]
            table_rows.append(cells)
        numeric = [True, False, False] + [True] * (len(header) - 9) + [True, False, False, False, False, False]
        ours.add(Table(header, table_rows, numeric=numeric[:len(header)]))
        if any(r["control"] for r in primary.values()):
            ours.add(Text("Rows ranked \"control\" are no-learning controls (`optim.lr` 0, or an arm named control…): "
                          "the starting checkpoint's score under the same loop, listed below the ranked rows, never "
                          "ranked with them."))
    section.add(ours)

    papers = paper_rows(board, subs)
    theirs = Section("Paper-reported (not produced by seedbench)")
    if not papers:
        theirs.add(Text("None."))
    else:
        theirs.add(Text("Copied from the papers, not rerun: other eval task samples, single or few seeds, and "
                        "sometimes macro averages compared with micro ones. Use them as reference points only; "
                        "they are not ranked with the results above."))
        groups = step_limit_groups(papers)
        if len(groups) > 1:
            theirs.add(Text("The papers cap episodes at different step limits; rows are grouped by limit and are "
                            "not comparable across groups."))
        for limit, group in groups:
            table = _paper_table(board, group, subs)
            if len(groups) > 1:
                title = f"step limit {limit}" if limit is not None else "step limit not stated by the paper"
                theirs.add(Section(title, [table]))
            else:
                theirs.add(table)
    section.add(theirs)
    return section


def _paper_table(board: Board, papers: list[dict[str, Any]], subs: list[Submission]) -> Table:
    """One table of paper rows (all under the same step limit)."""
    metrics = [m for m in board.metrics if any(p["metric"] == m for p in papers)]
    metrics += sorted({p["metric"] for p in papers} - set(metrics))
    by_sub = {}
    for p in papers:
        by_sub.setdefault(p["submission"], {})[p["metric"]] = p
    header = (["method", "agent"] + [f"{md_escape(_short(m))} %" for m in metrics] +
              ["protocol", "source", "notes"])
    table_rows = []
    subs_by_name = {s.name: s for s in subs}
    for name in sorted(by_sub):
        first = next(iter(by_sub[name].values()))
        cells = [md_escape(first["method"]), md_escape(first["agent"])]
        for m in metrics:
            p = by_sub[name].get(m)
            if p is None:
                cells.append("–")
                continue
            text = T.fmt_pct(p["mean"])
            if not math.isnan(p["std"]):
                text += f" ± {T.fmt_pct(p['std'])}"
            detail = [md_escape(p["average"])] if p["average"] and p["average"] != "unknown" else []
            if p["n_seeds"]:
                detail.append(f"{p['n_seeds']} seed{'s' if p['n_seeds'] != 1 else ''}")
            cells.append(text + (f" ({', '.join(detail)})" if detail else ""))
        sub = subs_by_name[name]
        cells.append(md_escape(first["protocol"]))
        where = sub.summary.get("where")
        cells.append(_links(sub.metadata) + (f" {md_escape(where)}" if where else ""))
        cells.append(md_escape(str(sub.summary.get("notes") or sub.metadata.get("notes") or "").strip()))
        table_rows.append(cells)
    return Table(header, table_rows, numeric=[False, False] + [True] * len(metrics) + [False, False, False])


def _nan_low(value: float) -> float:
    return -math.inf if value is None or math.isnan(value) else value


def build_document(catalogue: Catalogue) -> Document:
    doc = Document("seedbench leaderboards")
    intro = Section("About")
    intro.add(Text("Generated by `seedbench leaderboard build` from the submission folders next to this file; "
                   "do not edit by hand. A board is one env version × base model × training budget. Scores "
                   "are final eval success in percent: mean over seeds with a 95 % bootstrap interval, IQM, "
                   "and the probability that a random seed of the method beats a random seed of the board's "
                   "baseline (the same statistics code as `seedbench report`). How to submit: docs/leaderboard.md."))
    boards = [catalogue.boards[name] for name in sorted(catalogue.boards)]
    intro.add(Bullets([f"{md_escape(b.title)} ({md_code(b.name)}): {sum(s.source == 'seedbench' for s in catalogue.submissions.get(b.name, []))} "
                       f"seedbench, {sum(s.source == 'paper-reported' for s in catalogue.submissions.get(b.name, []))} "
                       "paper-reported" for b in boards]))
    doc.sections.append(intro)
    for board in boards:
        doc.sections.append(board_section(board, catalogue.submissions.get(board.name, [])))
    return doc


def to_csv(catalogue: Catalogue) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for name in sorted(catalogue.boards):
        board, subs = catalogue.boards[name], catalogue.submissions.get(name, [])
        for row in board_rows(board, subs) + paper_rows(board, subs):
            writer.writerow([_csv_value(row.get(c)) for c in CSV_COLUMNS])
    return buffer.getvalue()


def build(root: str | Path = "leaderboards") -> list[Path]:
    """Validate everything under ``root`` and write README.md, leaderboard.csv and index.html there.
    Raises `BuildError` (listing every problem) and writes nothing if any submission is invalid."""
    catalogue = load_catalogue(root)
    if catalogue.problems:
        raise BuildError("\n".join(str(p) for p in catalogue.problems))
    root = Path(root)
    doc = build_document(catalogue)
    outputs = {"README.md": to_markdown(doc), "leaderboard.csv": to_csv(catalogue), "index.html": to_html(doc)}
    assert set(outputs) == set(OUTPUT_FILES)
    paths = []
    for name, text in outputs.items():
        path = root / name
        path.write_text(text, encoding="utf-8", newline="\n")
        paths.append(path)
    return paths
