"""The OpenMP settings of `seedbench.threads` reach torch: set before it loads, the user's values win.

Each case runs a fresh interpreter, since OpenMP reads its variables once, when torch loads it. An import
hook records the environment at the moment ``import torch`` starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seedbench import threads

SRC = Path(__file__).resolve().parents[1] / "src"

PROBE = r"""
import importlib.abc, json, os, sys
seen = {}
class Probe(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not seen:
            seen.update({k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")})
        return None
sys.meta_path.insert(0, Probe())
entry = sys.argv[1]
if entry == "cli":
    from seedbench.cli import main
    main(["envs"])
else:  # python -m seedbench
    import runpy
    sys.argv = ["seedbench", "envs"]
    try:
        runpy.run_module("seedbench", run_name="__main__")
    except SystemExit:
        pass
import torch  # whatever the command imported, torch is loaded from here on
seen["torch_threads"] = torch.get_num_threads()
print("PROBE" + json.dumps(seen))
"""


def probe(entry: str, **env_vars: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "SEEDBENCH_OMP_WAIT_POLICY", "SEEDBENCH_NUM_THREADS")}
    env.update(env_vars, PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-c", PROBE, entry], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("PROBE"))
    return json.loads(line[len("PROBE"):])


@pytest.mark.parametrize("entry", ["cli", "module"])
def test_passive_is_set_before_torch_loads(entry):
    seen = probe(entry, SEEDBENCH_OMP_WAIT_POLICY="passive")
    assert seen["OMP_WAIT_POLICY"] == "PASSIVE"
    assert seen["OMP_NUM_THREADS"] is None  # thread count: torch's own choice


def test_auto_decides_on_the_load_before_torch_loads():
    """Without a setting the CLI chooses by the machine's load at start (`threads.machine_shared`)."""
    before = threads.current_load()
    seen = probe("cli")
    after = threads.current_load()
    # the load may cross the threshold between the readings; only a clear case is asserted
    if min(before, after) >= threads.SHARED_LOAD + 0.5 or max(before, after) <= threads.SHARED_LOAD - 0.5:
        assert seen["OMP_WAIT_POLICY"] == ("PASSIVE" if before >= threads.SHARED_LOAD else None)


def test_the_load_is_the_runnable_count_now_less_this_process(tmp_path):
    """procs_running from /proc/stat, averaged over the samples, this process taken off; not the 1-minute
    load average, which still counts a job that ended a minute ago."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3 4\nctxt 99\nprocs_running 3\nprocs_blocked 0\n")
    assert threads.procs_running(str(stat)) == 3
    assert threads.procs_running(str(tmp_path / "missing")) is None
    stat.write_text("cpu  1 2 3 4\n")
    assert threads.procs_running(str(stat)) is None
    readings = iter([1, 3, 2, 1])  # alone, then two others, one other, alone
    assert threads.other_runnable(lambda: next(readings), samples=4, interval_s=0) == 0.75
    assert threads.other_runnable(lambda: None, samples=4, interval_s=0) is None
    assert threads.other_runnable(lambda: 0, samples=2, interval_s=0) == 0  # never below zero
    alone = threads.other_runnable(samples=5, interval_s=0.001)  # this machine, this test: a number of processes
    assert alone is None or alone >= 0


def test_an_idle_machine_after_a_busy_minute_is_not_shared(monkeypatch):
    """The case the 1-minute load average gets wrong: it is high (a job just ended), nothing runs now."""
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (3.0, 2.0, 1.0))
    monkeypatch.setattr(threads, "procs_running", lambda: 1)  # only this process
    assert threads.configure({}) == {}
    monkeypatch.setattr(threads, "procs_running", lambda: 2)  # one other busy process
    assert threads.configure({}) == {"OMP_WAIT_POLICY": "PASSIVE"}
    monkeypatch.setattr(threads, "procs_running", lambda: None)  # no /proc/stat: the load average decides
    assert threads.configure({}) == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize("load, expected", [(0.0, {}), (0.99, {}), (1.0, {"OMP_WAIT_POLICY": "PASSIVE"}),
                                            (6.5, {"OMP_WAIT_POLICY": "PASSIVE"})])
def test_auto_is_passive_exactly_on_a_shared_machine(load, expected):
    assert threads.configure({}, load=load) == expected  # the default is auto
    assert threads.configure({"SEEDBENCH_OMP_WAIT_POLICY": "auto"}, load=load) == expected
    # an explicit policy ignores the load
    assert threads.configure({"SEEDBENCH_OMP_WAIT_POLICY": "passive"}, load=0.0) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert threads.configure({"SEEDBENCH_OMP_WAIT_POLICY": "default"}, load=9.0) == {}


def test_users_own_variables_win():
    seen = probe("cli", OMP_WAIT_POLICY="ACTIVE", OMP_NUM_THREADS="1", SEEDBENCH_NUM_THREADS="2")
    assert seen["OMP_WAIT_POLICY"] == "ACTIVE"
    assert seen["OMP_NUM_THREADS"] == "1"
    assert seen["torch_threads"] == 1


def test_seedbench_settings_choose_policy_and_threads():
    seen = probe("cli", SEEDBENCH_OMP_WAIT_POLICY="default", SEEDBENCH_NUM_THREADS="1")
    assert seen["OMP_WAIT_POLICY"] is None  # the runtime's own policy
    assert seen["OMP_NUM_THREADS"] == "1"
    assert seen["torch_threads"] == 1


def test_configure_on_a_mapping():
    env = {"SEEDBENCH_OMP_WAIT_POLICY": "active"}
    assert threads.configure(env) == {"OMP_WAIT_POLICY": "ACTIVE"}
    assert threads.configure(env) == {}  # already set: left alone
    with pytest.raises(ValueError, match="SEEDBENCH_OMP_WAIT_POLICY"):
        threads.configure({"SEEDBENCH_OMP_WAIT_POLICY": "spin"})
    with pytest.raises(ValueError, match="positive integer"):
        threads.configure({"SEEDBENCH_NUM_THREADS": "0"})
