"""One episode's bookkeeping, shared by both rollout schedules (`lockstep` and `continuous`).

A schedule decides only *when* an episode's next prompt is generated and its env stepped; everything an
episode does between those moments is here, so the two schedules record identical trajectories:

1. `start_episodes`: reset every env slot of a rollout (B tasks × a group of N; the N members of a group
   reset with the same ``(split, seed)``) and open one `Trajectory` per slot;
2. `Episode.prompt`: the user message for the next step (`build_user_content` with the last
   ``history_length`` steps, then the agent's ``transform_prompt``) and its chat-templated token ids;
3. `Episode.record`: turn (generation, env step result) into a `StepSample` (with the frame of the
   observation the prompt showed, for vision envs), extend the history, add the reward, and decide
   whether the episode is over (terminated, truncated by the env, or at the step cap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from seedbench.engines.base import Generation
from seedbench.envs.batch import EnvBatch, StepResult
from seedbench.prompt import PromptLike
from seedbench.rollout.prompting import HistoryItem, build_user_content, render_prompt
from seedbench.rollout.types import StepSample, TaskRef, Trajectory, task_score

INVALID_ACTION_HISTORY_CHARS = 200
"""An invalid step has no action to show in later prompts, so the history shows the end of the model's raw
text instead: its end, where the model tried to answer, so it can see what did not parse; cut to this
many characters so one rambling answer cannot crowd the later prompts."""


class PromptTooLong(RuntimeError):
    """A step's prompt is over ``rollout.max_prompt_tokens`` even without any past steps shown."""


@dataclass(frozen=True)
class EpisodeRules:
    """What every episode of one rollout shares: how its prompts are built and when it ends.

    `env_spec` is any instance of the env class (for `instruction` and `parse_action`);
    `transform_prompt(trajectory, user_content)` is the agent's hook on the acting prompt (None = none)."""

    env_spec: Any
    tokenizer: Any
    history_length: int
    max_steps: int
    transform_prompt: Callable[[Trajectory, str], str] | None = None
    max_prompt_tokens: int | None = None
    """``rollout.max_prompt_tokens``: a longer prompt shows fewer past steps; None = no budget."""


@dataclass
class Episode:
    """One episode in progress: its env slot, trajectory so far, current observation and history."""

    rules: EpisodeRules
    index: int
    """The env slot (`EnvBatch` index) this episode plays in."""
    trajectory: Trajectory
    observation: str
    info: dict
    step: int = 0
    """0-based number of the step whose prompt is (or will be) out."""
    history: list[HistoryItem] = field(default_factory=list)
    content: str = ""
    """User message of the pending step, as recorded and trained on (after `transform_prompt`)."""
    prompt_ids: PromptLike = field(default_factory=list)
    frames: list = field(default_factory=list)
    """The frame of each past step (parallel to `history`; None for text envs)."""

    @property
    def done(self) -> bool:
        return self.trajectory.done

    def prompt(self) -> list[int]:
        """Build the pending step's user message and token ids (kept until `record`). Over the rules'
        `max_prompt_tokens`, the oldest shown steps are dropped until it fits (`PromptTooLong` if it cannot)."""
        rules = self.rules
        shown = rules.history_length
        while True:
            self.content, self.prompt_ids = self._render(shown)
            budget = rules.max_prompt_tokens
            if budget is None or len(self.prompt_ids) <= budget:
                return self.prompt_ids
            shown = min(shown, len(self.history)) - 1
            if shown < 0:
                raise PromptTooLong(f"step {self.step} of episode {self.trajectory.episode_id}: the prompt has "
                                    f"{len(self.prompt_ids)} tokens without any history, over rollout.max_prompt_tokens="
                                    f"{budget}; raise rollout.max_prompt_tokens")

    def _render(self, history_length: int) -> tuple[str, PromptLike]:
        """The user message and token ids of the pending step showing `history_length` past steps."""
        rules = self.rules
        content = build_user_content(
            task=self.trajectory.task_text, observation=self.observation, step=self.step, history=self.history,
            history_length=history_length, admissible_actions=self.info.get("admissible_actions"),
            instruction=rules.env_spec.instruction,
            format_instruction=getattr(rules.env_spec, "format_instruction", None),
        )
        if rules.transform_prompt is not None:
            content = rules.transform_prompt(self.trajectory, content)
        return content, render_prompt(rules.tokenizer, content, self.shown_frames(history_length))

    def shown_frames(self, history_length: int | None = None) -> list:
        """Frames of the shown history steps (`history_length`, default the rules'), then the current one (a
        vision policy keeps the newest ``model.max_images``); empty for text envs."""
        if self.info.get("image") is None:
            return []
        history_length = self.rules.history_length if history_length is None else history_length
        shown = self.frames[-history_length:] if history_length > 0 else []
        return [frame for frame in shown if frame is not None] + [self.info["image"]]

    def record(self, generation: Generation, result: StepResult | None) -> bool:
        """Record the pending step: `generation` answered the last `prompt`, `result` is what the env's
        step returned (None = the env slot died: the episode is dropped). True when the episode goes on."""
        traj = self.trajectory
        if result is None:
            traj.dropped, traj.done = True, True
            return False
        obs, reward, terminated, truncated, info = result
        valid = bool(info.get("action_valid", True))
        action = self.rules.env_spec.parse_action(generation.text)[0]
        traj.steps.append(StepSample(
            step=self.step, user_content=self.content, prompt_ids=self.prompt_ids,
            response_ids=generation.token_ids, sampled_logprobs=generation.logprobs, response_text=generation.text,
            observation=self.observation, action=action, action_valid=valid, env_reward=float(reward),
            image=self.info.get("image"),
        ))
        self.frames.append(self.info.get("image"))
        shown = action if valid else generation.text.strip()[-INVALID_ACTION_HISTORY_CHARS:]
        self.history.append(HistoryItem(self.observation, shown))
        traj.env_return += float(reward)
        traj.won = bool(info.get("won", False))
        traj.score = task_score(info, traj.score)
        self.observation, self.info = obs, info
        if terminated or truncated or self.step == self.rules.max_steps - 1:
            traj.done = True
            # Stopped by the step cap (or by the env's own cap) without reaching a terminal state.
            traj.truncated = bool(truncated) or not terminated
            traj.final_observation = obs
            return False
        self.step += 1
        return True


def start_episodes(envs: EnvBatch, tasks: list[TaskRef], group_size: int, rules: EpisodeRules,
                   episode_prefix: str = "") -> list[Episode]:
    """Reset slots ``0..len(tasks)·group_size−1`` (task ``k``'s group in slots ``k·N..k·N+N−1``) with one
    `reset_many` call and open their trajectories, ids ``<prefix><task>-<member>``."""
    slots = [(task_index, task, member) for task_index, task in enumerate(tasks) for member in range(group_size)]
    resets = envs.reset_many([(index, task.seed, {"split": task.split}) for index, (_, task, _) in enumerate(slots)])
    episodes = []
    for index, ((task_index, task, member), (obs, info)) in enumerate(zip(slots, resets)):
        trajectory = Trajectory(
            episode_id=f"{episode_prefix}{task_index}-{member}", group_id=task_index, task=task,
            task_text=str(info.get("task", "")), task_id=str(info.get("task_id", task.key())),
            task_type=str(info.get("task_type", "")),
        )
        episodes.append(Episode(rules, index, trajectory, obs, info))
    return episodes
