"""The experiment harness: specs, skip/resume, executors, and a real end-to-end experiment + report.

Most tests drive a stand-in trainer (`seedbench.report.synthetic`, same command line as `seedbench run`)
so they take seconds; `test_real_experiment_*` runs the real `seedbench run` with the tiny model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from seedbench.training import experiments as ex

FAKE = [sys.executable, "-m", "seedbench.report.synthetic"]
REPO = Path(__file__).resolve().parent.parent


def spec_for(output: Path, **overrides) -> ex.ExperimentSpec:
    data = {"name": "t", "envs": ["choice"], "agents": ["grpo", "seed"], "seeds": [0, 1, 2], "model": "tiny",
            "budget": {"iterations": 6}, "set": {"eval": {"every": 2}}}
    data.update(overrides)
    return ex.parse_spec(data, REPO, output)


def invocations(spec: ex.ExperimentSpec) -> dict[str, list[str]]:
    out = {}
    for run in ex.expand(spec):
        path = run.run_dir.parent / f"{run.name}.invocations"
        out[run.name] = path.read_text().split("\n")[:-1] if path.exists() else []
    return out


# ----------------------------------------------------------------------------------------------------
# Specs


def test_example_spec_parses():
    spec = ex.load_spec(REPO / "configs/experiments/tiny_choice.yaml", "/tmp/x")
    runs = ex.expand(spec)
    assert len(runs) == 6 and {r.agent for r in runs} == {"grpo", "seed"} and {r.seed for r in runs} == {0, 1, 2}
    assert runs[0].name == "choice__grpo__tiny__s0" and runs[0].iterations == 4
    argv = runs[0].cli_args(resume=True)
    assert argv[:2] == ["run", "--agent"] and "--resume" in argv
    assert argv[argv.index("--set") + 1:] == ["eval.every=2", "eval.num_tasks=8", "rollout.max_new_tokens=32"]
    seed_argv = runs[3].cli_args(resume=False)
    assert runs[3].agent == "seed" and seed_argv[-1] == "algo.analysis_max_new_tokens=64" and "--resume" not in seed_argv


@pytest.mark.parametrize("path", sorted((REPO / "configs/experiments").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_spec_expands_into_valid_run_configs(path):
    """Each run of a shipped spec, as the driver would start it, resolves into a config that passes validation;
    the CPU study's runs keep the recipe its archived runs ran (their config.yaml, where archived)."""
    from seedbench.cli import _run_overrides, build_parser
    from seedbench.config import build_config, to_dict, validate_config

    compared = 0
    for run in ex.expand(ex.load_spec(path, "/tmp/x")):
        args = build_parser().parse_args(run.cli_args(resume=False))
        config = validate_config(build_config(args.config, _run_overrides(args)), check_host=False)
        archived = REPO / "docs/results/cpu-study/runs" / run.name / "config.yaml"
        if path.name == "cpu_study.yaml" and archived.is_file():
            ran, now = yaml.safe_load(archived.read_text()), yaml.safe_load(yaml.safe_dump(to_dict(config)))
            ran.pop("output"), now.pop("output")
            assert now["optim"].pop("forward_batch_size") is None  # the fields added since: their old behaviour
            assert now["eval"].pop("same_stream") is False
            assert now["eval"].pop("at_start") is True
            assert now.pop("report") is False  # after the run ends: nothing the training sees
            assert now["rollout"].pop("max_prompt_tokens", None) is None  # no prompt budget: every prompt kept
            now.pop("hardware", None)  # what the recipe is written for (`seedbench plan`): nothing the run uses
            assert now == ran, run.name
            compared += 1
    if path.name == "cpu_study.yaml":
        assert compared >= 4  # the archive is in the repository: a clean clone compares too


