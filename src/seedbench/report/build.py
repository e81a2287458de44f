"""Assemble a report from run directories: report.md (+ plots/*.png), report.html and results.csv.

The report never shows a bare single-seed number without saying so, always shows micro *and* macro
averages, and says loudly when runs that are compared were evaluated on different task lists (the
flaws docs/method.md §8.1 lists for the paper's own tables). A report is deterministic: building it twice
from the same runs gives identical files (fixed bootstrap seed, no timestamps).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from seedbench import stats
from seedbench.report import tables as T
from seedbench.report.data import Run, read_runs, results_frame
from seedbench.report.document import (
    Bullets, Document, Figure, Quote, Section, Table, Text, md_code, md_escape, to_markdown, write_figures,
)
import seedbench

E, C = md_escape, md_code  # every string read from a run enters the document through one of these


@dataclass
class ReportOptions:
    baseline: str = "grpo"
    """Agent every other agent is compared with (probability of improvement)."""
    thresholds: Sequence[float] = (0.5, 0.8)
    """Success levels for "trajectories to reach X %"."""
    include_incomplete: bool = False
    """Also aggregate runs that did not finish (their final eval is not at the full budget)."""
    n_resamples: int = stats.DEFAULT_RESAMPLES
    title: str = "seedbench report"
    plots: bool = True
    controls: Sequence[str] = ()
    """Arms drawn as no-learning controls (dashed, grey) besides those `tables.is_control` recognises
    (named ``control…``, or started with ``optim.lr`` 0)."""


@dataclass
class ReportFiles:
    markdown: Path
    html: Path
    csv: Path
    figures: list[Path] = field(default_factory=list)


def _ci(row, prefix: str) -> str:
    return T.fmt_ci(row[f"{prefix}_mean"], row[f"{prefix}_low"], row[f"{prefix}_high"])


def _group_title(env: str, model: str) -> str:
    return f"{E(env)} · {E(model)}"


def _controls(runs: list[Run], opts: ReportOptions) -> set[str]:
    """Arms drawn and labelled as no-learning controls."""
    named = set(opts.controls)
    return {arm for agents in T.group_runs(runs).values() for arm, arm_runs in agents.items()
            if arm in named or T.is_control(arm, arm_runs)}


def _arms_block(runs: list[Run], opts: ReportOptions) -> Table | None:
    """The arms of a study (experiment entries with a label, or with overrides): what each one runs."""
    rows = T.arms_table(runs)
    controls = _controls(runs, opts)
    if all(r["arm"] == r["agents"][0] and not r["set"] and r["arm"] not in controls for r in rows):
        return None  # plain agents: the overview line says it all
    return Table(["env", "model", "arm", "agent", "overrides (arm.json)", "seeds", "control"],
                 [[E(r["env"]), E(r["model"]), C(r["arm"]), E(", ".join(r["agents"])),
                   E(", ".join(f"{k}={v}" for k, v in sorted(r["set"].items())) or "–"),
                   E(", ".join(map(str, r["seeds"]))), "yes" if r["arm"] in controls else "no"] for r in rows],
                 caption="arms: an experiment entry's label (else the agent) and the config overrides it ran with")


LEARNING_CURVE_COLUMNS = 12  # eval iterations shown in the table (evenly spaced, first and last kept)


def _groups_with_rows(runs: list[Run], table):
    """(env, model, the group's runs by arm, the group's rows of ``table``) for every (env, model) group of
    ``runs`` that has rows in ``table``: the loop each section's per-group tables share."""
    for (env, model), agents in T.group_runs(runs).items():
        sub = table[(table.env == env) & (table.model == model)] if len(table) else table
        if len(sub):
            yield env, model, agents, sub


