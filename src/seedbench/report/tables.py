"""The numbers of a report, as pandas DataFrames (one function per table).

Every aggregate over seeds goes through `summarize_scores`, which the leaderboard uses too, so a number
on a board and the same number in a report are computed by the same code. Success rates are fractions
in [0, 1] here; formatting as percentages happens at the edge (`fmt_ci`).

Definitions (docs/method.md §8.1 is why both averages are always shown):

- *micro* success: successes / tasks over the whole eval task list (count-weighted).
- *macro* success: the unweighted mean of per-task-type success rates.
- Interval: 95 % percentile bootstrap over seeds (`seedbench.stats.bootstrap_ci`).
- P(X > baseline): probability that a random seed of X beats a random seed of the baseline on the
  final micro success (ties count one half), with a bootstrap interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from seedbench import stats
from seedbench.report.data import Run

X_AXES = {"trajectories": "trajectories", "env_steps": "env steps", "generated_tokens": "generated tokens"}
# (label, metric names in order of preference, unit). Two names where the trainer and the run-directory
# contract spell a signal differently; the first one a run logs is used.
SEED_DIAGNOSTICS = (
    ("analysis success", ("seed/analysis_success_rate",), "%"),
    ("gate mean", ("seed/gate_mean",), "%"),
    ("gate > 0.5", ("seed/gate_frac_above_half", "seed/gate_open_frac"), "%"),
    ("teacher gap", ("seed/teacher_gap_mean",), "nats"),
    ("OPD-active tokens", ("seed/opd_active_ratio",), "%"),
    ("skill length", ("seed/skill_length", "seed/skill_tokens_mean"), "tokens"),
    ("analyzer SFT done", ("seed/analyzer_sft",), "%"),
)
ANALYSIS_SUCCESS = "seed/analysis_success_rate"
LOW_ANALYSIS_SUCCESS = 0.5  # below this, SEED is mostly GRPO (docs/method.md §5.2)


# ----------------------------------------------------------------------------------------------------
# Formatting


def fmt_pct(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.{digits}f}"


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def fmt_ci(point: float, low: float, high: float, pct: bool = True) -> str:
    f = fmt_pct if pct else (lambda v: f"{v:.2f}")
    if math.isnan(low) or math.isnan(high):
        return f"{f(point)} [n/a]"
    return f"{f(point)} [{f(low)}, {f(high)}]"


def fmt_points(point: float, low: float, high: float) -> str:
    """A change in percentage points from fractions, signed: ``+6.2 [+0.0, +15.6]``."""
    if math.isnan(point):
        return "–"
    if math.isnan(low) or math.isnan(high):
        return f"{100 * point:+.1f} [n/a]"
    return f"{100 * point:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


# ----------------------------------------------------------------------------------------------------
# Shared aggregation


def summarize_scores(
    values: Sequence[float],
    baseline: Sequence[float] | None = None,
    *,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
) -> dict[str, float]:
    """Mean, IQM and 95 % CI of per-seed scores, and P(improvement) over ``baseline`` seeds if given.

    Keys: ``n, mean, low, high, iqm, iqm_low, iqm_high, poi, poi_low, poi_high`` (NaN when undefined).
    """
    values = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    out = dict.fromkeys(("mean", "low", "high", "iqm", "iqm_low", "iqm_high", "poi", "poi_low", "poi_high"), math.nan)
    out["n"] = int(values.size)
    if values.size == 0:
        return out
    mean = stats.bootstrap_ci(values, "mean", n_resamples=n_resamples, seed=seed)
    iqm = stats.bootstrap_ci(values, "iqm", n_resamples=n_resamples, seed=seed)
    out.update(mean=mean.point, low=mean.low, high=mean.high, iqm=iqm.point, iqm_low=iqm.low, iqm_high=iqm.high)
    if baseline is not None:
        base = np.asarray([v for v in baseline if v is not None and not math.isnan(v)], dtype=float)
        if base.size:
            poi = stats.probability_of_improvement_ci(values, base, n_resamples=n_resamples, seed=seed)
            out.update(poi=poi.point, poi_low=poi.low, poi_high=poi.high)
    return out


# ----------------------------------------------------------------------------------------------------
# Selecting runs and evaluations


def group_runs(runs: Iterable[Run]) -> dict[tuple[str, str], dict[str, list[Run]]]:
    """``{(env, model): {arm: [runs sorted by seed]}}`` in a stable order. An arm is an experiment entry's
    label, else the agent (`Run.arm`); the tables below call it ``agent``, as it is the agent for runs
    outside a labelled experiment."""
    groups: dict[tuple[str, str], dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for run in sorted(runs, key=lambda r: (r.env, r.model, r.arm, r.seed, r.run)):
        groups[(run.env, run.model)][run.arm].append(run)
    return {k: dict(v) for k, v in groups.items()}


def primary_split(runs: Iterable[Run]) -> str | None:
    """The split every table leads with: the protocol's eval split, else the first one evaluated."""
    for run in runs:
        split = run.declared_split
        if split and any(e.get("split") == split for e in run.evals):
            return split
    for run in runs:
        if run.splits:
            return run.splits[0]
    return None


