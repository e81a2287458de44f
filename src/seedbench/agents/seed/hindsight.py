"""The ``hindsight`` stage-1 annotator: reference analyses written from the finished trajectory alone.

SEED's analyzer must learn to find, in an episode it just played, what decided the outcome (docs/method.md
§3). An annotator that copies the env's expert plan or rewarded answer into every skill (``oracle``)
teaches the policy to repeat a hint, not to analyse. This one sees what the analyzer prompt shows — the
task, the observations, the parsed actions and their validity, the rewards and the true outcome — and
nothing else: it never builds or resets an env, and per-env knowledge comes only from the optional
``hindsight_facts`` hook on the env *class* (`seedbench.envs.hindsight`), which reads the same record.

Rules (generic, any env):

- invalid answers (which steps, and what the response looked like);
- no-progress steps: a valid action after which the observation did not change;
- loops: an action that brought back an observation seen at an earlier step; runs of one action;
- the decisive move: on success, the last step (it completed the task) and the sequence of moves that
  changed the state; on failure, the action that ended the episode, or the step budget running out;
- reward changes: steps whose reward differs from the episode's usual one.

The summary states the true outcome first; the skill opens with it too ("In this won episode, ..." / "In
this lost episode, ..."), names this episode's own steps and turns them into a workflow (success) or an
avoidance rule with its warning sign (failure). The outcome word right before the decisive fact ties the
fact's wording to the outcome for a small analyzer: without it, stage-1 analyzers wrote the winning move's
sentence for lost episodes (docs/warm_start.md).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from seedbench.envs.hindsight import EpisodeRecord, StepRecord

HINDSIGHT_LABEL = ("hindsight (rule-based analyses from the finished trajectory alone: observations, actions, "
                   "rewards, outcome; no expert plan or hidden env state; not a model)")
RESPONSE_SNIPPET_CHARS = 40
MAX_FACTS_IN_SUMMARY = 3
MAX_STEPS_LISTED = 6

ANNOTATION_FORMAT = 3
"""Version of the analyses' wording (`write_analysis`); part of a cached stage-1 checkpoint's key, so a
change of wording rebuilds the analyzers trained on the old one."""

EnvFacts = Callable[[EpisodeRecord], list[str]]


def episode_record(trajectory: Any) -> EpisodeRecord:
    """The plain record of a `seedbench.rollout.types.Trajectory` that env hooks read."""
    steps = trajectory.steps
    records = []
    for i, step in enumerate(steps):
        after = steps[i + 1].observation if i + 1 < len(steps) else trajectory.final_observation
        records.append(StepRecord(index=i + 1, observation=step.observation, action=step.action,
                                  valid=bool(step.action_valid), reward=float(step.env_reward), next_observation=after))
    return EpisodeRecord(task=trajectory.task_text, steps=tuple(records), won=bool(trajectory.won),
                         truncated=bool(trajectory.truncated))


@dataclass(frozen=True)
class Finding:
    """One generic observation about the episode: `text` for the summary and skill, `kind` to pick the
    avoidance rule and its warning sign."""

    kind: str
    text: str
    steps: tuple[int, ...] = ()


def _steps_text(indices: list[int] | tuple[int, ...]) -> str:
    words = [str(i) for i in indices]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _listed(indices: list[int]) -> str:
    """Step numbers, at most `MAX_STEPS_LISTED` of them."""
    if len(indices) > MAX_STEPS_LISTED:
        return ", ".join(str(i) for i in indices[:MAX_STEPS_LISTED]) + ", ..."
    return _steps_text(indices)


def _snippet(text: str) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= RESPONSE_SNIPPET_CHARS else "..." + flat[-RESPONSE_SNIPPET_CHARS:]


def generic_findings(episode: EpisodeRecord, responses: list[str]) -> list[Finding]:
    """The generic rules of the module docstring, in the order of the episode."""
    steps = episode.steps
    findings: list[Finding] = []
    invalid = [s for s in steps if not s.valid]
    if invalid:
        example = responses[invalid[0].index - 1] if invalid[0].index - 1 < len(responses) else ""
        which = (f"step {invalid[0].index}" if len(invalid) == 1 else
                 f"{len(invalid)} steps ({_listed([s.index for s in invalid])})")
        findings.append(Finding("invalid", f"{which} gave no valid action (step {invalid[0].index} answered "
                                f"\"{_snippet(example)}\")", tuple(s.index for s in invalid)))
    stuck = [s for s in steps if s.valid and s.next_observation == s.observation]
    if stuck:
        shown = ", ".join(f"{s.action} at step {s.index}" for s in stuck[:3])
        findings.append(Finding("no_progress", f"{shown} changed nothing{' (and more)' if len(stuck) > 3 else ''}",
                                tuple(s.index for s in stuck)))
    seen: dict[str, int] = {}
    for s in steps:
        seen.setdefault(s.observation, s.index)
        earlier = seen.get(s.next_observation)
        if s.valid and s.next_observation != s.observation and earlier is not None and earlier < s.index:
            findings.append(Finding("loop", f"{s.action} at step {s.index} went back to the state of step {earlier}",
                                    (s.index,)))
            break
    run_start = 0
    for i in range(1, len(steps) + 1):
        if i == len(steps) or steps[i].action != steps[run_start].action or not steps[i].valid:
            if i - run_start >= 3 and steps[run_start].valid and not episode.won:
                findings.append(Finding("repeat", f"{steps[run_start].action} was repeated {i - run_start} times "
                                        f"(steps {steps[run_start].index}-{steps[i - 1].index})",
                                        tuple(range(steps[run_start].index, steps[i - 1].index + 1))))
                break
            run_start = i
    usual = Counter(s.reward for s in steps).most_common(1)[0][0] if len(steps) > 1 else None
    for s in steps[:-1]:
        if usual is not None and s.reward != usual and s.valid:
            verb = "gained" if s.reward > usual else "lost"
            findings.append(Finding("reward", f"{s.action} at step {s.index} {verb} reward ({s.reward:+g})", (s.index,)))
    last = steps[-1]
    move = f"{last.action} at step {last.index}" if last.valid else f"the invalid answer at step {last.index}"
    if episode.won:
        findings.append(Finding("decisive", f"{move} completed the task", (last.index,)))
    elif episode.truncated:
        findings.append(Finding("budget", f"the {len(steps)}-step budget ran out before the task was done", ()))
    else:
        findings.append(Finding("fatal", f"{move} ended the episode in failure", (last.index,)))
    return findings


def loop_free_path(episode: EpisodeRecord) -> list[StepRecord]:
    """The steps that mattered: the valid actions that changed the observation, with every detour that
    came back to an earlier state cut out (the last step always counts: it ended the episode)."""
    path: list[StepRecord] = []
    for s in episode.steps:
        if not s.valid or (s.next_observation == s.observation and s is not episode.steps[-1]):
            continue
        before = [p.observation for p in path]
        if s.next_observation in before:
            del path[before.index(s.next_observation):]
        else:
            path.append(s)
    return path


_AVOID = {
    "invalid": ("answers without exactly one admissible action in an <action></action> tag",
                "a response that does not end in a well-formed action tag"),
    "no_progress": ("moves that leave the observation unchanged", "the same observation after your move"),
    "loop": ("moves that undo earlier progress", "an observation you have already seen in this episode"),
    "repeat": ("repeating one action that is not getting you closer", "the same action three times in a row"),
    "budget": ("wandering: plan the shortest route to the goal before moving", "half of the step budget used "
               "without visible progress"),
}


def write_analysis(episode: EpisodeRecord, responses: list[str], env_facts: list[str]) -> dict[str, str]:
    """``{"episode_summary", "episode_skill"}`` for one episode from its generic findings and the env's facts
    (most decisive first)."""
    if not episode.steps:
        outcome = "Success" if episode.won else "Failure"
        return {"episode_summary": f"{outcome}: the episode ended before the agent acted.",
                "episode_skill": f"In this {_outcome_word(episode)} episode, no action was taken. Answer with one "
                                 "admissible action."}
    findings = generic_findings(episode, responses)
    n, invalid = len(episode.steps), sum(not s.valid for s in episode.steps)
    outcome = (f"Success: the agent completed the task in {n} step(s)" if episode.won
               else f"Failure: the agent did not complete the task in {n} step(s)")
    generic = {f.kind: f for f in findings}
    end = generic.get("decisive") or generic.get("fatal") or generic.get("budget")
    # A generic finding about steps an env fact already explains would repeat it in other words, and
    # near-repeats teach a small analyzer to loop: the env's wording wins.
    named = {int(i) for fact in env_facts[:2] for i in re.findall(r"\bat step (\d+)\b", fact)}
    details = [*env_facts[:2], *(f.text for f in findings if f.kind not in ("decisive", "fatal", "budget")
                                 and not (f.steps and set(f.steps) <= named))]
    explained = end.kind != "budget" and n in named
    summary_facts = details[:MAX_FACTS_IN_SUMMARY] if explained else [*details[: MAX_FACTS_IN_SUMMARY - 1], end.text]
    summary = f"{outcome} ({invalid} invalid). " + " ".join(_sentence_case(t) + "." for t in summary_facts)
    if episode.won:
        path = loop_free_path(episode)
        skill = (f"In this won episode, {env_facts[0] if env_facts else end.text}. Workflow that worked: "
                 f"{', '.join(s.action for s in path)}")
        kept = {s.index for s in path}
        wasted = [s.index for s in episode.steps if s.valid and s.index not in kept]
        if wasted:
            plural = "s" if len(wasted) > 1 else ""
            skill += f"; skip the {len(wasted)} move{plural} that went nowhere (step{plural} {_listed(wasted)})"
        if invalid:
            skill += "; answer every step with one valid <action></action> tag"
        return {"episode_summary": summary, "episode_skill": skill + "."}
    mistake = _core_mistake(findings, ended_invalid=not episode.steps[-1].valid)
    cause = env_facts[0] if env_facts else mistake.text
    if mistake.kind == "fatal":
        last = episode.steps[-1]
        avoid = f"playing {last.action} from the state of step {last.index}"
        warning = "that state coming back"
    else:
        avoid, warning = _AVOID[mistake.kind]
    skill = f"In this lost episode, {cause}. Avoid {avoid}; warning sign: {warning}"
    if env_facts and mistake.kind not in ("fatal", "budget"):
        skill += f"; here, {mistake.text}"
    return {"episode_summary": summary, "episode_skill": skill + "."}


def _outcome_word(episode: EpisodeRecord) -> str:
    return "won" if episode.won else "lost"


def _core_mistake(findings: list[Finding], ended_invalid: bool) -> Finding:
    """The failure's core mistake among the generic findings: a fatal move beats invalid answers (unless
    the fatal step was itself an invalid answer), which beat loops, repeats and stalls; the budget running
    out is the fallback."""
    by_kind = {f.kind: f for f in findings}
    order = ("invalid", "fatal") if ended_invalid else ("fatal", "invalid")
    for kind in (*order, "loop", "repeat", "no_progress", "budget"):
        if kind in by_kind:
            return by_kind[kind]
    return findings[-1]


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


class HindsightAnnotator:
    """``--annotator hindsight`` (module docstring). `env_cls` is the env's class, or None; only its optional
    static ``hindsight_facts`` hook is used, never an instance."""

    kind = "hindsight"
    label = HINDSIGHT_LABEL

    def __init__(self, env_cls: type | None = None):
        hook = getattr(env_cls, "hindsight_facts", None) if env_cls is not None else None
        self.env_facts: EnvFacts | None = hook if callable(hook) else None

    def check(self) -> None:
        return None

    def annotate(self, requests: list[Any]) -> list[str]:
        return [json.dumps(self.analyse(r.trajectory), ensure_ascii=False) for r in requests]

    def analyse(self, trajectory: Any) -> dict[str, str]:
        episode = episode_record(trajectory)
        facts = [" ".join(str(f).split()) for f in (self.env_facts(episode) if self.env_facts else []) if str(f).strip()]
        return write_analysis(episode, [s.response_text for s in trajectory.steps], facts)
