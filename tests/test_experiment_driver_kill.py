"""A run of `seedbench experiment` ends with its driver, also when the driver alone is killed with SIGKILL
(no clean-up of its own runs), and a run starts only once no other process holds its run directory, so two
processes never write one log and a re-run does not find the run "in use"."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pytest
import yaml

from seedbench.training import experiments as ex
from seedbench.training.experiments.local import LocalExecutor
from seedbench.locking import LOCK_FILE, exclusive_lock
from tests.test_experiment import FAKE, _start_driver, _wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sigkill_of_the_driver_alone_ends_its_run_and_the_rerun_completes_it(tmp_path):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({"name": "k", "envs": ["choice"], "agents": ["grpo"], "seeds": [0],
                                         "model": "tiny", "budget": {"iterations": 400}}))
    output = tmp_path / "e"
    spec = ex.load_spec(spec_path, output)
    proc = _start_driver(spec_path, output)  # fake runs of 0.25 s per iteration: 100 s if left alone
    try:
        (run,) = ex.expand(spec)
        _wait_for(lambda: (run.run_dir / "metrics.jsonl").exists(), 120, "the run to start training")
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone; its run is in the same process group
        proc.wait(timeout=30)
        _wait_for(lambda: not _group_alive(proc.pid), 15, "the run to end with its driver")
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    log_before = run.log.read_text()
    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)
    assert [(o.status, o.action) for o in outcomes] == [("completed", "resume")]
    state = json.loads((output / "experiment.json").read_text())
    assert [r["status"] for r in state["runs"]] == ["completed"]
    log = run.log.read_text()
    assert log.startswith(log_before) and log[len(log_before):].lstrip("\n").startswith("=== ")  # appended after


def test_a_run_waits_for_its_directory_to_be_free_before_it_starts_or_writes_its_log(tmp_path):
    spec = ex.parse_spec({"name": "w", "envs": ["choice"], "agents": ["grpo"], "seeds": [0], "model": "tiny",
                          "budget": {"iterations": 2}}, tmp_path, tmp_path / "e")
    (run,) = ex.expand(spec)
    run.run_dir.mkdir(parents=True)
    held = exclusive_lock(run.run_dir / LOCK_FILE)  # as the run a killed driver left behind
    executor = LocalExecutor(1, command_prefix=FAKE, echo=lambda _: None)
    result = {}
    thread = threading.Thread(target=lambda: result.update(rc=executor.run_one(run, False)[0]))
    thread.start()
    time.sleep(1.0)
    assert not run.log.exists()  # nothing written while the other process holds the directory
    held.close()
    thread.join(timeout=60)
    assert result["rc"] == 0 and run.log.read_text().count("=== ") == 1
    assert ex.run_status(run) == "complete"


def test_a_directory_still_in_use_after_the_wait_is_reported_without_starting(tmp_path):
    spec = ex.parse_spec({"name": "w", "envs": ["choice"], "agents": ["grpo"], "seeds": [0], "model": "tiny",
                          "budget": {"iterations": 2}}, tmp_path, tmp_path / "e")
    (run,) = ex.expand(spec)
    run.run_dir.mkdir(parents=True)
    held = exclusive_lock(run.run_dir / LOCK_FILE)
    said = []
    executor = LocalExecutor(1, command_prefix=FAKE, echo=said.append)
    executor.lock_wait_s = 0.5
    try:
        assert executor.run_one(run, False)[0] == 1
    finally:
        held.close()
    assert not run.log.exists() and "still in use (pid" in said[0] and "not started" in said[0]


def test_a_driver_killed_while_writing_arm_json_leaves_a_missing_run_not_a_partial_one(tmp_path):
    spec = ex.parse_spec({"name": "w", "envs": ["choice"], "agents": ["grpo"], "seeds": [0], "model": "tiny",
                          "budget": {"iterations": 2}}, tmp_path, tmp_path / "e")
    (run,) = ex.expand(spec)
    run.run_dir.mkdir(parents=True)
    (run.run_dir / "arm.json.tmp").write_text('{"arm": "gr')
    assert ex.run_status(run) == "missing"
