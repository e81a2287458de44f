"""The finished episode as plain data, for the optional ``hindsight_facts`` env hook.

SEED's ``hindsight`` stage-1 annotator (`seedbench.agents.seed.hindsight`) writes its reference
analyses from a finished trajectory alone. Generic rules (invalid answers, steps that changed nothing,
loops, the last move) work for any env; an env that can say more from its own observations defines

    @staticmethod
    def hindsight_facts(episode: EpisodeRecord) -> list[str]

on its class: short, factual sentences about *this* episode ("moving down at step 3 walked into the hole
at (1, 2)"), the most decisive first. The hook reads only the record below (the observations the agent
saw, its parsed actions, rewards and the outcome); it is called on the class, never on an instance, so it
cannot read an env's hidden state (expert plan, rewarded answer, unrevealed map). Envs know nothing of
models or agents, hence these plain records instead of the rollout's `Trajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepRecord:
    """One env step as the agent lived it."""

    index: int
    """1-based step number, as the analyzer prompt numbers steps."""
    observation: str
    """What the agent saw before acting."""
    action: str
    """The parsed command (may be garbage when `valid` is False)."""
    valid: bool
    reward: float
    next_observation: str
    """What the env returned after the action (the next step's observation, or the final one)."""


@dataclass(frozen=True)
class EpisodeRecord:
    task: str
    steps: tuple[StepRecord, ...]
    won: bool
    truncated: bool
    """Stopped by the step cap without reaching a terminal state."""