def _learning_curve_section(runs: list[Run], opts: ReportOptions) -> Section:
    section = Section("Learning curves")
    section.add(Text(
        "Held-out eval success (micro) at each evaluated iteration: mean over seeds, with the 95 % bootstrap "
        "interval of that mean as a band; one panel per eval split, every arm on the same axes (SEED's arms "
        "beside GRPO's), control arms dashed and grey. Only iterations at which every seed of an arm was "
        "evaluated are shown."))
    controls = _controls(runs, opts)
    for (env, model), agents in T.group_runs(runs).items():
        group = [r for rs in agents.values() for r in rs]
        splits = T.all_splits(group)
        if not splits:
            continue
        curves = {split: T.learning_curve_table(group, split, n_resamples=opts.n_resamples) for split in splits}
        blocks = []
        if opts.plots:
            from seedbench.report import plots

            colors = plots.agent_colors(agents)
            png = plots.learning_curves(curves, splits, f"{env} · {model}", controls, colors)
            blocks.append(Figure(f"learning_curves_{_file_stem(env, model)}", png,
                                 f"{_group_title(env, model)}: held-out success vs iteration (mean and 95 % band "
                                 "over seeds; dashed grey: control)"))
        primary = curves[splits[0]]
        iterations = sorted(set(primary["iteration"]))
        if len(iterations) > LEARNING_CURVE_COLUMNS:
            picks = np.linspace(0, len(iterations) - 1, LEARNING_CURVE_COLUMNS).round().astype(int)
            iterations = [iterations[i] for i in sorted(set(picks))]
        rows = []
        for agent in agents:
            sub = primary[primary["agent"] == agent].set_index("iteration")
            label = E(agent) + (" (control)" if agent in controls and "control" not in agent else "")
            rows.append([label] + [T.fmt_pct(sub.loc[i, "mean"]) if i in sub.index else "–" for i in iterations])
        blocks.append(Table(["agent"] + [f"it {i}" for i in iterations], rows,
                            caption=f"mean eval success % on {C(splits[0])} by iteration",
                            numeric=[False] + [True] * len(iterations)))
        section.add(Section(_group_title(env, model), blocks))
    return section


def _final_section(runs: list[Run], opts: ReportOptions, warnings: list[str]) -> Section:
    section = Section("Final performance")
    section.add(Text(
        "Final evaluation of each run on the env's eval split, aggregated over seeds: mean and IQM with a "
        "95 % stratified-bootstrap interval in brackets (percent). *Micro* = successes / tasks; *macro* = "
        "mean of per-task-type success. AUC = eval success averaged over the training budget (area under "
        f"the curve vs trajectories). P(X > {opts.baseline}) = probability that a random seed of X ends "
        f"above a random seed of {opts.baseline}; 0.5 means no difference."))
    kw = {"n_resamples": opts.n_resamples}
    final = T.final_table(runs, baseline=opts.baseline, **kw)
    for env, model, agents, sub in _groups_with_rows(runs, final):
        split = sub.iloc[0]["split"]
        group = _group_title(env, model)
        if opts.baseline not in agents:
            warnings.append(f"{group}: no {C(opts.baseline)} runs, so no probability of improvement")
        for agent, agent_runs in agents.items():
            if len(agent_runs) < 2:
                warnings.append(f"{group}: {C(agent)} has a single seed; its interval is undefined")
        warnings.extend(f"{group}: {E(m)}" for m in T.task_list_problems([r for rs in agents.values() for r in rs], split))
        rows = []
        for _, row in sub.iterrows():
            poi = "baseline" if row["agent"] == opts.baseline else (
                "–" if math.isnan(row["poi"]) else T.fmt_ci(row["poi"], row["poi_low"], row["poi_high"], pct=False))
            rows.append([E(row["agent"]), str(row["seeds"]), _ci(row, "micro"),
                         T.fmt_ci(row["micro_iqm"], row["micro_iqm_low"], row["micro_iqm_high"]),
                         _ci(row, "macro"), _ci(row, "auc"), poi])
        header = ["agent", "seeds", "micro success % [95% CI]", "micro IQM % [95% CI]", "macro success % [95% CI]",
                  "AUC % [95% CI]", f"P(agent > {E(opts.baseline)}) [95% CI]"]
        table = Table(header, rows, caption=f"split {C(split)}", numeric=[False] + [True] * 6)
        per_type = T.per_type_table(runs=[r for rs in agents.values() for r in rs], split=split)
        types = sorted(c[5:] for c in per_type.columns if c.startswith("type:"))
        type_rows = []
        for _, row in per_type.iterrows():
            type_rows.append([E(row["agent"]), str(row["seeds"])] + [T.fmt_pct(row[f"type:{t}"]) for t in types]
                             + [T.fmt_pct(row["macro"]), T.fmt_pct(row["micro"])])
        counts = []
        if len(per_type):
            first = per_type.iloc[0]
            counts = [T.fmt_num(first[f"n:{t}"]) for t in types]
        type_header = ["agent", "seeds"] + [f"{E(t)} (n={c})" for t, c in zip(types, counts)] + ["macro avg", "micro avg"]
        type_table = Table(type_header, type_rows,
                           caption=f"per-task-type success % on {C(split)}, mean over seeds (n = tasks of that type)",
                           numeric=[False] + [True] * (len(type_header) - 1))
        section.add(Section(_group_title(env, model), [table, type_table]))
    return section


