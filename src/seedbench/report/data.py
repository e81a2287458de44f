"""Reading run directories into tidy pandas tables.

A *results table* has one row per (run, budget point, metric): columns ``run, env, agent, arm, model, seed,
iteration, trajectories, env_steps, generated_tokens, metric, value``. ``arm`` is the experiment arm the
run belongs to: the label its experiment spec gave it (``arm.json``, `seedbench.training.experiments.arm`),
else the agent's name; reports and leaderboards group runs by arm, so a GRPO control with ``optim.lr: 0``
is its own row next to GRPO. Any of the four budget columns
can serve as a curve's x axis. Metric names are those of the run directory: training metrics as logged
in ``metrics.jsonl`` (``rollout/success``, ``seed/gate_mean``, ...) and evaluations flattened from
``eval.jsonl`` as

- ``eval/<split>/success_micro`` and ``eval/<split>/success_macro``,
- ``eval/<split>/success/<task_type>`` and ``eval/<split>/count/<task_type>``.

A *runs table* has one row per run with its identity and provenance (summary.json, config.yaml).
Readers are lenient the way the run-directory contract asks: a torn last JSONL line is skipped, a
run without summary.json (killed before writing one) is listed as incomplete, and a run whose config.yaml
cannot be read is left out with a warning naming it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from seedbench.jsonio import RunFileWarning, read_json, read_jsonl
from seedbench.yamlio import YAMLFileError, read_yaml

BUDGET_COLUMNS = ("iteration", "trajectories", "env_steps", "generated_tokens")
RESULT_COLUMNS = ("run", "env", "agent", "arm", "model", "seed", *BUDGET_COLUMNS, "metric", "value")
_RUN_MARKERS = ("summary.json", "metrics.jsonl", "config.yaml")
REPORT_FILES = ("summary.json", "config.yaml", "metrics.jsonl", "eval.jsonl", "skills.jsonl", "arm.json")
"""Every file of a run directory that `read_run` and `Run.skills` read (``arm.json``: the experiment arm)."""
_NOT_METRICS = {"iteration", *BUDGET_COLUMNS}


@dataclass
class Run:
    """One run directory, read once."""

    run: str  # id: path relative to the root the runs were found under
    path: Path
    env: str
    agent: str
    model: str
    seed: int
    complete: bool
    iterations_done: int
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)
    arm: str = ""  # the experiment arm (arm.json), else the agent
    arm_set: dict[str, Any] = field(default_factory=dict)  # the arm's own overrides (arm.json `set`)

    def __post_init__(self):
        self.arm = self.arm or self.agent

    @property
    def protocol(self) -> dict[str, Any]:
        return dict(self.summary.get("protocol") or {})

    @property
    def eval_task_hash(self) -> dict[str, str]:
        hashes = dict(self.summary.get("eval_task_hash") or {})
        for record in self.evals:  # eval.jsonl also records it; fill splits summary.json lacks
            if record.get("split") and record.get("task_list_hash"):
                hashes.setdefault(record["split"], record["task_list_hash"])
        return hashes

    @property
    def declared_split(self) -> str | None:
        """The eval split the run's protocol names first (``protocol.split`` or ``protocol.splits[0]``)."""
        protocol = self.protocol
        if protocol.get("split"):
            return str(protocol["split"])
        splits = protocol.get("splits") or (self.config.get("eval") or {}).get("splits") or []
        return str(splits[0]) if splits else None

    @property
    def splits(self) -> list[str]:
        seen: list[str] = []
        for record in self.evals:
            split = record.get("split")
            if split and split not in seen:
                seen.append(split)
        primary = self.declared_split
        if primary in seen:
            seen.remove(primary)
            seen.insert(0, primary)
        return seen

    def skills(self) -> list[dict[str, Any]]:
        return list(read_jsonl(self.path / "skills.jsonl"))


def find_run_dirs(root: str | Path) -> list[Path]:
    """Run directories at or below ``root`` (a directory holding summary.json, metrics.jsonl or
    config.yaml); does not descend into a run directory."""
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"no such file or directory: {root}")
    found: list[Path] = []

    def visit(path: Path) -> None:
        if any((path / marker).is_file() for marker in _RUN_MARKERS):
            found.append(path)
            return
        for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
            visit(child)

    visit(root)
    return found


def _dedupe_last(records: list[dict[str, Any]], key) -> list[dict[str, Any]]:
    """Keep the last record per key (a resumed run may repeat an iteration), sorted by iteration."""
    latest: dict[Any, dict[str, Any]] = {}
    for record in records:
        latest[key(record)] = record
    return sorted(latest.values(), key=lambda r: (int(r.get("iteration", 0)), str(r.get("split", ""))))


def _load_yaml(path: Path) -> dict[str, Any]:
    """config.yaml as a mapping ({} when missing or not a mapping); a `YAMLFileError` when it cannot be read."""
    if not path.is_file():
        return {}
    data = read_yaml(path)
    return data if isinstance(data, dict) else {}


