"""TwoChoice: the smallest env that can show learning.

Description
    One step. The agent is told to say ``left`` or ``right``; exactly one of them (``rewarded``, default
    ``right``) wins. The rewarded side is *not* revealed in the prompt, so a policy can only beat chance
    (50 % among valid answers) by learning. It exists for fast learning tests of trainers on CPU with
    tiny randomly initialised models.
Task text
    "choose left or right"
Action grammar
    ``<action>left</action>`` / ``<action>right</action>``. Parsing is lenient on purpose: the last
    occurrence of the word ``left`` or ``right`` anywhere in the text counts, so that a tiny model with a
    word-level vocabulary can produce valid actions without learning the tag format first.
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

from seedbench.envs.text_env import TextEnv

_WORD_RE = re.compile(r"\b(left|right)\b", re.IGNORECASE)


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

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        words = _WORD_RE.findall(text or "")
        if not words:
            return "", False
        return words[-1].lower(), True

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