def _paired_section(runs: list[Run], opts: ReportOptions) -> Section | None:
    table = T.paired_baseline_table(runs, baseline=opts.baseline, n_resamples=opts.n_resamples)
    if not len(table):
        return None
    base = E(opts.baseline)
    section = Section(f"Against {base}, seed by seed", [Text(
        f"Each arm's final success minus that of the {base} run with the same seed, on every eval split: the "
        "mean over the seeds both arms ran, in points, with its 95 % bootstrap interval over seeds, and how "
        f"many seeds ended above, level with or below {base}. Runs of one seed evaluate the same tasks, "
        "and under eval.same_stream sample them from one stream, so the evaluation noise they share cancels in "
        "this difference, which the arms' means keep (without same_stream only the choice of tasks is shared); "
        "an interval that leaves 0 says the arm ended apart from the baseline on these seeds. With few seeds a "
        "bootstrap interval is too narrow, so two exact tests stand beside it: the sign-flip p-value of the "
        "paired differences (every assignment of signs; at 5 seeds it cannot go below 0.0625) and the "
        "permutation p-value of the arms' final values, unpaired.")])
    for env, model, _, sub in _groups_with_rows(runs, table):
        rows = [[E(r["agent"]), C(r["split"]), str(r["seeds"]),
                 T.fmt_points(r["diff_mean"], r["diff_low"], r["diff_high"]),
                 T.fmt_num(r["p_sign_flip"]), T.fmt_num(r["p_permutation"]),
                 f"{r['above']} / {r['level']} / {r['below']}"] for _, r in sub.iterrows()]
        section.add(Section(_group_title(env, model), [Table(
            ["agent", "split", "seeds paired", f"agent − {base}, pts [95% CI over seeds]", "sign-flip p",
             "permutation p", "seeds above / level / below"], rows,
            numeric=[False, False, True, True, True, True, True])]))
    return section


def _change_section(runs: list[Run], opts: ReportOptions) -> Section | None:
    per_run = T.change_rows(runs)
    if not per_run:
        return None
    table = T.change_table(per_run, n_resamples=opts.n_resamples)
    section = Section("Change from the start", [Text(
        "Held-out success at each run's first and last evaluation, on the same tasks. Per arm: the mean "
        "change over seeds in points with its 95 % bootstrap interval over seeds, and how many runs went up, "
        "stayed level or went down by their own paired 95 % interval over tasks (up or down only when it "
        "leaves 0). Per run: the change and that interval, as the run printed it at its end. That interval "
        "counts which tasks were drawn, not the sampling: where the evaluations sampled afresh "
        "(eval.same_stream off) a run of unchanged weights goes up or down too, and a control's change is that "
        "noise.")])
    for env, model, _, sub in _groups_with_rows(runs, table):
        blocks = []
        for split in dict.fromkeys(sub.split):
            arm_rows = [[E(r["agent"]), str(r["seeds"]), T.fmt_pct(r["before"]), T.fmt_pct(r["after"]),
                         T.fmt_points(r["change_mean"], r["change_low"], r["change_high"]),
                         f"{r['up']} / {r['level']} / {r['down']}"] for _, r in sub[sub.split == split].iterrows()]
            blocks.append(Table(["agent", "seeds", "before %", "after %", "change, pts [95% CI over seeds]",
                                 "runs up / level / down"], arm_rows, caption=f"split {C(split)}, per arm",
                                numeric=[False] + [True] * 5))
            run_rows = [[E(r["agent"]), str(r["seed"]), f"{T.fmt_pct(r['before'])} → {T.fmt_pct(r['after'])}",
                         T.fmt_points(r["change"], r["low"], r["high"]), str(r["tasks"])]
                        for r in per_run if (r["env"], r["model"], r["split"]) == (env, model, split)]
            blocks.append(Table(["agent", "seed", "before → after %", "change, pts [95% CI over tasks]", "tasks"],
                                run_rows, caption=f"split {C(split)}, per run", numeric=[False] + [True] * 4))
        section.add(Section(_group_title(env, model), blocks))
    return section


