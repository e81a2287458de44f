"""Small envs for rollout tests: episode length depends on the task seed."""

from seedbench.envs.text_env import TextEnv


class CountdownEnv(TextEnv):
    """Episode of the task seed's `length` = 1 + seed % 4 steps; any action is valid; wins at the end."""

    history_length = 1
    max_steps = 6
    splits = ("train", "test")
    eval_split = "test"

    def __init__(self):
        super().__init__()
        self.left = 0
        self.seed_value = 0

    @staticmethod
    def parse_action(text):
        return (text.strip()[:20], True) if text.strip() else ("", False)

    def _info(self):
        return {"task": f"count down from {self.seed_value}", "admissible_actions": None, "won": self.left == 0,
                "task_id": f"cd-{self.seed_value}", "task_type": f"len{1 + self.seed_value % 4}", "split": "train"}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.seed_value = seed or 0
        self.left = 1 + self.seed_value % 4
        return f"start {self.seed_value} {self.np_random.integers(1000)}", self._info()

    def step(self, action):
        self.left -= 1
        info = self._info()
        info["action_valid"] = True
        return f"left {self.left}", float(self.left == 0), self.left == 0, False, info
