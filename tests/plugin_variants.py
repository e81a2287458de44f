"""Variants of the docs' example env (tests/plugin_example/guess_env.py), each breaking one rule of the
env contract, for tests/test_check_env.py and tests/test_plugin_env.py."""

from __future__ import annotations

import random

from seedbench.envs.action_parsing import extract_tag
from seedbench.registry import EnvEntry
from tests.plugin_example.guess_env import SPLIT_NUMBERS, GuessEnv


class SeedIgnoringGuess(GuessEnv):
    """Calls super().reset(seed=seed) (so Gymnasium's check_env passes) but draws the number from Python's
    `random`: the same (split, seed) is a different task each time."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed, options=options)
        self.target = random.choice(SPLIT_NUMBERS[self.split])
        return obs, self._info()


class ConstantGuess(GuessEnv):
    """Ignores the seed deterministically: every reset hides 42."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed, options=options)
        self.target = 42
        return obs, self._info()


class LeakyGuess(GuessEnv):
    """Both splits draw from all numbers by seed (train seed 3 = test seed 3); the split in the task id
    hides the leak from an id comparison."""

    def reset(self, *, seed=None, options=None):
        obs, _ = super().reset(seed=seed, options=options)
        self.target = (seed or 0) % 100
        return obs, self._info()

    def _info(self):
        return {**super()._info(), "task_id": f"guess-{self.split}-{self.target}"}


class RaisingParseGuess(GuessEnv):
    @staticmethod
    def parse_action(text):
        return str(int(extract_tag(text))), True  # int("hello") raises ValueError


class DictObservationGuess(GuessEnv):
    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return {"text": obs}, info


class WrongExpertGuess(GuessEnv):
    def expert_plan(self):
        return ["0"]


VARIANTS = {
    "guess-seed-ignoring": SeedIgnoringGuess,
    "guess-constant": ConstantGuess,
    "guess-leaky": LeakyGuess,
    "guess-raising-parse": RaisingParseGuess,
    "guess-dict-observation": DictObservationGuess,
    "guess-wrong-expert": WrongExpertGuess,
}


def entry(alias: str) -> EnvEntry:
    """The catalogue line of a variant (or of the example itself, alias ``guess``)."""
    if alias == "guess":
        return EnvEntry("guess", "seedbench/Guess-v0", "tests.plugin_example.guess_env:GuessEnv", "plugin example")
    cls = VARIANTS[alias]
    return EnvEntry(alias, f"seedbench/{cls.__name__}-v0", f"{__name__}:{cls.__name__}", cls.__doc__ or "")
