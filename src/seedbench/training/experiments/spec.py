"""The experiment spec: parsing the YAML (or the command line's equivalent) into an `ExperimentSpec`, and
expanding it into one `RunSpec` per (env, agent, model, seed), each with its run directory and log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seedbench.paths import UnsafePathError, inside
from seedbench.config import build_config, set_dotted
from seedbench.training.experiments.arm import label_problem
from seedbench.yamlio import YAMLFileError, read_yaml


AGENT_KEYS = {"name", "label", "config", "set", "iterations"}
SPEC_KEYS = {"name", "output", "envs", "env", "agents", "seeds", "model", "models", "budget", "config", "set",
             "args", "resources", "executor", "order", "archive", "archive_commit"}
ORDERS = ("arms", "seeds")
"""``order: arms`` (default): every seed of an arm before the next arm; ``order: seeds``: every arm of a seed
before the next seed, so a study stopped part-way holds whole seeds, each arm's runs beside the others'."""


class ExperimentError(ValueError):
    """A bad spec or an unusable output directory; shown as one line."""


@dataclass
class AgentSpec:
    name: str
    config: str | None = None  # replaces the spec-level config for this agent
    set: dict[str, Any] = field(default_factory=dict)
    label: str | None = None  # the arm's name in run directories, reports and boards (default: `name`)
    iterations: int | None = None  # this arm's updates, replacing the budget; 0 = evaluate the start only

    @property
    def arm(self) -> str:
        return self.label or self.name


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
    order: str = "arms"  # ORDERS
    archive: Path | None = None  # where each finished run's report files are copied (`seedbench.report.archive`)
    archive_commit: bool = False  # commit each run to git as it is archived (`experiments.archive_commit`)


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
    arm: str = ""  # the spec entry's label, or the agent's name; "" means the agent's name
    arm_set: dict[str, Any] = field(default_factory=dict)  # the entry's own overrides (part of `set`)

    def __post_init__(self):
        self.arm = self.arm or self.agent

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
            extra = sorted(set(item) - AGENT_KEYS)
            if extra:
                raise ExperimentError(f"agents[{i}]: unknown key(s) {', '.join(extra)}; valid: {', '.join(sorted(AGENT_KEYS))}")
            label = item.get("label")
            if label is not None and label_problem(label):
                raise ExperimentError(f"agents[{i}]: {label_problem(label)}")
            config = _resolve(item.get("config"), base_dir)
            agents.append(AgentSpec(item["name"], config, _flatten_set(item.get("set"), f"agents[{i}].set"),
                                    label=label, iterations=_arm_iterations(item.get("iterations"), i)))
        else:
            raise ExperimentError(f"agents[{i}]: expected a name or a mapping with `name`")
    if not agents:
        raise ExperimentError("spec: `agents` is required (e.g. agents: [grpo, seed])")
    arms = [a.arm for a in agents]
    if len(set(arms)) != len(arms):
        duplicated = sorted({a for a in arms if arms.count(a) > 1})
        raise ExperimentError(f"agents: duplicate names {duplicated}; give each entry of the same agent its own "
                              "`label` (e.g. {name: grpo, label: control, set: {optim.lr: 0}})")
    names = {a.name for a in agents}
    for i, agent in enumerate(agents):
        if agent.label and agent.label != agent.name and agent.label in names:
            raise ExperimentError(f"agents[{i}]: label {agent.label!r} is the name of another agent in this spec; "
                                  "choose a label that says what the arm is (e.g. seed-no-opd)")
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
    order = data.get("order", "arms")
    if order not in ORDERS:
        raise ExperimentError(f"order: expected one of {', '.join(ORDERS)}, got {order!r}")
    archive = data.get("archive")
    if archive is not None and (not isinstance(archive, str) or not archive.strip()):
        raise ExperimentError(f"archive: expected a folder path, got {archive!r}")
    archive_commit = data.get("archive_commit", False)
    if not isinstance(archive_commit, bool) or (archive_commit and archive is None):
        raise ExperimentError(f"archive_commit: expected true or false, with an archive folder; got {archive_commit!r}"
                              + ("" if archive else " and no archive"))
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
        order=str(order), archive=Path(archive).resolve() if archive else None, archive_commit=archive_commit,
    )


def _arm_iterations(value: Any, index: int) -> int | None:
    """An entry's own number of updates. 0 makes an arm that only evaluates its starting checkpoint: under
    ``eval.same_stream`` that evaluation is, bit for bit, what an lr-0 control ends with (tests/test_eval_stream.py),
    at the cost of one evaluation instead of a whole training loop."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ExperimentError(f"agents[{index}].iterations: expected a whole number of updates (0 or more), got {value!r}")
    return value


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
        data = read_yaml(path)
    except YAMLFileError as err:
        raise ExperimentError(str(err)) from None
    return parse_spec(data, path.parent, output)


def _model_tag(model: str) -> str:
    return Path(model).name.replace("/", "_") or "model"


def trajectories_per_iteration(config: str | None, overrides: dict[str, Any]) -> int:
    """tasks_per_batch × group_size of the config a run would get (recipe + overrides)."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        if key.startswith("rollout."):
            set_dotted(nested, key, value)
    resolved = build_config(config, nested, check_host=False)  # sizes only; the model may not exist yet
    return int(resolved.rollout.tasks_per_batch) * int(resolved.rollout.group_size)


def expand(spec: ExperimentSpec) -> list[RunSpec]:
    """The runs of a spec, in a stable order: (env, arm, model, seed), or (env, model, seed, arm) under
    ``order: seeds``. A run directory is named after the arm (the entry's label, else the agent):
    ``<env>__<arm>__<model>__s<seed>``."""
    runs = []
    for env in spec.envs:
        for agent in spec.agents:
            config = agent.config or spec.config
            overrides = {**spec.set, **agent.set}
            iterations = agent.iterations if agent.iterations is not None else spec.iterations
            if iterations is None:
                per_iteration = trajectories_per_iteration(config, overrides)
                iterations = max(1, math.ceil(spec.trajectories / per_iteration))
            for model in spec.models:
                for seed in spec.seeds:
                    name = f"{env}__{agent.arm}__{_model_tag(model)}__s{seed}"
                    runs.append(RunSpec(env=env, agent=agent.name, model=model, seed=seed, iterations=iterations,
                                        run_dir=_inside_output(spec.output, name),
                                        log=_inside_output(spec.output / "logs", f"{name}.log"),
                                        config=config, set=overrides, args=list(spec.args), arm=agent.arm,
                                        arm_set=dict(agent.set)))
    if spec.order == "seeds":
        envs, models, seeds = spec.envs, spec.models, spec.seeds
        runs.sort(key=lambda r: (envs.index(r.env), models.index(r.model), seeds.index(r.seed)))  # stable: arms keep their order
    return runs


def _inside_output(folder: Path, name: str) -> Path:
    """`folder` / `name` for a run named after spec strings (env, agent): a spec is a shared file, and an env
    such as ``../../x`` must not put a run, or its log, outside the experiment's output."""
    try:
        return inside(folder, name)
    except UnsafePathError as err:
        raise ExperimentError(f"spec: run name {name!r} is not a plain folder name ({err}); use registered env "
                              "and agent names") from err
