"""The environment contract every seedbench env follows.

An env is a plain `gymnasium.Env` whose observation is text and whose action is the model's raw text.
The env owns the projection from text to an env command (`parse_action`), so invalid model output is a
counted event, never a crash. Environments know nothing about models or prompts beyond the few
attributes below, which the prompt builder reads.

`info` keys every env sets on `reset` and `step`, and what reads them:

- ``task``: the task description (one line); the prompt shows it as "Your task: ...".
- ``admissible_actions``: list of valid commands, or ``None`` for envs without such a list; the prompt
  lists them and the ``random`` eval agent picks among them.
- ``won``: bool, whether the task is solved; success rates and ``eval/`` metrics count it.
- ``task_id``: a stable id of the task (game file, level seed, ...); ``reset(options={"task_id": ...})``
  replays it, episode logs record it, and `seedbench check-env` uses it to prove the splits disjoint.
- ``task_type``: a category; reports and `seedbench eval` print per-type success tables from it.
- ``split``: the data split the task came from (``train``, ``valid_seen``, ``valid_unseen``, ``test``).
- ``action_valid`` (after ``step`` only): whether the model's text parsed into a valid command; the
  trainer subtracts ``invalid_action_penalty`` from invalid steps and logs the invalid-action rate.
- ``image`` (vision envs only, on ``reset`` and every ``step``): the frame of the returned observation, a
  ``numpy.ndarray`` of dtype ``uint8`` and shape ``(H, W, 3)`` with ``(H, W) == env.image_shape``. The
  observation itself stays text, so text policies play vision envs unchanged and Gymnasium's spaces stay
  `Text`; a vision-language policy puts the frame into its prompt. The rollout keeps the frame each
  prompt showed (`StepSample.image`) and the run directory stores it once as ``frames/<id>.png``
  (`seedbench.frames`). Text-only envs (``image_shape = None``) carry no ``image`` key.
- ``score`` (optional): a task score in [0, 1] beside the binary ``won`` (WebShop's purchase score);
  evaluation records its mean over the episodes as ``score`` (``eval/<split>/score``).

Task selection is deterministic: ``reset(seed=s, options={"split": name})`` always picks the same task
for the same (split, seed), and different seeds reach different tasks; ``options={"task_id": ...}``
selects a task directly. The splits are disjoint: no task (same id, or same behaviour) is in two
splits. `seedbench check-env NAME` (`seedbench.envs.checks`) verifies all of this.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

from seedbench.provenance import generator_provenance

__all__ = ["MAX_TEXT_LENGTH", "TEXT_CHARSET", "TextEnv", "UnicodeText", "text_space"]

# Generous upper bound for the Text spaces. Gymnasium's Text space is only used for `check_env` and
# sampling; the real constraint on length is the model's context.
MAX_TEXT_LENGTH = 8192
TEXT_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\t"


class UnicodeText(spaces.Text):
    """A Text space that contains any string up to its length bound. Observations quote real-world text
    (Search-QA's country names: Curaçao, São Tomé, Ștefan; product titles), which no finite charset lists;
    `sample` still draws from `TEXT_CHARSET`."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def text_space(max_length: int = MAX_TEXT_LENGTH) -> spaces.Text:
    """A Gymnasium Text space wide enough for env observations and model outputs."""
    return UnicodeText(max_length=max_length, min_length=0, charset=TEXT_CHARSET)


class TextEnv(gym.Env):
    """Base class for text environments.

    Subclasses implement `reset` (calling ``super().reset(seed=seed)`` first), the pure `parse_action`,
    and either the two hooks of the template `step` (`_apply_action`, `_info`) or `step` itself.

    The template `step` is parse → apply → step cap → info, so envs do not re-implement the finished-
    episode guard and the truncation rule: ``terminated`` comes from `_apply_action` (won, or lost for
    good); ``truncated`` is set by the template when ``max_steps`` steps have been taken without
    terminating. The trainer's rollout also stops at ``rollout.max_steps`` when a run sets one.

    Hooks with defaults: `expert_plan`, the env's scripted expert (the default has none; `has_expert` tells
    whether a class overrides it), and `oracle_skill`, the answer SEED's ``oracle`` annotator states outright
    for an env whose answer is a fact rather than a plan (default None). An optional static hook, not defined
    here, ``hindsight_facts(episode) -> list[str]`` (`seedbench.envs.hindsight`), gives SEED's ``hindsight``
    annotator facts about a finished episode read from its own observations.

    Class attributes read by the prompt builder and the trainer (override per env, per docs/method.md §7):

    - ``history_length``: how many past (observation, action) pairs the per-step prompt shows.
    - ``max_steps``: episode step cap (reaching it is *truncation*).
    - ``invalid_action_penalty``: subtracted from a step sample's reward when its action is invalid.
    - ``splits``: the split names `reset(options={"split": ...})` accepts; the first is the train split.
    - ``eval_split``: the split evaluated by default.
    - ``instruction``: env-specific rules shown once in every prompt (action grammar, legend, ...).
    - ``format_instruction``: the prompt's closing line; ``None`` keeps the builder's ``<think>…</think>
      <action>…</action>`` line (`seedbench.rollout.prompting.FORMAT_INSTRUCTION`). An env whose grammar
      is not an action tag (Search-QA's ``<search>``/``<answer>``) sets its own, one line starting with
      ``FORMAT_MARKER`` ("Now it's your turn"), where SEED finds the end of the observation.
    - ``stop_strings``: strings that end a generation; ``None`` keeps the engine's default (``</action>``),
      ``()`` generates to the end of turn.
    - ``worker_processes``: True for envs whose reset/step is slow enough (ALFWorld: ~1 s / ~50 ms) that
      the trainer should, by default, run instances in worker processes rather than step them serially.
    - ``splits_disjoint``: False only for an env with too few tasks to split (TwoChoice has one task);
      `seedbench check-env` then reports shared tasks between splits as a note instead of a failure.
    - ``image_shape``: ``(H, W)`` of the frame a vision env puts in ``info["image"]`` on every reset and
      step, or None for a text-only env. The contract guard checks every frame against it; an env whose
      frame size depends on its kwargs (Sokoban's room and tile size) sets it in ``__init__``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}  # fps: check_env asks
    history_length: int = 2
    max_steps: int = 15
    invalid_action_penalty: float = 0.1
    splits: tuple[str, ...] = ("train", "test")
    eval_split: str = "test"
    instruction: str = ""
    format_instruction: str | None = None
    stop_strings: tuple[str, ...] | None = None
    worker_processes: bool = False
    splits_disjoint: bool = True
    image_shape: tuple[int, int] | None = None

    def expert_plan(self) -> list[str] | None:
        """The commands (action payloads, without tags) that solve the task from the current state, or None/[]
        when none is known. The ``scripted`` eval agent plays it (asking again whenever the plan runs out),
        ``seedbench sft-policy`` clones it, `seedbench check-env` requires it to solve a sample of tasks, and
        SEED's ``oracle`` annotator reads it (so its skills leak the answer). Default: the env has no expert."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert: it does not override "
                                  "TextEnv.expert_plan")

    @classmethod
    def has_expert(cls) -> bool:
        """Whether the env class overrides `expert_plan` (an override may still raise NotImplementedError for
        some settings, which callers that play the expert report)."""
        return cls.expert_plan is not TextEnv.expert_plan

    def expert_thought(self, command: str) -> str | None:
        """The think text of a demonstration step that plays `command` from the current state, for
        ``seedbench sft-policy``; written from what the agent sees (the part of the observation the move
        depends on), so imitating it teaches the policy to read that part. None (the default): the
        demonstration says "Following the plan"."""
        return None

    def oracle_skill(self, won: bool) -> str | None:
        """The skill SEED's ``oracle`` annotator writes for an episode of the current task that was won or lost,
        when the env knows its answer as a fact rather than a plan (TwoChoice's rewarded side); None (the
        default) lets the annotator build the skill from `expert_plan` or from the trajectory."""
        return None

    def __init__(self, render_mode: str | None = None):
        self.observation_space = text_space()
        self.action_space = text_space()
        self.render_mode = render_mode
        self._steps = 0  # steps taken in the current episode
        self._done = False  # the episode ended (terminated or truncated); `step` refuses until `reset`
        self._started = False  # `reset` was called at least once
        self._last_observation = ""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Seed ``np_random`` and start the step count. Subclasses call this first, then pick the task
        from (split, seed) and return ``(observation, info)``."""
        super().reset(seed=seed, options=options)
        self._steps, self._done, self._started = 0, False, True
        self._last_observation = ""

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """Project raw model text onto an env command: ``(command, valid)``. Must be pure and total:
        text it cannot parse gives ``(something, False)``, never an exception."""
        raise NotImplementedError

    def step(self, action: str):
        """Template step: refuse a finished episode, parse the text, apply the command (`_apply_action`),
        count the step, truncate at ``max_steps``, and return the info of `_info` plus ``action_valid``."""
        if not self._started:
            raise RuntimeError("step() called before reset()")
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        command, valid = self.parse_action(action)
        observation, reward, terminated, valid = self._apply_action(command, valid)
        self._steps += 1
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        self._last_observation = observation
        info = self._info()
        info["action_valid"] = valid
        return observation, float(reward), terminated, truncated, info

    def _apply_action(self, command: str, valid: bool) -> tuple[str, float, bool, bool]:
        """Play one parsed command; return ``(observation, reward, terminated, valid)``. `valid` is the
        parse result; an env may narrow it (ALFWorld: the command must also be admissible now). An
        invalid command usually changes nothing but still counts as a step. Needed by the template `step`."""
        raise NotImplementedError(f"{type(self).__name__} implements neither step() nor _apply_action()")

    def _info(self) -> dict[str, Any]:
        """The `info` keys of the module docstring for the current state (without ``action_valid``)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither step() nor _info()")

    def render(self) -> str:
        """Default ``ansi`` render: the latest observation the template `step` returned ("" right after
        a reset). Override it to draw the state (Sokoban prints its grid)."""
        return self._last_observation

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
        return generator_provenance(self)
