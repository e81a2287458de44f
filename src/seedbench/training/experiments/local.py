"""The local executor: ``seedbench run`` subprocesses on this machine, at most ``workers`` at a time, each
pinned to its own GPUs through ``CUDA_VISIBLE_DEVICES`` when runs need GPUs.

Each run is started through `seedbench.training.experiments.child`, so it ends with the driver even when
the driver is killed with SIGKILL, and only once no other process holds its run directory (a run that a
killed driver left behind is given `LOCK_WAIT_S` to end): two processes never write one run's log."""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Sequence

from seedbench.training.experiments.child import guarded
from seedbench.training.experiments.spec import ExperimentError, RunSpec
from seedbench.locking import LOCK_FILE, LockHeld, exclusive_lock

LOCK_WAIT_S = 60.0
"""How long a run waits for its directory's lock before it starts: a run that a killed driver left behind
gets this long to end (it is sent SIGTERM when its driver dies) before the run is reported as in use."""


def wait_until_free(run_dir, timeout_s: float) -> str | None:
    """None once no process holds the lock of run directory `run_dir` (at once when it has none), else,
    after `timeout_s`, the holder the lock file names. Probes only: the run takes the lock itself."""
    lock = run_dir / LOCK_FILE
    deadline = time.monotonic() + timeout_s
    while True:
        if not lock.exists():
            return None
        try:
            handle = exclusive_lock(lock)
        except LockHeld as held:
            if time.monotonic() >= deadline:
                return str(held)
            time.sleep(0.2)
            continue
        if handle is not None:
            handle.close()
        return None


def default_command_prefix() -> list[str]:
    return [sys.executable, "-m", "seedbench"]


def visible_gpus() -> list[str]:
    """GPU ids this process may use, without importing torch."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [str(i) for i, line in enumerate(row for row in out.splitlines() if row.startswith("GPU "))]
    return []


def auto_workers(cpus_per_run: int, gpus_per_run: float, gpus: Sequence[str]) -> int:
    workers = max(1, (os.cpu_count() or 1) // max(1, cpus_per_run))
    if gpus_per_run > 0:
        workers = min(workers, max(1, int(len(gpus) // gpus_per_run)))
    return workers


class LocalExecutor:
    """Runs ``seedbench run`` subprocesses, at most ``workers`` at a time, pinning GPUs if asked."""

    def __init__(self, workers: int = 1, gpus_per_run: float = 0, cpus_per_run: int = 1,
                 command_prefix: Sequence[str] | None = None, echo: Callable[[str], None] = print):
        self.workers = max(1, workers)
        self.gpus_per_run = gpus_per_run
        self.cpus_per_run = cpus_per_run
        self.prefix = list(command_prefix or default_command_prefix())
        self.echo = echo
        self._gpus: list[str] = visible_gpus() if gpus_per_run > 0 else []
        if gpus_per_run > 0 and len(self._gpus) < math.ceil(gpus_per_run):
            raise ExperimentError(f"each run asks for {gpus_per_run} GPU(s) but {len(self._gpus)} are visible")
        self._lock = threading.Lock()
        self._procs: dict[str, subprocess.Popen] = {}
        self._stopping = False
        self.lock_wait_s = LOCK_WAIT_S

    def _take_gpus(self) -> list[str]:
        need = math.ceil(self.gpus_per_run)
        with self._lock:
            taken, self._gpus = self._gpus[:need], self._gpus[need:]
        return taken

    def _give_gpus(self, ids: list[str]) -> None:
        with self._lock:
            self._gpus = sorted(self._gpus + ids, key=lambda g: (len(g), g))

    def _env(self, gpus: list[str]) -> dict[str, str]:
        env = dict(os.environ)
        if self.gpus_per_run > 0:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        if self.workers > 1:  # several runs on one machine: stop each BLAS from using every core, and
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # the machine is shared (seedbench.threads)
                env.setdefault(var, str(self.cpus_per_run))
            env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        return env

    def run_one(self, run: RunSpec, resume: bool) -> tuple[int, float]:
        if self._stopping:
            return -signal.SIGTERM, 0.0
        gpus = self._take_gpus() if self.gpus_per_run > 0 else []
        start = time.monotonic()
        try:
            holder = wait_until_free(run.run_dir, self.lock_wait_s)  # the log too is one process's at a time
            if holder is not None:
                self.echo(f"{run.name}: its directory is still in use ({holder}) after {self.lock_wait_s:g} s; "
                          "not started, rerun the command once that process has ended")
                return 1, time.monotonic() - start
            run.log.parent.mkdir(parents=True, exist_ok=True)
            cmd = self.prefix + run.cli_args(resume)
            with open(run.log, "a", encoding="utf-8") as log:
                log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n")
                log.flush()
                proc = subprocess.Popen(guarded(cmd), stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=self._env(gpus))
                with self._lock:
                    self._procs[run.name] = proc
                try:
                    returncode = proc.wait()
                except BaseException:  # one worker: the driver's stop (Ctrl-C, SIGTERM) lands here, in this thread
                    self._terminate([proc])
                    raise
        finally:
            with self._lock:
                self._procs.pop(run.name, None)
            if gpus:
                self._give_gpus(gpus)
        return returncode, time.monotonic() - start

    def stop(self) -> None:
        """Terminate running children (SIGTERM, then SIGKILL after 10 s)."""
        self._stopping = True
        with self._lock:
            procs = list(self._procs.values())
        self._terminate(procs)

    @staticmethod
    def _terminate(procs: list[subprocess.Popen]) -> None:
        """SIGTERM to every live one of `procs`, then SIGKILL to those still alive 10 s later."""
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def execute(self, todo: list[tuple[RunSpec, bool]], on_done: Callable[[RunSpec, bool, int, float], None]) -> None:
        if self.workers == 1:
            for run, resume in todo:
                returncode, seconds = self.run_one(run, resume)
                on_done(run, resume, returncode, seconds)
            return
        pool = ThreadPoolExecutor(max_workers=self.workers)
        try:
            futures = {pool.submit(self.run_one, run, resume): (run, resume) for run, resume in todo}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    run, resume = futures[future]
                    returncode, seconds = future.result()
                    on_done(run, resume, returncode, seconds)
        except BaseException:
            self.stop()  # before joining the threads, which wait on their subprocesses
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