@pytest.mark.parametrize("change, message", [
    ({"colour": "red"}, "unknown key(s) colour"),
    ({"envs": []}, "`envs` is required"),
    ({"agents": ["grpo", "grpo"]}, "duplicate names"),
    ({"seeds": [0, "one"]}, "expected a list of integers"),
    ({"budget": {"iterations": 3, "trajectories": 9}}, "exactly one of"),
    ({"budget": {"iterations": 0}}, "positive integer"),
    ({"config": "no/such/recipe.yaml"}, "config file not found"),
    ({"agents": [{"name": "seed", "lr": 1}]}, "agents[0]: unknown key(s) lr"),
    ({"agents": ["grpo", {"name": "grpo", "set": {"optim.lr": 0}}]}, "duplicate names ['grpo']; give each entry"),
    ({"agents": [{"name": "grpo", "label": "x"}, {"name": "seed", "label": "x"}]}, "duplicate names ['x']"),
    ({"agents": ["grpo", {"name": "grpo", "label": "seed"}, {"name": "seed", "label": "seed-full"}]}, "agents[1]: label 'seed' is the name of another"),
    ({"agents": [{"name": "grpo", "label": "../evil"}]}, "agents[0]: label '../evil' must be 1-64 letters"),
    ({"agents": [{"name": "grpo", "label": "no_under__scores"}]}, "label 'no_under__scores' must be"),
    ({"agents": [{"name": "grpo", "label": 7}]}, "label 7 must be"),
    ({"agents": [{"name": "grpo", "iterations": -1}]}, "agents[0].iterations: expected a whole number of updates"),
    ({"agents": [{"name": "grpo", "iterations": "4"}]}, "agents[0].iterations: expected a whole number"),
])
def test_bad_specs_are_one_line_errors(tmp_path, change, message):
    with pytest.raises(ex.ExperimentError) as err:
        spec_for(tmp_path, **change)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_labelled_arms_get_their_own_run_directories_and_overrides(tmp_path):
    spec = spec_for(tmp_path, agents=["grpo", {"name": "grpo", "label": "control", "set": {"optim": {"lr": 0}}},
                                      {"name": "seed", "label": "seed-no-opd", "set": {"algo.opd_coef": 0}}],
                    seeds=[0])
    runs = ex.expand(spec)
    assert [(r.name, r.agent, r.arm) for r in runs] == [
        ("choice__grpo__tiny__s0", "grpo", "grpo"), ("choice__control__tiny__s0", "grpo", "control"),
        ("choice__seed-no-opd__tiny__s0", "seed", "seed-no-opd")]
    control = runs[1].cli_args(resume=False)
    assert control[control.index("--agent") + 1] == "grpo"  # the label never reaches `seedbench run`
    assert control[control.index("--set") + 1:] == ["eval.every=2", "optim.lr=0"]
    assert "optim.lr=0" not in runs[0].cli_args(resume=False)


def test_an_arm_may_set_its_own_number_of_updates_zero_included(tmp_path):
    spec = spec_for(tmp_path, agents=["grpo", {"name": "grpo", "label": "control", "iterations": 0}], seeds=[0])
    runs = ex.expand(spec)
    assert [(r.arm, r.iterations) for r in runs] == [("grpo", spec.iterations), ("control", 0)]
    argv = runs[1].cli_args(resume=False)
    assert argv[argv.index("--iterations") + 1] == "0"


def test_arms_are_recorded_in_the_run_and_read_back_by_reports(tmp_path):
    from seedbench.report.data import read_runs

    spec = spec_for(tmp_path / "e", agents=["grpo", {"name": "grpo", "label": "control", "set": {"optim.lr": 0}}],
                    seeds=[0, 1])
    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)
    assert [o.status for o in outcomes] == ["completed"] * 4
    arm = json.loads((spec.output / "choice__control__tiny__s1" / "arm.json").read_text())
    assert arm == {"arm": "control", "agent": "grpo", "experiment": "t", "set": {"optim.lr": 0},
                   "experiment_set": {"eval.every": 2}}
    runs = read_runs(spec.output)
    assert sorted((r.arm, r.agent, r.seed) for r in runs) == [("control", "grpo", 0), ("control", "grpo", 1),
                                                              ("grpo", "grpo", 0), ("grpo", "grpo", 1)]
    control = [r for r in runs if r.arm == "control"][0]
    assert control.arm_set == {"optim.lr": 0}  # what sets the arm apart, not what every arm shares
    state = json.loads((spec.output / "experiment.json").read_text())
    assert {r["run"]: r["arm"] for r in state["runs"]}["choice__control__tiny__s0"] == "control"
    # the stand-in trainer honours optim.lr=0: the control does not learn, GRPO does
    finals = {r.run: r.evals[-1]["success_micro"] for r in runs}
    assert finals["choice__control__tiny__s0"] < 0.3 < finals["choice__grpo__tiny__s0"]


