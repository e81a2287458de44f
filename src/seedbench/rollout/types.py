"""What a rollout produces: tasks, step samples, trajectories and timing counters.

These records flow from the rollout schedules to the agents, the trainer and the run directory; nothing
here imports torch or an env.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seedbench.prompt import PromptLike


@dataclass(frozen=True)
class TaskRef:
    """A task, reproducibly: ``env.reset(seed=seed, options={"split": split})``."""

    split: str
    seed: int

    def key(self) -> str:
        return f"{self.split}:{self.seed}"


@dataclass
class StepSample:
    step: int
    user_content: str
    prompt_ids: PromptLike
    response_ids: list[int]
    sampled_logprobs: list[float]
    response_text: str
    observation: str
    action: str
    action_valid: bool
    env_reward: float
    image: Any = None
    """The frame the step's prompt showed (``info["image"]`` of `observation`: a ``uint8 (H, W, 3)`` numpy
    array) for vision envs, None for text-only ones. Kept in memory for the policy; the run directory
    stores it as a PNG file and episode records name the file, never the pixels."""


@dataclass
class Trajectory:
    episode_id: str
    group_id: int
    task: TaskRef
    task_text: str = ""
    task_id: str = ""
    task_type: str = ""
    steps: list[StepSample] = field(default_factory=list)
    env_return: float = 0.0
    won: bool = False
    score: float | None = None  # the env's task score in [0, 1] (``info["score"]``, e.g. WebShop), if it gives one
    done: bool = False
    truncated: bool = False
    dropped: bool = False  # the env process died mid-episode; excluded from training and counted
    final_observation: str = ""

    @property
    def num_invalid(self) -> int:
        return sum(not s.action_valid for s in self.steps)


@dataclass
class RolloutStats:
    env_time_s: float = 0.0
    generation_time_s: float = 0.0
    generated_tokens: int = 0
    env_steps: int = 0


def task_score(info: dict, previous: float | None = None) -> float | None:
    """The optional ``info["score"]`` (a task score in [0, 1], e.g. WebShop's purchase score) as a float;
    `previous` when the env gives none. Evaluation reports its mean as ``eval/<split>/score``."""
    score = info.get("score")
    return float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else previous
