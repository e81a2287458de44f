import pytest

from seedbench.rollout.prompting import (FORMAT_INSTRUCTION, TASK_PREFIX, HistoryItem, build_user_content, insert_skill,
                                 render_prompt, skill_block)


def _content(step=3, history_length=2, admissible=("up", "down")):
    history = [HistoryItem(f"obs{i}", f"act{i}") for i in range(step)]
    return build_user_content(task="push the box", observation="current grid", step=step, history=history,
                              history_length=history_length, admissible_actions=list(admissible) if admissible else None,
                              instruction="Rules: be nice.")


def test_prompt_has_every_part_in_order():
    text = _content()
    parts = ["Rules: be nice.", TASK_PREFIX + "push the box", "already taken 3 step(s)", "[Observation 2: obs1]",
             "[Action 3: act2]", "You are now at step 4", "current grid", "'up', 'down'", FORMAT_INSTRUCTION]
    positions = [text.index(p) for p in parts]
    assert positions == sorted(positions)


def test_history_is_limited_to_history_length():
    text = _content(step=5, history_length=2)
    assert "obs2" not in text and "obs3" in text and "obs4" in text
    assert "History" not in _content(step=5, history_length=0) and "obs4" not in _content(step=5, history_length=0)


def test_admissible_actions_are_optional():
    assert "admissible actions" not in _content(admissible=None)


SHORT = _content(step=1, history_length=0, admissible=None)
REST = "You are now at step 2 and your current observation is:\ncurrent grid\n" + FORMAT_INSTRUCTION


def test_the_reference_skill_block_renders_exactly():
    """The reference code's text (SEED release, seed/prompting.py): bold header, "Refer to…" line, the skill
    in brackets, a blank line on each side."""
    assert SHORT == "Rules: be nice.\nYour task is to: push the box\n" + REST
    assert insert_skill(SHORT, " always push from behind ") == (
        "Rules: be nice.\nYour task is to: push the box\n\n"
        "**Episode-Level Skill**\n"
        "Refer to this episode-level skill when deciding what action to take in the current episode:\n"
        "[always push from behind]\n\n" + REST)
    assert insert_skill("no task here\n" + FORMAT_INSTRUCTION, "a skill") == (
        "no task here\n\n" + skill_block("a skill") + "\n\n" + FORMAT_INSTRUCTION)
    assert insert_skill("no anchor", "a skill") == "no anchor\n\n" + skill_block("a skill")


def test_the_seedbench_skill_block_renders_exactly():
    assert insert_skill(SHORT, "always push from behind", "seedbench") == (
        "Rules: be nice.\nYour task is to: push the box\n"
        "Episode-Level Skill\n"
        "Use the following skill, learned from a previous attempt at this episode, to act in this episode:\n"
        "always push from behind\n" + REST)
    assert insert_skill("no task here\n" + FORMAT_INSTRUCTION, "a skill", "seedbench") == (
        "no task here\n" + skill_block("a skill", "seedbench") + "\n" + FORMAT_INSTRUCTION)
    with pytest.raises(ValueError, match="reference, seedbench"):
        skill_block("a skill", "bold")


def test_render_prompt_uses_the_chat_template(tiny_tokenizer):
    ids = render_prompt(tiny_tokenizer, "Your task is to: choose left or right")
    text = tiny_tokenizer.decode(ids)
    assert text.startswith("<|user|>") and text.rstrip().endswith("<|assistant|>")
