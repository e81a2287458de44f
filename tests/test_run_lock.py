"""One training process per run directory: a second one is refused in one line before it writes anything, and
the lock of a process that died is gone with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from seedbench.locking import LOCK_FILE, RunDirInUse, lock_run_dir


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path):
    first = lock_run_dir(tmp_path / "run")
    with pytest.raises(RunDirInUse, match=rf"run is in use by another seedbench process \(pid {os.getpid()} on "):
        lock_run_dir(tmp_path / "run")
    first.close()
    lock_run_dir(tmp_path / "run").close()  # free again once the holder lets go


@pytest.mark.slow
def test_the_lock_of_a_killed_process_is_released(tmp_path):
    code = ("import sys, time; from pathlib import Path; from seedbench.locking import lock_run_dir; "
            "h = lock_run_dir(Path(sys.argv[1])); print('locked', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirInUse, match=f"pid {child.pid} on"):
            lock_run_dir(tmp_path / "run")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    deadline = time.monotonic() + 10
    while True:  # the kernel drops the lock with the process; nothing to clean up
        try:
            lock_run_dir(tmp_path / "run").close()
            break
        except RunDirInUse:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert (tmp_path / "run" / LOCK_FILE).exists()


@pytest.mark.slow
def test_resume_beside_a_live_run_writes_nothing(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.trainer import train

    out = tmp_path / "run"
    overrides = {"env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "output": str(out),
                 "rollout": {"max_new_tokens": 4}, "eval": {"num_tasks": 2}}
    train(build_config(overrides=overrides))
    def files():  # the run's own files (the holder below rewrites the lock file's text)
        return {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != LOCK_FILE}

    before = files()
    holder = lock_run_dir(out)  # stands for a run still training here
    try:
        with pytest.raises(RunDirInUse, match="in use by another seedbench process"):
            train(build_config(overrides={**overrides, "iterations": 2}), resume=True)
    finally:
        holder.close()
    assert files() == before and "checkpoints" in before


def test_the_experiment_driver_lock_is_the_same_lock(tmp_path):
    """`seedbench experiment`'s one-driver-per-output lock takes the same kind of lock as a run directory."""
    from seedbench.training.experiments.driver import _OutputLock
    from seedbench.training.experiments.spec import ExperimentError

    with _OutputLock(tmp_path):
        with pytest.raises(ExperimentError, match=f"another experiment is running on {tmp_path} .*give that one --workers N"):
            with _OutputLock(tmp_path):
                pass
    with _OutputLock(tmp_path):  # released with its handle
        pass


def test_a_build_lock_in_a_cache_that_cannot_be_written_is_skipped(tmp_path, monkeypatch):
    """A read-only cache (a shared, pre-built one) still serves what it holds: no lock, no error."""
    from seedbench.locking import build_lock

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "locks").write_text("a file where the lock folder would be")  # open() fails under it
    with build_lock("models-x", "x"):
        pass