def _sample_efficiency_section(runs: list[Run], opts: ReportOptions) -> Section:
    section = Section("Sample efficiency")
    section.add(Text(
        "Eval success (micro) against three measures of budget. Each seed's curve is interpolated onto a "
        "common grid covering the range all seeds reached; lines are the mean over seeds, bands the 95 % "
        "bootstrap interval of that mean at each grid point. \"Trajectories to reach X %\" is read off the "
        "mean curve; the count says how many seeds reached X % on their own."))
    table = T.sample_efficiency_table(runs, thresholds=opts.thresholds, n_resamples=opts.n_resamples)
    for env, model, agents, sub in _groups_with_rows(runs, table):
        split = sub.iloc[0]["split"]
        blocks = []
        if opts.plots:
            from seedbench.report import plots

            png = plots.sample_efficiency(agents, split, f"{env} · {model} · {split}")
            blocks.append(Figure(f"sample_efficiency_{_file_stem(env, model)}", png,
                                 f"{_group_title(env, model)}: eval success on {C(split)} vs budget (mean and 95 % "
                                 "band over seeds)"))
        header = ["agent", "seeds", "AUC % [95% CI]"]
        for t in opts.thresholds:
            header.append(f"trajectories to {100 * t:g} % (seeds reaching)")
        rows = []
        for _, row in sub.iterrows():
            cells = [E(row["agent"]), str(row["seeds"]), _ci(row, "auc")]
            for t in opts.thresholds:
                reach = row[f"reach:{t:g}"]
                cells.append(f"{'never' if math.isnan(reach) else T.fmt_num(reach)} ({row[f'reached:{t:g}']}/{row['seeds']})")
            rows.append(cells)
        blocks.append(Table(header, rows, numeric=[False] + [True] * (len(header) - 1)))
        section.add(Section(_group_title(env, model), blocks))
    return section


def _generalization_section(runs: list[Run], opts: ReportOptions) -> Section | None:
    table = T.generalization_table(runs, n_resamples=opts.n_resamples)
    if not len(table):
        return None
    section = Section("Generalization")
    section.add(Text(
        "Final success on every evaluated split side by side (e.g. ALFWorld `valid_seen` vs `valid_unseen`). "
        "The gap is computed per seed (first split − other split) and then averaged with its own interval."))
    for env, model, agents, sub in _groups_with_rows(runs, table):
        splits = T.all_splits([r for rs in agents.values() for r in rs])
        header = ["agent"]
        for split in splits:
            header += [f"{E(split)} micro % [95% CI]", f"{E(split)} macro %"]
        header += [f"gap {E(splits[0])} − {E(other)} (pts)" for other in splits[1:]]
        rows = []
        for _, row in sub.iterrows():
            cells = [E(row["agent"])]
            for split in splits:
                cells += [T.fmt_ci(row[f"{split}:micro"], row[f"{split}:micro_low"], row[f"{split}:micro_high"]),
                          T.fmt_pct(row[f"{split}:macro"])]
            for other in splits[1:]:
                cells.append(T.fmt_ci(row[f"gap:{other}"], row[f"gap:{other}_low"], row[f"gap:{other}_high"]))
            rows.append(cells)
        section.add(Section(_group_title(env, model), [Table(header, rows, numeric=[False] + [True] * (len(header) - 1))]))
    return section


