"""Guess the number: a binary-search game in text, the worked example of seedbench's docs/adding_an_env.md."""

from seedbench.envs.action_parsing import extract_tag
from seedbench.envs.text_env import TextEnv

# The splits are disjoint by construction: test hides the multiples of 5, train every other number.
SPLIT_NUMBERS = {"train": [n for n in range(100) if n % 5], "test": [n for n in range(100) if n % 5 == 0]}


class GuessEnv(TextEnv):
    """Find a hidden number from 0 to 99; after each guess the observation says higher or lower."""

    history_length = 3
    max_steps = 8  # binary search needs at most 7 guesses
    splits = ("train", "test")
    eval_split = "test"
    instruction = "Find the hidden number from 0 to 99. Answer like <action>50</action>."

    @staticmethod
    def parse_action(text):
        payload = extract_tag(text) or ""
        valid = payload.isascii() and payload.isdigit() and int(payload) <= 99
        return payload, valid

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random, starts the step count
        self.split = self._check_split((options or {}).get("split", "train"))
        numbers = SPLIT_NUMBERS[self.split]
        index = seed if seed is not None else int(self.np_random.integers(len(numbers)))
        self.target = numbers[index % len(numbers)]
        self.low, self.high, self.won = 0, 99, False
        return "Guess a number from 0 to 99.", self._info()

    def _apply_action(self, command, valid):
        if not valid:
            return "That is not a number from 0 to 99.", 0.0, False, False
        guess = int(command)
        if guess < self.target:
            self.low = max(self.low, guess + 1)
            return f"{guess} is too low: higher.", 0.0, False, True
        if guess > self.target:
            self.high = min(self.high, guess - 1)
            return f"{guess} is too high: lower.", 0.0, False, True
        self.won = True
        return f"{guess} is correct!", 1.0, True, True

    def _info(self):
        return {"task": "find the hidden number", "admissible_actions": None, "won": self.won,
                "task_id": f"guess-{self.target}", "task_type": "low" if self.target < 50 else "high",
                "split": self.split}

    def expert_plan(self):
        """Binary search: the middle of what the feedback has not ruled out."""
        return [str((self.low + self.high) // 2)]

from seedbench.registry import EnvEntry

ENTRY = EnvEntry(alias="guess", env_id="seedbench/Guess-v0", entry_point="guess_env:GuessEnv",
                 description="find a hidden number 0-99 by binary search (plugin example)")