def test_a_directory_holding_only_arm_json_is_a_missing_run(tmp_path):
    spec = spec_for(tmp_path / "e", seeds=[0], agents=[{"name": "grpo", "label": "control"}])
    run = ex.expand(spec)[0]
    ex.write_arm(run.run_dir, "control", "grpo", "t", {})
    assert ex.run_status(run) == "missing"  # a driver killed before the trainer wrote anything
    assert [o.action for o in ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)] == ["fresh"]
    assert invocations(spec)[run.name] == ["fresh"]
    ex.write_arm(run.run_dir, "grpo", "grpo", "t", {})
    with pytest.raises(ex.ExperimentError, match="holds a run of arm 'grpo'"):
        ex.run_status(run)


def test_trajectory_budget_is_converted_with_the_rollout_config(tmp_path):
    # tasks_per_batch × group_size trajectories per iteration, rounded up
    spec = spec_for(tmp_path, budget={"trajectories": 20}, set={"rollout.tasks_per_batch": 2, "rollout.group_size": 4})
    assert ex.expand(spec)[0].iterations == 3
    spec = spec_for(tmp_path, budget={"trajectories": 20}, set={"rollout.tasks_per_batch": 2, "rollout.group_size": 2})
    assert ex.expand(spec)[0].iterations == 5
    spec = spec_for(tmp_path, budget={"trajectories": 20}, set={"rollout.tasks_per_batch": 3, "rollout.group_size": 1})
    assert ex.expand(spec)[0].iterations == 7


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    assert ex.main([str(tmp_path / "missing.yaml")]) == 2
    assert capsys.readouterr().out.strip().count("\n") == 0
    assert ex.main(["--agent", "grpo", "--env", "choice"]) == 2
    assert "exactly one of --iterations or --trajectories" in capsys.readouterr().out
    assert ex.main(["--agent", "grpo", "--env", "choice", "--iterations", "2", "--workers", "lots"]) == 2


def test_dry_run_runs_nothing(tmp_path, capsys):
    assert ex.main(["--agent", "grpo", "--env", "choice", "--seeds", "0", "1", "--iterations", "2",
                    "--output", str(tmp_path / "e"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 runs" in out and "missing  choice__grpo__tiny__s1" in out
    assert not (tmp_path / "e").exists()


def test_a_spec_runs_in_parts_by_arm_and_seed(tmp_path, capsys):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({"name": "p", "envs": ["choice"], "seeds": [0, 1, 2], "model": "tiny",
                                         "agents": ["grpo", {"name": "grpo", "label": "control", "set": {"optim.lr": 0}},
                                                    "seed"], "budget": {"iterations": 2}}))
    out = tmp_path / "e"
    assert ex.main([str(spec_path), "--output", str(out), "--arms", "control", "seed", "--seeds", "2",
                    "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "2 runs" in plan and "choice__control__tiny__s2" in plan and "choice__seed__tiny__s2" in plan
    assert "__grpo__" not in plan and "__s0" not in plan
    assert ex.main([str(spec_path), "--output", str(out), "--arms", "gpro", "--dry-run"]) == 2
    assert "--arms: unknown gpro; the spec's arms are grpo, control, seed" in capsys.readouterr().out
    assert ex.main([str(spec_path), "--output", str(out), "--seeds", "7", "--dry-run"]) == 2
    assert "--seeds: [7] not in the spec's seeds [0, 1, 2]" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------------
# Skip, resume, executors (stand-in trainer)


def test_rerunning_a_finished_experiment_does_no_work(tmp_path):
    spec = spec_for(tmp_path / "e")
    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)
    assert [o.status for o in outcomes] == ["completed"] * 6
    assert all(v == ["fresh"] for v in invocations(spec).values())
    messages = []
    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=messages.append)
    assert [o.status for o in outcomes] == ["skipped"] * 6
    assert messages == [f"experiment t: 6 runs in {spec.output}: 6 complete, 0 to resume, 0 to start"]
    assert all(v == ["fresh"] for v in invocations(spec).values())  # no trainer was started
    state = json.loads((spec.output / "experiment.json").read_text())
    assert len(state["runs"]) == 6


def test_a_bigger_budget_resumes_finished_runs(tmp_path):
    spec = spec_for(tmp_path / "e", seeds=[0], agents=["grpo"])
    ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)
    spec.iterations = 8
    assert [o.action for o in ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)] == ["resume"]


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _statuses(spec) -> dict[str, str]:
    return {run.name: ex.run_status(run) for run in ex.expand(spec)}