def _seed_section(runs: list[Run], opts: ReportOptions, warnings: list[str]) -> Section | None:
    diag = T.seed_diagnostics_table(runs)
    if not len(diag):
        return None
    section = Section("SEED diagnostics")
    section.add(Text(
        "SEED's own signals over training (first / last / mean over iterations, averaged over seeds). A low "
        "analysis success rate means few trajectories got a skill, so the run was mostly plain GRPO "
        "(docs/method.md §5.2)."))
    for env, model, agents, sub in _groups_with_rows(runs, diag):
        blocks = []
        rows = []
        for _, row in sub.iterrows():
            digits = T.fmt_pct if row["unit"] == "%" else (lambda v: T.fmt_num(v, 3))
            rows.append([E(row["agent"]), E(row["label"]), E(row["unit"]), str(row["seeds"]), digits(row["first"]),
                         digits(row["last"]), digits(row["mean"])])
            if row["metric"] == "seed/analyzer_sft" and row["mean"] < 1:
                warnings.append(f"{_group_title(env, model)}: {C(row['agent'])} ran without the stage-1 analyzer SFT in "
                                f"{T.fmt_pct(1 - row['mean'], 0)} % of its seeds (docs/method.md §3)")
            if row["metric"] == T.ANALYSIS_SUCCESS and row["mean"] < T.LOW_ANALYSIS_SUCCESS:
                warnings.append(f"{_group_title(env, model)}: {C(row['agent'])} analysis success rate averaged "
                                f"{T.fmt_pct(row['mean'])} % over training; most trajectories got no skill")
        blocks.append(Table(["agent", "signal", "unit", "seeds", "first", "last", "mean"], rows,
                            numeric=[False, False, False, True, True, True, True]))
        seed_agents = {a: rs for a, rs in agents.items() if a in set(sub.agent)}
        if opts.plots:
            from seedbench.report import plots

            png = plots.seed_diagnostics(seed_agents, f"{env} · {model}: SEED signals", plots.agent_colors(agents))
            if png:
                blocks.append(Figure(f"seed_diagnostics_{_file_stem(env, model)}", png,
                                     "SEED training signals vs trajectories (mean and 95 % band over seeds)"))
        duplicates = [[E(agent), str(d["skills"]), str(d["distinct"]), T.fmt_pct(d["duplicate_share"])]
                      for agent, agent_runs in seed_agents.items() if (d := T.skill_duplicates(agent_runs))]
        blocks.append(Table(["agent", "parsed skills", "distinct", "duplicate share %"], duplicates,
                            caption="skills.jsonl over all seeds: a skill is a duplicate when the same run logged "
                                    "the same text (case and spacing ignored) before",
                            numeric=[False, True, True, True]))
        for agent, agent_runs in seed_agents.items():
            examples = T.example_skills(agent_runs)
            if not examples:
                blocks.append(Text(f"{C(agent)}: no parsed skills logged (skills.jsonl missing or empty)."))
                continue
            blocks.append(Text(f"Example skills of {C(agent)} (seed {E(examples[0]['seed'])}, iteration "
                               f"{E(examples[0]['iteration'])}):"))
            for ex in examples:
                outcome = "success" if ex["won"] else "failure"
                blocks.append(Quote(str(ex["skill"]), label=f"{outcome} · task {E(ex['task_id'])}"))
        section.add(Section(_group_title(env, model), blocks))
    return section


def _protocol_section(runs: list[Run], warnings: list[str]) -> Section:
    section = Section("Protocol cards")
    section.add(Text("What every number above was measured on. A field with two values means the runs "
                     "disagree, and comparisons across them are suspect."))
    for card in T.protocol_cards(runs):
        title = _group_title(card["env"], card["model"])
        rows = [["agents", E(", ".join(card["agents"]))], ["seeds", E(", ".join(map(str, card["seeds"])))],
                ["runs", str(card["runs"])]]
        for name, values in card["fields"].items():
            shown = E(" / ".join(map(str, values))) if len(values) <= 3 else f"{len(values)} distinct values"
            rows.append([E(name), shown])
            # task lists are checked per comparison above; model checksums per seed below
            if len(values) > 1 and not name.startswith("task list hash") and name != "model checksum" \
                    and name != T.FROZEN_ITERATIONS:
                warnings.append(f"{title}: runs disagree on {E(name)} ({shown})")
        group = [r for r in runs if (r.env, r.model) == (card["env"], card["model"])]
        warnings.extend(f"{title}: {E(m)}" for m in T.model_checksum_problems(group))
        section.add(Section(_group_title(card["env"], card["model"]), [Table(["field", "value"], rows)]))
    return section


