"""The Ray executor: each run a Ray task that requests its GPUs and CPUs, on storage every node sees
(the ``[ray]`` extra)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Callable, Sequence

from seedbench.training.experiments.spec import ExperimentError, RunSpec


def _die_with_parent() -> None:
    """In the trainer child of a Ray task (Linux): be killed when the task's worker dies, so a retried
    task never finds the previous attempt's trainer still writing the same run directory."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _ray_task(prefix: list[str] | None, fresh: list[str], resume: list[str], run_dir: str, log_path: str,
              cwd: str) -> tuple[int, float]:
    """Body of one Ray task: the same subprocess as the local executor, on whichever node Ray picked.

    Fresh or ``--resume`` is decided here, when the task starts, not when it was submitted: a retry of a
    task whose worker died (node lost, OOM kill) finds the run directory the first attempt left and resumes
    it from its last checkpoint."""
    import subprocess as sp
    import sys as _sys
    import time as _time

    from seedbench.training.experiments.arm import holds_run_files

    start = _time.monotonic()
    argv = resume if holds_run_files(Path(run_dir)) else fresh
    cmd = (prefix or [_sys.executable, "-m", "seedbench"]) + argv
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n=== {_time.strftime('%Y-%m-%d %H:%M:%S')} (ray worker pid {os.getpid()}) {' '.join(cmd)}\n")
        log.flush()
        returncode = sp.call(cmd, stdout=log, stderr=sp.STDOUT, stdin=sp.DEVNULL, cwd=cwd,
                             preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    return returncode, _time.monotonic() - start


class RayExecutor:
    """Each run is a Ray task requesting ``gpus_per_run`` GPUs and ``cpus_per_run`` CPUs (Ray sets
    ``CUDA_VISIBLE_DEVICES`` for it). Paths must be on storage shared by all nodes. A task whose worker
    dies is retried up to ``max_retries`` times and resumes the run from its last checkpoint."""

    def __init__(self, address: str, gpus_per_run: float = 0, cpus_per_run: int = 1,
                 command_prefix: Sequence[str] | None = None, echo: Callable[[str], None] = print,
                 max_retries: int = 3):
        try:
            import ray
        except ImportError as err:
            raise ExperimentError("the Ray executor needs Ray: pip install 'seedbench[ray]'") from err
        self.ray = ray
        self.address = address
        self.gpus_per_run = gpus_per_run
        self.cpus_per_run = cpus_per_run
        self.max_retries = max_retries
        # None → the worker's own interpreter (the driver's sys.executable may not exist on other nodes)
        self.prefix = list(command_prefix) if command_prefix else None
        self.echo = echo
        self._refs: list = []

    def execute(self, todo: list[tuple[RunSpec, bool]], on_done: Callable[[RunSpec, bool, int, float], None]) -> None:
        ray = self.ray
        if not ray.is_initialized():
            try:
                ray.init(address=self.address)
            except ConnectionError as err:
                raise ExperimentError(f"no Ray cluster at --ray-address {self.address}: start one (`ray start --head`, "
                                      "docs/scaling.md) or leave out --ray-address to run locally") from err
        task = ray.remote(_ray_task)
        refs = {}
        for run, resume in todo:
            ref = task.options(num_gpus=self.gpus_per_run, num_cpus=self.cpus_per_run, max_retries=self.max_retries).remote(
                self.prefix, run.cli_args(False), run.cli_args(True), str(run.run_dir), str(run.log), os.getcwd())
            refs[ref] = (run, resume)
        self._refs = list(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                run, resume = refs[ref]
                try:
                    returncode, seconds = ray.get(ref)
                except Exception as err:  # retries used up (node lost, OOM kill), or cancelled
                    self.echo(f"  {run.name}: Ray task failed: {type(err).__name__}: {err}")
                    returncode, seconds = 1, 0.0
                on_done(run, resume, returncode, seconds)

    def stop(self) -> None:
        for ref in self._refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # already finished
                pass
