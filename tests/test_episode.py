"""The episode bookkeeping both rollout schedules share: prompt history, step records, end of episode."""

from __future__ import annotations

from seedbench.engines.base import Generation
from seedbench.envs.batch import LocalEnvs
from seedbench.rollout.episode import INVALID_ACTION_HISTORY_CHARS, EpisodeRules, start_episodes
from seedbench.rollout.types import TaskRef
from tests.fake_envs import CountdownEnv


class StrictCountdown(CountdownEnv):
    """CountdownEnv where only the text ``ok`` is a valid action."""

    @staticmethod
    def parse_action(text):
        return ("ok", True) if text.strip() == "ok" else ("", False)

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        info["action_valid"] = action.strip() == "ok"
        return obs, reward, terminated, truncated, info


def _episodes(tokenizer, tasks, group_size=1, max_steps=6, history_length=2):
    envs = LocalEnvs(StrictCountdown, len(tasks) * group_size)
    rules = EpisodeRules(StrictCountdown(), tokenizer, history_length, max_steps)
    return envs, start_episodes(envs, tasks, group_size, rules, episode_prefix="t-")


def _play(envs, episode, text):
    episode.prompt()
    generation = Generation(token_ids=[1, 2], logprobs=[-0.1, -0.2], text=text)
    return episode.record(generation, envs.step_many([(episode.index, text)])[0])


def test_start_opens_one_trajectory_per_slot_with_groups_sharing_a_task(tiny_tokenizer):
    _, episodes = _episodes(tiny_tokenizer, [TaskRef("train", 2), TaskRef("train", 5)], group_size=2)
    assert [e.index for e in episodes] == [0, 1, 2, 3]
    assert [e.trajectory.episode_id for e in episodes] == ["t-0-0", "t-0-1", "t-1-0", "t-1-1"]
    assert [e.trajectory.group_id for e in episodes] == [0, 0, 1, 1]
    assert [e.trajectory.task_id for e in episodes] == ["cd-2", "cd-2", "cd-5", "cd-5"]
    assert episodes[0].observation == episodes[1].observation != episodes[2].observation


def test_history_shows_the_action_or_the_tail_of_invalid_text(tiny_tokenizer):
    envs, (episode,) = _episodes(tiny_tokenizer, [TaskRef("train", 3)])  # 4 steps to the end
    rambling = "x" * 500 + " the end"
    assert _play(envs, episode, "ok") and _play(envs, episode, rambling)
    assert [h.action for h in episode.history] == ["ok", rambling[-INVALID_ACTION_HISTORY_CHARS:]]
    assert len(episode.history[1].action) == 200 and episode.history[1].action.endswith("x the end")
    episode.prompt()
    assert "[Action 1: ok]" in episode.content and "[Action 2: " + "x" * 192 + " the end]" in episode.content
    steps = episode.trajectory.steps
    assert [(s.step, s.action, s.action_valid) for s in steps] == [(0, "ok", True), (1, "", False)]
    assert steps[1].observation == "left 3" and episode.observation == "left 2" and episode.step == 2


def test_terminal_step_wins_and_the_step_cap_truncates(tiny_tokenizer):
    envs, (won, capped) = _episodes(tiny_tokenizer, [TaskRef("train", 1), TaskRef("train", 3)], max_steps=2)
    assert _play(envs, won, "ok") and not _play(envs, won, "ok")  # seed 1: two steps, terminal
    assert won.trajectory.done and won.trajectory.won and not won.trajectory.truncated
    assert won.trajectory.env_return == 1.0 and won.trajectory.final_observation == "left 0"
    assert _play(envs, capped, "ok") and not _play(envs, capped, "ok")  # seed 3 needs 4 steps; cap is 2
    assert capped.trajectory.done and capped.trajectory.truncated and not capped.trajectory.won
    assert len(capped.trajectory.steps) == 2 and capped.trajectory.env_return == 0.0


def test_a_dead_env_drops_the_episode(tiny_tokenizer):
    _, (episode,) = _episodes(tiny_tokenizer, [TaskRef("train", 3)])
    episode.prompt()
    assert not episode.record(Generation([1], [-1.0], "ok"), None)
    assert episode.trajectory.dropped and episode.trajectory.done and not episode.trajectory.steps