def all_splits(runs: Iterable[Run]) -> list[str]:
    runs = list(runs)
    first = primary_split(runs)
    ordered = [first] if first else []
    for run in runs:
        for split in run.splits:
            if split not in ordered:
                ordered.append(split)
    return ordered


def final_eval(run: Run, split: str) -> dict[str, Any] | None:
    """The last evaluation of ``split`` in a run."""
    records = [e for e in run.evals if e.get("split") == split]
    return max(records, key=lambda e: int(e.get("iteration", 0))) if records else None


def final_values(runs: Iterable[Run], split: str, key: str = "success_micro") -> list[float]:
    values = []
    for run in runs:
        record = final_eval(run, split)
        if record is not None and isinstance(record.get(key), (int, float)):
            values.append(float(record[key]))
    return values


def curve(run: Run, split: str, x: str = "trajectories", key: str = "success_micro") -> tuple[np.ndarray, np.ndarray]:
    records = [e for e in run.evals if e.get("split") == split and isinstance(e.get(key), (int, float))
               and isinstance(e.get(x), (int, float))]
    return (np.array([float(e[x]) for e in records]), np.array([float(e[key]) for e in records]))


def train_curve(run: Run, metric: str, x: str = "trajectories") -> tuple[np.ndarray, np.ndarray]:
    records = [m for m in run.metrics if isinstance(m.get(metric), (int, float)) and isinstance(m.get(x), (int, float))]
    return (np.array([float(m[x]) for m in records]), np.array([float(m[metric]) for m in records]))


def task_list_problems(runs: Sequence[Run], split: str) -> list[str]:
    """Messages for runs of one comparison that were not evaluated on the same task list."""
    by_hash: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        digest = run.eval_task_hash.get(split)
        if digest is None:
            record = final_eval(run, split)
            digest = record.get("task_list_hash") if record else None
        by_hash[str(digest)].append(f"{run.arm}/s{run.seed}")
    if len(by_hash) <= 1:
        return []
    parts = "; ".join(f"{h}: {', '.join(names)}" for h, names in sorted(by_hash.items()))
    return [f"split {split!r}: runs were evaluated on different task lists ({parts}); their numbers are not comparable"]


# ----------------------------------------------------------------------------------------------------
# Tables