def _resources_section(runs: list[Run]) -> Section | None:
    """What the runs cost: summary.json ``resources`` per run, and metrics.jsonl ``time/…`` per iteration
    and phase, so equal scores at unequal compute are visible and SEED's extra passes are priced."""
    rows = T.resource_rows(runs)
    phases = T.phase_time_rows(runs)
    if not rows and not phases:
        return None
    section = Section("Compute")
    if rows:
        section.add(Text("CPU-seconds (every process of a run, its finished children included) and GPU-seconds "
                         "(wall time × GPUs held) per run, mean over the runs that recorded them, and the total. "
                         "A resumed run counts the work redone after its kill."))
        section.add(Table(["env", "model", "agent", "runs", "CPU-s / run", "GPU-s / run", "wall-s / run",
                           "CPU-s total", "GPU-s total"],
                          [[E(r["env"]), E(r["model"]), E(r["agent"]), str(r["runs"]), f"{r['cpu_s_per_run']:.1f}",
                            f"{r['gpu_s_per_run']:.1f}", f"{r['wall_s_per_run']:.1f}", f"{r['cpu_s_total']:.1f}",
                            f"{r['gpu_s_total']:.1f}"] for r in rows],
                          numeric=[False] * 3 + [True] * 6))
    if phases:
        section.add(Text("Seconds per iteration by phase (metrics.jsonl `time/…`; each run's mean over its "
                         "iterations, then the mean over runs). *rollout* = generation + env steps + overhead; "
                         "*prepare* = advantages and, for SEED, its *analysis* and *rescore* passes; *update* = "
                         "the gradient step. Total = summed iteration time per run."))
        names = [name for name, _ in T.PHASES]
        section.add(Table(["env", "model", "agent", "runs", "iterations"] + [f"{n} s" for n in names] + ["total s / run"],
                          [[E(r["env"]), E(r["model"]), E(r["agent"]), str(r["runs"]), T.fmt_num(r["iterations"])]
                           + [_seconds(r["seconds"][n]) for n in names] + [_seconds(r["total_s"])] for r in phases],
                          numeric=[False] * 3 + [True] * (len(names) + 3)))
    return section


def _seconds(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}"


def _manifest_section(all_runs: list[Run], used: list[Run], opts: ReportOptions) -> Section:
    section = Section("Run manifest")
    manifest = T.manifest_table(all_runs)
    used_ids = {r.run for r in used}
    rows = [[E(row["run"]), E(row["env"]), E(row["agent"]), E(row["arm"]), E(row["model"]), str(row["seed"]),
             ("yes" if row["complete"] else "no") + ("" if row["run"] in used_ids else " (excluded)"),
             E(row["iterations"]), E(row["seedbench"]), E(row["git"])]
            for _, row in manifest.iterrows()]
    section.add(Table(["run", "env", "agent", "arm", "model", "seed", "complete", "iterations", "seedbench", "git"],
                      rows, numeric=[False] * 5 + [True, False, True, False, False]))
    versions = T.package_versions(all_runs)
    if versions:
        section.add(Table(["package", "version(s)"], [[E(k), E(", ".join(map(str, v)))] for k, v in versions.items()],
                          caption="package versions recorded by the runs"))
    section.add(Bullets([
        f"report built by seedbench {seedbench.__version__}",
        f"intervals: percentile bootstrap, {opts.n_resamples} resamples, seed {stats.DEFAULT_SEED}, 95 %",
        f"baseline for probability of improvement: {C(opts.baseline)}",
        f"incomplete runs {'included' if opts.include_incomplete else 'excluded'}",
    ]))
    return section


