"""Experiments: every (env, agent, model, seed) of a spec as one ``seedbench run``, skipped when done,
resumed when partial.

A spec is YAML (see ``configs/experiments/tiny_choice.yaml``)::

    name: tiny-choice
    output: experiments/tiny-choice   # where run directories go (--output overrides)
    envs: [choice]
    agents: [grpo, seed]              # or {name: seed, config: my_seed.yaml, set: {algo.opd_coef: 0.02}}
    seeds: [0, 1, 2]
    model: tiny                       # or models: [tiny, smollm2-135m]
    budget: {iterations: 4}           # or {trajectories: 64}: iterations = ceil(64 / (tasks_per_batch × group_size))
    config: null                      # YAML recipe passed as --config (relative to the spec file)
    set: {eval.every: 2}              # --set overrides for every run
    resources: {gpus_per_run: 0, cpus_per_run: 1}

Each run is a subprocess (``python -m seedbench run ... --output <run dir> [--resume]``), so a crash or a
kill of one run never corrupts another, and a killed experiment restarts cleanly: a run directory whose
summary.json says ``complete: true`` is skipped, one with any content is continued with ``--resume``
(the trainer resumes from its last checkpoint), and a missing one starts fresh. Run directories are
``<output>/<env>__<agent>__<model>__s<seed>`` and logs ``<output>/logs/<same name>.log``.

Executors: ``local`` runs up to ``--workers`` runs at once (default 1; ``auto`` sizes the pool to the
machine: CPUs / cpus_per_run, and GPUs / gpus_per_run with each run pinned to its own GPUs through
``CUDA_VISIBLE_DEVICES``). ``--ray-address`` submits each run as a Ray task that requests its GPUs and
CPUs; the output directory must then be on storage every Ray node sees. Ray is the ``[ray]`` extra.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from seedbench.jsonio import read_json, write_json_atomic
from seedbench.paths import UnsafePathError, inside

SPEC_KEYS = {"name", "output", "envs", "env", "agents", "seeds", "model", "models", "budget", "config", "set",
             "args", "resources", "executor"}


class ExperimentError(ValueError):
    """A bad spec or an unusable output directory; shown as one line."""


@dataclass
class AgentSpec:
    name: str
    config: str | None = None  # replaces the spec-level config for this agent
    set: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExperimentSpec:
    name: str
    output: Path
    envs: list[str]
    agents: list[AgentSpec]
    seeds: list[int]
    models: list[str]
    iterations: int | None = None
    trajectories: int | None = None
    config: str | None = None
    set: dict[str, Any] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # extra `seedbench run` flags, passed verbatim
    gpus_per_run: float = 0
    cpus_per_run: int = 1


@dataclass
class RunSpec:
    env: str
    agent: str
    model: str
    seed: int
    iterations: int
    run_dir: Path
    log: Path
    config: str | None = None
    set: dict[str, Any] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.run_dir.name

    def cli_args(self, resume: bool) -> list[str]:
        """Arguments after ``seedbench`` (the command prefix is added by the executor)."""
        argv = ["run", "--agent", self.agent, "--env", self.env, "--seed", str(self.seed),
                "--iterations", str(self.iterations), "--model", self.model, "--output", str(self.run_dir)]
        if self.config:
            argv += ["--config", self.config]
        argv += list(self.args)
        if resume:
            argv.append("--resume")
        if self.set:
            argv += ["--set", *(f"{k}={_yaml_scalar(v)}" for k, v in self.set.items())]
        return argv


def _yaml_scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return text[:-4].strip() if text.endswith("\n...") or text.endswith(" ...") else text


# ----------------------------------------------------------------------------------------------------
# Spec parsing


def _as_list(value: Any, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (str, int)):
        return [value]
    raise ExperimentError(f"{what}: expected a list, got {type(value).__name__}")


def _flatten_set(values: Any, what: str) -> dict[str, Any]:
    """``{eval: {every: 2}}`` or ``{eval.every: 2}`` → ``{"eval.every": 2}``."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ExperimentError(f"{what}: expected a mapping of config keys to values")
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            for sub, v in _flatten_set(value, what).items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[str(key)] = value
    return flat


