"""Driving an experiment: plan the runs (skip complete ones, resume partial ones), hand them to an
executor, record each outcome in ``<output>/experiment.json``, one experiment per output directory."""

from __future__ import annotations

import signal
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from seedbench.jsonio import write_json_atomic
from seedbench.report.archive import archive_run_logs
from seedbench.training.experiments.archive_commit import commit_archive, ignored_by_git
from seedbench.training.experiments.arm import write_arm
from seedbench.training.experiments.local import LocalExecutor, auto_workers, visible_gpus
from seedbench.training.experiments.ray_executor import RayExecutor
from seedbench.training.experiments.spec import ExperimentError, ExperimentSpec, RunSpec, expand
from seedbench.training.experiments.status import Outcome, archived, run_status
from seedbench.locking import LockHeld, exclusive_lock


class _OutputLock:
    """One experiment at a time per output directory (two drivers would train the same run twice)."""

    def __init__(self, output: Path):
        self.path = output / ".experiment.lock"
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.handle = exclusive_lock(self.path)  # None without flock (Windows): no protection
        except LockHeld as held:
            raise ExperimentError(f"another experiment is running on {self.path.parent} ({held}); one driver per "
                                  "output directory: to run more runs at once, give that one --workers N") from held
        return self

    def __exit__(self, *exc):
        if self.handle:
            self.handle.close()


def _write_state(spec: ExperimentSpec, runs: list[RunSpec], outcomes: dict[str, Outcome]) -> None:
    state = {
        "name": spec.name,
        "spec": {**asdict(spec), "output": str(spec.output), "agents": [asdict(a) for a in spec.agents],
                 "archive": str(spec.archive) if spec.archive else None},
        "runs": [{"run": r.name, "env": r.env, "agent": r.agent, "arm": r.arm, "model": r.model, "seed": r.seed,
                  "iterations": r.iterations, "dir": str(r.run_dir), "log": str(r.log),
                  **({k: v for k, v in asdict(outcomes[r.name]).items() if k != "run"} if r.name in outcomes else {})}
                 for r in runs],
    }
    write_json_atomic(spec.output / "experiment.json", state)


def run_experiment(
    spec: ExperimentSpec,
    *,
    workers: int | str = 1,
    ray_address: str | None = None,
    command_prefix: Sequence[str] | None = None,
    dry_run: bool = False,
    echo: Callable[[str], None] = print,
) -> list[Outcome]:
    """Run every missing or partial run of ``spec``; returns one `Outcome` per run (skips included)."""
    if spec.archive_commit and (rule := ignored_by_git(Path(spec.archive))):
        raise ExperimentError(f"archive_commit: git ignores the archive folder {spec.archive} (rule {rule}), so no "
                              "run could be committed; allow it in .gitignore (a `!/<folder>/` line) or archive elsewhere")
    runs = expand(spec)
    plan = [(run, _status(spec, run)) for run in runs]
    todo = [(run, status == "partial") for run, status in plan if status not in ("complete", "archived")]
    done_already = sum(status == "complete" for _, status in plan)
    kept = sum(status == "archived" for _, status in plan)
    resumed = sum(1 for _, resume in todo if resume)
    echo(f"experiment {spec.name}: {len(runs)} runs in {spec.output}: {done_already} complete, "
         + (f"{kept} archived in {spec.archive} (skipped), " if kept else "")
         + f"{resumed} to resume, {len(todo) - resumed} to start")
    if kept and todo:
        echo("  remaining: " + _remaining_by_seed([run for run, _ in todo]))
    outcomes = {run.name: Outcome(run.name, "skipped" if status == "complete" else "archived", "none")
                for run, status in plan if status in ("complete", "archived")}
    if dry_run:
        for run, status in plan:
            echo(f"  {status:<8} {run.name}")
        return [outcomes.get(r.name, Outcome(r.name, "pending", "resume" if s == "partial" else "fresh")) for r, s in plan]
    _archive(spec, [run for run, status in plan if status == "complete"], echo)
    if not todo:
        return [outcomes[r.name] for r in runs]

    if ray_address:
        executor: Any = RayExecutor(ray_address, spec.gpus_per_run, spec.cpus_per_run, command_prefix, echo)
    else:
        gpus = visible_gpus() if spec.gpus_per_run > 0 else []
        n = auto_workers(spec.cpus_per_run, spec.gpus_per_run, gpus) if workers == "auto" else int(workers)
        executor = LocalExecutor(n, spec.gpus_per_run, spec.cpus_per_run, command_prefix, echo)

    counter = {"n": 0}

    def on_done(run: RunSpec, resume: bool, returncode: int, seconds: float) -> None:
        counter["n"] += 1
        ok = returncode == 0 and run_status(run) == "complete"
        status = "completed" if ok else ("interrupted" if returncode < 0 or executor_stopped() else "failed")
        outcomes[run.name] = Outcome(run.name, status, "resume" if resume else "fresh", returncode, round(seconds, 1))
        if ok:
            _archive(spec, [run], echo)
        echo(f"[{counter['n']}/{len(todo)}] {run.name}: {status} ({'resumed' if resume else 'fresh'}, {seconds:.0f}s)"
             + ("" if ok else f"; log: {run.log}"))
        if not ok and returncode >= 0:
            for line in _tail(run.log, 5):
                echo(f"    {line}")
        _write_state(spec, runs, outcomes)

    stopped = {"flag": False}

    def executor_stopped() -> bool:
        return stopped["flag"]

    def handle_term(signum, frame):  # turn SIGTERM into the same clean stop as Ctrl-C
        raise KeyboardInterrupt

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, handle_term)
    with _OutputLock(spec.output):
        for run, _ in todo:  # before the run starts, so its arm is known even if it is killed
            write_arm(run.run_dir, run.arm, run.agent, spec.name, run.arm_set,
                      {k: v for k, v in run.set.items() if k not in run.arm_set})
        _write_state(spec, runs, outcomes)
        try:
            executor.execute(todo, on_done)
        except KeyboardInterrupt:
            stopped["flag"] = True
            echo("interrupted: stopping running runs; rerun the same command to continue")
            executor.stop()
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            _write_state(spec, runs, outcomes)
    return [outcomes.get(r.name, Outcome(r.name, "interrupted", "none")) for r in runs]


def _status(spec: ExperimentSpec, run: RunSpec) -> str:
    """`run_status`, except that a run the spec's archive holds complete is ``archived`` unless its run
    directory is itself complete: a study that moves between machines skips what it has already kept."""
    status = run_status(run)
    return "archived" if status != "complete" and archived(run, spec.archive) else status


def _remaining_by_seed(runs: list[RunSpec]) -> str:
    """``seed 3: grpo, seed; seed 4: grpo`` — the runs still to do, one group per seed (a seed is a unit)."""
    by_seed: dict[int, list[str]] = {}
    for run in runs:
        by_seed.setdefault(run.seed, []).append(run.arm)
    return "; ".join(f"seed {seed}: {', '.join(arms)}" for seed, arms in by_seed.items())


def _archive(spec: ExperimentSpec, finished: list[RunSpec], echo: Callable[[str], None]) -> None:
    """Copy the report files of `finished` runs into the spec's ``archive`` folder, when it names one: what
    the report needs survives the run directories (`seedbench.report.archive`); with ``archive_commit``
    they are committed to git at once (`seedbench.training.experiments.archive_commit`)."""
    if spec.archive is None or not finished:
        return
    archive_run_logs([run.run_dir for run in finished], spec.archive)
    if spec.archive_commit:
        echo(commit_archive(spec.archive, [run.name for run in finished], spec.name))


def _tail(path: Path, n: int) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-n:]