def _start_driver(spec_path: Path, output: Path) -> subprocess.Popen:
    """An experiment driver in its own process group (as a scheduler's job), on fake runs that sleep."""
    driver = textwrap.dedent(f"""
        from seedbench.training import experiments as ex
        spec = ex.load_spec({str(spec_path)!r}, {str(output)!r})
        ex.run_experiment(spec, command_prefix={FAKE!r})
    """)
    env = {**os.environ, "SEEDBENCH_FAKE_SLEEP": "0.25"}
    return subprocess.Popen([sys.executable, "-c", driver], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_killed_experiment_resumes_only_what_is_missing(tmp_path):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({"name": "k", "envs": ["choice"], "agents": ["grpo", "seed"],
                                         "seeds": [0, 1, 2], "model": "tiny", "budget": {"iterations": 6}}))
    output = tmp_path / "e"
    spec = ex.load_spec(spec_path, output)
    proc = _start_driver(spec_path, output)
    try:
        _wait_for(lambda: list(_statuses(spec).values()).count("complete") >= 2
                  and "partial" in _statuses(spec).values(), 120, "two complete runs and a partial one")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole job: driver and its trainer, as a scheduler would
        proc.wait()
    before = _statuses(spec)
    assert "missing" in before.values() or list(before.values()).count("partial") >= 1
    outcomes = {o.run: o for o in ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)}
    calls = invocations(spec)
    for name, status in before.items():
        if status == "complete":
            assert outcomes[name].status == "skipped" and calls[name] == ["fresh"], name
        elif status == "partial":
            assert outcomes[name].action == "resume" and calls[name] == ["fresh", "resume"], name
        else:
            assert outcomes[name].action == "fresh" and calls[name] == ["fresh"], name
    assert set(_statuses(spec).values()) == {"complete"}
    for run in ex.expand(spec):  # the resumed run's log has every iteration exactly once
        iterations = [json.loads(line)["iteration"] for line in (run.run_dir / "metrics.jsonl").read_text().splitlines()]
        assert iterations == list(range(1, 7)), run.name


def test_sigterm_to_the_driver_alone_stops_its_running_run(tmp_path):
    """`kill DRIVER` (SIGTERM to the experiment process only, not its group) with one worker: the run it is
    waiting on is stopped too, not left training on its own beside the next driver."""
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({"name": "t", "envs": ["choice"], "agents": ["grpo"], "seeds": [0],
                                         "model": "tiny", "budget": {"iterations": 400}}))
    output = tmp_path / "e"
    spec = ex.load_spec(spec_path, output)
    proc = _start_driver(spec_path, output)

    def group_alive() -> bool:
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    try:
        _wait_for(lambda: "partial" in _statuses(spec).values(), 120, "the run to start training")
        proc.send_signal(signal.SIGTERM)  # the driver alone
        assert proc.wait(timeout=60) != 0
        _wait_for(lambda: not group_alive(), 30, "the run to stop with its driver")
    finally:
        if group_alive():
            os.killpg(proc.pid, signal.SIGKILL)
    assert _statuses(spec) == {ex.expand(spec)[0].name: "partial"}


