"""The agent catalogue: trainers and their registered variants (ablations are config overrides, not
copied classes). Each line: name, the class that implements it, one-line description, overrides, aliases.

The SEED ablations are named by the mechanism their config sets (``seed-frozen-analyzer``: analyzer
frozen); the SEED paper's names for the same runs (``seed-no-self-evolving``, …) are aliases, so either
name runs the same agent, a run records the catalogue name, and leaderboards group both as one method."""

from __future__ import annotations

from seedbench.registry import AgentEntry

_SEED = "seedbench.agents.seed.agent:SEEDAgent"

CATALOGUE: list[AgentEntry] = [
    AgentEntry("grpo", "seedbench.agents.grpo:GRPOAgent", "GRPO: group-normalised episode advantage, PPO-clip, KL to reference"),
    AgentEntry("gigpo", "seedbench.agents.gigpo:GiGPOAgent",
               "GiGPO: GRPO episode advantage + step advantage from anchor-state groups (gamma 0.95, omega 1)"),
    AgentEntry("seed", _SEED,
               "SEED: GRPO + gated self-distillation from skills the current policy writes (start from `sft-analyzer`)"),
    AgentEntry("seed-no-sft", _SEED, "SEED ablation: stage 2 from the base model, no analyzer SFT",
               {"expect_analyzer_sft": False}, aliases=("seed-no-analyzer-sft",)),
    AgentEntry("seed-frozen-analyzer", _SEED,
               "SEED ablation: a fixed checkpoint (default: the initial weights) analyses, not the current policy",
               {"analyzer": "frozen"}, aliases=("seed-no-self-evolving",)),
    AgentEntry("seed-static-skills", _SEED,
               "SEED ablation: skills retrieved by task similarity from a fixed library (stage-1 annotations)",
               {"analyzer": "static"}, aliases=("seed-no-on-policy-skills",)),
    AgentEntry("skill-prompt", _SEED, "baseline: library skills in the acting prompt, no training",
               {"train": False, "act_skills": True, "kl_coef": 0.0, "analyzer": "static"}),
    AgentEntry("skill-grpo", _SEED,
               "baseline (paper's Skill-GRPO): GRPO with library skills in the training prompts, evaluated without them",
               {"act_skills": True, "eval_skills": False, "opd_coef": 0.0, "analyzer": "static"}),
    AgentEntry("skill-grpo-star", _SEED,
               "baseline (paper's Skill-GRPO*): GRPO with library skills in the prompts of training and evaluation",
               {"act_skills": True, "eval_skills": True, "opd_coef": 0.0, "analyzer": "static"}),
]
