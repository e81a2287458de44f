"""EnvPool (env instances in worker processes) and run_tasks, on small fast envs: no ALFWorld needed.

The ALFWorld-specific check (a worker killed mid-episode) is in test_alfworld.py.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from seedbench.envs.pool import EnvPool
from seedbench.envs.processes import TaskFailure, WorkerStartError, run_tasks
from seedbench.envs.text_env import TextEnv
from tests.fake_envs import CountdownEnv

COUNTDOWN = ("tests.fake_envs:CountdownEnv", {})


class TroubleEnv(TextEnv):
    """Any action is valid; ``sleep`` takes 30 s, ``boom`` raises, ``exit`` kills the process."""

    max_steps = 10
    splits = ("train",)
    eval_split = "train"

    @staticmethod
    def parse_action(text):
        return text, True

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return f"start {seed}", {"task": "t", "admissible_actions": None, "won": False, "task_id": str(seed),
                                 "task_type": "t", "split": "train"}

    def step(self, action):
        if action == "sleep":
            time.sleep(30)
        if action == "boom":
            raise ValueError("boom")
        if action == "exit":
            os._exit(3)
        return f"did {action} in {os.getpid()}", 0.0, False, False, {"action_valid": True}


TROUBLE = ("tests.test_env_pool:TroubleEnv", {})


def test_pool_steps_like_local_envs():
    local = [CountdownEnv() for _ in range(5)]
    with EnvPool(COUNTDOWN, num_envs=5, num_workers=2, timeout_s=30) as pool:
        assert len(pool) == 5 and pool.num_workers == 2
        got = pool.reset_many([(i, 10 + i, {"split": "train"}) for i in range(5)])
        want = [env.reset(seed=10 + i, options={"split": "train"}) for i, env in enumerate(local)]
        assert got == want
        active = list(range(5))
        while active:
            results = pool.step_many([(i, "go") for i in active])
            expected = [local[i].step("go") for i in active]
            assert results == expected
            active = [i for i, r in zip(active, results) if not (r[2] or r[3])]
        assert pool.stats.dropped_episodes == 0 and pool.stats.worker_restarts == 0
        with pytest.raises(RuntimeError, match="before reset"):
            pool.step_many([(0, "go")])
        with pytest.raises(IndexError):
            pool.reset(5, 0, {})


def test_workers_run_concurrently():
    with EnvPool(TROUBLE, num_envs=2, num_workers=2, timeout_s=30) as pool:
        pool.reset_many([(0, 0, None), (1, 1, None)])
        pids = {pool.step_many([(0, "a"), (1, "a")])[i][0].split()[-1] for i in range(2)}
        assert len(pids) == 2  # two envs, two processes


def test_killed_worker_drops_its_episodes_and_the_run_goes_on():
    with EnvPool(TROUBLE, num_envs=4, num_workers=2, timeout_s=30) as pool:
        pool.reset_many([(i, i, None) for i in range(4)])
        pool.step_many([(i, "a") for i in range(4)])
        victim = pool.worker_of[0]
        os.kill(pool.worker_pids()[victim], signal.SIGKILL)
        time.sleep(0.2)
        results = pool.step_many([(i, "b") for i in range(4)])
        lost = [i for i in range(4) if pool.worker_of[i] == victim]
        assert [results[i] is None for i in range(4)] == [i in lost for i in range(4)]
        assert pool.stats.dropped_episodes == len(lost) and pool.stats.worker_restarts == 1
        assert all(pool.step_many([(i, "c")])[0] is None for i in lost)  # still dropped until reset
        pool.reset_many([(i, i, None) for i in lost])
        assert all(r is not None for r in pool.step_many([(i, "d") for i in range(4)]))


def test_timeout_and_env_errors_drop_only_the_affected_episodes():
    with EnvPool(TROUBLE, num_envs=3, num_workers=3, timeout_s=2) as pool:
        pool.reset_many([(i, i, None) for i in range(3)])
        start = time.monotonic()
        results = pool.step_many([(0, "sleep"), (1, "boom"), (2, "fine")])
        assert time.monotonic() - start < 20
        assert results[0] is None and results[1] is None and results[2][0].startswith("did fine")
        assert pool.stats.timeouts == 1 and pool.stats.env_errors == 1 and pool.stats.dropped_episodes == 2
        assert pool.stats.worker_restarts == 1  # the raising env's worker lives on
        results = pool.step_many([(0, "again"), (2, "exit")])
        assert results == [None, None] and pool.stats.worker_restarts == 2
        pool.reset_many([(i, i, None) for i in range(3)])
        assert all(r is not None for r in pool.step_many([(i, "ok") for i in range(3)]))


def test_bad_env_spec_fails_loudly():
    with pytest.raises(WorkerStartError, match="no_such_module"):
        with EnvPool(("no_such_module:Env", {}), num_envs=1, num_workers=1) as pool:
            pool.reset(0, 0, None)


def _square(x):
    if x == 3:
        time.sleep(30)
    if x == 4:
        raise ValueError("four")
    return x * x


def test_run_tasks_yields_results_failures_and_timeouts():
    todo = list(range(6))

    def next_task():
        return (todo[0], (todo.pop(0),)) if todo else None

    results = dict(run_tasks("tests.test_env_pool:_square", next_task, num_workers=2, timeout_s=3))
    assert {k: v for k, v in results.items() if not isinstance(v, TaskFailure)} == {0: 0, 1: 1, 2: 4, 5: 25}
    assert results[3].kind == "timeout" and results[4].kind == "error" and "four" in results[4].detail


def test_calls_from_several_threads_on_different_workers_overlap():
    from concurrent.futures import ThreadPoolExecutor

    with EnvPool(TROUBLE, num_envs=4, num_workers=2, timeout_s=30) as pool:
        pool.reset_many([(i, i, None) for i in range(4)])
        with ThreadPoolExecutor(4) as threads:
            results = list(threads.map(lambda i: pool.step_many([(i, f"a{i}")])[0], range(4)))
        assert [r[0].split()[1] for r in results] == ["a0", "a1", "a2", "a3"]
        pids = {r[0].split()[-1] for r in results}
        assert len(pids) == 2 and pool.stats.dropped_episodes == 0


def test_pool_and_local_envs_are_one_interface_and_give_the_same_rollouts(tiny_tokenizer):
    """Both rollout schedules see only `EnvBatch`: the same tasks played through the worker pool and
    through in-process envs give identical trajectories."""
    from seedbench.engines.base import Generation, SamplingParams
    from seedbench.envs.batch import EnvBatch, LocalEnvs
    from seedbench.rollout import continuous, lockstep
    from seedbench.rollout.types import TaskRef

    class Engine:
        name = "fixed"

        def generate(self, prompts, params):
            return [Generation(token_ids=[len(p) % 7], logprobs=[-0.5], text=f"go {len(p) % 5}") for p in prompts]

    tasks = [TaskRef("train", s) for s in (0, 3, 6)]  # episode lengths 1, 4, 3
    runs = {}
    with EnvPool(COUNTDOWN, num_envs=6, num_workers=2, timeout_s=30) as pool, LocalEnvs(CountdownEnv, 6) as local:
        assert isinstance(pool, EnvBatch) and isinstance(local, EnvBatch)
        assert pool.concurrency == 2 and local.concurrency == 6
        for name, envs in (("pool", pool), ("local", local)):
            for module in (lockstep, continuous):
                trajectories, stats = module.run_episodes(
                    envs, CountdownEnv(), Engine(), tiny_tokenizer, tasks, group_size=2, params=SamplingParams(),
                    history_length=1, max_steps=6)
                runs[name, module.__name__] = [
                    (t.episode_id, t.won, t.truncated, [(s.observation, s.action, s.env_reward) for s in t.steps])
                    for t in trajectories]
                assert stats.env_steps == 2 * (1 + 4 + 3)
    first = runs["local", lockstep.__name__]
    assert [len(steps) for *_, steps in first] == [1, 1, 4, 4, 3, 3] and all(won for _, won, _, _ in first)
    assert all(run == first for run in runs.values())