def test_process_pool_pins_one_gpu_per_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    spec = spec_for(tmp_path / "e", resources={"gpus_per_run": 1, "cpus_per_run": 1})
    outcomes = ex.run_experiment(spec, workers="auto", command_prefix=FAKE, echo=lambda _: None)
    assert all(o.status == "completed" for o in outcomes)
    gpus = [line.split("gpus=")[1] for calls in invocations(spec).values() for line in calls]
    assert sorted(set(gpus)) == ["0", "1"]  # every run saw exactly one of the two GPUs
    with pytest.raises(ex.ExperimentError, match="asks for 4 GPU"):
        ex.LocalExecutor(1, gpus_per_run=4)


def test_a_failing_run_is_reported_and_retried_on_rerun(tmp_path):
    spec = spec_for(tmp_path / "e", seeds=[0], agents=["grpo"])
    blocker = spec.output / "choice__grpo__tiny__s0"
    blocker.mkdir(parents=True)
    (blocker / "config.yaml").write_text("env: choice\nagent: grpo\nseed: 0\n")
    (blocker / "metrics.jsonl").write_text('{"iteration": 1}\n')
    outcomes = ex.run_experiment(spec, command_prefix=[sys.executable, "-c", "import sys; sys.exit(3)"],
                                 echo=lambda _: None)
    assert outcomes[0].status == "failed" and outcomes[0].returncode == 3 and outcomes[0].action == "resume"
    assert ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)[0].status == "completed"


def test_a_directory_holding_another_run_is_refused(tmp_path):
    spec = spec_for(tmp_path / "e", seeds=[0], agents=["grpo"])
    other = spec.output / "choice__grpo__tiny__s0"
    other.mkdir(parents=True)
    (other / "config.yaml").write_text("env: choice\nagent: seed\nseed: 0\n")
    with pytest.raises(ex.ExperimentError, match="holds a run with agent='seed'"):
        ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)


class _FakeRay:
    """Just enough of Ray's API to check the executor's calls: tasks run synchronously."""

    class _Ref:
        def __init__(self, value):
            self.value = value

    class _Remote:
        def __init__(self, fn, ray):
            self.fn, self.ray, self.opts = fn, ray, {}

        def options(self, **opts):
            self.opts = opts
            return self

        def remote(self, *args):
            self.ray.requests.append(dict(self.opts))
            return _FakeRay._Ref(self.fn(*args))

    def __init__(self):
        self.address, self.requests = None, []

    def is_initialized(self):
        return self.address is not None

    def init(self, address=None):
        self.address = address

    def remote(self, fn):
        return _FakeRay._Remote(fn, self)

    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return ref.value

    def cancel(self, ref, force=False):
        pass


def test_ray_executor_requests_resources_per_run(tmp_path, monkeypatch):
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    spec = spec_for(tmp_path / "e", seeds=[0, 1], resources={"gpus_per_run": 1, "cpus_per_run": 4})
    outcomes = ex.run_experiment(spec, ray_address="ray://head:10001", command_prefix=FAKE, echo=lambda _: None)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert fake.address == "ray://head:10001"
    assert fake.requests == [{"num_gpus": 1.0, "num_cpus": 4, "max_retries": 3}] * 4


def test_ray_missing_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    assert ex.main(["--agent", "grpo", "--env", "choice", "--iterations", "1", "--output", str(tmp_path / "e"),
                    "--ray-address", "auto"]) == 2
    assert "pip install 'seedbench[ray]'" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------------
# The real thing: `seedbench run` with the tiny model, then a report rendered by Chromium


def _two_agents() -> list[str]:
    from seedbench.registry import agent_entries

    names = sorted(agent_entries())
    preferred = [a for a in ("grpo", "seed", "gigpo") if a in names] + [a for a in names if a not in ("grpo", "seed", "gigpo")]
    assert len(preferred) >= 2, f"the end-to-end experiment needs two registered agents, found {names}"
    return preferred[:2]