def final_table(runs: Sequence[Run], baseline: str = "grpo", **kw):
    """Final performance per (env, model, agent) on the primary split: micro and macro success with
    mean, IQM and CI over seeds, normalised AUC, and P(improvement) over ``baseline``."""
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        split = primary_split([r for rs in agents.values() for r in rs])
        if split is None:
            continue
        base = final_values(agents[baseline], split) if baseline in agents else None
        for agent, agent_runs in agents.items():
            micro = summarize_scores(final_values(agent_runs, split), None if agent == baseline else base, **kw)
            macro = summarize_scores(final_values(agent_runs, split, "success_macro"), **kw)
            aucs = [stats.normalized_auc(*curve(r, split)) for r in agent_runs]
            auc = summarize_scores(aucs, **kw)
            rows.append({
                "env": env, "model": model, "agent": agent, "split": split, "seeds": micro["n"],
                "micro_mean": micro["mean"], "micro_low": micro["low"], "micro_high": micro["high"],
                "micro_iqm": micro["iqm"], "micro_iqm_low": micro["iqm_low"], "micro_iqm_high": micro["iqm_high"],
                "macro_mean": macro["mean"], "macro_low": macro["low"], "macro_high": macro["high"],
                "auc_mean": auc["mean"], "auc_low": auc["low"], "auc_high": auc["high"],
                "poi": micro["poi"], "poi_low": micro["poi_low"], "poi_high": micro["poi_high"],
            })
    return pd.DataFrame(rows)


def per_type_table(runs: Sequence[Run], split: str):
    """Per-task-type success (mean over seeds) with macro and micro averages, one row per agent."""
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        for agent, agent_runs in agents.items():
            per_type: dict[str, list[float]] = defaultdict(list)
            counts: dict[str, list[float]] = defaultdict(list)
            finals = [final_eval(r, split) for r in agent_runs]
            finals = [f for f in finals if f]
            if not finals:
                continue
            for record in finals:
                for task_type, value in (record.get("per_type") or {}).items():
                    per_type[task_type].append(float(value))
                for task_type, value in (record.get("per_type_counts") or {}).items():
                    counts[task_type].append(float(value))
            row: dict[str, Any] = {"env": env, "model": model, "agent": agent, "split": split, "seeds": len(finals)}
            for task_type in sorted(per_type):
                row[f"type:{task_type}"] = float(np.mean(per_type[task_type]))
                row[f"n:{task_type}"] = float(np.mean(counts[task_type])) if counts[task_type] else math.nan
            row["macro"] = float(np.mean([f["success_macro"] for f in finals]))
            row["micro"] = float(np.mean([f["success_micro"] for f in finals]))
            rows.append(row)
    return pd.DataFrame(rows)


def generalization_table(runs: Sequence[Run], **kw):
    """Seen vs unseen (every eval split side by side) for groups evaluated on two or more splits.

    ``gap`` is the per-seed difference first split − other split, then averaged with its own interval.
    """
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        group = [r for rs in agents.values() for r in rs]
        splits = all_splits(group)
        if len(splits) < 2:
            continue
        for agent, agent_runs in agents.items():
            row: dict[str, Any] = {"env": env, "model": model, "agent": agent}
            for split in splits:
                s = summarize_scores(final_values(agent_runs, split), **kw)
                m = summarize_scores(final_values(agent_runs, split, "success_macro"), **kw)
                row.update({f"{split}:micro": s["mean"], f"{split}:micro_low": s["low"], f"{split}:micro_high": s["high"],
                            f"{split}:macro": m["mean"], f"{split}:seeds": s["n"]})
            first = splits[0]
            for other in splits[1:]:
                gaps = []
                for run in agent_runs:
                    a, b = final_eval(run, first), final_eval(run, other)
                    if a and b:
                        gaps.append(float(a["success_micro"]) - float(b["success_micro"]))
                g = summarize_scores(gaps, **kw)
                row.update({f"gap:{other}": g["mean"], f"gap:{other}_low": g["low"], f"gap:{other}_high": g["high"]})
            rows.append(row)
    return pd.DataFrame(rows)


