"""``seedbench eval``: evaluate a run, a checkpoint or a built-in agent on held-out tasks.

The evaluation loop itself is `seedbench.training.evaluator.Evaluator`, the one the trainer evaluates
with. ``seedbench eval <run>`` rebuilds the run's resolved config from its ``config.yaml`` (flags override
single fields and each override is printed), loads the run's latest checkpoint and its counters, and builds
the run's parts as the trainer does (`seedbench.training.build.build_run`), so it reproduces the run's last
evaluation record at the run's seed.

Other agents: an HF checkpoint directory (e.g. ``runs/…/final_model`` or an analyzer-SFT output; evaluated
with the default run config for ``--env``), the embedded base model by name (``smollm2-135m``: what a
warm start starts from), ``random`` (a uniformly random admissible action) or
``scripted`` (the env's expert, `env.expert_plan()`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from seedbench.config import ConfigError, RunConfig, get_dotted, set_dotted, update_dataclass, validate_config
from seedbench.jsonio import read_json_checked
from seedbench.rollout.types import TaskRef, Trajectory, task_score
from seedbench.training.build import build_run
from seedbench.training.evaluator import (Evaluator, before_after, before_after_line, eval_record,  # noqa: F401
                                          eval_tasks, success_table)
from seedbench.training.records import episode_record
from seedbench.training.rundir import RunDir
from seedbench.envs.checks import probe_reset_seeding
from seedbench.models.embedded import EMBEDDED_ALIASES
from seedbench.registry import make_env, resolve_env
from seedbench.training.run_state import load_run_state

EVAL_FLAGS = {"env": "env", "episodes": "eval.num_tasks", "split": "eval.splits", "seed": "seed",
              "temperature": "eval.temperature", "max_new_tokens": "eval.max_new_tokens", "engine": "engine"}
"""``seedbench eval`` flag → the run config field it sets (``--split S`` sets ``eval.splits: [S]``)."""
BUILTIN_AGENTS = ("random", "scripted")


# ----------------------------------------------------------------------------------------------------
# `seedbench eval`


def find_run(path: Path) -> tuple[Path, Path] | None:
    """(run directory, checkpoint directory) for a run directory or a checkpoint inside one; None for
    anything else."""
    if (path / "model.pt").exists() and (path.parent.parent / "config.yaml").exists():
        return path.parent.parent, path
    if (path / "config.yaml").exists():
        checkpoint = RunDir(path).latest_checkpoint()
        if checkpoint is None and (path / "final_model" / "config.json").exists():
            return path, path / "final_model"  # a complete run whose checkpoints were deleted at its end
        if checkpoint is None:
            raise FileNotFoundError(f"{path}: run directory without a complete checkpoint (nothing to evaluate yet)")
        return path, checkpoint
    return None


def eval_config(base: dict[str, Any], flags: dict[str, Any], set_values: dict[str, Any] | None = None
                ) -> tuple[RunConfig, list[str]]:
    """The run config `base` (a resolved ``config.yaml`` or a minimal mapping) with the eval flags and
    ``--set`` values applied and validated, and one line per field whose value they changed."""
    overrides: dict[str, Any] = {}
    for flag, value in flags.items():
        if value is not None:
            set_dotted(overrides, EVAL_FLAGS[flag], [value] if flag == "split" else value)
    config = update_dataclass(RunConfig(), base)
    before = {key: get_dotted(config, key) for key in _dotted_keys(overrides) + _dotted_keys(set_values or {})}
    update_dataclass(config, overrides)
    update_dataclass(config, set_values or {})
    config.track = []  # an evaluation feeds no tracker, so a run tracked elsewhere needs none installed here
    validate_config(config)
    changed = [f"{key} = {get_dotted(config, key)!r} (run: {old!r})" for key, old in before.items()
               if get_dotted(config, key) != old]
    return config, changed


def _dotted_keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """``{"eval": {"num_tasks": 8}, "algo": {"x": {..}}}`` → ``["eval.num_tasks", "algo.x"]``."""
    keys = []
    for key, value in tree.items():
        if isinstance(value, dict) and not prefix.startswith(("algo.", "env_kwargs.")):
            keys.extend(_dotted_keys(value, f"{prefix}{key}."))
        else:
            keys.append(f"{prefix}{key}")
    return keys


def evaluate_agent(agent: str, env_name: str | None = None, *, episodes: int | None = None, split: str | None = None,
                   seed: int | None = None, temperature: float | None = None, max_new_tokens: int | None = None,
                   engine: str | None = None, set_values: dict[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate a run (its latest or a given checkpoint, under its own config), an HF checkpoint directory,
    or a built-in agent. Returns the first split's record plus ``records`` (all splits), ``episodes`` (their
    episodes as the trainer logs them to episodes.jsonl; LLM agents only) and ``overrides`` (one line per
    run-config field a flag changed)."""
    flags = {"env": env_name, "episodes": episodes, "split": split, "seed": seed, "temperature": temperature,
             "max_new_tokens": max_new_tokens, "engine": engine}
    path = Path(agent)
    run = None if agent in BUILTIN_AGENTS else find_run(path)
    if run is not None:
        config, changed = eval_config(RunDir(run[0]).read_config(), flags, set_values)
        if run[1].name == "final_model":
            config.model.name = str(run[1])
            summary, _ = read_json_checked(run[0] / "summary.json")  # an evaluation changes nothing in the run
            counters = {k: int(v) for k, v in summary.get("counters", {}).items()}
            results = _evaluate_model(config, None, counters, run[0])
        else:
            results = _evaluate_model(config, run[1] / "model.pt", _checkpoint_counters(run[1]), run[0])
    else:
        if env_name is None:
            raise ConfigError(f"--env is needed to evaluate {agent!r} (only a run directory knows its env)")
        embedded = agent in EMBEDDED_ALIASES and not path.exists()
        if agent not in BUILTIN_AGENTS and not embedded and not (path / "config.json").exists():
            raise FileNotFoundError(f"agent {agent!r} is neither 'random', 'scripted', the embedded model "
                                    f"({EMBEDDED_ALIASES[0]}) nor an existing checkpoint directory (a run, one of "
                                    "its checkpoints or an HF checkpoint)")
        model = agent if embedded else str(path)
        base = {"env": env_name} if agent in BUILTIN_AGENTS else {"env": env_name, "model": {"name": model}}
        # no run config to override: the flags are the configuration, nothing is reported as overridden
        config, _ = eval_config(base, {k: v for k, v in flags.items() if k != "env"}, set_values)
        changed = []
        if agent in BUILTIN_AGENTS:
            results = [(record, []) for record in _evaluate_builtin(agent, config)]
        else:
            results = _evaluate_model(config, None, {"iteration": 0}, None)
    records = [record for record, _ in results]
    episodes = [episode_record(t, record["iteration"], f"eval/{record['split']}", float(t.won))
                for record, trajectories in results for t in trajectories]
    return {**records[0], "records": records, "episodes": episodes, "overrides": changed}