def _run_job(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run a command in its own process group; on timeout kill the group (its trainers too)."""
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(cmd[2:5])} timed out after {timeout}s:\n{out[-2000:]}{err[-2000:]}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _mtimes(spec) -> dict[str, float]:
    return {r.name: (r.run_dir / "summary.json").stat().st_mtime_ns for r in ex.expand(spec)
            if (r.run_dir / "summary.json").exists()}


@pytest.mark.slow
def test_real_experiment_kill_resume_rerun_and_report(tmp_path):
    agents = _two_agents()
    spec_path = tmp_path / "spec.yaml"
    # short generations keep this at minutes on a CPU; SEED's analyses are capped separately
    entries = [{"name": a, "set": {"algo.analysis_max_new_tokens": 32}} if a.startswith("seed") else a for a in agents]
    spec_path.write_text(yaml.safe_dump({
        "name": "e2e", "envs": ["choice"], "agents": entries, "seeds": [0, 1, 2], "model": "tiny",
        "budget": {"iterations": 3}, "set": {"eval.every": 1, "eval.num_tasks": 8, "rollout.max_new_tokens": 16}}))
    output = tmp_path / "exp"
    spec = ex.load_spec(spec_path, output)
    cmd = [sys.executable, "-m", "seedbench", "experiment", str(spec_path), "--output", str(output)]

    # 1. start, and kill the whole job once a run is complete and the next one is under way
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: "complete" in _statuses(spec).values() and "partial" in _statuses(spec).values()
                  or proc.poll() is not None, 3600, "a complete run and a partial one")
        assert proc.poll() is None, "the experiment finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = _statuses(spec)
    done_before = {n for n, s in before.items() if s == "complete"}
    partial_before = {n for n, s in before.items() if s == "partial"}
    assert done_before and partial_before and len(done_before) < 6
    stamps = _mtimes(spec)

    # 2. rerun: only what is missing is done
    result = _run_job(cmd, timeout=3600)  # ~2 minutes on an idle 2-core machine
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"{len(done_before)} complete, {len(partial_before)} to resume" in result.stdout
    assert set(_statuses(spec).values()) == {"complete"}
    after = _mtimes(spec)
    for name in done_before:
        assert after[name] == stamps[name], f"{name} was complete but was touched again"
    for name in partial_before:
        assert "--resume" in (output / "logs" / f"{name}.log").read_text()

    # 3. rerun again: no work at all
    stamps = _mtimes(spec)
    result = _run_job(cmd, timeout=600)
    assert result.returncode == 0
    assert "6 complete, 0 to resume, 0 to start" in result.stdout and "0 run(s) finished now" in result.stdout
    assert _mtimes(spec) == stamps

    # 4. report: files, numbers, and an HTML page that renders
    report = tmp_path / "report"
    result = _run_job([sys.executable, "-m", "seedbench", "report", str(output), "--out", str(report)], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    md = (report / "report.md").read_text()
    for agent in agents:
        assert f"| {agent} | 3 |" in md
    import seedbench.report

    df = seedbench.report.load_results(report / "results.csv")
    assert set(df.agent) == set(agents) and set(df.seed) == {0, 1, 2}
    assert {"eval/test/success_micro", "eval/test/success_macro"} <= set(df.metric)
    assert (df[df.metric == "eval/test/success_micro"].groupby("run").iteration.max() == 3).all()

    from tests.test_report import assert_not_blank, chromium, screenshot

    if chromium() is None:
        pytest.skip("chromium not installed (apt-get install -y chromium): HTML render check not run")
    assert_not_blank(screenshot(report / "report.html", tmp_path / "report.png"))


def test_order_seeds_runs_every_arm_of_a_seed_before_the_next_seed(tmp_path):
    arms = ["grpo", "seed", {"name": "grpo", "label": "control", "set": {"optim.lr": 0}}]
    by_arm = [r.name for r in ex.expand(spec_for(tmp_path, agents=arms, seeds=[2, 0]))]
    by_seed = [r.name for r in ex.expand(spec_for(tmp_path, agents=arms, seeds=[2, 0], order="seeds"))]
    assert by_arm == ["choice__grpo__tiny__s2", "choice__grpo__tiny__s0", "choice__seed__tiny__s2",
                      "choice__seed__tiny__s0", "choice__control__tiny__s2", "choice__control__tiny__s0"]
    assert by_seed == ["choice__grpo__tiny__s2", "choice__seed__tiny__s2", "choice__control__tiny__s2",
                       "choice__grpo__tiny__s0", "choice__seed__tiny__s0", "choice__control__tiny__s0"]
    with pytest.raises(ex.ExperimentError, match="order: expected one of arms, seeds, got 'random'"):
        spec_for(tmp_path, order="random")
    with pytest.raises(ex.ExperimentError, match="archive: expected a folder path"):
        spec_for(tmp_path, archive=["x"])


def test_archive_receives_each_run_as_it_finishes_and_the_report_reads_it(tmp_path):
    """With ``archive:`` every complete run's report files are copied as it finishes (and runs complete
    before are copied on the next call); the archive alone gives the experiment's results table."""
    from seedbench.report.data import read_runs, results_frame

    spec = spec_for(tmp_path / "e", seeds=[0, 1], archive=str(tmp_path / "kept"))
    seen_after_first: list[list[str]] = []

    def echo(line: str) -> None:
        if line.startswith("[1/"):
            seen_after_first.append(sorted(p.name for p in (tmp_path / "kept").iterdir()))

    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=echo)
    assert [o.status for o in outcomes] == ["completed"] * 4
    assert seen_after_first == [["choice__grpo__tiny__s0"]]  # archived when it finished, not at the end
    kept = read_runs(tmp_path / "kept")
    assert [r.run for r in kept] == sorted(r.name for r in ex.expand(spec))
    assert results_frame(kept).equals(results_frame(read_runs(spec.output)))
    assert not list((tmp_path / "kept").glob("*/final_model"))
    state = json.loads((spec.output / "experiment.json").read_text())
    assert state["spec"]["archive"] == str(tmp_path / "kept")

    import shutil
    shutil.rmtree(tmp_path / "kept")
    ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)  # nothing to run: complete runs copied
    assert len(read_runs(tmp_path / "kept")) == 4