def paired_baseline_table(runs: Sequence[Run], baseline: str = "grpo", **kw):
    """Each arm against ``baseline`` seed by seed, on every eval split: the final micro success of the arm's
    run minus the baseline's run of the same seed, averaged over the seeds both have, with the bootstrap
    interval of that mean over seeds, and how many seeds ended above, level with and below the baseline;
    beside the interval, which is too narrow with few seeds, two exact tests: ``p_sign_flip`` (paired, the
    differences' signs flipped, `stats.sign_flip_p`) and ``p_permutation`` (unpaired, the arm's and the
    baseline's final values of all their seeds relabelled, `stats.permutation_p`).

    Pairing by seed is what the unpaired P(X > baseline) leaves out: runs of one seed share their tasks
    (and, under ``eval.same_stream``, their sampling stream), so much of the evaluation noise cancels in the
    difference. Arms without
    a seed in common with the baseline get no row.
    """
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        if baseline not in agents:
            continue
        base_by_seed = {run.seed: run for run in agents[baseline]}
        for split in all_splits([r for rs in agents.values() for r in rs]):
            for agent, agent_runs in agents.items():
                if agent == baseline:
                    continue
                diffs = _differences_by_seed(agent_runs, base_by_seed, split)
                if not diffs:
                    continue
                diff = summarize_scores(diffs, **kw)
                base_finals = final_values(agents[baseline], split)
                rows.append({"env": env, "model": model, "agent": agent, "split": split, "seeds": diff["n"],
                             "diff_mean": diff["mean"], "diff_low": diff["low"], "diff_high": diff["high"],
                             "p_sign_flip": stats.sign_flip_p(diffs),
                             "p_permutation": stats.permutation_p(final_values(agent_runs, split), base_finals),
                             "above": sum(d > 1e-12 for d in diffs), "level": sum(abs(d) <= 1e-12 for d in diffs),
                             "below": sum(d < -1e-12 for d in diffs)})
    return pd.DataFrame(rows)


def _differences_by_seed(runs: Sequence[Run], base_by_seed: Mapping[int, Run], split: str) -> list[float]:
    """Final micro success on ``split`` of each run minus that of the baseline run with its seed, for the
    runs whose seed the baseline has and that both were evaluated on ``split``."""
    diffs = []
    for run in runs:
        base = base_by_seed.get(run.seed)
        mine, theirs = final_eval(run, split), final_eval(base, split) if base else None
        if mine and theirs:
            diffs.append(float(mine["success_micro"]) - float(theirs["success_micro"]))
    return diffs


