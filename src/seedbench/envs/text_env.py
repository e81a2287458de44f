"""The environment contract every seedbench env follows.

An env is a plain `gymnasium.Env` whose observation is text and whose action is the model's raw text.
The env owns the projection from text to an env command (`parse_action`), so invalid model output is a
counted event, never a crash. Environments know nothing about models or prompts beyond the few
attributes below, which the prompt builder reads.

`info` keys every env sets on `reset` and `step`:

- ``task``: the task description (one line, shown to the agent as "Your task: ...").
- ``admissible_actions``: list of valid commands, or ``None`` for envs without such a list.
- ``won``: bool, whether the task is solved.
- ``task_id``: a stable id of the task (game file, level seed, ...).
- ``task_type``: a category used for per-type success (ALFWorld: pick, look, clean, ...).
- ``split``: the data split the task came from (``train``, ``valid_seen``, ``valid_unseen``, ``test``).
- ``action_valid`` (after ``step`` only): whether the model's text parsed into a valid command.

Task selection is deterministic: ``reset(seed=s, options={"split": name})`` always picks the same task
for the same (split, seed); ``options={"task_id": ...}`` selects a task directly.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

# Generous upper bound for the Text spaces. Gymnasium's Text space is only used for `check_env` and
# sampling; the real constraint on length is the model's context.
MAX_TEXT_LENGTH = 8192
TEXT_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\t"


def text_space(max_length: int = MAX_TEXT_LENGTH) -> spaces.Text:
    """A Gymnasium Text space wide enough for env observations and model outputs."""
    return spaces.Text(max_length=max_length, min_length=0, charset=TEXT_CHARSET)


class TextEnv(gym.Env):
    """Base class for text environments. Subclasses implement `reset`, `step` and `parse_action`.

    Class attributes read by the prompt builder and the trainer (override per env, per SEED_METHOD §7):

    - ``history_length``: how many past (observation, action) pairs the per-step prompt shows.
    - ``max_steps``: episode step cap (reaching it is *truncation*).
    - ``invalid_action_penalty``: subtracted from a step sample's reward when its action is invalid.
    - ``splits``: the split names `reset(options={"split": ...})` accepts; the first is the train split.
    - ``eval_split``: the split evaluated by default.
    - ``instruction``: env-specific rules shown once in every prompt (action grammar, legend, ...).
    - ``worker_processes``: True for envs whose reset/step is slow enough (ALFWorld: ~1 s / ~50 ms) that
      the trainer should, by default, run instances in worker processes rather than step them serially.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    history_length: int = 2
    max_steps: int = 15
    invalid_action_penalty: float = 0.1
    splits: tuple[str, ...] = ("train", "test")
    eval_split: str = "test"
    instruction: str = ""
    worker_processes: bool = False

    def __init__(self, render_mode: str | None = None):
        self.observation_space = text_space()
        self.action_space = text_space()
        self.render_mode = render_mode

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """Project raw model text onto an env command: ``(command, valid)``. Must be pure and total."""
        raise NotImplementedError

    def _check_split(self, split: str) -> str:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r} for {type(self).__name__}; choose one of {list(self.splits)}")
        return split

    # -- provenance: where the tasks come from (seedbench.provenance) ------------------------------
    generator_version: str = "1"
    seed_rule: str = "reset(seed=k, options={'split': s}) plays task k of split s"

    def provenance(self) -> dict[str, str]:
        """``data_source``, ``manifest_checksum`` and ``generator_version`` of this env's tasks, recorded in
        the run's summary and folded into the eval task-list hash, so runs on other data never compare as
        equal. The default, for procedurally generated envs, hashes the generator (module and class,
        ``generator_version``, ``seed_rule``, the kwargs the env was made with): bump ``generator_version``
        whenever a (split, seed) would give another task. Envs with data files override it (ALFWorld)."""
        from seedbench.provenance import generator_provenance

        return generator_provenance(self)
