"""The SEED analyzer task (docs/method.md §4): the prompt that asks a model to analyse one finished
episode, and the lenient parser of its JSON answer.

The same prompt serves three callers, so what stage 1 teaches is exactly what stage 2 asks:

- stage 1 (`seedbench sft-analyzer`): an annotator answers it with the true outcome, and the policy is
  fine-tuned on (prompt, answer);
- stage 2 (`seed` agent): the current policy answers it greedily for every trajectory of the batch;
- the `seed-frozen-analyzer` ablation: a fixed checkpoint answers it.

The wording is ours; the structure follows the reference code: an instruction (return only JSON with a
concise ``episode_summary`` and one ``episode_skill``; a workflow on success, avoidance rules on failure;
short and policy-facing), the JSON schema, then the episode (task, ``episode_success``, and per step the
raw observation, the full model response and whether the action was valid).

Deviation: long episodes are cut from the *front* (oldest steps first, with a note saying so) to fit
`max_prompt_tokens`; the reference code truncates the prompt on the left in the same spirit.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

# The prompt's example and placeholder for the skill; parse_analysis rejects a skill that only repeats them.
SKILL_EXAMPLE = "Do X, then Y"
SKILL_PLACEHOLDER = "<one short instruction>"
INSTRUCTION = (
    "You are reviewing one episode played by an agent. Analyse it and return only a JSON object, with no "
    "text before or after it, containing a concise \"episode_summary\" (what the agent did and why the episode "
    "ended as it did) and exactly one \"episode_skill\".\n"
    "The episode_skill is advice for the agent's next attempt at this task: short, concrete and written as "
    f"an instruction for acting (\"{SKILL_EXAMPLE}\"), not as a description of the past.\n"
    "- If episode_success is success, write the skill as a workflow: the decisive rule and the order of "
    "actions that solved the task.\n"
    "- If episode_success is failure, write the skill as avoidance rules: the core mistake and the warning "
    "signs that show it is about to happen again."
)
SCHEMA = f'{{"episode_summary": "<one to three sentences>", "episode_skill": "{SKILL_PLACEHOLDER}"}}'
CLOSING = "Return only the JSON object."


@dataclass(frozen=True)
class EpisodeStep:
    """What the analyzer sees of one env step."""

    observation: str
    response: str
    action_valid: bool


@dataclass(frozen=True)
class Analysis:
    summary: str
    skill: str

    def to_json(self) -> str:
        """The canonical answer text (what stage 1 trains the policy to produce)."""
        return json.dumps({"episode_summary": self.summary, "episode_skill": self.skill}, ensure_ascii=False)


def episode_steps(trajectory: Any) -> list[EpisodeStep]:
    """The analyzer's view of a `seedbench.rollout.types.Trajectory`."""
    return [EpisodeStep(s.observation, s.response_text, s.action_valid) for s in trajectory.steps]


def _step_block(index: int, step: EpisodeStep) -> str:
    return (f"Step {index}\nObservation: {step.observation.strip()}\nResponse: {step.response.strip()}\n"
            f"Action valid: {'true' if step.action_valid else 'false'}")


def build_analyzer_content(task: str, success: bool, steps: Sequence[EpisodeStep], *, omitted: int = 0) -> str:
    """The analyzer's user message. `omitted` = number of leading steps left out (their numbering is kept)."""
    parts = [INSTRUCTION, f"JSON schema:\n{SCHEMA}", "Episode:", f"Task: {task.strip()}",
             f"episode_success: {'success' if success else 'failure'}"]
    if omitted:
        parts.append(f"(Steps 1-{omitted} are omitted for length.)")
    parts.extend(_step_block(omitted + offset + 1, step) for offset, step in enumerate(steps))
    parts.append(CLOSING)
    return "\n".join(parts)


def fit_analyzer_content(task: str, success: bool, steps: Sequence[EpisodeStep], count_tokens: Callable[[str], int],
                         max_tokens: int | None) -> str:
    """`build_analyzer_content`, dropping the oldest steps until the prompt has at most `max_tokens` tokens
    (as counted by `count_tokens`); at least the last step is always kept."""
    content = build_analyzer_content(task, success, steps)
    if not max_tokens or count_tokens(content) <= max_tokens or len(steps) <= 1:
        return content
    # Per-step costs once, then drop from the front; one final check with the real count.
    fixed = count_tokens(build_analyzer_content(task, success, [], omitted=len(steps)))
    costs = [count_tokens(_step_block(i + 1, s)) + 1 for i, s in enumerate(steps)]
    start, total = 0, fixed + sum(costs)
    while start < len(steps) - 1 and total > max_tokens:
        total -= costs[start]
        start += 1
    content = build_analyzer_content(task, success, steps[start:], omitted=start)
    while start < len(steps) - 1 and count_tokens(content) > max_tokens:
        start += 1
        content = build_analyzer_content(task, success, steps[start:], omitted=start)
    return content