def _git(cwd, *args):
    import subprocess
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_archive_commit_commits_each_run_as_it_is_archived_and_nothing_else(tmp_path):
    """``archive_commit: true``: one commit per finished run, holding only the archive folder; a file the
    user had staged stays staged and out of those commits. Outside a git work tree it is one warning line."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "mine.txt").write_text("work in progress\n")
    _git(repo, "add", "mine.txt")
    spec = spec_for(tmp_path / "e", seeds=[0], archive=str(repo / "kept"), archive_commit=True)
    messages: list[str] = []
    outcomes = ex.run_experiment(spec, command_prefix=FAKE, echo=messages.append)
    assert [o.status for o in outcomes] == ["completed"] * 2
    log = _git(repo, "log", "--format=%s").splitlines()
    assert log == ["t: archive choice__seed__tiny__s0", "t: archive choice__grpo__tiny__s0"]
    committed = set(_git(repo, "log", "--name-only", "--format=").split())
    assert committed and all(path.startswith("kept/") for path in committed)
    assert any(path.startswith("kept/choice__seed__tiny__s0/") and path.endswith("summary.json") for path in committed)
    assert _git(repo, "diff", "--cached", "--name-only").split() == ["mine.txt"]
    assert sum(m.startswith("archive: committed choice__") for m in messages) == 2

    outside = spec_for(tmp_path / "f", seeds=[0], agents=["grpo"], archive=str(tmp_path / "plain"), archive_commit=True)
    messages.clear()
    assert [o.status for o in ex.run_experiment(outside, command_prefix=FAKE, echo=messages.append)] == ["completed"]
    warning = [m for m in messages if m.startswith("archive: WARNING could not commit")]
    assert len(warning) == 1 and "commit them by hand" in warning[0]
    assert (tmp_path / "plain" / "choice__grpo__tiny__s0" / "summary.json").is_file()
    with pytest.raises(ex.ExperimentError, match="archive_commit: expected true or false, with an archive folder"):
        spec_for(tmp_path, archive_commit=True)


def test_an_archive_folder_git_ignores_stops_the_experiment_before_any_run(tmp_path):
    """``archive_commit: true`` into a folder a .gitignore rule covers could never commit a run: the driver says
    which rule before starting anything; a ``!`` line that lets the folder through makes it acceptable."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("runs/\n")
    spec = spec_for(tmp_path / "e", seeds=[0], archive=str(repo / "study" / "pilot" / "runs"), archive_commit=True)
    with pytest.raises(ex.ExperimentError, match=r"git ignores the archive folder .* \(rule \.gitignore:1:runs/\)"):
        ex.run_experiment(spec, command_prefix=FAKE, echo=lambda _: None)
    assert not (tmp_path / "e").exists()
    (repo / ".gitignore").write_text("runs/\n!/study/*/runs/\n")
    assert [o.status for o in ex.run_experiment(spec, command_prefix=FAKE, dry_run=True, echo=lambda _: None)] == ["pending"] * 2


