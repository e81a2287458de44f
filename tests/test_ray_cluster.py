"""The experiment harness on a real local Ray cluster (``ray.init(num_cpus=2)``) against the local executor.

One experiment, 2 agents × 2 seeds of the tiny model, 2 iterations each, runs twice: with the local
executor and on Ray, where one Ray worker is SIGKILLed after its run's first checkpoint. Ray retries the
task, the retry resumes the run, and every run directory ends the same as the local one: the same files,
every iteration logged once, the same final metrics.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from seedbench.jsonio import read_jsonl
from seedbench.training import experiments as ex

ray = pytest.importorskip("ray", reason="pip install 'seedbench[ray]'")

REPO = Path(__file__).resolve().parent.parent
SPEC = {"name": "ray", "envs": ["choice"], "agents": ["grpo", "gigpo"], "seeds": [0, 1], "model": "tiny",
        "budget": {"iterations": 2},
        "set": {"rollout.max_new_tokens": 3, "rollout.tasks_per_batch": 2, "rollout.group_size": 2,
                "eval.num_tasks": 4, "save_every": 1, "optim.lr": 0.01}}
DETERMINISTIC = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # what Ray gives a 1-CPU task


@pytest.fixture(scope="module")
def cluster():
    src = str(REPO / "src")
    env_vars = {**DETERMINISTIC, "PYTHONPATH": src + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env_vars})
    try:
        yield
    finally:
        ray.shutdown()


def test_no_cluster_at_the_address_is_a_one_line_error(tmp_path, capsys):
    # runs before the module's cluster starts: `auto` finds nothing to connect to
    assert not ray.is_initialized()
    assert ex.main(["--agent", "grpo", "--env", "choice", "--iterations", "1", "--output", str(tmp_path / "e"),
                    "--ray-address", "auto"]) == 2
    out = capsys.readouterr().out
    assert "no Ray cluster at --ray-address auto: start one (`ray start --head`" in out
    assert not ray.is_initialized()


def _files(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}


def _untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def _kill_first_worker_after_a_checkpoint(spec: ex.ExperimentSpec, done: threading.Event) -> str | None:
    """SIGKILL the Ray worker of the first run that has a complete checkpoint but is not finished."""
    pattern = re.compile(r"\(ray worker pid (\d+)\)")
    deadline = time.monotonic() + 900
    while not done.is_set() and time.monotonic() < deadline:
        for run in ex.expand(spec):
            started = (run.run_dir / "checkpoints" / "it_1" / "COMPLETE").exists()
            if started and not json.loads((run.run_dir / "summary.json").read_text() or "{}").get("complete"):
                pids = pattern.findall(run.log.read_text()) if run.log.exists() else []
                if pids:
                    os.kill(int(pids[-1]), signal.SIGKILL)
                    return run.name
        time.sleep(0.05)
    return None


@pytest.mark.slow
def test_ray_cluster_matches_the_local_executor_and_survives_a_killed_worker(tmp_path, cluster, monkeypatch):
    for key, value in DETERMINISTIC.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src"))
    local = ex.parse_spec(SPEC, REPO, tmp_path / "local")
    on_ray = ex.parse_spec(SPEC, REPO, tmp_path / "ray")

    start = time.monotonic()
    outcomes = ex.run_experiment(local, workers=2, echo=lambda _: None)
    local_s = time.monotonic() - start
    assert [o.status for o in outcomes] == ["completed"] * 4

    done, killed = threading.Event(), {}
    killer = threading.Thread(target=lambda: killed.setdefault("run", _kill_first_worker_after_a_checkpoint(on_ray, done)))
    killer.start()
    start = time.monotonic()
    try:
        outcomes = ex.run_experiment(on_ray, ray_address="auto", echo=lambda _: None)
    finally:
        done.set()
        killer.join()
    ray_s = time.monotonic() - start
    print(f"4 tiny runs: local executor (2 workers) {local_s:.0f}s, Ray (2 CPUs, one worker killed) {ray_s:.0f}s")
    assert [o.status for o in outcomes] == ["completed"] * 4
    victim = killed.get("run")
    assert victim, "no Ray worker was killed (every run finished too fast to catch one between checkpoints)"

    # the killed run was retried by Ray and resumed from its checkpoint
    log = (on_ray.output / "logs" / f"{victim}.log").read_text()
    attempts = re.findall(r"=== .*\(ray worker pid \d+\) (.*)", log)
    assert len(attempts) == 2 and "--resume" not in attempts[0] and "--resume" in attempts[1]
    assert re.search(r"resumed .* from iteration [12]", log)

    for run_local, run_ray in zip(ex.expand(local), ex.expand(on_ray)):
        a, b = run_local.run_dir, run_ray.run_dir
        assert run_local.name == run_ray.name
        assert _files(a) == _files(b), run_local.name
        metrics = [list(read_jsonl(p / "metrics.jsonl")) for p in (a, b)]
        assert [r["iteration"] for r in metrics[1]] == [1, 2]  # nothing counted twice
        assert _untimed(metrics[0]) == _untimed(metrics[1]), run_local.name
        assert list(read_jsonl(a / "eval.jsonl")) == list(read_jsonl(b / "eval.jsonl"))
        summaries = [json.loads((p / "summary.json").read_text()) for p in (a, b)]
        assert summaries[0]["final"] == summaries[1]["final"] and summaries[1]["counters"]["trajectories"] == 8
        resources = summaries[1]["resources"]
        assert resources["cpu_seconds"] > 0 and resources["gpu_seconds"] == 0
        assert resources["sessions"] == (2 if run_ray.name == victim else 1)