def change_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Each run's held-out change from its first to its last evaluation, one row per (run, split), as the
    run wrote it in summary.json (``before_after``: the same tasks at both ends, the paired 95 % bootstrap
    interval over tasks). ``direction`` is up / down when that interval leaves 0, else level."""
    rows = []
    for (env, model), agents in group_runs(runs).items():
        for agent, agent_runs in agents.items():
            for run in agent_runs:
                for result in run.summary.get("before_after") or []:
                    low, high = result["ci95"]
                    rows.append({"env": env, "model": model, "agent": agent, "seed": run.seed, "run": run.run,
                                 "split": result["split"], "tasks": result["tasks"],
                                 "before": result["before"], "after": result["after"],
                                 "change": result["difference"], "low": low, "high": high,
                                 "direction": "up" if low > 0 else "down" if high < 0 else "level"})
    return rows


def change_table(rows: Sequence[Mapping[str, Any]], **kw):
    """Per (env, model, agent, split) of `change_rows`' rows: the mean change from the start over seeds with
    its interval over seeds, the mean success at both ends, and how many runs went up, stayed level and
    went down."""
    import pandas as pd

    per_arm: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        per_arm[(row["env"], row["model"], row["agent"], row["split"])].append(row)
    rows = []
    for (env, model, agent, split), items in per_arm.items():
        change = summarize_scores([r["change"] for r in items], **kw)
        directions = [r["direction"] for r in items]
        rows.append({"env": env, "model": model, "agent": agent, "split": split, "seeds": change["n"],
                     "before": float(np.mean([r["before"] for r in items])),
                     "after": float(np.mean([r["after"] for r in items])),
                     "change_mean": change["mean"], "change_low": change["low"], "change_high": change["high"],
                     "up": directions.count("up"), "level": directions.count("level"),
                     "down": directions.count("down")})
    return pd.DataFrame(rows)


def sample_efficiency_table(runs: Sequence[Run], thresholds: Sequence[float] = (0.5, 0.8), **kw):
    """Per (env, model, agent): normalised AUC vs trajectories, and trajectories to reach each threshold
    on the mean curve (seeds interpolated onto a common grid), with how many seeds reached it alone."""
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        split = primary_split([r for rs in agents.values() for r in rs])
        if split is None:
            continue
        for agent, agent_runs in agents.items():
            curves = [curve(r, split) for r in agent_runs]
            curves = [c for c in curves if c[0].size]
            if not curves:
                continue
            auc = summarize_scores([stats.normalized_auc(*c) for c in curves], **kw)
            row: dict[str, Any] = {"env": env, "model": model, "agent": agent, "split": split, "seeds": len(curves),
                                   "auc_mean": auc["mean"], "auc_low": auc["low"], "auc_high": auc["high"]}
            try:
                band = stats.curve_band(curves, **kw)
                mean_x, mean_y = band.grid, band.mean
            except ValueError:
                mean_x, mean_y = np.array([]), np.array([])
            for t in thresholds:
                row[f"reach:{t:g}"] = stats.x_to_reach(mean_x, mean_y, t) if mean_x.size else math.nan
                row[f"reached:{t:g}"] = sum(not math.isnan(stats.x_to_reach(*c, t)) for c in curves)
            rows.append(row)
    return pd.DataFrame(rows)


def diagnostic_metric(runs: Sequence[Run], names: Sequence[str]) -> str | None:
    """The first of ``names`` that any of ``runs`` logs."""
    for name in names:
        if any(name in rec for r in runs for rec in r.metrics):
            return name
    return None


def seed_diagnostics_table(runs: Sequence[Run]):
    """SEED's own health signals per (env, model, agent): first, last and mean over training, averaged
    over seeds. Only agents that log ``seed/`` metrics appear."""
    import pandas as pd

    rows = []
    for (env, model), agents in group_runs(runs).items():
        for agent, agent_runs in agents.items():
            for label, names, unit in SEED_DIAGNOSTICS:
                metric = diagnostic_metric(agent_runs, names)
                if metric is None:
                    continue
                firsts, lasts, means = [], [], []
                for run in agent_runs:
                    values = [float(rec[metric]) for rec in run.metrics if isinstance(rec.get(metric), (int, float))]
                    if values:
                        firsts.append(values[0])
                        lasts.append(values[-1])
                        means.append(float(np.mean(values)))
                rows.append({"env": env, "model": model, "agent": agent, "metric": metric, "label": label,
                             "unit": unit, "seeds": len(means), "first": float(np.mean(firsts)) if firsts else math.nan,
                             "last": float(np.mean(lasts)) if lasts else math.nan,
                             "mean": float(np.mean(means)) if means else math.nan})
    return pd.DataFrame(rows)


def _skill_fields(record: dict[str, Any]) -> tuple[bool, str, str, Any]:
    """(parsed, skill, summary, task id) of a skills.jsonl record, in either spelling the trainer uses."""
    parsed = record.get("parsed", record.get("ok"))
    skill = record.get("skill") or record.get("episode_skill") or ""
    summary = record.get("summary") or record.get("episode_summary") or ""
    return bool(parsed), str(skill).strip(), str(summary).strip(), record.get("task_id", record.get("task"))


def example_skills(runs: Sequence[Run], per_outcome: int = 2) -> list[dict[str, Any]]:
    """A few parsed skills from the last analysed iteration of the lowest seed, successes and failures,
    each text once (case and spacing ignored, as `skill_duplicates` counts them): an analyzer that repeats
    itself shows its variety here, its repetition in the duplicate share."""
    examples = []
    for run in sorted(runs, key=lambda r: r.seed):
        skills = [s for s in run.skills() if _skill_fields(s)[0] and _skill_fields(s)[1]]
        if not skills:
            continue
        last = max(int(s.get("iteration", 0)) for s in skills)
        latest = [s for s in skills if int(s.get("iteration", 0)) == last]
        for won in (True, False):
            distinct = {}
            for s in latest:
                if bool(s.get("won")) is won:
                    distinct.setdefault(_skill_key(_skill_fields(s)[1]), s)
            for s in list(distinct.values())[:per_outcome]:
                _, skill, summary, task = _skill_fields(s)
                examples.append({"run": run.run, "seed": run.seed, "iteration": last, "won": won,
                                 "task_id": task, "skill": skill, "summary": summary})
        break
    return examples


FROZEN_ITERATIONS = "iterations (frozen-weight controls)"


def weights_frozen(run: Run) -> bool:
    """Whether a run's weights cannot move (no updates, or a learning rate of 0): a control by design, whose
    number of updates changes nothing it measures, so it is kept apart from the trained runs' count."""
    optim = run.config.get("optim") if isinstance(run.config.get("optim"), dict) else {}
    return run.config.get("iterations", run.iterations_done) == 0 or optim.get("lr") == 0


