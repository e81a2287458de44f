"""The agent catalogue: trainers and their registered variants (ablations are config overrides, not
copied classes). Each line: name, the class that implements it, one-line description, overrides."""

from __future__ import annotations

from seedbench.registry import AgentEntry

CATALOGUE: list[AgentEntry] = [
    AgentEntry("grpo", "seedbench.agents.grpo:GRPOAgent", "GRPO: group-normalised episode advantage, PPO-clip, KL to reference"),
]
