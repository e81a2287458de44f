from seedbench.engines.base import Generation, SamplingParams
from seedbench.registry import make_env
from seedbench.rollout.types import TaskRef
from seedbench.envs.batch import LocalEnvs
from seedbench.rollout.lockstep import run_episodes
from tests.fake_envs import CountdownEnv


class RecordingEngine:
    """Returns a fixed response and records how many prompts each generate call received."""

    name = "fake"

    def __init__(self, text="<think>x</think><action>up</action>"):
        self.calls = []
        self.text = text

    def generate(self, prompts, params):
        self.calls.append(len(prompts))
        return [Generation(token_ids=[5, 6, 7], logprobs=[-1.0, -1.0, -1.0], text=self.text) for _ in prompts]

    def sync_weights(self):
        pass


def test_done_aware_generation_only_prompts_unfinished_episodes(tiny_tokenizer):
    tasks = [TaskRef("train", s) for s in (0, 1, 3)]  # lengths 1, 2, 4
    engine = RecordingEngine()
    envs = LocalEnvs(CountdownEnv, 6)
    trajs, stats = run_episodes(envs, CountdownEnv(), engine, tiny_tokenizer, tasks, group_size=2,
                                params=SamplingParams(), history_length=1, max_steps=6)
    assert engine.calls == [6, 4, 2, 2]  # 6 episodes; lengths 1,1,2,2,4,4
    assert [len(t.steps) for t in trajs] == [1, 1, 2, 2, 4, 4]
    assert stats.env_steps == 14 and stats.generated_tokens == 14 * 3
    assert all(t.won and t.done and not t.truncated for t in trajs)


def test_group_members_share_the_initial_state_and_groups_differ(tiny_tokenizer):
    env_spec = make_env("sokoban")
    tasks = [TaskRef("train", 11), TaskRef("train", 12)]
    trajs, _ = run_episodes(LocalEnvs(lambda: make_env("sokoban"), 8), env_spec, RecordingEngine(), tiny_tokenizer,
                            tasks, group_size=4, params=SamplingParams(), history_length=2, max_steps=2)
    first = [t.steps[0].observation for t in trajs]
    assert len(set(first[:4])) == 1 and len(set(first[4:])) == 1 and first[0] != first[4]
    assert [t.group_id for t in trajs] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len({t.task_id for t in trajs[:4]}) == 1


def test_invalid_output_is_counted_and_never_crashes(tiny_tokenizer):
    env_spec = make_env("sokoban")
    engine = RecordingEngine(text="I refuse to use tags \u2603 <action>")
    trajs, _ = run_episodes(LocalEnvs(lambda: make_env("sokoban"), 2), env_spec, engine, tiny_tokenizer,
                            [TaskRef("train", 3)], group_size=2, params=SamplingParams(), history_length=2, max_steps=15)
    assert all(len(t.steps) == 15 and t.truncated and not t.won for t in trajs)
    assert all(t.num_invalid == 15 for t in trajs)


def test_step_cap_truncates(tiny_tokenizer):
    trajs, _ = run_episodes(LocalEnvs(CountdownEnv, 1), CountdownEnv(), RecordingEngine(), tiny_tokenizer,
                            [TaskRef("train", 3)], group_size=1, params=SamplingParams(), history_length=1, max_steps=2)
    assert len(trajs[0].steps) == 2 and trajs[0].truncated and not trajs[0].won