def test_runs_kept_in_the_archive_are_skipped_on_a_fresh_machine(tmp_path):
    """A study moved to a machine without its run directories skips every run its archive holds complete,
    says how many, and lists what remains seed by seed; the rest run as usual and are archived."""
    arms = ["grpo", {"name": "grpo", "label": "control", "set": {"optim.lr": 0}}]
    first = spec_for(tmp_path / "machine-a", agents=arms, seeds=[0, 1], order="seeds", archive=str(tmp_path / "kept"))
    ex.run_experiment(first, command_prefix=FAKE, echo=lambda _: None)
    import shutil
    shutil.rmtree(tmp_path / "kept" / "choice__control__tiny__s1")  # seed 1's control never got archived
    again = spec_for(tmp_path / "machine-b", agents=arms, seeds=[0, 1], order="seeds", archive=str(tmp_path / "kept"))
    messages: list[str] = []
    outcomes = {o.run: o.status for o in ex.run_experiment(again, command_prefix=FAKE, echo=messages.append)}
    assert outcomes == {"choice__grpo__tiny__s0": "archived", "choice__control__tiny__s0": "archived",
                        "choice__grpo__tiny__s1": "archived", "choice__control__tiny__s1": "completed"}
    assert messages[0].endswith(f"0 complete, 3 archived in {tmp_path / 'kept'} (skipped), 0 to resume, 1 to start")
    assert messages[1] == "  remaining: seed 1: control"
    assert (tmp_path / "kept" / "choice__control__tiny__s1" / "summary.json").is_file()
    assert not (tmp_path / "machine-b" / "choice__grpo__tiny__s0").exists()


@pytest.mark.parametrize("at_start", [True, False])
def test_a_start_only_control_is_the_baseline_of_the_report_without_a_protocol_warning(tmp_path, at_start):
    """An arm of no updates (``iterations: 0``) beside a trained arm, with the real trainer: under one evaluation
    stream its only evaluation is the trained arm's first one (which ``eval.at_start: false`` skips), and the
    report pairs the two arms against it without flagging the differing number of updates."""
    from seedbench.cli import main
    from seedbench.training.rundir import read_jsonl

    spec = spec_for(tmp_path / "e", agents=[{"name": "grpo", "label": "control", "iterations": 0}, "grpo"],
                    seeds=[0], budget={"iterations": 1},
                    set={"eval.num_tasks": 6, "eval.same_stream": True, "eval.temperature": 1.0,
                         "eval.at_start": at_start, "rollout.max_new_tokens": 3, "save_final_model": False})
    assert [o.status for o in ex.run_experiment(spec, echo=lambda _: None)] == ["completed"] * 2
    evals = {arm: list(read_jsonl(spec.output / f"choice__{arm}__tiny__s0" / "eval.jsonl")) for arm in ("control", "grpo")}
    assert [e["iteration"] for e in evals["control"]] == [0]
    assert [e["iteration"] for e in evals["grpo"]] == ([0, 1] if at_start else [1])
    if at_start:
        assert evals["control"][0]["won"] == evals["grpo"][0]["won"]
        assert evals["control"][0]["task_ids"] == evals["grpo"][0]["task_ids"]
    assert main(["report", str(spec.output), "--out", str(tmp_path / "r"), "--no-plots", "--baseline", "control"]) == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "## Against control, seed by seed" in text and "| grpo | `test` | 1 |" in text
    assert "disagree on iterations" not in text
