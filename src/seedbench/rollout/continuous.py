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
``max_steps`` and masks finished ones afterwards). Both schedules keep their episodes with the same
`seedbench.rollout.episode.Episode`, so trajectories, samples and their order are the same as
`seedbench.rollout.lockstep.run_episodes`'s and the trainer can use either; with greedy decoding and an
engine whose outputs do not depend on batch composition they are identical. Timing changes the *order* in which
requests reach the engine, so sampled rollouts are reproducible only with per-request seeds (vLLM's
engine seed makes a fixed request order reproducible, not a timing-dependent one).

`RolloutStats` timings are wall time on the critical path: ``generation_time_s`` is time spent inside
the engine, ``env_time_s`` time spent waiting for envs with nothing to generate.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from seedbench.engines.base import Generation, GenerationEngine, SamplingParams, StreamingEngine
from seedbench.envs.batch import EnvBatch, StepResult
from seedbench.rollout.episode import Episode, EpisodeRules, start_episodes
from seedbench.rollout.types import RolloutStats, TaskRef, Trajectory


def supports_submit(engine: Any) -> bool:
    """Whether `engine` takes single requests (`seedbench.engines.base.StreamingEngine`) for continuous batching."""
    return isinstance(engine, StreamingEngine)


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
    env_threads: int | None = None,
) -> tuple[list[Trajectory], RolloutStats]:
    """Play `group_size` episodes of each task, each episode at its own pace (see the module docstring).

    Same arguments (including `transform_prompt`, an agent's hook on the acting prompt) and results as
    `seedbench.rollout.lockstep.run_episodes`, plus `env_threads`: threads that
    step envs (None = as many as the env batch allows, ``envs.concurrency``, and no more than there are
    episodes; 0 = step in this thread)."""
    if env_threads is None:
        env_threads = min(envs.concurrency, len(tasks) * group_size)
    rules = EpisodeRules(env_spec, tokenizer, history_length, max_steps, transform_prompt, max_prompt_tokens)
    runner = _Runner(envs, rules, engine, params, progress, env_threads)
    try:
        return runner.run(tasks, group_size, episode_prefix)
    finally:
        runner.close()


class _Runner:
    def __init__(self, envs: EnvBatch, rules: EpisodeRules, engine: GenerationEngine | StreamingEngine,
                 params: SamplingParams, progress: Any, env_threads: int):
        self.envs, self.rules, self.engine, self.params, self.progress = envs, rules, engine, params, progress
        self.pool = ThreadPoolExecutor(max_workers=env_threads, thread_name_prefix="seedbench-env") if env_threads > 0 else None
        self.stats = RolloutStats()
        self.in_flight: dict[Future, tuple[Episode, Generation]] = {}
        self.deepest_step = 0

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    # -- episodes ---------------------------------------------------------------------------------
    def _start_step(self, episode: Episode, generation: Generation) -> None:
        """Hand the generated text to the episode's env (in the pool, or right here)."""
        self.stats.generated_tokens += len(generation.token_ids)
        if self.pool is None:
            t0 = time.perf_counter()
            result = self.envs.step_many([(episode.index, generation.text)])[0]
            self.stats.env_time_s += time.perf_counter() - t0
            self._finish_step(episode, generation, result)
        else:
            future = self.pool.submit(lambda: self.envs.step_many([(episode.index, generation.text)])[0])
            self.in_flight[future] = (episode, generation)

    def _finish_step(self, episode: Episode, generation: Generation, result: StepResult | None) -> bool:
        """Record the step; True when the episode goes on (its next prompt is due)."""
        steps_done = episode.step + 1
        goes_on = episode.record(generation, result)
        if result is not None:
            self.stats.env_steps += 1
            if self.progress is not None and steps_done > self.deepest_step:
                self.progress.update(steps_done - self.deepest_step)
                self.deepest_step = steps_done
        return goes_on

    def _collect(self, block: bool, linger_s: float = 0.0) -> list[Episode]:
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
            episode, generation = self.in_flight.pop(future)
            if self._finish_step(episode, generation, future.result()):
                ready.append(episode)
        ready.sort(key=lambda e: e.index)
        return ready

    # -- schedules --------------------------------------------------------------------------------
    def run(self, tasks: list[TaskRef], group_size: int, prefix: str) -> tuple[list[Trajectory], RolloutStats]:
        t0 = time.perf_counter()
        episodes = start_episodes(self.envs, tasks, group_size, self.rules, prefix)
        self.stats.env_time_s += time.perf_counter() - t0
        if self.rules.max_steps > 0 and episodes:
            if isinstance(self.engine, StreamingEngine):
                self._run_continuous(self.engine, episodes)
            else:
                self._run_grouped(episodes)
        return [e.trajectory for e in episodes], self.stats

    def _run_grouped(self, ready: list[Episode]) -> None:
        """Batch engines: generate for every ready episode in one call, step their envs, repeat.

        After the first env step returns, stragglers are awaited for up to half the last generation's
        time: one more `generate` call costs about a whole generation (decoding is sequential), so a
        short wait that fills the batch is cheaper than a second call for the latecomers."""
        last_generation_s = 0.0
        while ready or self.in_flight:
            if ready:
                prompts = [e.prompt() for e in ready]
                t0 = time.perf_counter()
                generations = self.engine.generate(prompts, self.params)
                last_generation_s = time.perf_counter() - t0
                self.stats.generation_time_s += last_generation_s
                for episode, generation in zip(ready, generations):
                    self._start_step(episode, generation)
                # Without a pool the steps ran already; the episodes still going are ready again.
                ready = [e for e in ready if self.pool is None and not e.done]
            ready += self._collect(block=not ready, linger_s=0.5 * last_generation_s)

    def _run_continuous(self, engine: StreamingEngine, episodes: list[Episode]) -> None:
        """Request-level engines: each episode's next request is submitted as soon as its env returns."""
        waiting: dict[str, Episode] = {}

        def submit(episode: Episode) -> None:
            request_id = f"{episode.trajectory.episode_id}/{episode.step}"
            waiting[request_id] = episode
            engine.submit(request_id, episode.prompt(), self.params)

        try:
            for episode in episodes:
                submit(episode)
            self._continuous_loop(engine, waiting, submit)
        except BaseException:
            if waiting:
                engine.abort(list(waiting))  # leave no requests running in the engine
            raise

    def _continuous_loop(self, engine: StreamingEngine, waiting: dict[str, Episode],
                         submit: Callable[[Episode], None]) -> None:
        while waiting or self.in_flight:
            if engine.has_unfinished():
                t0 = time.perf_counter()
                finished = engine.poll()
                self.stats.generation_time_s += time.perf_counter() - t0
                for request_id, generation in finished:
                    episode = waiting.pop(request_id)
                    self._start_step(episode, generation)
                    if self.pool is None and not episode.done:
                        submit(episode)
            for episode in self._collect(block=not engine.has_unfinished()):
                submit(episode)