def protocol_cards(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One card per (env, model): every protocol field with all distinct values seen across runs, so a
    disagreement shows up as two values instead of being hidden by picking one."""
    cards = []
    for (env, model), agents in group_runs(runs).items():
        group = [r for rs in agents.values() for r in rs]
        fields: dict[str, list[str]] = {}

        def note(name: str, value: Any, fields: dict[str, list[str]] = fields) -> None:
            text = "–" if value is None else str(value)
            fields.setdefault(name, [])
            if text not in fields[name]:
                fields[name].append(text)

        for run in group:
            note("env id", run.summary.get("env_id"))
            protocol = run.protocol
            note("eval splits", ", ".join(map(str, protocol.get("splits") or [protocol.get("split")])))
            for key in ("num_tasks", "max_steps", "temperature", "history_length", "data_checksum"):
                if key in protocol or key != "history_length":
                    note(key.replace("_", " "), protocol.get(key))
            if "eval_same_stream" in protocol:  # eval.same_stream; runs from before the option lack it
                note("eval sampling", "one stream for every evaluation" if protocol["eval_same_stream"]
                     else "a fresh stream each evaluation")
            model_info = run.summary.get("model") if isinstance(run.summary.get("model"), dict) else {}
            note("model checksum", model_info.get("checksum"))
            for split in all_splits(group):
                note(f"task list hash ({split})", run.eval_task_hash.get(split))
            iterations = run.config.get("iterations", run.iterations_done)
            note(FROZEN_ITERATIONS if weights_frozen(run) else "iterations", iterations)
            privileged = run.summary.get("privileged") if isinstance(run.summary.get("privileged"), dict) else {}
            note(f"privileged context ({run.arm})", privileged.get("context", "none"))
            note(f"teacher ({run.arm})", privileged.get("teacher", "none"))
        cards.append({"env": env, "model": model, "runs": len(group), "fields": fields,
                      "agents": sorted(agents), "seeds": sorted({r.seed for r in group})})
    return cards


def model_checksum_problems(runs: Sequence[Run]) -> list[str]:
    """Runs with the same seed but different base-model checksums. (Checksums may legitimately differ
    *between* seeds: ``--model tiny`` is randomly initialised from the run seed.)"""
    by_seed: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        model = run.summary.get("model") if isinstance(run.summary.get("model"), dict) else {}
        by_seed[run.seed][str(model.get("checksum"))].append(run.arm)
    return [f"seed {seed}: runs started from different model weights ("
            + "; ".join(f"{c}: {', '.join(a)}" for c, a in sorted(sums.items())) + ")"
            for seed, sums in sorted(by_seed.items()) if len(sums) > 1]


def manifest_table(runs: Sequence[Run]):
    import pandas as pd

    rows = [{"run": r.run, "env": r.env, "agent": r.agent, "arm": r.arm, "model": r.model, "seed": r.seed,
             "complete": r.complete, "iterations": r.iterations_done,
             "seedbench": r.summary.get("seedbench_version", "–"), "git": str(r.summary.get("git_hash") or "–")[:10]}
            for r in sorted(runs, key=lambda r: (r.env, r.model, r.arm, r.seed, r.run))]
    return pd.DataFrame(rows)


def package_versions(runs: Sequence[Run]) -> dict[str, list[str]]:
    versions: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        for name, version in (run.summary.get("packages") or {}).items():
            versions[name].add(str(version))
    return {name: sorted(v) for name, v in sorted(versions.items())}


def resource_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Compute per (env, model, agent) from each run's ``summary.json`` ``resources`` (see
    `seedbench.training.resources`): runs measured, mean CPU-, GPU- and wall-seconds per run, and the
    group's total CPU- and GPU-seconds. Runs without the entry (older runs) are left out."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in runs:
        used = run.summary.get("resources")
        if isinstance(used, dict):
            groups.setdefault((run.env, run.model, run.arm), []).append(used)
    rows = []
    for (env, model, agent), entries in sorted(groups.items()):
        cpu = [float(e.get("cpu_seconds", 0.0)) for e in entries]
        gpu = [float(e.get("gpu_seconds", 0.0)) for e in entries]
        wall = [float(e.get("wall_seconds", 0.0)) for e in entries]
        rows.append({"env": env, "model": model, "agent": agent, "runs": len(entries),
                     "cpu_s_per_run": float(np.mean(cpu)), "gpu_s_per_run": float(np.mean(gpu)),
                     "wall_s_per_run": float(np.mean(wall)), "cpu_s_total": float(sum(cpu)),
                     "gpu_s_total": float(sum(gpu))})
    return rows


# ----------------------------------------------------------------------------------------------------
# Studies: arms, controls, learning curves over iterations, skill duplicates, time per phase

PHASES = (("rollout", "time/rollout_s"), ("generation", "time/generation_s"), ("env", "time/env_s"),
          ("prepare", "time/prepare_s"), ("analysis", "time/analysis_s"), ("rescore", "time/rescore_s"),
          ("update", "time/update_s"), ("iteration", "time/iteration_s"))
"""Phases of an iteration as metrics.jsonl times them (`seedbench.training.records.timing_metrics`): rollout
(= generation + env + overhead), prepare (advantages; for SEED also its analysis and rescoring passes),
update, and the whole iteration."""


def is_control(arm: str, runs: Sequence[Run]) -> bool:
    """A no-learning control arm: its name starts with ``control``, or every run of it was started with
    ``optim.lr`` 0 (as its ``arm.json`` records)."""
    return is_control_arm(arm, [r.arm_set for r in runs])


def is_control_arm(arm: str, overrides: Sequence[Mapping[str, Any]]) -> bool:
    """`is_control` from an arm's name and the recorded overrides of each of its runs (one mapping a run);
    the leaderboard applies it to a submission's arm and overrides."""
    if arm.lower().startswith("control"):
        return True
    rates = [o.get("optim.lr") for o in overrides]
    return bool(overrides) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0 for v in rates)