# ----------------------------------------------------------------------------------------------------
# Lenient parsing

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```(?:json|python|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_SUMMARY_KEYS = ("episode_summary", "summary")
_SKILL_KEYS = ("episode_skill", "skill")


def _bare(skill: str) -> str:
    return skill.strip(" .\"'<>").lower()


# Skills that only copy the prompt's own example or placeholder. A small base model echoes them
# (measured: the embedded 135M model answered "Do X, then Y" in the README quick start); they carry no
# hindsight, so they count as failed analyses instead of becoming a distillation target.
_ECHOED_SKILLS = frozenset(_bare(text) for text in (SKILL_EXAMPLE, SKILL_PLACEHOLDER))


def _top_level_objects(text: str) -> tuple[list[tuple[int, int]], int]:
    """The ``(start, end)`` of every top-level ``{...}`` whose braces balance, and the start of a top-level
    ``{`` left open at the end of the text (-1 if none); braces inside quoted strings do not count."""
    found, depth, start, quote, escaped = [], 0, -1, "", False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'" and depth > 0:
            quote = char
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append((start, index))
    return found, (start if depth > 0 else -1)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` substring whose braces balance, skipping braces inside quoted strings."""
    return [text[start : end + 1] for start, end in _top_level_objects(text)[0]]


def _cut_object(text: str) -> list[str]:
    """The object that an answer cut off by its token budget leaves open: for the last top-level ``{``
    that never closes, its prefix up to the end of each complete ``"key": value`` pair, closed with ``}``,
    longest first. A value cut mid-string is not complete, so a skill cut mid-sentence is never kept."""
    start = _top_level_objects(text)[1]
    if start < 0:
        return []
    body = text[start:]
    cuts, depth, quote, escaped, value_string, last = [], 0, "", False, False, ""
    for index, char in enumerate(body):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
                if depth == 1 and value_string:
                    cuts.append(index + 1)
                last = char
            continue
        if char in "\"'":
            quote, value_string = char, last == ":"
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 1:
                cuts.append(index + 1)
        elif char == "," and depth == 1:
            cuts.append(index)
        if not char.isspace():
            last = char
    return [body[:cut] + "}" for cut in sorted(set(cuts), reverse=True)]


def _load_mapping(candidate: str) -> dict | None:
    for attempt in (candidate, _TRAILING_COMMA_RE.sub(r"\1", candidate)):
        try:
            value = json.loads(attempt)
        except (json.JSONDecodeError, ValueError):
            try:  # Python-literal dicts: single quotes, True/False/None
                value = ast.literal_eval(attempt)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
        if isinstance(value, dict):
            return value
    return None


def _field(mapping: dict, keys: tuple[str, ...]) -> str:
    lowered = {str(k).strip().lower(): v for k, v in mapping.items()}
    for key in keys:
        value = lowered.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):  # a list of rules: join them
            value = "; ".join(str(v).strip() for v in value if str(v).strip())
        return " ".join(str(value).split())
    return ""


def parse_analysis(text: str | None) -> Analysis | None:
    """Parse an analyzer answer leniently: ``<think>`` blocks are ignored; fenced code blocks are tried
    first, then every balanced ``{...}`` in the text, then an object cut off before its closing ``}`` (an
    answer that ran out of tokens), up to its last complete field; JSON with trailing commas and
    Python-literal dicts are accepted; a list-valued skill is joined. Returns None when nothing parses or the skill is empty or
    only repeats the prompt's placeholder (such a trajectory gets no distillation signal)."""
    if not text:
        return None
    text = _THINK_RE.sub(" ", text)
    candidates = []
    for block in _FENCE_RE.findall(text):
        candidates.extend(_balanced_objects(block) or [block.strip()])
    candidates.extend(_balanced_objects(text))
    candidates.extend(_cut_object(text))
    for candidate in candidates:
        mapping = _load_mapping(candidate)
        if mapping is None:
            continue
        skill = _field(mapping, _SKILL_KEYS)
        if skill and _bare(skill) not in _ECHOED_SKILLS:
            return Analysis(summary=_field(mapping, _SUMMARY_KEYS), skill=skill)
    return None
