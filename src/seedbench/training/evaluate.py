"""Evaluation: the one loop behind training-time evaluation (`Trainer.evaluate`) and ``seedbench eval``.

`Evaluator` plays the fixed held-out task list of a run config (``eval.*``) with the run's own step cap,
history length, response budget, prompt transform, engine and env worker pool, each split under an RNG
stream seeded from the run seed, the iteration and the split's place in the list, and returns one
``eval.jsonl`` record per split. The trainer owns one;
``seedbench eval <run>`` rebuilds the run's resolved config from its ``config.yaml`` (flags override single
fields and each override is printed), loads the run's latest checkpoint and its counters, and builds the
same `Evaluator`, so it reproduces the run's last evaluation record at the run's seed.

Other agents: an HF checkpoint directory (e.g. ``runs/…/final_model`` or an analyzer-SFT output; evaluated
with the default run config for ``--env``), ``random`` (a uniformly random admissible action) or
``scripted`` (the env's expert, `env.expert_plan()`).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any, Callable

import numpy as np

from seedbench.config import (ConfigError, RunConfig, episode_limits, get_dotted, set_dotted, update_dataclass,
                              validate_config)
from seedbench.provenance import env_provenance, task_list_hash
from seedbench.rollout.types import TaskRef, Trajectory, task_score

EVAL_FLAGS = {"env": "env", "episodes": "eval.num_tasks", "split": "eval.splits", "seed": "seed",
              "temperature": "eval.temperature", "max_new_tokens": "eval.max_new_tokens", "engine": "engine"}
"""``seedbench eval`` flag → the run config field it sets (``--split S`` sets ``eval.splits: [S]``)."""
BUILTIN_AGENTS = ("random", "scripted")


def success_table(trajectories: list[Trajectory]) -> dict[str, Any]:
    """Micro (over episodes) and macro (over task types) success, plus per-type rates and counts."""
    per_type: dict[str, list[bool]] = {}
    for traj in trajectories:
        per_type.setdefault(traj.task_type or "all", []).append(traj.won)
    rates = {k: float(np.mean(v)) for k, v in sorted(per_type.items())}
    return {
        "success_micro": float(np.mean([t.won for t in trajectories])) if trajectories else 0.0,
        "success_macro": float(np.mean(list(rates.values()))) if rates else 0.0,
        "per_type": rates,
        "per_type_counts": {k: len(v) for k, v in sorted(per_type.items())},
    }


def before_after(first: dict, last: dict) -> dict[str, Any] | None:
    """Held-out success of one split at the first and the last evaluation of a run, on the tasks both
    evaluated (same ids, neither dropped), with the difference's paired 95 % bootstrap interval over tasks
    (`seedbench.report.stats.paired_difference_ci`); None when the records carry no per-task outcomes."""
    from seedbench.report.stats import paired_difference_ci

    if "won" not in first or "won" not in last:
        return None
    before = dict(zip(first["task_ids"], first["won"]))
    pairs = [(before[task], won) for task, won in zip(last["task_ids"], last["won"])
             if won is not None and before.get(task) is not None]
    if not pairs:
        return None
    interval = paired_difference_ci([float(b) for b, _ in pairs], [float(a) for _, a in pairs])
    return {"split": last["split"], "tasks": len(pairs), "iterations": [first["iteration"], last["iteration"]],
            "before": sum(b for b, _ in pairs) / len(pairs), "after": sum(a for _, a in pairs) / len(pairs),
            "difference": interval.point, "ci95": [interval.low, interval.high]}


def before_after_line(result: dict[str, Any]) -> str:
    """The one console line a finished run ends with: did the held-out success move, and how surely."""
    low, high = result["ci95"]
    return (f"seedbench: held-out success on {result['split']} ({result['tasks']} tasks): {result['before']:.3f} at "
            f"iteration {result['iterations'][0]} -> {result['after']:.3f} at iteration {result['iterations'][1]}; "
            f"difference {result['difference']:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}] (paired bootstrap over tasks, "
            "one training seed)")


def eval_tasks(config: RunConfig, env: Any) -> dict[str, list[TaskRef]]:
    """The fixed evaluation list: seeds 0..n-1 of each eval split, identical for every agent and run seed."""
    splits = config.eval.splits or [env.eval_split]
    for split in splits:
        if split not in env.splits:
            raise ConfigError(f"eval.splits: {split!r} is not a split of {config.env}; choose from {list(env.splits)}")
    return {split: [TaskRef(split, s) for s in range(config.eval.num_tasks)] for split in splits}


def eval_record(counters: dict[str, int], split: str, temperature: float, trajectories: list[Trajectory],
                env: Any) -> dict:
    """One ``eval.jsonl`` record: counters, the task list (ids and their `task_list_hash` with `env`'s data
    checksum) and the success table."""
    record = {
        "iteration": counters.get("iteration", 0), "trajectories": counters.get("trajectories", 0),
        "env_steps": counters.get("env_steps", 0), "generated_tokens": counters.get("generated_tokens", 0),
        "split": split, "num_tasks": len(trajectories), "temperature": temperature,
        "task_ids": [t.task_id for t in trajectories],
        "won": [None if t.dropped else bool(t.won) for t in trajectories],
        **success_table([t for t in trajectories if not t.dropped]),
    }
    scored = [t for t in trajectories if not t.dropped]
    if any(t.score is not None for t in scored):  # envs with a task score (WebShop): its mean, unscored = 0
        record["score"] = float(np.mean([t.score or 0.0 for t in scored]))
    record["task_list_hash"] = task_list_hash(record["task_ids"], env_provenance(env)["manifest_checksum"])
    return record


class Evaluator:
    """Evaluates a policy (through `engine`) on a run config's held-out tasks. `make_envs(n)` gives an env
    batch of at least n envs (the run's pool); `transform_prompt` is the agent's acting-prompt hook."""

    def __init__(self, config: RunConfig, env: Any, engine: Any, tokenizer: Any, run_episodes: Callable,
                 make_envs: Callable[[int], Any], transform_prompt: Callable | None = None):
        self.config, self.env, self.engine, self.tokenizer = config, env, engine, tokenizer
        self.run_episodes, self.make_envs, self.transform_prompt = run_episodes, make_envs, transform_prompt
        self.max_steps, self.history_length = episode_limits(config, env)
        self.tasks = eval_tasks(config, env)
        self.envs = None

    def sampling(self):
        from seedbench.engines.base import SamplingParams, env_stop

        cfg = self.config
        return SamplingParams(max_new_tokens=cfg.eval.max_new_tokens or cfg.rollout.max_new_tokens,
                              temperature=cfg.eval.temperature, top_p=1.0, greedy=cfg.eval.temperature == 0,
                              **env_stop(self.env))

    def run(self, counters: dict[str, int], splits: list[str] | None = None) -> list[tuple[dict, list[Trajectory]]]:
        """(record, trajectories) per split (all, or those in `splits`). Each split draws from its own RNG
        stream, seeded by (run seed, iteration, the split's place in the list) and isolated from the caller's,
        so inserting an evaluation does not change training (and a replay matches), and a split evaluated
        alone (a resumed run finishing an interrupted evaluation) gives the record it gives among the others."""
        from seedbench.progress import progress_bar
        from seedbench.training.trainer import _rng_isolated

        iteration = counters.get("iteration", 0)
        params, results = self.sampling(), []
        for index, (split, tasks) in enumerate(self.tasks.items()):
            if splits is not None and split not in splits:
                continue
            with _rng_isolated(self.config.seed + 7919 * (iteration + 1) + 104729 * index):
                if self.envs is None or len(self.envs) < len(tasks):
                    if self.envs is not None:
                        self.envs.close()
                    self.envs = self.make_envs(len(tasks))
                with progress_bar(total=self.max_steps, desc=f"eval {split}", unit="step") as bar:
                    trajectories, _ = self.run_episodes(
                        self.envs, self.env, self.engine, self.tokenizer, tasks, group_size=1, params=params,
                        history_length=self.history_length, max_steps=self.max_steps,
                        episode_prefix=f"eval{iteration}-{split}-", progress=bar, transform_prompt=self.transform_prompt)
                results.append((eval_record(counters, split, self.config.eval.temperature, trajectories, self.env),
                                trajectories))
        return results

    def close(self) -> None:
        if self.envs is not None:
            self.envs.close()
            self.envs = None


# ----------------------------------------------------------------------------------------------------
# `seedbench eval`


def find_run(path: Path) -> tuple[Path, Path] | None:
    """(run directory, checkpoint directory) for a run directory or a checkpoint inside one; None for
    anything else."""
    from seedbench.training.rundir import RunDir

    if (path / "model.pt").exists() and (path.parent.parent / "config.yaml").exists():
        return path.parent.parent, path
    if (path / "config.yaml").exists():
        checkpoint = RunDir(path).latest_checkpoint()
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
        from seedbench.training.rundir import RunDir

        config, changed = eval_config(RunDir(run[0]).read_config(), flags, set_values)
        results = _evaluate_model(config, run[1] / "model.pt", _checkpoint_counters(run[1]), run[0])
    else:
        if env_name is None:
            raise ConfigError(f"--env is needed to evaluate {agent!r} (only a run directory knows its env)")
        if agent not in BUILTIN_AGENTS and not (path / "config.json").exists():
            raise FileNotFoundError(f"agent {agent!r} is neither 'random', 'scripted' nor an existing checkpoint "
                                    "directory (a run, one of its checkpoints or an HF checkpoint)")
        base = {"env": env_name} if agent in BUILTIN_AGENTS else {"env": env_name, "model": {"name": str(path)}}
        # no run config to override: the flags are the configuration, nothing is reported as overridden
        config, _ = eval_config(base, {k: v for k, v in flags.items() if k != "env"}, set_values)
        changed = []
        if agent in BUILTIN_AGENTS:
            results = [(record, []) for record in _evaluate_builtin(agent, config)]
        else:
            results = _evaluate_model(config, None, {"iteration": 0}, None)
    from seedbench.training.trainer import episode_record

    records = [record for record, _ in results]
    episodes = [episode_record(t, record["iteration"], f"eval/{record['split']}", float(t.won))
                for record, trajectories in results for t in trajectories]
    return {**records[0], "records": records, "episodes": episodes, "overrides": changed}


def _checkpoint_counters(checkpoint: Path) -> dict[str, int]:
    from seedbench.training.checkpoint_files import load_torch_file

    state = checkpoint / "state.pt"
    if state.exists():
        return dict(load_torch_file(state, weights_only=False)["counters"])
    return {"iteration": int(checkpoint.name.split("_")[-1]) if checkpoint.name.startswith("it_") else 0}


def _evaluate_builtin(agent: str, config: RunConfig) -> list[dict]:
    from seedbench.registry import make_env

    env = make_env(config.env, **config.env_kwargs)
    _probe(config, env)
    choose = _random_choice(random.Random(config.seed)) if agent == "random" else _scripted_choice()
    return [eval_record({}, split, config.eval.temperature,
                        [_text_agent_episode(env, task, choose, env.max_steps) for task in tasks], env)
            for split, tasks in eval_tasks(config, env).items()]


def _evaluate_model(config: RunConfig, state: Path | None, counters: dict[str, int], run_dir: Path | None
                    ) -> list[tuple[dict, list[Trajectory]]]:
    """Rebuild what the trainer evaluates with (policy + checkpoint weights, engine, rollout scheduler,
    agent prompt hook, env pool) and run the shared `Evaluator` once."""
    from seedbench.engines.factory import close_engine, make_engine
    from seedbench.models.policy import load_policy
    from seedbench.registry import make_env, resolve_env
    from seedbench.training.checkpoint_files import load_torch_file
    from seedbench.training.trainer import _seed_everything, build_agent, choose_rollout, make_env_batch

    alias = resolve_env(config.env).alias
    _seed_everything(config.seed)
    policy = load_policy(config.model, need_reference=False, seed=config.seed)
    if state is not None:
        policy.model.load_state_dict(load_torch_file(state, map_location=policy.device))
    engine = make_engine(config.engine, policy, config)
    env = make_env(alias, **config.env_kwargs)
    _probe(config, env)
    transform = None
    if run_dir is not None:
        transform = _agent_prompt_hook(config, policy, engine, env, run_dir, build_agent)
    evaluator = Evaluator(config, env, engine, policy.tokenizer, choose_rollout(config.rollout.scheduler, engine),
                          lambda n: make_env_batch(config, alias, env, n), transform)
    try:
        return evaluator.run(counters)
    finally:
        evaluator.close()
        close_engine(engine)


def _probe(config: RunConfig, env: Any) -> None:
    """The start-up seeding probe the trainer runs (`seedbench.envs.checks.probe_reset_seeding`), so an
    evaluation refuses the env a run would refuse."""
    if config.probe_env_seeding:
        from seedbench.envs.checks import probe_reset_seeding
        from seedbench.registry import resolve_env

        probe_reset_seeding(env, resolve_env(config.env).alias)


def _agent_prompt_hook(config, policy, engine, env, run_dir, build_agent):
    """The run's agent's `transform_eval_prompt` (e.g. act-time skills), built as the trainer builds it."""
    from seedbench.agents.base import AgentContext
    from seedbench.training.rundir import RunDir

    agent_cls, agent_cfg = build_agent(config)
    if getattr(agent_cfg, "expect_analyzer_sft", False):  # a warning about training (SEED's stage 1), not eval
        agent_cfg = dataclasses.replace(agent_cfg, expect_analyzer_sft=False)
    context = AgentContext(policy, engine, env, RunDir(run_dir), config, None)
    return agent_cls(agent_cfg, context).transform_eval_prompt


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
