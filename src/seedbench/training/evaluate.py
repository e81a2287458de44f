"""`seedbench eval`: evaluate a trained checkpoint or a built-in non-learning agent on an env.

Agents: a run directory (its latest checkpoint), a checkpoint directory inside one, an HF checkpoint
directory (e.g. ``runs/…/final_model`` or an analyzer-SFT output), ``random`` (a uniformly random
admissible action) or ``scripted`` (the env's expert, `env.expert_plan()`). LLM agents are evaluated
with the same prompt builder, engine and task list as training-time evaluation.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from seedbench.config import ConfigError, ModelConfig, from_dict
from seedbench.registry import make_env
from seedbench.rollout.types import TaskRef, Trajectory


def _text_agent_episode(env: Any, task: TaskRef, choose, max_steps: int) -> Trajectory:
    obs, info = env.reset(seed=task.seed, options={"split": task.split})
    traj = Trajectory(episode_id=task.key(), group_id=0, task=task, task_text=str(info.get("task", "")),
                      task_id=str(info.get("task_id", task.key())), task_type=str(info.get("task_type", "")))
    for step in range(max_steps):
        command = choose(env, info, step)
        obs, reward, terminated, truncated, info = env.step(f"<think>scripted</think><action>{command}</action>")
        traj.env_return += float(reward)
        traj.won = bool(info.get("won", False))
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
        if not hasattr(env, "expert_plan"):
            raise ConfigError(f"env {type(env).__name__} has no scripted expert (expert_plan)")
        if step == 0 or id(env) not in plans or not plans[id(env)]:
            plans[id(env)] = list(env.expert_plan() or ["noop"])
        return plans[id(env)].pop(0)

    return choose


def resolve_checkpoint(path: Path) -> tuple[str, Path | None, dict]:
    """(model name to load, state-dict file or None, run config) for a run dir, checkpoint or HF dir."""
    if (path / "config.json").exists():
        return str(path), None, {}
    run_dir = path
    if (path / "model.pt").exists():
        run_dir = path.parent.parent
        state = path / "model.pt"
    else:
        from seedbench.training.rundir import RunDir

        checkpoint = RunDir(path).latest_checkpoint()
        if checkpoint is None:
            raise FileNotFoundError(f"{path}: no HF checkpoint (config.json), run directory or checkpoint found")
        state = checkpoint / "model.pt"
    config = RunDir(run_dir).read_config() if (run_dir / "config.yaml").exists() else {}
    return (config.get("model") or {}).get("name", "smollm2-135m"), state, config


def evaluate_agent(agent: str, env_name: str, *, episodes: int = 16, split: str | None = None, seed: int = 0,
                   temperature: float = 0.4, max_new_tokens: int = 96, engine: str = "auto") -> dict[str, Any]:
    from seedbench.training.trainer import success_table

    env = make_env(env_name)
    split = split or env.eval_split
    if split not in env.splits:
        raise ConfigError(f"unknown split {split!r} for {env_name}; choose one of {list(env.splits)}")
    tasks = [TaskRef(split, s) for s in range(episodes)]
    if agent in ("random", "scripted"):
        choose = _random_choice(random.Random(seed)) if agent == "random" else _scripted_choice()
        trajectories = [_text_agent_episode(env, task, choose, env.max_steps) for task in tasks]
    else:
        trajectories = _evaluate_model(Path(agent), env_name, env, tasks, seed, temperature, max_new_tokens, engine)
    return {"split": split, "num_tasks": len(tasks), **success_table(trajectories)}


def _evaluate_model(path: Path, env_name: str, env: Any, tasks, seed: int, temperature: float, max_new_tokens: int,
                    engine_name: str = "auto"):
    from types import SimpleNamespace

    import torch

    from seedbench.engines.factory import close_engine, make_engine
    from seedbench.engines.base import SamplingParams
    from seedbench.models.policy import load_policy
    from seedbench.envs.batch import LocalEnvs
    from seedbench.rollout.lockstep import run_episodes

    if not path.exists():
        raise FileNotFoundError(f"agent {str(path)!r} is neither 'random', 'scripted' nor an existing checkpoint directory")
    model_name, state, run_config = resolve_checkpoint(path)
    model_config = from_dict(run_config).model if run_config else ModelConfig(name=model_name)
    torch.manual_seed(seed)
    policy = load_policy(model_config, need_reference=False, seed=int(run_config.get("seed", seed)) if run_config else seed)
    if state is not None:
        policy.model.load_state_dict(torch.load(state, map_location=policy.device))
    engine = make_engine(engine_name, policy, SimpleNamespace(seed=seed))
    envs = LocalEnvs(lambda: make_env(env_name), len(tasks))
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, greedy=temperature == 0)
    try:
        trajectories, _ = run_episodes(envs, env, engine, policy.tokenizer, tasks, group_size=1, params=params,
                                       history_length=env.history_length, max_steps=env.max_steps)
    finally:
        envs.close()
        close_engine(engine)
    return trajectories