def _file_stem(*parts: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", "__".join(parts)).strip("_")


def build_document(all_runs: list[Run], opts: ReportOptions) -> tuple[Document, list[Run]]:
    if not all_runs:
        raise ValueError("no run directories found")
    used = all_runs if opts.include_incomplete else [r for r in all_runs if r.complete]
    warnings: list[str] = []
    excluded = [r for r in all_runs if r not in used]
    if excluded:
        warnings.append(f"{len(excluded)} incomplete run(s) excluded: " + ", ".join(C(r.run) for r in excluded)
                        + " (use --include-incomplete to aggregate them anyway)")
    hashes = sorted({str(r.summary.get("git_hash")) for r in used if r.summary.get("git_hash")})
    if len(hashes) > 1:
        warnings.append(f"the runs come from {len(hashes)} different git commits ({E(', '.join(h[:10] for h in hashes))}); "
                        "see the run manifest")
    if not used:
        raise ValueError(f"none of the {len(all_runs)} runs is complete; pass --include-incomplete to report them")
    doc = Document(opts.title)  # the user's own --title: Markdown allowed
    groups = T.group_runs(used)
    overview = Section("Overview")
    lines = []
    for (env, model), agents in groups.items():
        desc = ", ".join(f"{C(a)} × {len(rs)} seeds" for a, rs in agents.items())
        lines.append(f"**{E(env)}** with model {C(model)}: {desc}")
    overview.add(Text(f"{len(used)} runs aggregated ({len(all_runs)} found)."), Bullets(lines))
    arms = _arms_block(used, opts)
    if arms is not None:
        overview.add(arms)
    body = [_learning_curve_section(used, opts), _final_section(used, opts, warnings)]
    body += [s for s in (_paired_section(used, opts), _change_section(used, opts)) if s is not None]
    body.append(_sample_efficiency_section(used, opts))
    body += [s for s in (_generalization_section(used, opts), _seed_section(used, opts, warnings)) if s is not None]
    body.append(_protocol_section(used, warnings))
    compute = _resources_section(used)
    if compute is not None:
        body.append(compute)
    body.append(_manifest_section(all_runs, used, opts))
    overview.add(Section("Warnings", [Bullets(warnings) if warnings else Text("None.")]))
    doc.sections = [overview, *body]
    return doc, used


def build_report(paths: str | Path | Sequence[str | Path], out: str | Path, options: ReportOptions | None = None,
                 **kwargs) -> ReportFiles:
    """Write ``report.md``, ``plots/*.png``, ``report.html`` and ``results.csv`` under ``out``.

    ``paths``: run directories and/or directories containing runs. Keyword arguments override fields of
    `ReportOptions`.
    """
    from seedbench.report.html import to_html

    opts = options or ReportOptions()
    for key, value in kwargs.items():
        if not hasattr(opts, key):
            raise TypeError(f"unknown report option {key!r}")
        setattr(opts, key, value)
    roots = [paths] if isinstance(paths, (str, Path)) else list(paths)
    all_runs = read_runs(roots)
    doc, used = build_document(all_runs, opts)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = write_figures(doc, out / "plots")
    md = out / "report.md"
    md.write_text(to_markdown(doc, "plots"), encoding="utf-8")
    page = out / "report.html"
    page.write_text(to_html(doc), encoding="utf-8")
    csv = out / "results.csv"
    results_frame(all_runs).to_csv(csv, index=False, lineterminator="\n")
    return ReportFiles(md, page, csv, figures)


def main(argv: Sequence[str] | None = None) -> int:
    """``seedbench report <runs or experiment dir>... --out report/``."""
    parser = argparse.ArgumentParser(prog="seedbench report", description=main.__doc__)
    parser.add_argument("paths", nargs="+", help="run directories or directories containing runs")
    parser.add_argument("--out", default="report", help="output directory (default: report/)")
    parser.add_argument("--baseline", default="grpo", help="agent to compare against (default: grpo)")
    parser.add_argument("--reach", type=float, nargs="+", default=[0.5, 0.8], metavar="X",
                        help="success levels (0-1) for 'trajectories to reach X' (default: 0.5 0.8)")
    parser.add_argument("--include-incomplete", action="store_true", help="aggregate unfinished runs too")
    parser.add_argument("--resamples", type=int, default=stats.DEFAULT_RESAMPLES, help="bootstrap resamples")
    parser.add_argument("--title", default="seedbench report")
    parser.add_argument("--no-plots", action="store_true", help="skip figures (faster)")
    parser.add_argument("--control", nargs="+", default=[], metavar="ARM",
                        help="arms to draw as no-learning controls (besides arms named control… or run with "
                             "optim.lr 0)")
    parser.add_argument("--archive", metavar="DIR",
                        help="also copy the logs this report reads (no checkpoints) of every complete run into "
                             "DIR/<run id>/, so the report can be rebuilt from DIR alone")
    args = parser.parse_args(argv)
    if any(not 0 <= x <= 1 for x in args.reach):
        print("error: --reach values are success rates between 0 and 1 (e.g. 0.5)")
        return 2
    opts = ReportOptions(baseline=args.baseline, thresholds=tuple(args.reach),
                         include_incomplete=args.include_incomplete, n_resamples=args.resamples,
                         title=args.title, plots=not args.no_plots, controls=tuple(args.control))
    try:
        files = build_report(args.paths, args.out, opts)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}")
        return 2
    print(f"wrote {files.markdown}, {files.html}, {files.csv} ({len(files.figures)} figures)")
    if args.archive:
        from seedbench.report.archive import archive_run_logs

        print(f"{archive_run_logs(args.paths, args.archive).summary} into {args.archive}")
    return 0
