from seedbench.action_parsing import parse_choice
from seedbench.text_env import TextEnv


class GuessEnv(TextEnv):
    """Guess a digit 0-4 in three tries; the observation says higher or lower."""

    history_length = 3
    max_steps = 3
    splits = ("train", "test")
    eval_split = "test"
    instruction = "Guess the hidden digit. Answer like <action>3</action>."

    @staticmethod
    def parse_action(text):
        return parse_choice(text, ["0", "1", "2", "3", "4"])

    def _info(self, won):
        return {"task": "guess the hidden digit", "admissible_actions": ["0", "1", "2", "3", "4"],
                "won": won, "task_id": f"guess-{self.split}-{self.seed}", "task_type": "guess",
                "split": self.split}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.split = (options or {}).get("split", "train")
        self.seed = seed
        self.target = int(self.np_random.integers(5))
        return "Make a guess.", self._info(False)

    def step(self, action):
        guess, valid = self.parse_action(action)
        won = valid and int(guess) == self.target
        obs = "correct" if won else ("invalid guess" if not valid else ("higher" if int(guess) < self.target else "lower"))
        info = self._info(won)
        info["action_valid"] = valid
        return obs, float(won), won, False, info

from seedbench.registry import EnvEntry

ENTRY = EnvEntry(alias="guess", env_id="seedbench/Guess-v0", entry_point="guess_env:GuessEnv",
                 description="guess a digit in three tries")
