"""Rollout: B tasks × a group of N copies, done-aware, one training sample per env step.

All N members of a group reset with the same (split, seed), so they share the initial state. At each
step only unfinished episodes are prompted and generated for; the others are left alone (not masked
after the fact). Each env step becomes a `StepSample` holding the exact prompt and response token ids,
the engine's sampled log-probs, the raw text, the parsed action and its validity, and the env reward
(the bookkeeping is `seedbench.rollout.episode`, shared with the continuous schedule).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from seedbench.engines.base import GenerationEngine, SamplingParams
from seedbench.envs.batch import EnvBatch
from seedbench.rollout.episode import EpisodeRules, start_episodes
from seedbench.rollout.types import RolloutStats, TaskRef, Trajectory


def run_episodes(
    envs: EnvBatch,
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
    max_prompt_tokens: int | None = None,
) -> tuple[list[Trajectory], RolloutStats]:
    """Play `group_size` episodes of each task, lock-step over env steps but done-aware.

    `envs` must hold at least ``len(tasks) * group_size`` slots; `env_spec` is any instance of the
    env class (for its `instruction` and `parse_action`). `transform_prompt(trajectory, user_content)` lets
    an agent change the acting prompt (e.g. put a skill in it); the transformed text is what gets recorded
    and trained on. `max_prompt_tokens` (``rollout.max_prompt_tokens``): a longer prompt shows fewer past
    steps (`seedbench.rollout.episode.Episode.prompt`)."""
    stats = RolloutStats()
    rules = EpisodeRules(env_spec, tokenizer, history_length, max_steps, transform_prompt, max_prompt_tokens)
    t0 = time.perf_counter()
    episodes = start_episodes(envs, tasks, group_size, rules, episode_prefix)
    stats.env_time_s += time.perf_counter() - t0

    for _ in range(max_steps):
        active = [episode for episode in episodes if not episode.done]
        if not active:
            break
        prompts = [episode.prompt() for episode in active]
        t0 = time.perf_counter()
        generations = engine.generate(prompts, params)
        stats.generation_time_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        results = envs.step_many([(episode.index, gen.text) for episode, gen in zip(active, generations)])
        stats.env_time_s += time.perf_counter() - t0
        for episode, generation, result in zip(active, generations, results):
            stats.generated_tokens += len(generation.token_ids)
            stats.env_steps += result is not None
            episode.record(generation, result)
        if progress is not None:
            progress.update(1)
    return [episode.trajectory for episode in episodes], stats
