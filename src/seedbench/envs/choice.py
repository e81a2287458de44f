"""TwoChoice: the smallest env that can show learning.

Description
    One step. The agent is told to say ``left`` or ``right``; exactly one of them (``rewarded``, default
    ``right``) wins. The rewarded side is *not* revealed in the prompt, so a policy can only beat chance
    (50 % among valid answers) by learning. It exists for fast learning tests of trainers on CPU with
    tiny randomly initialised models.
Task text
    "choose left or right"
Action grammar
    ``<action>left</action>`` / ``<action>right</action>``: when the text has a complete action tag, the
    last one counts (the ``seedbench`` projection of `seedbench.envs.action_parsing`) and its payload must
    be ``left`` or ``right``. Without a tag, parsing is lenient on purpose, so that a tiny model with a
    word-level vocabulary can produce valid actions without learning the tag format first: the text
    (``<think>`` blocks left out) must name exactly one side, once or more. Text naming both sides is
    invalid, so echoing the prompt ("Answer with left or right.", "choose left or right") earns nothing.
Observation
    A short text line.
Rewards
    1.0 for the rewarded side, 0.0 otherwise (invalid text included).
Termination vs truncation
    Terminates after one step.
Splits
    ``train`` and ``test`` hold the same single task (the env has nothing to hold out), so the class
    declares ``splits_disjoint = False``.
Registered ids
    ``seedbench/TwoChoice-v0`` (alias ``choice``).
"""

from __future__ import annotations

import re

from seedbench.envs.action_parsing import project_action
from seedbench.envs.text_env import TextEnv

SIDES = ("left", "right")
_WORD_RE = re.compile(r"\b(left|right)\b", re.IGNORECASE)
_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class TwoChoiceEnv(TextEnv):
    history_length = 0
    max_steps = 1
    invalid_action_penalty = 0.1
    splits = ("train", "test")
    eval_split = "test"
    instruction = "Answer with left or right."
    splits_disjoint = False  # one task: train and test differ only by name

    def __init__(self, rewarded: str = "right", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if rewarded not in ("left", "right"):
            raise ValueError(f"rewarded must be 'left' or 'right', got {rewarded!r}")
        self.rewarded = rewarded
        self._split = "train"
        self._task_id = "choice-0"
        self._won = False

    def oracle_skill(self, won: bool) -> str:
        """The hidden answer, stated outright (SEED's ``oracle`` annotator leaks it on purpose)."""
        other = next(side for side in SIDES if side != self.rewarded)
        if won:
            return f"Choose {self.rewarded}: it is the rewarded answer."
        return f"Do not choose {other}; choose {self.rewarded}."

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """The action tag's payload when there is a tag, else the one side the text names (module
        docstring); naming both sides, as an echo of the prompt does, is invalid."""
        payload = project_action(text, "seedbench")
        if payload is not None:
            return (payload.lower(), True) if payload.lower() in SIDES else (payload, False)
        named = {word.lower() for word in _WORD_RE.findall(_THINK_RE.sub(" ", text or ""))}
        if len(named) != 1:
            return "", False
        return named.pop(), True

    @staticmethod
    def hindsight_facts(episode) -> list[str]:
        """What each answer got (`seedbench.envs.hindsight`): the side named and the observation and reward
        it earned, or why the answer was invalid."""
        facts = []
        for step in episode.steps:
            if step.valid:
                facts.append(f"answering {step.action} at step {step.index} got \"{step.next_observation.strip()}\" "
                             f"(reward {step.reward:g})")
            else:
                facts.append(f"the answer at step {step.index} did not name exactly one side (or its action tag held "
                             f"neither), so it was invalid")
        return facts

    def _info(self) -> dict:
        return {
            "task": "choose left or right",
            "admissible_actions": ["left", "right"],
            "won": self._won,
            "task_id": self._task_id,
            "task_type": "choice",
            "split": self._split,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        self._split = self._check_split(options.get("split", self.splits[0]))
        self._task_id = str(options.get("task_id", f"choice-{seed if seed is not None else 0}"))
        self._won = False
        return "You stand at a fork in the road.", self._info()

    def _apply_action(self, command: str, valid: bool):
        self._won = valid and command == self.rewarded
        obs = "You reached the treasure." if self._won else "Nothing here."
        return obs, float(self._won), True, valid

    def render(self):
        return "fork: left or right"
