"""TwoChoice's parser: a tag or exactly one named side is an answer; echoing the prompt, which names both
sides, is invalid and earns nothing (a word-level model cannot win by copying "left or right")."""

import pytest

from seedbench.envs.choice import TwoChoiceEnv
from seedbench.envs.image_choice import ImageChoiceEnv
from seedbench.rollout.prompting import build_user_content


def prompt_lines(env):
    observation, info = env.reset(seed=0, options={"split": "train"})
    content = build_user_content(task=info["task"], observation=observation, step=0, history=[], history_length=0,
                                 admissible_actions=info["admissible_actions"], instruction=env.instruction)
    return [content, *content.splitlines()]


@pytest.mark.parametrize("env_cls", [TwoChoiceEnv, ImageChoiceEnv])
def test_echoing_the_prompt_is_invalid_and_unrewarded(env_cls):
    env = env_cls()
    for echo in prompt_lines(env):
        assert env.parse_action(echo) == ("", False), echo
        env.reset(seed=1, options={"split": "train"})
        _, reward, terminated, _, info = env.step(echo)
        assert (reward, terminated, info["action_valid"], info["won"]) == (0.0, True, False, False), echo


@pytest.mark.parametrize("text, expected", [
    ("<think>left or right? right.</think><action>right</action>", ("right", True)),  # the tag decides
    ("<action>Left</action>", ("left", True)),
    ("Answer with left or right. <action>right</action>", ("right", True)),  # an echo followed by a real answer
    ("<action>up</action> right", ("up", False)),  # a tag holding neither side: invalid, the loose word ignored
    ("present it within <action> </action> tags", ("", False)),  # the format line's empty tag
    ("right", ("right", True)),  # tag-less answers of word-level models
    ("right . right", ("right", True)),
    ("< action > left </ action >", ("left", True)),  # the tiny tokenizer's spaced-out tag
    ("<think>left or right</think> left", ("left", True)),  # reasoning is left out
    ("left right", ("", False)),
    ("forward", ("", False)),
])
def test_a_proper_answer_parses(text, expected):
    assert TwoChoiceEnv.parse_action(text) == expected


def test_the_rewarded_side_wins():
    env = TwoChoiceEnv(rewarded="left")
    env.reset(seed=0)
    assert env.step("<action>left</action>")[1:3] == (1.0, True)
    env.reset(seed=0)
    assert env.step("right")[1] == 0.0
