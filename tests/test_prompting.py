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


def test_skill_block_lands_right_after_the_task_line():
    text = insert_skill(_content(), "always push from behind")
    lines = text.split("\n")
    task_index = next(i for i, line in enumerate(lines) if line.startswith(TASK_PREFIX))
    assert "\n".join(lines[task_index + 1 : task_index + 4]) == skill_block("always push from behind")


def test_skill_block_falls_back_to_before_the_final_instruction():
    text = insert_skill("no task here\n" + FORMAT_INSTRUCTION, "a skill")
    assert text.index("a skill") < text.index("Now it's your turn")


def test_render_prompt_uses_the_chat_template(tiny_tokenizer):
    ids = render_prompt(tiny_tokenizer, "Your task is to: choose left or right")
    text = tiny_tokenizer.decode(ids)
    assert text.startswith("<|user|>") and text.rstrip().endswith("<|assistant|>")
