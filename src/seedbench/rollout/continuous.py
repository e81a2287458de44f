"""Done-aware, continuously batched rollout: each episode advances as soon as its own env step returns.

`seedbench.rollout.lockstep.run_episodes` advances all episodes together: every active env waits for the
slowest generation of the step, and generation waits for the slowest env. Here each episode is its
own little loop (prompt → generate → env step → next prompt), and the loops share the engine:

* With an engine that accepts requests one at a time (`VLLMEngine`: ``submit`` / ``poll`` over vLLM's
  ``add_request`` / ``step``), an episode's next request joins the running batch as soon as its env step
  returns; short responses and finished episodes leave the batch at once, so the batch never waits
  for its longest member (continuous batching).
* With an engine that only generates whole batches (`HFEngine`), it degrades to generating, in one
  call, for whichever episodes are ready, and stepping envs in a thread pool so env time (ALFWorld's
  TextWorld engine) overlaps the next generation.

Finished episodes leave the batch and are never prompted again (verl-agent instead steps every env for
``max_steps`` and masks finished ones afterwards). Trajectories, samples and their order are the same
as `rollout.run_episodes`'s, so the trainer can use either; with greedy decoding and an engine whose
outputs do not depend on batch composition they are identical. Timing changes the *order* in which
requests reach the engine, so sampled rollouts are reproducible only with per-request seeds (vLLM's
engine seed makes a fixed request order reproducible, not a timing-dependent one).

`RolloutStats` timings are wall time on the critical path: ``generation_time_s`` is time spent inside
the engine, ``env_time_s`` time spent waiting for envs with nothing to generate.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

from seedbench.engines.base import Generation, GenerationEngine, SamplingParams
from seedbench.rollout.prompting import HistoryItem, build_user_content, render_prompt
from seedbench.rollout.types import RolloutStats, StepSample, TaskRef, Trajectory
from seedbench.envs.batch import EnvBatch


def supports_submit(engine: Any) -> bool:
    """Whether `engine` takes single requests (``submit``/``poll``/``has_unfinished``) for continuous batching."""
    return all(callable(getattr(engine, name, None)) for name in ("submit", "poll", "has_unfinished"))


@dataclass
class _Episode:
    index: int
    traj: Trajectory
    observation: str
    info: dict
    history: list[HistoryItem] = field(default_factory=list)
    step: int = 0
    content: str = ""
    prompt_ids: list[int] = field(default_factory=list)
    generation: Generation | None = None


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
    env_threads: int | None = None,
) -> tuple[list[Trajectory], RolloutStats]:
    """Play `group_size` episodes of each task, each episode at its own pace (see the module docstring).

    Same arguments (including `transform_prompt`, an agent's hook on the acting prompt) and results as
    `seedbench.rollout.lockstep.run_episodes`, plus `env_threads`: threads that
    step envs (None = as many as the env batch allows, ``envs.concurrency``, and no more than there are
    episodes; 0 = step in this thread)."""
    if env_threads is None:
        env_threads = min(envs.concurrency, len(tasks) * group_size)
    runner = _Runner(envs, env_spec, engine, tokenizer, params, history_length, max_steps, progress, env_threads,
                     transform_prompt)
    try:
        return runner.run(tasks, group_size, episode_prefix)
    finally:
        runner.close()


class _Runner:
    def __init__(self, envs, env_spec, engine, tokenizer, params, history_length, max_steps, progress, env_threads,
                 transform_prompt):
        self.transform_prompt = transform_prompt
        self.envs, self.env_spec, self.engine, self.tokenizer = envs, env_spec, engine, tokenizer
        self.params, self.history_length, self.max_steps, self.progress = params, history_length, max_steps, progress
        self.instruction = getattr(env_spec, "instruction", "")
        self.pool = ThreadPoolExecutor(max_workers=env_threads, thread_name_prefix="seedbench-env") if env_threads > 0 else None
        self.stats = RolloutStats()
        self.in_flight: dict[Future, _Episode] = {}
        self.deepest_step = 0

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    # -- episodes ---------------------------------------------------------------------------------
    def _reset_all(self, tasks: list[TaskRef], group_size: int, prefix: str) -> list[_Episode]:
        slots = [(task_index, task, member) for task_index, task in enumerate(tasks) for member in range(group_size)]
        t0 = time.perf_counter()
        results = self.envs.reset_many([(i, task.seed, {"split": task.split}) for i, (_, task, _) in enumerate(slots)])
        self.stats.env_time_s += time.perf_counter() - t0
        episodes = []
        for index, ((task_index, task, member), (obs, info)) in enumerate(zip(slots, results)):
            traj = Trajectory(
                episode_id=f"{prefix}{task_index}-{member}", group_id=task_index, task=task,
                task_text=str(info.get("task", "")), task_id=str(info.get("task_id", task.key())),
                task_type=str(info.get("task_type", "")),
            )
            episodes.append(_Episode(index=index, traj=traj, observation=obs, info=info))
        return episodes

    def _prompt(self, episode: _Episode) -> list[int]:
        episode.content = build_user_content(
            task=episode.traj.task_text, observation=episode.observation, step=episode.step,
            history=episode.history, history_length=self.history_length,
            admissible_actions=episode.info.get("admissible_actions"), instruction=self.instruction,
        )
        if self.transform_prompt is not None:
            episode.content = self.transform_prompt(episode.traj, episode.content)
        episode.prompt_ids = render_prompt(self.tokenizer, episode.content)
        return episode.prompt_ids

    def _start_step(self, episode: _Episode, generation: Generation) -> None:
        """Hand the generated text to the episode's env (in the pool, or right here)."""
        episode.generation = generation
        self.stats.generated_tokens += len(generation.token_ids)
        if self.pool is None:
            t0 = time.perf_counter()
            result = self.envs.step_many([(episode.index, generation.text)])[0]
            self.stats.env_time_s += time.perf_counter() - t0
            self._finish_step(episode, result)
        else:
            future = self.pool.submit(lambda: self.envs.step_many([(episode.index, generation.text)])[0])
            self.in_flight[future] = episode

    def _finish_step(self, episode: _Episode, result: tuple | None) -> bool:
        """Record the step; True when the episode goes on (its next prompt is due)."""
        traj, gen = episode.traj, episode.generation
        assert gen is not None
        if result is None:
            traj.dropped, traj.done = True, True
            return False
        self.stats.env_steps += 1
        obs, reward, terminated, truncated, info = result
        valid = bool(info.get("action_valid", True))
        action = self.env_spec.parse_action(gen.text)[0]
        traj.steps.append(StepSample(
            step=episode.step, user_content=episode.content, prompt_ids=episode.prompt_ids,
            response_ids=gen.token_ids, sampled_logprobs=gen.logprobs, response_text=gen.text,
            observation=episode.observation, action=action, action_valid=valid, env_reward=float(reward),
        ))
        episode.history.append(HistoryItem(episode.observation, action if valid else gen.text.strip()[-200:]))
        traj.env_return += float(reward)
        traj.won = bool(info.get("won", False))
        episode.observation, episode.info = obs, info
        if self.progress is not None and episode.step + 1 > self.deepest_step:
            self.progress.update(episode.step + 1 - self.deepest_step)
            self.deepest_step = episode.step + 1
        if terminated or truncated or episode.step == self.max_steps - 1:
            traj.done = True
            traj.truncated = bool(truncated) or (not terminated)
            traj.final_observation = obs
            return False
        episode.step += 1
        return True

    def _collect(self, block: bool, linger_s: float = 0.0) -> list[_Episode]:
        """Finished env steps (waiting for at least one when `block`, then up to `linger_s` more for the
        rest of those in flight); returns the episodes that go on."""
        if not self.in_flight:
            return []
        t0 = time.perf_counter()
        done, pending = wait(list(self.in_flight), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        if block and pending and linger_s > 0:
            more, _ = wait(pending, timeout=linger_s)
            done |= more
        if block:
            self.stats.env_time_s += time.perf_counter() - t0
        ready = []
        for future in done:
            episode = self.in_flight.pop(future)
            if self._finish_step(episode, future.result()):
                ready.append(episode)
        ready.sort(key=lambda e: e.index)
        return ready

    # -- schedules --------------------------------------------------------------------------------
    def run(self, tasks: list[TaskRef], group_size: int, prefix: str) -> tuple[list[Trajectory], RolloutStats]:
        episodes = self._reset_all(tasks, group_size, prefix)
        if self.max_steps > 0 and episodes:
            if supports_submit(self.engine):
                self._run_continuous(episodes)
            else:
                self._run_grouped(episodes)
        return [e.traj for e in episodes], self.stats

    def _run_grouped(self, ready: list[_Episode]) -> None:
        """Batch engines: generate for every ready episode in one call, step their envs, repeat.

        After the first env step returns, stragglers are awaited for up to half the last generation's
        time: one more `generate` call costs about a whole generation (decoding is sequential), so a
        short wait that fills the batch is cheaper than a second call for the latecomers."""
        last_generation_s = 0.0
        while ready or self.in_flight:
            if ready:
                prompts = [self._prompt(e) for e in ready]
                t0 = time.perf_counter()
                generations = self.engine.generate(prompts, self.params)
                last_generation_s = time.perf_counter() - t0
                self.stats.generation_time_s += last_generation_s
                for episode, generation in zip(ready, generations):
                    self._start_step(episode, generation)
                # Without a pool the steps ran already; the episodes still going are ready again.
                ready = [e for e in ready if self.pool is None and not e.traj.done]
            ready += self._collect(block=not ready, linger_s=0.5 * last_generation_s)

    def _run_continuous(self, episodes: list[_Episode]) -> None:
        """Request-level engines: each episode's next request is submitted as soon as its env returns."""
        waiting: dict[str, _Episode] = {}

        def submit(episode: _Episode) -> None:
            request_id = f"{episode.traj.episode_id}/{episode.step}"
            waiting[request_id] = episode
            self.engine.submit(request_id, self._prompt(episode), self.params)

        try:
            for episode in episodes:
                submit(episode)
            self._continuous_loop(waiting, submit)
        except BaseException:
            if waiting and callable(getattr(self.engine, "abort", None)):
                self.engine.abort(list(waiting))  # leave no requests running in the engine
            raise

    def _continuous_loop(self, waiting: dict[str, _Episode], submit: Callable[[_Episode], None]) -> None:
        while waiting or self.in_flight:
            if self.engine.has_unfinished():
                t0 = time.perf_counter()
                finished = self.engine.poll()
                self.stats.generation_time_s += time.perf_counter() - t0
                for request_id, generation in finished:
                    episode = waiting.pop(request_id)
                    self._start_step(episode, generation)
                    if self.pool is None and not episode.traj.done:
                        submit(episode)
            for episode in self._collect(block=not self.engine.has_unfinished()):
                submit(episode)