def parse_spec(data: dict[str, Any], base_dir: Path = Path("."), output: str | Path | None = None) -> ExperimentSpec:
    """Validate a spec mapping. Relative config paths are resolved against ``base_dir`` (the spec's
    folder); the output directory against the current directory."""
    if not isinstance(data, dict):
        raise ExperimentError("spec: expected a mapping at the top level")
    unknown = sorted(set(data) - SPEC_KEYS)
    if unknown:
        raise ExperimentError(f"spec: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(SPEC_KEYS))}")
    envs = [str(e) for e in _as_list(data.get("envs", data.get("env")), "envs")]
    if not envs:
        raise ExperimentError("spec: `envs` is required (e.g. envs: [choice])")
    agents = []
    for i, item in enumerate(_as_list(data.get("agents"), "agents")):
        if isinstance(item, str):
            agents.append(AgentSpec(item))
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            extra = sorted(set(item) - {"name", "config", "set"})
            if extra:
                raise ExperimentError(f"agents[{i}]: unknown key(s) {', '.join(extra)}; valid: name, config, set")
            config = _resolve(item.get("config"), base_dir)
            agents.append(AgentSpec(item["name"], config, _flatten_set(item.get("set"), f"agents[{i}].set")))
        else:
            raise ExperimentError(f"agents[{i}]: expected a name or a mapping with `name`")
    if not agents:
        raise ExperimentError("spec: `agents` is required (e.g. agents: [grpo, seed])")
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise ExperimentError(f"agents: duplicate names {names}; register an agent variant for an ablation")
    seeds = _as_list(data.get("seeds", [0]), "seeds")
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ExperimentError(f"seeds: expected a list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ExperimentError(f"seeds: duplicates in {seeds}")
    models = [str(m) for m in _as_list(data.get("models", data.get("model", "tiny")), "models")]
    budget = data.get("budget") or {}
    if not isinstance(budget, dict) or len(set(budget) & {"iterations", "trajectories"}) != 1 or set(budget) - {"iterations", "trajectories"}:
        raise ExperimentError("budget: give exactly one of `iterations: N` or `trajectories: N`")
    value = next(iter(budget.values()))
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ExperimentError(f"budget: expected a positive integer, got {value!r}")
    resources = data.get("resources") or data.get("executor") or {}
    if not isinstance(resources, dict):
        raise ExperimentError("resources: expected a mapping (gpus_per_run, cpus_per_run)")
    out = output if output is not None else data.get("output") or Path("experiments") / str(data.get("name") or "experiment")
    args = _as_list(data.get("args"), "args")
    return ExperimentSpec(
        name=str(data.get("name") or Path(out).name),
        output=Path(out).resolve(),
        envs=envs, agents=agents, seeds=[int(s) for s in seeds], models=models,
        iterations=budget.get("iterations"), trajectories=budget.get("trajectories"),
        config=_resolve(data.get("config"), base_dir),
        set=_flatten_set(data.get("set"), "set"),
        args=[str(a) for a in args],
        gpus_per_run=float(resources.get("gpus_per_run", 0) or 0),
        cpus_per_run=int(resources.get("cpus_per_run", 1) or 1),
    )


def _resolve(path: Any, base_dir: Path) -> str | None:
    if path is None:
        return None
    p = Path(str(path))
    if not p.is_absolute() and not p.exists() and (base_dir / p).exists():
        p = base_dir / p
    if not p.exists():
        raise ExperimentError(f"config file not found: {path}")
    return str(p.resolve())


def load_spec(path: str | Path, output: str | Path | None = None) -> ExperimentSpec:
    path = Path(path)
    if not path.is_file():
        raise ExperimentError(f"spec file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ExperimentError(f"{path}: not valid YAML ({err})") from err
    return parse_spec(data, path.parent, output)


def _model_tag(model: str) -> str:
    return Path(model).name.replace("/", "_") or "model"


def trajectories_per_iteration(config: str | None, overrides: dict[str, Any]) -> int:
    """tasks_per_batch × group_size of the config a run would get (recipe + overrides)."""
    from seedbench.config import build_config, set_dotted

    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if key.startswith("rollout."):
            set_dotted(nested, key, value)
    resolved = build_config(config, nested, check_host=False)  # sizes only; the model may not exist yet
    return int(resolved.rollout.tasks_per_batch) * int(resolved.rollout.group_size)


def expand(spec: ExperimentSpec) -> list[RunSpec]:
    """The runs of a spec, in a stable order (env, agent, model, seed)."""
    runs = []
    for env in spec.envs:
        for agent in spec.agents:
            config = agent.config or spec.config
            overrides = {**spec.set, **agent.set}
            iterations = spec.iterations
            if iterations is None:
                per_iteration = trajectories_per_iteration(config, overrides)
                iterations = max(1, math.ceil(spec.trajectories / per_iteration))
            for model in spec.models:
                for seed in spec.seeds:
                    name = f"{env}__{agent.name}__{_model_tag(model)}__s{seed}"
                    runs.append(RunSpec(env=env, agent=agent.name, model=model, seed=seed, iterations=iterations,
                                        run_dir=_inside_output(spec.output, name),
                                        log=_inside_output(spec.output / "logs", f"{name}.log"),
                                        config=config, set=overrides, args=list(spec.args)))
    return runs


# ----------------------------------------------------------------------------------------------------
# Run state


def _inside_output(folder: Path, name: str) -> Path:
    """`folder` / `name` for a run named after spec strings (env, agent): a spec is a shared file, and an env
    such as ``../../x`` must not put a run, or its log, outside the experiment's output."""
    try:
        return inside(folder, name)
    except UnsafePathError as err:
        raise ExperimentError(f"spec: run name {name!r} is not a plain folder name ({err}); use registered env "
                              "and agent names") from err


def run_status(run: RunSpec) -> str:
    """``complete`` (summary says so, at the requested budget), ``partial`` (anything on disk) or
    ``missing``. Raises if the directory holds a different run."""
    path = run.run_dir
    if not path.is_dir() or not any(path.iterdir()):
        return "missing"
    config = {}
    if (path / "config.yaml").is_file():
        try:
            config = yaml.safe_load((path / "config.yaml").read_text()) or {}
        except yaml.YAMLError:
            config = {}
    for key, expected in (("env", run.env), ("agent", run.agent), ("seed", run.seed)):
        if key in config and config[key] != expected:
            raise ExperimentError(f"{path} holds a run with {key}={config[key]!r}, not {expected!r}; "
                                  "move it away or use another --output")
    summary = read_json(path / "summary.json")
    if summary.get("complete") and int(summary.get("iterations_done", -1)) >= run.iterations:
        return "complete"
    return "partial"


@dataclass
class Outcome:
    run: str
    status: str  # skipped | completed | failed | interrupted
    action: str  # none | fresh | resume
    returncode: int | None = None
    seconds: float = 0.0


# ----------------------------------------------------------------------------------------------------
# Executors


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
        return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
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
            run.log.parent.mkdir(parents=True, exist_ok=True)
            cmd = self.prefix + run.cli_args(resume)
            with open(run.log, "a", encoding="utf-8") as log:
                log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n")
                log.flush()
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=self._env(gpus))
                with self._lock:
                    self._procs[run.name] = proc
                returncode = proc.wait()
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
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()

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

    start = _time.monotonic()
    path = Path(run_dir)
    argv = resume if path.is_dir() and any(path.iterdir()) else fresh
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


# ----------------------------------------------------------------------------------------------------
# Driving an experiment


class _OutputLock:
    """One experiment at a time per output directory (two drivers would train the same run twice)."""

    def __init__(self, output: Path):
        self.path = output / ".experiment.lock"
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "w")
        try:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): no protection
            pass
        except OSError as err:
            self.handle.close()
            raise ExperimentError(f"another experiment is running on {self.path.parent}") from err
        self.handle.write(str(os.getpid()))
        self.handle.flush()
        return self

    def __exit__(self, *exc):
        if self.handle:
            self.handle.close()