def read_run(path: str | Path, run_id: str | None = None) -> Run:
    path = Path(path)
    summary = read_json(path / "summary.json")
    config = _load_yaml(path / "config.yaml")
    metrics = _dedupe_last(list(read_jsonl(path / "metrics.jsonl")), key=lambda r: r.get("iteration"))
    evals = _dedupe_last(list(read_jsonl(path / "eval.jsonl")), key=lambda r: (r.get("iteration"), r.get("split")))
    model = summary.get("model") or config.get("model") or {}
    model_name = model.get("name") if isinstance(model, dict) else str(model)
    seed = summary.get("seed", config.get("seed"))
    from seedbench.training.experiments.arm import read_arm

    arm = read_arm(path)
    iterations_done = summary.get("iterations_done")
    if iterations_done is None:
        iterations_done = max((int(m.get("iteration", 0)) for m in metrics), default=0)
    return Run(
        run=run_id or path.name,
        path=path,
        env=str(summary.get("env") or config.get("env") or "?"),
        agent=str(summary.get("agent") or config.get("agent") or "?"),
        model=str(model_name or "?"),
        seed=int(seed) if seed is not None else -1,
        complete=bool(summary.get("complete", False)),
        iterations_done=int(iterations_done),
        summary=summary,
        config=config,
        metrics=metrics,
        evals=evals,
        arm=str(arm.get("arm") or ""),
        arm_set=dict(arm.get("set") or {}) if isinstance(arm.get("set"), dict) else {},
    )


def read_runs(paths: str | Path | list[str | Path]) -> list[Run]:
    """All runs under one or more run/experiment directories, in a stable order."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    runs: list[Run] = []
    for root in map(Path, paths):
        for run_dir in find_run_dirs(root):
            rel = run_dir.relative_to(root).as_posix()
            run_id = run_dir.name if rel == "." else rel
            try:
                runs.append(read_run(run_dir, run_id))
            except YAMLFileError as err:  # one damaged run must not hide the others
                warnings.warn(f"run {run_id} left out: {err}", RunFileWarning, stacklevel=2)
    ids = [r.run for r in runs]
    if len(set(ids)) != len(ids):  # the same relative name under two roots: fall back to full paths
        for r in runs:
            r.run = r.path.as_posix()
    return sorted(runs, key=lambda r: (r.env, r.model, r.arm, r.seed, r.run))


def _budget(record: dict[str, Any]) -> list[Any]:
    return [record.get(c) for c in BUDGET_COLUMNS]


def result_rows(run: Run) -> Iterator[tuple]:
    ident = (run.run, run.env, run.agent, run.arm, run.model, run.seed)
    for record in run.metrics:
        budget = _budget(record)
        for key, value in record.items():
            if key in _NOT_METRICS or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            yield (*ident, *budget, key, float(value))
    for record in run.evals:
        budget = _budget(record)
        split = record.get("split", "eval")
        for key in ("success_micro", "success_macro", "score"):
            if isinstance(record.get(key), (int, float)):
                yield (*ident, *budget, f"eval/{split}/{key}", float(record[key]))
        for task_type, value in sorted((record.get("per_type") or {}).items()):
            yield (*ident, *budget, f"eval/{split}/success/{task_type}", float(value))
        for task_type, value in sorted((record.get("per_type_counts") or {}).items()):
            yield (*ident, *budget, f"eval/{split}/count/{task_type}", float(value))


def results_frame(runs: list[Run]):
    import pandas as pd

    rows = [row for run in runs for row in result_rows(run)]
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for column in BUDGET_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    frame["seed"] = frame["seed"].astype("int64")
    frame["value"] = frame["value"].astype("float64")
    return frame


def load_results(path: str | Path | list[str | Path]):
    """Load results as one tidy pandas DataFrame.

    ``path``: a run directory, a directory of runs (an experiment), a list of those, or a
    ``results.csv`` written by `seedbench report`. Columns: ``run, env, agent, arm, model, seed, iteration,
    trajectories, env_steps, generated_tokens, metric, value``. Example::

        df = seedbench.report.load_results("experiments/tiny")
        final = df[df.metric == "eval/test/success_micro"].groupby(["arm", "seed"]).last()
    """
    import pandas as pd

    if not isinstance(path, list) and Path(path).is_file():
        frame = pd.read_csv(path, dtype={"run": str, "env": str, "agent": str, "arm": str, "model": str, "metric": str})
        if "arm" not in frame.columns and "agent" in frame.columns:  # written before arms existed
            frame.insert(list(frame.columns).index("agent") + 1, "arm", frame["agent"])
        missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: not a seedbench results table (missing columns {missing})")
        for column in BUDGET_COLUMNS:
            frame[column] = frame[column].astype("Int64")
        return frame
    return results_frame(read_runs(path))


def runs_frame(runs: list[Run]):
    """One row per run: identity, completeness and provenance."""
    import pandas as pd

    rows = []
    for r in runs:
        rows.append({
            "run": r.run, "env": r.env, "env_id": r.summary.get("env_id"), "agent": r.agent, "arm": r.arm,
            "model": r.model, "seed": r.seed, "complete": r.complete, "iterations_done": r.iterations_done,
            "iterations": r.config.get("iterations"),
            "seedbench_version": r.summary.get("seedbench_version"), "git_hash": r.summary.get("git_hash"),
            "model_checksum": (r.summary.get("model") or {}).get("checksum") if isinstance(r.summary.get("model"), dict) else None,
            "path": str(r.path),
        })
    return pd.DataFrame(rows)


def load_runs(path: str | Path | list[str | Path]):
    """One row per run found under ``path`` (see `runs_frame`)."""
    return runs_frame(read_runs(path))
