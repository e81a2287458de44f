"""Continuous, done-aware rollout: same trajectories as the lock-step rollout, finished episodes never
prompted again, requests submitted as soon as their env returns, dropped envs handled."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from seedbench.rollout import continuous as async_rollout, lockstep as rollout
from seedbench.engines.base import Generation, SamplingParams
from seedbench.engines.hf import HFEngine
from seedbench.rollout.types import TaskRef
from seedbench.envs.batch import LocalEnvs
from seedbench.models.tiny import tiny_model, tiny_tokenizer


class CountdownEnv:
    """Episode length is ``seed % 4 + 1`` steps; ``left`` scores 1. Optional per-step latency; an env
    can be told to die (``step`` → None through `DyingEnvs`)."""

    instruction = "Answer with left or right."

    def __init__(self, latency_s: float = 0.0):
        self.latency_s = latency_s
        self.length = 1
        self.t = 0

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        for word in reversed((text or "").split()):
            if word in ("left", "right"):
                return word, True
        return "", False

    def reset(self, seed=None, options=None):
        self.length, self.t = seed % 4 + 1, 0
        return "step 0", {"task": "choose left or right", "task_id": f"count-{seed}"}

    def step(self, text):
        time.sleep(self.latency_s)
        self.t += 1
        action, valid = self.parse_action(text)
        won = self.t >= self.length
        return f"step {self.t}", float(action == "left"), won, False, {"won": won, "action_valid": valid}

    def close(self):
        pass


class DyingEnvs(LocalEnvs):
    """Env `dead` dies at its second step."""

    def __init__(self, make, num, dead):
        super().__init__(make, num)
        self.dead, self.calls = dead, 0

    def step_many(self, actions):
        out = []
        for index, text in actions:
            if index == self.dead and self.envs[index].t >= 1:
                out.append(None)
            else:
                out.append(self.envs[index].step(text))
        return out


class ScriptedEngine:
    """Deterministic batch engine: the response depends only on the prompt; records every call."""

    name = "scripted"

    def __init__(self):
        self.calls: list[list[list[int]]] = []
        self.lock = threading.Lock()

    @staticmethod
    def respond(prompt: list[int]) -> Generation:
        word = "left" if sum(prompt) % 3 else "right"
        return Generation(token_ids=[len(prompt) % 11, 2], logprobs=[-0.5, -0.1], text=f"<action>{word}</action>",
                          finish_reason="stop")

    def generate(self, prompts, params):
        with self.lock:
            self.calls.append([list(p) for p in prompts])
        return [self.respond(p) for p in prompts]

    def sync_weights(self):
        pass


class SubmitEngine(ScriptedEngine):
    """Request-level engine: a request finishes after ``len(prompt) % 3 + 1`` polls (varying response
    lengths), like a continuously batching engine."""

    def __init__(self):
        super().__init__()
        self.pending: dict[str, list] = {}
        self.submitted: list[tuple[str, int]] = []  # (request id, poll count when submitted)
        self.polls = 0

    def submit(self, request_id, prompt_ids, params):
        assert request_id not in self.pending
        self.pending[request_id] = [list(prompt_ids), len(prompt_ids) % 3 + 1]
        self.submitted.append((request_id, self.polls))

    def has_unfinished(self):
        return bool(self.pending)

    def poll(self):
        self.polls += 1
        finished = []
        for request_id, entry in list(self.pending.items()):
            entry[1] -= 1
            if entry[1] == 0:
                finished.append((request_id, self.respond(entry[0])))
                del self.pending[request_id]
        return finished

    def abort(self, request_ids):
        for request_id in request_ids:
            self.pending.pop(request_id, None)


TASKS = [TaskRef("train", s) for s in (0, 1, 2, 3)]


def play(module, engine, *, group_size=2, max_steps=6, latency_s=0.0, envs=None, **kwargs):
    tok = tiny_tokenizer()
    envs = envs or LocalEnvs(lambda: CountdownEnv(latency_s), len(TASKS) * group_size)
    trajectories, stats = module.run_episodes(
        envs, CountdownEnv(), engine, tok, TASKS, group_size=group_size, params=SamplingParams(max_new_tokens=4),
        history_length=2, max_steps=max_steps, **kwargs)
    return trajectories, stats


def summary(trajectories):
    return [(t.episode_id, t.group_id, t.won, t.done, t.truncated, t.dropped, t.env_return,
             [(s.step, s.prompt_ids, s.response_ids, s.action, s.env_reward) for s in t.steps]) for t in trajectories]


@pytest.mark.parametrize("env_threads", [0, 1, 4])
def test_grouped_matches_lockstep(env_threads):
    expected, _ = play(rollout, ScriptedEngine())
    got, stats = play(async_rollout, ScriptedEngine(), env_threads=env_threads)
    assert summary(got) == summary(expected)
    assert stats.env_steps == sum(len(t.steps) for t in got)


@pytest.mark.parametrize("env_threads", [0, 4])
def test_continuous_matches_lockstep(env_threads):
    expected, _ = play(rollout, ScriptedEngine())
    got, stats = play(async_rollout, SubmitEngine(), env_threads=env_threads)
    assert summary(got) == summary(expected)
    assert stats.generated_tokens == 2 * stats.env_steps


def test_finished_episodes_are_never_prompted_again():
    engine = ScriptedEngine()
    trajectories, _ = play(async_rollout, engine, env_threads=0)
    prompts = sum(len(call) for call in engine.calls)
    assert prompts == sum(len(t.steps) for t in trajectories)
    # Episodes end after 1..4 steps, so later calls are smaller: finished ones left the batch.
    assert [len(call) for call in engine.calls] == [8, 6, 4, 2]
    assert all(len(t.steps) == t.task.seed % 4 + 1 and t.won and not t.truncated for t in trajectories)


def test_continuous_submits_next_request_before_slow_ones_finish():
    engine = SubmitEngine()
    trajectories, _ = play(async_rollout, engine, env_threads=0)
    first_of_later_steps = min(polls for rid, polls in engine.submitted if not rid.endswith("/0"))
    last_first_step_done = max(polls for rid, polls in engine.submitted if rid.endswith("/0"))
    assert last_first_step_done == 0  # all first requests go in together
    # Some episode's step-1 request went in while other step-0 requests were still generating.
    assert first_of_later_steps < 3
    assert sum(len(t.steps) for t in trajectories) == len(engine.submitted)


def test_truncation_at_max_steps_matches_lockstep():
    expected, _ = play(rollout, ScriptedEngine(), max_steps=2)
    got, _ = play(async_rollout, SubmitEngine(), max_steps=2, env_threads=2)
    assert summary(got) == summary(expected)
    assert any(t.truncated and not t.won for t in got)


@pytest.mark.parametrize("engine_cls", [ScriptedEngine, SubmitEngine])
def test_dropped_env_is_marked_and_others_continue(engine_cls):
    envs = DyingEnvs(lambda: CountdownEnv(), len(TASKS) * 2, dead=7)  # seed 3: would run 4 steps
    trajectories, _ = play(async_rollout, engine_cls(), envs=envs, env_threads=0)
    assert trajectories[7].dropped and trajectories[7].done and len(trajectories[7].steps) == 1
    assert all(not t.dropped and t.won for i, t in enumerate(trajectories) if i != 7)


def test_env_latency_overlaps_with_threads():
    """Env steps of one batch run concurrently in the pool instead of one after another."""
    latency = 0.05
    _, serial = play(async_rollout, ScriptedEngine(), latency_s=latency, env_threads=0)
    _, pooled = play(async_rollout, ScriptedEngine(), latency_s=latency, env_threads=8)
    assert serial.env_steps == pooled.env_steps == 20
    assert serial.env_time_s >= 20 * latency * 0.9
    assert pooled.env_time_s < serial.env_time_s / 2


def test_hf_engine_greedy_matches_lockstep():
    """The real HF engine, greedy, one sequence per batch (so padding cannot change the numerics)."""
    from seedbench.registry import make_env

    tok = tiny_tokenizer()
    engine = HFEngine(tiny_model(tok, seed=0), tok, torch.device("cpu"), batch_size=1)
    params = SamplingParams(max_new_tokens=6, greedy=True)
    results = []
    for module, kwargs in ((rollout, {}), (async_rollout, {"env_threads": 2})):
        envs = LocalEnvs(lambda: make_env("sokoban", max_steps=3), 2)
        trajectories, _ = module.run_episodes(envs, envs.envs[0], engine, tok, [TaskRef("train", 5)], group_size=2,
                                              params=params, history_length=2, max_steps=3, **kwargs)
        results.append(summary(trajectories))
        for traj in trajectories:
            for step in traj.steps:
                assert len(step.sampled_logprobs) == len(step.response_ids)
    assert results[0] == results[1]


@pytest.mark.parametrize("engine_cls", [ScriptedEngine, SubmitEngine])
def test_transform_prompt_is_applied_and_recorded_like_lockstep(engine_cls):
    def with_skill(traj, content):
        return content + f"\nskill for {traj.episode_id}"

    expected, _ = play(rollout, ScriptedEngine(), transform_prompt=with_skill)
    got, _ = play(async_rollout, engine_cls(), transform_prompt=with_skill, env_threads=2)
    assert summary(got) == summary(expected)
    assert all(s.user_content.endswith(f"skill for {t.episode_id}") for t in got for s in t.steps)


def test_failed_rollout_aborts_requests_left_in_the_engine():
    class AbortingEngine(SubmitEngine):
        aborted: list[str] = []

        def submit(self, request_id, prompt_ids, params):
            super().submit(request_id, prompt_ids, params)
            # One request finishes at once; the others would run until the failure is noticed.
            self.pending[request_id][1] = 1 if request_id.startswith("0-0/") else 10**9

        def abort(self, request_ids):
            self.aborted.extend(request_ids)
            for request_id in request_ids:
                self.pending.pop(request_id, None)

    class BrokenEnvs(LocalEnvs):
        def step_many(self, actions):
            raise RuntimeError("env crashed")

    engine = AbortingEngine()
    envs = BrokenEnvs(lambda: CountdownEnv(), len(TASKS) * 2)
    with pytest.raises(RuntimeError, match="env crashed"):
        play(async_rollout, engine, envs=envs, env_threads=2)
    assert engine.aborted and not engine.pending