def _write_state(spec: ExperimentSpec, runs: list[RunSpec], outcomes: dict[str, Outcome]) -> None:
    state = {
        "name": spec.name,
        "spec": {**asdict(spec), "output": str(spec.output), "agents": [asdict(a) for a in spec.agents]},
        "runs": [{"run": r.name, "env": r.env, "agent": r.agent, "model": r.model, "seed": r.seed,
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
    runs = expand(spec)
    plan = [(run, run_status(run)) for run in runs]
    todo = [(run, status == "partial") for run, status in plan if status != "complete"]
    done_already = len(plan) - len(todo)
    resumed = sum(1 for _, resume in todo if resume)
    echo(f"experiment {spec.name}: {len(runs)} runs in {spec.output}: {done_already} complete, "
         f"{resumed} to resume, {len(todo) - resumed} to start")
    outcomes = {run.name: Outcome(run.name, "skipped", "none") for run, status in plan if status == "complete"}
    if dry_run:
        for run, status in plan:
            echo(f"  {status:<8} {run.name}")
        return [outcomes.get(r.name, Outcome(r.name, "pending", "resume" if s == "partial" else "fresh")) for r, s in plan]
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


def _tail(path: Path, n: int) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-n:]


# ----------------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seedbench experiment",
        description="Run envs × agents × seeds (× models) as separate `seedbench run`s; complete runs are "
                    "skipped and partial ones resumed, so rerunning after a kill finishes only what is missing.")
    parser.add_argument("spec", nargs="?", help="experiment spec YAML (or give --agent/--env/--seeds instead)")
    parser.add_argument("--output", help="experiment directory (overrides the spec's `output`)")
    parser.add_argument("--agent", nargs="+", help="agents (without a spec)")
    parser.add_argument("--env", nargs="+", help="envs (without a spec)")
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds (without a spec; default 0)")
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", nargs="+", help="models (without a spec; default tiny)")
    parser.add_argument("--iterations", type=int, help="budget in RL updates (without a spec)")
    parser.add_argument("--trajectories", type=int, help="budget in trajectories (without a spec)")
    parser.add_argument("--config", help="YAML recipe for every run (without a spec)")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides for every run")
    parser.add_argument("--workers", default="1", help="local runs at once: a number or 'auto' (default 1)")
    parser.add_argument("--gpus-per-run", type=float, help="GPUs each run needs (overrides the spec)")
    parser.add_argument("--cpus-per-run", type=int, help="CPUs each run needs (overrides the spec)")
    parser.add_argument("--ray-address", help="run on a Ray cluster ('auto' or ray://host:port); needs seedbench[ray]")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the state of each run, run nothing")
    parser.add_argument("--report", action="store_true", help="build <output>/report when every run is complete")
    return parser


def _spec_from_args(args) -> ExperimentSpec:
    if not args.agent or not args.env:
        raise ExperimentError("give a spec file, or --agent, --env and --iterations (or --trajectories)")
    if (args.iterations is None) == (args.trajectories is None):
        raise ExperimentError("give exactly one of --iterations or --trajectories")
    seeds = args.seeds or ([args.seed] if args.seed is not None else [0])
    data = {"envs": args.env, "agents": args.agent, "seeds": seeds, "models": args.model or ["tiny"],
            "budget": {"iterations": args.iterations} if args.iterations else {"trajectories": args.trajectories},
            "config": args.config}
    output = args.output or Path("experiments") / f"{'-'.join(args.env)}__{'-'.join(args.agent)}"
    return parse_spec(data, Path("."), output)


def main(argv: Sequence[str] | None = None) -> int:
    """``seedbench experiment SPEC.yaml`` or ``seedbench experiment --agent A B --env E --seeds 0 1 2 ...``."""
    args = build_parser().parse_args(argv)
    try:
        if args.workers != "auto" and not (args.workers.isdigit() and int(args.workers) >= 1):
            raise ExperimentError(f"--workers: expected a positive number or 'auto', got {args.workers!r}")
        spec = load_spec(args.spec, args.output) if args.spec else _spec_from_args(args)
        for pair in args.set:
            if "=" not in pair:
                raise ExperimentError(f"--set expects key=value, got {pair!r}")
            key, raw = pair.split("=", 1)
            spec.set[key.strip()] = yaml.safe_load(raw)
        if args.gpus_per_run is not None:
            spec.gpus_per_run = args.gpus_per_run
        if args.cpus_per_run is not None:
            spec.cpus_per_run = args.cpus_per_run
        outcomes = run_experiment(spec, workers=args.workers, ray_address=args.ray_address, dry_run=args.dry_run)
    except KeyboardInterrupt:
        return 130
    except (ExperimentError, FileNotFoundError) as err:
        print(f"seedbench experiment: error: {err}")
        return 2
    except Exception as err:  # e.g. a ConfigError while sizing a trajectory budget
        if type(err).__name__ in ("ConfigError", "UnknownNameError"):
            print(f"seedbench experiment: error: {err}")
            return 2
        raise
    if args.dry_run:
        return 0
    failed = [o for o in outcomes if o.status not in ("skipped", "completed")]
    ran = sum(1 for o in outcomes if o.status == "completed")
    print(f"experiment {spec.name}: {ran} run(s) finished now, {sum(o.status == 'skipped' for o in outcomes)} "
          f"were already complete, {len(failed)} failed")
    if failed:
        print("failed: " + ", ".join(o.run for o in failed) + f" (logs in {spec.output / 'logs'}); rerun to retry")
        return 1
    if args.report:
        from seedbench.report import build_report

        files = build_report([spec.output], spec.output / "report")
        print(f"report: {files.html}")
    return 0