def _checkpoint_counters(checkpoint: Path) -> dict[str, int]:
    state = checkpoint / "state.pt"
    if state.exists():
        return dict(load_run_state(state)["counters"])
    return {"iteration": int(checkpoint.name.split("_")[-1]) if checkpoint.name.startswith("it_") else 0}


def _evaluate_builtin(agent: str, config: RunConfig) -> list[dict]:
    env = make_env(config.env, **config.env_kwargs)
    _probe(config, env)
    choose = _random_choice(random.Random(config.seed)) if agent == "random" else _scripted_choice()
    return [eval_record({}, split, config.eval.temperature,
                        [_text_agent_episode(env, task, choose, env.max_steps) for task in tasks], env)
            for split, tasks in eval_tasks(config, env).items()]


def _evaluate_model(config: RunConfig, state: Path | None, counters: dict[str, int], run_dir: Path | None
                    ) -> list[tuple[dict, list[Trajectory]]]:
    """Build what the trainer evaluates with (`build_run`: policy with the checkpoint's weights, engine,
    rollout scheduler, the run's agent prompt hook when `run_dir` names the run, env pool) and run its
    `Evaluator` once."""
    parts = build_run(config, RunDir(run_dir) if run_dir is not None else None, weights=state, training=False)
    try:
        return parts.evaluator.run(counters)
    finally:
        parts.close()


def _probe(config: RunConfig, env: Any) -> None:
    """The start-up seeding probe the trainer runs (`seedbench.envs.checks.probe_reset_seeding`), so an
    evaluation refuses the env a run would refuse."""
    if config.probe_env_seeding:
        probe_reset_seeding(env, resolve_env(config.env).alias)


def _text_agent_episode(env: Any, task: TaskRef, choose, max_steps: int) -> Trajectory:
    obs, info = env.reset(seed=task.seed, options={"split": task.split})
    traj = Trajectory(episode_id=task.key(), group_id=0, task=task, task_text=str(info.get("task", "")),
                      task_id=str(info.get("task_id", task.key())), task_type=str(info.get("task_type", "")))
    for step in range(max_steps):
        command = choose(env, info, step)
        obs, reward, terminated, truncated, info = env.step(f"<think>scripted</think><action>{command}</action>")
        traj.env_return += float(reward)
        traj.won = bool(info.get("won", False))
        traj.score = task_score(info, traj.score)
        if terminated or truncated:
            break
    return traj


def _random_choice(rng: random.Random):
    def choose(env, info, step):
        actions = info.get("admissible_actions") or ["noop"]
        return rng.choice(list(actions))

    return choose


def _scripted_choice():
    plans: dict[int, list[str]] = {}

    def choose(env, info, step):
        if not env.has_expert():
            raise ConfigError(f"env {type(env).__name__} has no scripted expert (expert_plan)")
        if step == 0 or id(env) not in plans or not plans[id(env)]:
            plans[id(env)] = list(env.expert_plan() or ["noop"])
        return plans[id(env)].pop(0)

    return choose
