"""Reports on seedbench runs: tidy results tables, aggregate statistics over seeds, and a Markdown +
self-contained HTML report with sample-efficiency curves.

Load results yourself with one call::

    import seedbench.report
    df = seedbench.report.load_results("experiments/tiny")  # or a run dir, or a results.csv
    # columns: run, env, agent, arm, model, seed, iteration, trajectories, env_steps, generated_tokens, metric, value

Build the report that ``seedbench report`` writes::

    seedbench.report.build_report(["experiments/tiny"], "report/")

Importing this package is cheap: pandas, scipy and matplotlib load only when a function needs them.
Modules: `data` (reading run directories), `tables` (every aggregate; shared with the leaderboard),
`plots` (matplotlib figures), `document`/`html` (rendering), `build` (assembly and CLI), `synthetic`
(made-up run directories for tests and demos).
"""

from __future__ import annotations

from seedbench.report.build import ReportOptions, build_report, main
from seedbench.report.data import load_results, load_runs, read_runs

__all__ = ["ReportOptions", "build_report", "load_results", "load_runs", "main", "read_runs"]
