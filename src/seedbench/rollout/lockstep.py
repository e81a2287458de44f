"""Rollout: B tasks × a group of N copies, done-aware, one training sample per env step.

All N members of a group reset with the same (split, seed), so they share the initial state. At each
step only unfinished episodes are prompted and generated for; the others are left alone (not masked
after the fact). Each env step becomes a `StepSample` holding the exact prompt and response token ids,
the engine's sampled log-probs, the raw text, the parsed action and its validity, and the env reward.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from seedbench.engines.base import GenerationEngine, SamplingParams
from seedbench.rollout.prompting import HistoryItem, build_user_content, render_prompt
from seedbench.rollout.types import RolloutStats, StepSample, TaskRef, Trajectory


def run_episodes(
    envs: Any,
    env_spec: Any,
    engine: GenerationEngine,
    tokenizer: Any,
    tasks: list[TaskRef],
    *,
    group_size: int,
    params: SamplingParams,
    history_length: int,
    max_steps: int,
    episode_prefix: str = "",
    progress: Any = None,
    transform_prompt: Callable[[Trajectory, str], str] | None = None,
) -> tuple[list[Trajectory], RolloutStats]:
    """Play `group_size` episodes of each task, lock-step over env steps but done-aware.

    `envs` must hold at least ``len(tasks) * group_size`` instances; `env_spec` is any instance of the
    env class (for its `instruction`). `transform_prompt(trajectory, user_content)` lets an agent change
    the acting prompt (e.g. put a skill in it); the transformed text is what gets recorded and trained on."""
    stats = RolloutStats()
    trajectories: list[Trajectory] = []
    observations: list[str] = []
    infos: list[dict] = []
    t0 = time.perf_counter()
    slots = [(task_index, task, member) for task_index, task in enumerate(tasks) for member in range(group_size)]
    resets = envs.reset_many([(index, task.seed, {"split": task.split}) for index, (_, task, _) in enumerate(slots)])
    for (task_index, task, member), (obs, info) in zip(slots, resets):
        trajectories.append(Trajectory(
            episode_id=f"{episode_prefix}{task_index}-{member}", group_id=task_index, task=task,
            task_text=str(info.get("task", "")), task_id=str(info.get("task_id", task.key())),
            task_type=str(info.get("task_type", "")),
        ))
        observations.append(obs)
        infos.append(info)
    stats.env_time_s += time.perf_counter() - t0
    histories: list[list[HistoryItem]] = [[] for _ in trajectories]
    instruction = getattr(env_spec, "instruction", "")

    for step in range(max_steps):
        active = [i for i, traj in enumerate(trajectories) if not traj.done]
        if not active:
            break
        contents = [
            build_user_content(
                task=trajectories[i].task_text, observation=observations[i], step=step, history=histories[i],
                history_length=history_length, admissible_actions=infos[i].get("admissible_actions"),
                instruction=instruction,
            )
            for i in active
        ]
        if transform_prompt is not None:
            contents = [transform_prompt(trajectories[i], content) for i, content in zip(active, contents)]
        prompt_ids = [render_prompt(tokenizer, content) for content in contents]
        t0 = time.perf_counter()
        generations = engine.generate(prompt_ids, params)
        stats.generation_time_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        results = envs.step_many([(i, gen.text) for i, gen in zip(active, generations)])
        stats.env_time_s += time.perf_counter() - t0
        for i, content, ids, gen, result in zip(active, contents, prompt_ids, generations, results):
            traj = trajectories[i]
            stats.generated_tokens += len(gen.token_ids)
            if result is None:
                traj.dropped, traj.done = True, True
                continue
            stats.env_steps += 1
            obs, reward, terminated, truncated, info = result
            valid = bool(info.get("action_valid", True))
            action = env_spec.parse_action(gen.text)[0]
            traj.steps.append(StepSample(
                step=step, user_content=content, prompt_ids=ids, response_ids=gen.token_ids,
                sampled_logprobs=gen.logprobs, response_text=gen.text, observation=observations[i],
                action=action, action_valid=valid, env_reward=float(reward),
            ))
            histories[i].append(HistoryItem(observations[i], action if valid else gen.text.strip()[-200:]))
            traj.env_return += float(reward)
            traj.won = bool(info.get("won", False))
            observations[i], infos[i] = obs, info
            if terminated or truncated or step == max_steps - 1:
                traj.done = True
                traj.truncated = bool(truncated) or (not terminated)
                traj.final_observation = obs
        if progress is not None:
            progress.update(1)
    return trajectories, stats
