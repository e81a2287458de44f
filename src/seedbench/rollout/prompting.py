"""Per-step prompt builder (docs/method.md §1): the prompt is rebuilt at every env step, not a growing chat.

Layout of the user message (one line per part, in this order):

1. the env's rules (`TextEnv.instruction`), when it has any;
2. the task line, ``Your task is to: <task>`` — SEED inserts its skill block right after this line;
3. the step counter and the last `history_length` (observation, action) pairs;
4. the current observation;
5. the admissible actions, when the env lists them;
6. the format instruction ``<think>…</think><action>…</action>`` (or the env's own ``format_instruction``).

It is rendered through the model's chat template (`render_prompt`), so the same builder serves any HF
chat model. The wording follows verl-agent's ALFWorld template, which the SEED reference code uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seedbench.prompt import PromptLike
from seedbench.models.vision import renderer_of

TASK_PREFIX = "Your task is to: "
FORMAT_INSTRUCTION = (
    "Now it's your turn to take an action. You should first reason step-by-step about the current "
    "situation. This reasoning process MUST be enclosed within <think> </think> tags. Once you've finished "
    "your reasoning, you should choose an admissible action for current step and present it within "
    "<action> </action> tags."
)
FORMAT_MARKER = "Now it's your turn"
"""How every closing format line starts, the default and an env's own ``format_instruction`` alike: SEED
finds the end of the observation (`current_observation`) and the skill fallback position by it."""
SKILL_HEADER = "**Episode-Level Skill**"
SKILL_USAGE = "Refer to this episode-level skill when deciding what action to take in the current episode:"
"""The reference code's skill block (SEED release, ``seed/prompting.py``): bold header, this line, the skill
in square brackets, the block set off by blank lines."""
SEEDBENCH_SKILL_HEADER = "Episode-Level Skill"
SEEDBENCH_SKILL_USAGE = "Use the following skill, learned from a previous attempt at this episode, to act in this episode:"
"""seedbench's own wording (``algo.skill_block: seedbench``): plain header, this line, the bare skill, no
blank lines."""
SKILL_BLOCKS = ("reference", "seedbench")


@dataclass(frozen=True)
class HistoryItem:
    observation: str
    action: str


def build_user_content(
    *,
    task: str,
    observation: str,
    step: int,
    history: Sequence[HistoryItem],
    history_length: int,
    admissible_actions: Sequence[str] | None = None,
    instruction: str = "",
    format_instruction: str | None = None,
) -> str:
    """The user message for env step `step` (0-based). `history` holds all past steps; only the last
    `history_length` are shown."""
    lines: list[str] = []
    if instruction:
        lines.append(instruction.strip())
    lines.append(f"{TASK_PREFIX}{task}")
    shown = list(history)[-history_length:] if history_length > 0 else []
    if shown:
        lines.append(
            f"Prior to this step, you have already taken {step} step(s). Below are the most recent "
            f"{len(shown)} observations and the corresponding actions you took:"
        )
        first = step - len(shown) + 1
        for offset, item in enumerate(shown):
            lines.append(f"[Observation {first + offset}: {item.observation.strip()}]")
            lines.append(f"[Action {first + offset}: {item.action}]")
    lines.append(f"You are now at step {step + 1} and your current observation is:\n{observation.strip()}")
    if admissible_actions:
        joined = ", ".join(f"'{a}'" for a in admissible_actions)
        lines.append(f"Your admissible actions of the current situation are: [{joined}].")
    lines.append(format_instruction or FORMAT_INSTRUCTION)
    return "\n".join(lines)


def skill_block(skill: str, style: str = "reference") -> str:
    """The skill block SEED's teacher prompt carries: ``reference`` ``**Episode-Level Skill**`` / the
    "Refer to this episode-level skill…" line / ``[skill]``; ``seedbench`` the plain header, the "Use the
    following skill…" line and the bare skill."""
    if style == "reference":
        return f"{SKILL_HEADER}\n{SKILL_USAGE}\n[{skill.strip()}]"
    if style == "seedbench":
        return f"{SEEDBENCH_SKILL_HEADER}\n{SEEDBENCH_SKILL_USAGE}\n{skill.strip()}"
    raise ValueError(f"algo.skill_block: unknown {style!r}; choose one of {', '.join(SKILL_BLOCKS)}")


def insert_skill(user_content: str, skill: str, style: str = "reference") -> str:
    """Insert the SEED skill block (`skill_block`) directly after the task line (docs/method.md §5.3); if no
    task line is found, before the final format instruction; failing both, append it.

    ``reference`` sets the block off by a blank line on each side (the text around it keeps its content,
    its whitespace at the seam is replaced), as the reference code does; ``seedbench`` inserts it as plain
    lines."""
    block = skill_block(skill, style)
    lines = user_content.split("\n")
    task_line = next((i for i, line in enumerate(lines) if line.startswith(TASK_PREFIX)), None)
    marker = user_content.rfind(FORMAT_MARKER)
    if style == "reference":
        if task_line is not None:
            before, after = "\n".join(lines[: task_line + 1]), "\n".join(lines[task_line + 1 :])
        elif marker >= 0:
            before, after = user_content[:marker], user_content[marker:]
        else:
            before, after = user_content, ""
        return "\n\n".join(part for part in (before.rstrip(), block, after.lstrip()) if part)
    if task_line is not None:
        return "\n".join(lines[: task_line + 1] + [block] + lines[task_line + 1 :])
    if marker >= 0:
        return user_content[:marker] + block + "\n" + user_content[marker:]
    return user_content + "\n" + block


def render_prompt(tokenizer, user_content: str, images: Sequence = ()) -> PromptLike:
    """Token ids of the chat-templated prompt, ending with the assistant generation prompt. With `images`
    (uint8 frames) and a vision policy's tokenizer, a `seedbench.prompt.Prompt` that carries them; a text
    policy's tokenizer ignores them."""
    renderer = renderer_of(tokenizer) if len(images) else None
    if renderer is not None:
        return renderer.render(tokenizer, user_content, images)
    messages = [{"role": "user", "content": user_content}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def current_observation(content: str) -> str:
    """The current observation inside an acting prompt built by `build_user_content`
    (the text after "your current observation is:" up to the admissible actions or the final
    instruction); the whole prompt when the marker is missing."""
    marker = "your current observation is:\n"
    start = content.find(marker)
    if start < 0:
        return content
    rest = content[start + len(marker):]
    ends = [i for i in (rest.find("\nYour admissible actions"), rest.rfind("\n" + FORMAT_MARKER)) if i >= 0]
    return rest[: min(ends)] if ends else rest