def arms_table(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One row per (env, model, arm): the agent behind the arm, its recorded overrides, its seeds and
    whether it is a control."""
    rows = []
    for (env, model), arms in group_runs(runs).items():
        for arm, arm_runs in arms.items():
            overrides = {}
            for run in arm_runs:
                overrides.update(run.arm_set)
            rows.append({"env": env, "model": model, "arm": arm, "agents": sorted({r.agent for r in arm_runs}),
                         "set": overrides, "seeds": [r.seed for r in arm_runs], "control": is_control(arm, arm_runs)})
    return rows


def learning_curve_table(runs: Sequence[Run], split: str, key: str = "success_micro", **kw):
    """Eval success on ``split`` at every iteration all seeds of an arm were evaluated at: mean over seeds
    with a 95 % bootstrap interval. Columns ``env, model, agent (the arm), iteration, seeds, mean, low, high``.
    No interpolation: an experiment evaluates every seed at the same iterations."""
    import pandas as pd

    rows = []
    for (env, model), arms in group_runs(runs).items():
        for arm, arm_runs in arms.items():
            by_iteration: dict[int, list[float]] = defaultdict(list)
            for run in arm_runs:
                for record in run.evals:
                    if record.get("split") == split and isinstance(record.get(key), (int, float)):
                        by_iteration[int(record.get("iteration", 0))].append(float(record[key]))
            for iteration in sorted(by_iteration):
                values = by_iteration[iteration]
                if len(values) < len(arm_runs):  # some seed was not evaluated here (an unfinished run)
                    continue
                ci = summarize_scores(values, **kw)
                rows.append({"env": env, "model": model, "agent": arm, "iteration": iteration, "seeds": ci["n"],
                             "mean": ci["mean"], "low": ci["low"], "high": ci["high"]})
    return pd.DataFrame(rows, columns=["env", "model", "agent", "iteration", "seeds", "mean", "low", "high"])


def _skill_key(text: str) -> str:
    """Skills that differ only in case and spacing are the same skill."""
    return " ".join(text.lower().split())


def skill_duplicates(runs: Sequence[Run]) -> dict[str, Any]:
    """Parsed skills of an arm's runs and the share that repeat a skill the same run logged before
    (case and whitespace ignored): ``{"skills", "distinct", "duplicate_share"}`` summed over runs,
    share = 1 − distinct / skills. A high share means the analyzer writes the same advice again and again."""
    total = distinct = 0
    for run in runs:
        texts = [_skill_fields(s)[1] for s in run.skills() if _skill_fields(s)[0] and _skill_fields(s)[1]]
        total += len(texts)
        distinct += len({_skill_key(t) for t in texts})
    return {"skills": total, "distinct": distinct, "duplicate_share": (1 - distinct / total) if total else math.nan}


def phase_time_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Seconds per iteration in each phase (`PHASES`) per (env, model, arm): each run's mean over its
    iterations, then the mean over runs, under ``seconds[phase]``; plus iterations and the summed iteration
    time per run. Phases no run of the arm logs are NaN (GRPO has no analysis)."""
    rows = []
    for (env, model), arms in group_runs(runs).items():
        for arm, arm_runs in arms.items():
            timed = [r for r in arm_runs if any(isinstance(m.get("time/iteration_s"), (int, float)) for m in r.metrics)]
            if not timed:
                continue
            row: dict[str, Any] = {"env": env, "model": model, "agent": arm, "runs": len(timed), "seconds": {}}
            for phase, metric in PHASES:
                per_run = [float(np.mean(v)) for r in timed
                           if (v := [float(m[metric]) for m in r.metrics if isinstance(m.get(metric), (int, float))])]
                row["seconds"][phase] = float(np.mean(per_run)) if per_run else math.nan
            totals = [sum(float(m["time/iteration_s"]) for m in r.metrics
                          if isinstance(m.get("time/iteration_s"), (int, float))) for r in timed]
            row["iterations"] = float(np.mean([len(r.metrics) for r in timed]))
            row["total_s"] = float(np.mean(totals))
            rows.append(row)
    return rows
